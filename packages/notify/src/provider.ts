// A NotificationProvider as deliveries use it: its spec checked, its Secrets read (credentials, proxy, CA) and kept in
// memory, its template compiled. Reading happens when the NotificationProvider changes and again after a failed delivery
// (a rotated token or webhook URL shows as one): never per message, so deliveries add no requests to the API
// server. A Secret changed while deliveries still succeed is read at the next change of the NotificationProvider.
import { KubeApiError, type KubeRest } from '@syncline/kube';
import { compileMessageTemplate, type MessageTemplate } from '@syncline/render';
import { authFromSecretData, proxyFromSecretData, type HttpProxy } from '@syncline/source-git';
import { COMMIT_STATUS_PROVIDERS, ProviderSpec, type NotificationProvider } from '@syncline/api';
import { parseDuration } from '@syncline/runtime';
import type { ChannelSettings } from './delivery.ts';
import type { ForgeCredentials } from './forge.ts';
import type { ProviderCredentials } from './payloads.ts';

export type ResolvedProvider = {
  readonly key: string;
  readonly generation: number | undefined;
  readonly spec: ProviderSpec;
  readonly credentials: ProviderCredentials;
  readonly ca?: string | undefined;
  readonly proxy?: HttpProxy | undefined;
  readonly template?: MessageTemplate | undefined;
  readonly settings: ChannelSettings;
  readonly readAt: number;
};

/** Why a NotificationProvider cannot send: the condition reason and a message that names no credential. */
export class ProviderError extends Error {
  readonly reason: 'InvalidSpec' | 'SecretNotFound' | 'InvalidSecret';
  constructor(reason: ProviderError['reason'], message: string) {
    super(message);
    this.name = 'ProviderError';
    this.reason = reason;
  }
}

export const isCommitStatusType = (type: string): type is (typeof COMMIT_STATUS_PROVIDERS)[number] =>
  (COMMIT_STATUS_PROVIDERS as readonly string[]).includes(type);

type SecretData = Readonly<Record<string, string>>;

/** A Secret's data (base64 values), or undefined when it does not exist. */
export async function readSecretData(rest: KubeRest, namespace: string, name: string): Promise<SecretData | undefined> {
  try {
    const secret = await rest.request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${namespace}/secrets/${name}` });
    return secret.data ?? {};
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404) return undefined;
    throw error;
  }
}

const decode = (data: SecretData | undefined, key: string): string | undefined => {
  const value = data?.[key];
  if (value === undefined) return undefined;
  const text = Buffer.from(value, 'base64').toString('utf8').trim();
  return text === '' ? undefined : text;
};

/** Checks the spec, reads the NotificationProvider's Secrets and compiles its template. Throws ProviderError. */
export async function resolveProvider(rest: KubeRest, provider: NotificationProvider, now: number): Promise<ResolvedProvider> {
  const namespace = provider.metadata.namespace ?? 'default';
  const parsed = ProviderSpec.safeParse(provider.spec);
  if (!parsed.success)
    throw new ProviderError('InvalidSpec', `invalid spec: ${parsed.error.issues.map((i) => `${i.path.map(String).join('.')}: ${i.message}`).join('; ')}`);
  const spec = parsed.data;
  // The CRD's rules refuse both at admission; said again here for a spec that did not go through them.
  if (spec.batch !== undefined && spec.template !== undefined)
    throw new ProviderError('InvalidSpec', 'batch is not available with a template (a template words one event)');
  if (spec.batch !== undefined && isCommitStatusType(spec.type)) throw new ProviderError('InvalidSpec', 'batch is for the chat and webhook types');
  const secret = async (ref: { name: string } | undefined, what: string): Promise<SecretData | undefined> => {
    if (ref === undefined) return undefined;
    const data = await readSecretData(rest, namespace, ref.name);
    if (data === undefined) throw new ProviderError('SecretNotFound', `${what} Secret ${namespace}/${ref.name} not found`);
    return data;
  };
  const data = await secret(spec.secretRef, 'the');
  const credentials: ProviderCredentials = {
    ...optional('address', decode(data, 'address') ?? spec.address),
    ...optional('token', decode(data, 'token')),
    ...optional('hmacKey', decode(data, 'hmacKey')),
    ...optional('username', decode(data, 'username')),
    ...optional('password', decode(data, 'password')),
  };
  if (credentials.address !== undefined && !/^https?:\/\//.test(credentials.address))
    throw new ProviderError('InvalidSecret', `the address in Secret ${namespace}/${spec.secretRef?.name ?? ''} is not an http(s) URL`);
  if (!isCommitStatusType(spec.type) && credentials.address === undefined && !(spec.type === 'slack' && credentials.token !== undefined)) {
    throw new ProviderError('InvalidSpec', `${spec.type} needs an address: the Secret's address key (a webhook URL is a credential) or spec.address`);
  }
  if (spec.type === 'slack' && credentials.token !== undefined && spec.channel === undefined)
    throw new ProviderError('InvalidSpec', 'slack with a token (chat.postMessage) needs spec.channel');
  const proxyData = await secret(spec.proxySecretRef, 'the proxy');
  let proxy: HttpProxy | undefined;
  if (proxyData !== undefined) {
    try {
      const p = proxyFromSecretData(proxyData);
      proxy = {
        url: p.url,
        ...(p.username === undefined ? {} : { authorization: `Basic ${Buffer.from(`${p.username}:${p.password ?? ''}`).toString('base64')}` }),
      };
    } catch (error) {
      throw new ProviderError('InvalidSecret', error instanceof Error ? error.message : 'the proxy Secret is invalid');
    }
  }
  const caData = await secret(spec.certSecretRef, 'the CA');
  const ca = decode(caData, 'ca.crt');
  if (caData !== undefined && ca === undefined)
    throw new ProviderError('InvalidSecret', `the CA Secret ${namespace}/${spec.certSecretRef?.name ?? ''} has no ca.crt key`);
  let template: MessageTemplate | undefined;
  if (spec.template !== undefined) {
    try {
      template = compileMessageTemplate(spec.template);
    } catch (error) {
      // eslint-disable-next-line no-restricted-syntax -- the first line of the parser's message, for people; nothing is decided from it
      const firstLine = error instanceof Error ? error.message.split('\n')[0] : String(error);
      throw new ProviderError('InvalidSpec', `spec.template does not compile: ${firstLine}`);
    }
  }
  return {
    key: `${namespace}/${provider.metadata.name}`,
    generation: provider.metadata.generation,
    spec,
    credentials,
    ca,
    proxy,
    template,
    settings: channelSettings(spec),
    readAt: now,
  };
}

/** Rate and timeout of a NotificationProvider's channel (the API server applied the schema's defaults; these are for the rest). */
export function channelSettings(spec: Partial<Pick<ProviderSpec, 'rateLimit' | 'timeout'>>): ChannelSettings {
  return {
    messages: spec.rateLimit?.messages ?? 20,
    intervalMs: parseDuration(spec.rateLimit?.interval ?? '1m'),
    timeoutMs: parseDuration(spec.timeout ?? '15s'),
  };
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

/** A ConfigSync's Git credentials as a forge token: bearerToken, or username and password. */
export function forgeCredentialsFromGitSecret(data: SecretData | undefined): ForgeCredentials {
  if (data === undefined) return {};
  try {
    const auth = authFromSecretData(data);
    if ('bearerToken' in auth && auth.bearerToken !== undefined) return { token: auth.bearerToken };
    if ('username' in auth && auth.username !== undefined) return { username: auth.username, password: auth.password };
  } catch {
    // No https credentials (an SSH key, or none): the NotificationProvider needs a token of its own.
  }
  return {};
}

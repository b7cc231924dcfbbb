// A RemoteCluster's credentials, checked before anything uses them (pure). A kubeconfig is configuration
// from a tenant's Secret: it is read, never run. `exec` and `auth-provider` users would run a command (or a
// plugin) inside the operator, file references would read the operator's own files, and skipping TLS
// verification hands the credentials to whoever answers. Each is refused with a reason a person can act on.
import { parse } from 'yaml';

export type RemoteAuth =
  | { readonly kind: 'token'; readonly token: string }
  | { readonly kind: 'clientCertificate'; readonly certData: string; readonly keyData: string }
  | { readonly kind: 'basic'; readonly username: string; readonly password: string };

export type RemoteCredentials = {
  readonly server: string;
  /** PEM; undefined = the system's trust store. */
  readonly caData?: string;
  readonly tlsServerName?: string;
  readonly insecureSkipTLSVerify?: boolean;
  readonly auth: RemoteAuth;
};

export class InvalidCredentialsError extends Error {
  override readonly name = 'InvalidCredentialsError';
}

export type CredentialOptions = {
  /** `--allow-insecure-remote-tls`: admit insecure-skip-tls-verify (never the default). */
  readonly allowInsecureTLS?: boolean;
  /** Plain http:// servers (tests and demos only, like --allow-insecure-http). */
  readonly allowInsecureHttp?: boolean;
};

type Named<T> = { name?: unknown } & Partial<Record<string, T>>;
type KubeconfigCluster = Record<string, unknown>;
type KubeconfigUser = Record<string, unknown>;

const FILE_FIELDS = { cluster: ['certificate-authority'], user: ['client-certificate', 'client-key', 'tokenFile', 'token-file'] } as const;

/** base64 `*-data` fields of a kubeconfig hold PEM; anything else is refused rather than guessed at. */
function decodePem(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '') throw new InvalidCredentialsError(`${field} is empty`);
  const text = Buffer.from(value, 'base64').toString('utf8');
  if (!text.includes('-----BEGIN ')) throw new InvalidCredentialsError(`${field} is not base64 of a PEM block`);
  return text;
}

function checkServer(server: unknown, options: CredentialOptions, where: string): string {
  if (typeof server !== 'string' || server === '') throw new InvalidCredentialsError(`${where}: no server URL`);
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new InvalidCredentialsError(`${where}: the server ${JSON.stringify(server.slice(0, 200))} is not a URL`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && options.allowInsecureHttp === true)) {
    throw new InvalidCredentialsError(`${where}: the server must be an https:// URL`);
  }
  if (url.username !== '' || url.password !== '') throw new InvalidCredentialsError(`${where}: the server URL must not carry credentials`);
  return server.replace(/\/+$/, '');
}

/** A kubeconfig (YAML or JSON) → the credentials of its current (or only) context. Throws InvalidCredentialsError. */
export function parseKubeconfig(text: string, options: CredentialOptions = {}): RemoteCredentials {
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 10 });
  } catch (error) {
    // eslint-disable-next-line no-restricted-syntax -- the first line of the parser's message, for people; nothing is decided from it
    const firstLine = error instanceof Error ? error.message.split('\n')[0] : 'parse error';
    throw new InvalidCredentialsError(`the kubeconfig is not YAML: ${firstLine}`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new InvalidCredentialsError('the kubeconfig is not a mapping');
  const config = doc as Record<string, unknown>;
  const list = <T>(key: string): Named<T>[] => (Array.isArray(config[key]) ? (config[key] as Named<T>[]) : []);
  const contexts = list<{ cluster?: unknown; user?: unknown }>('contexts');
  const current = typeof config['current-context'] === 'string' && config['current-context'] !== '' ? config['current-context'] : undefined;
  let context: Named<unknown> | undefined;
  if (current !== undefined) {
    context = contexts.find((c) => c.name === current);
    if (context === undefined) throw new InvalidCredentialsError(`current-context ${JSON.stringify(current)} names no context`);
  } else if (contexts.length === 1) context = contexts[0];
  else if (contexts.length === 0) throw new InvalidCredentialsError('the kubeconfig has no context');
  else throw new InvalidCredentialsError(`the kubeconfig has ${contexts.length} contexts and no current-context: choose one`);
  const ctx = (context?.['context'] ?? {}) as { cluster?: unknown; user?: unknown };
  const clusterEntry = list<KubeconfigCluster>('clusters').find((c) => c.name === ctx.cluster);
  const userEntry = list<KubeconfigUser>('users').find((u) => u.name === ctx.user);
  if (clusterEntry === undefined)
    throw new InvalidCredentialsError(`the context names cluster ${JSON.stringify(ctx.cluster)}, which the kubeconfig does not define`);
  if (userEntry === undefined) throw new InvalidCredentialsError(`the context names user ${JSON.stringify(ctx.user)}, which the kubeconfig does not define`);
  const cluster = clusterEntry['cluster'] ?? {};
  const user = userEntry['user'] ?? {};

  // Refusals first: nothing here is ever run or read from the operator's disk.
  if (user['exec'] !== undefined)
    throw new InvalidCredentialsError(
      'the user runs a command (exec): refused, a kubeconfig in a Secret must not run code in the operator; use a token or a client certificate',
    );
  if (user['auth-provider'] !== undefined)
    throw new InvalidCredentialsError('the user uses an auth-provider plugin: refused; use a token or a client certificate');
  for (const field of FILE_FIELDS.cluster)
    if (cluster[field] !== undefined) throw new InvalidCredentialsError(`the cluster reads a file (${field}): refused; embed it as ${field}-data`);
  for (const field of FILE_FIELDS.user)
    if (user[field] !== undefined)
      throw new InvalidCredentialsError(`the user reads a file (${field}): refused; embed it${field.startsWith('token') ? ' as token' : ` as ${field}-data`}`);
  if (cluster['insecure-skip-tls-verify'] === true && options.allowInsecureTLS !== true) {
    throw new InvalidCredentialsError(
      'insecure-skip-tls-verify is set: refused (the operator would send credentials to whoever answers); give certificate-authority-data',
    );
  }
  if (cluster['proxy-url'] !== undefined) throw new InvalidCredentialsError('proxy-url is not supported');

  const server = checkServer(cluster['server'], options, 'the cluster');
  const caData =
    cluster['certificate-authority-data'] === undefined ? undefined : decodePem(cluster['certificate-authority-data'], 'certificate-authority-data');
  const tlsServerName = typeof cluster['tls-server-name'] === 'string' ? cluster['tls-server-name'] : undefined;
  let auth: RemoteAuth;
  if (typeof user['token'] === 'string' && user['token'] !== '') auth = { kind: 'token', token: user['token'].trim() };
  else if (user['client-certificate-data'] !== undefined || user['client-key-data'] !== undefined) {
    auth = {
      kind: 'clientCertificate',
      certData: decodePem(user['client-certificate-data'], 'client-certificate-data'),
      keyData: decodePem(user['client-key-data'], 'client-key-data'),
    };
  } else if (typeof user['username'] === 'string' && typeof user['password'] === 'string')
    auth = { kind: 'basic', username: user['username'], password: user['password'] };
  else throw new InvalidCredentialsError('the user has no credentials (token, client certificate, or username and password)');
  return {
    server,
    ...(caData === undefined ? {} : { caData }),
    ...(tlsServerName === undefined ? {} : { tlsServerName }),
    ...(cluster['insecure-skip-tls-verify'] === true ? { insecureSkipTLSVerify: true } : {}),
    auth,
  };
}

/** `server` + CA + token, the form without a kubeconfig. */
export function credentialsFromParts(parts: { server: string; caPem?: string; token: string }, options: CredentialOptions = {}): RemoteCredentials {
  const server = checkServer(parts.server, options, 'spec.server');
  if (parts.token.trim() === '') throw new InvalidCredentialsError('the token is empty');
  if (parts.caPem !== undefined && !parts.caPem.includes('-----BEGIN ')) throw new InvalidCredentialsError('the CA is not a PEM certificate');
  return { server, ...(parts.caPem === undefined ? {} : { caData: parts.caPem }), auth: { kind: 'token', token: parts.token.trim() } };
}

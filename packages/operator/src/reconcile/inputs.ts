// What a ConfigSync reads besides Git: its Git credentials, CA and proxy, and its values, read the same way by the operator
// and by `syncline diff`, so a preview renders exactly what the operator would.
import { KubeApiError, type KubeRest } from '@syncline/kube';
import { layerValues, parseValues, type Values } from '@syncline/render';
import { gitAccessFromSecretData, proxyFromSecretData, type GitAuth, type GitConnection, type GitProxy } from '@syncline/source-git';
import type { ConfigSyncSpec } from '@syncline/api';
import { Reason } from '@syncline/runtime';

/** An error that a spec or source change must fix: no backoff, the sync waits for that change. */
export class StallError extends Error {
  readonly reason: (typeof Reason)[keyof typeof Reason];
  constructor(reason: (typeof Reason)[keyof typeof Reason], message: string) {
    super(message);
    this.reason = reason;
  }
}

/** How a ConfigSync reaches its repository: credentials and CA from secretRef, a proxy from proxySecretRef. */
export type GitAccess = { auth: GitAuth | undefined; connection: GitConnection | undefined };

export async function readGitAccess(
  rest: KubeRest,
  namespace: string,
  git: { secretRef?: { name: string } | undefined; proxySecretRef?: { name: string } | undefined },
): Promise<GitAccess> {
  const data = async (field: string, name: string): Promise<Record<string, string> | undefined> => {
    const secret = await readObject<{ data?: Record<string, string> }>(rest, `/api/v1/namespaces/${namespace}/secrets/${name}`);
    if (secret === undefined) throw new StallError(Reason.FetchFailed, `the Secret ${namespace}/${name} named in spec.source.git.${field} does not exist`);
    return secret.data;
  };
  const invalid = (name: string, error: unknown): StallError =>
    new StallError(Reason.FetchFailed, `the Secret ${namespace}/${name}: ${error instanceof Error ? error.message : String(error)}`);
  let auth: GitAuth | undefined;
  let caCert: string | undefined;
  let proxy: GitProxy | undefined;
  if (git.secretRef !== undefined) {
    const name = git.secretRef.name;
    const secretData = await data('secretRef', name);
    try {
      // gitAccessFromSecretData decodes the base64 itself (decoding here too would garble every credential).
      ({ auth, caCert } = gitAccessFromSecretData(secretData, `Secret ${namespace}/${name}`));
    } catch (error) {
      throw invalid(name, error);
    }
  }
  if (git.proxySecretRef !== undefined) {
    const name = git.proxySecretRef.name;
    const secretData = await data('proxySecretRef', name);
    try {
      proxy = proxyFromSecretData(secretData);
    } catch (error) {
      throw invalid(name, error);
    }
  }
  return { auth, connection: caCert === undefined && proxy === undefined ? undefined : { caCert, proxy } };
}

export async function readValues(rest: KubeRest, namespace: string, spec: ConfigSyncSpec): Promise<Values> {
  const layers: (Values | undefined)[] = [spec.values];
  for (const source of spec.valuesFrom ?? []) {
    const path = `/api/v1/namespaces/${namespace}/${source.kind === 'Secret' ? 'secrets' : 'configmaps'}/${source.name}`;
    const found = await readObject<{ data?: Record<string, string> }>(rest, path);
    const data = found === undefined ? undefined : source.kind === 'Secret' ? decodeData(found.data) : found.data;
    const text = data?.[source.key];
    const origin = `${source.kind} ${namespace}/${source.name} key ${source.key}`;
    if (text === undefined) {
      if (source.optional) continue;
      throw new StallError(Reason.RenderFailed, `valuesFrom: ${origin} does not exist`);
    }
    layers.push(parseValues(text, origin));
  }
  // Nulls stay: a Helm render deletes the chart defaults they name; Handlebars drops them (layerValues).
  return layerValues(layers, { keepNulls: true });
}

async function readObject<T>(rest: KubeRest, path: string): Promise<T | undefined> {
  try {
    return await rest.request<T>({ method: 'GET', path });
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404) return undefined;
    throw error;
  }
}

function decodeData(data: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

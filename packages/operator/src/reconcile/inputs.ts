// What a ConfigSync reads besides Git: its Git credentials and its values, read the same way by the operator
// and by `syncline diff`, so a preview renders exactly what the operator would.
import { KubeApiError, type KubeRest } from '@syncline/kube';
import { layerValues, parseValues, type Values } from '@syncline/render';
import { authFromSecretData, type GitAuth } from '@syncline/source-git';
import type { ConfigSyncSpec } from '../api/v1alpha1.ts';
import { Reason } from './conditions.ts';

/** An error that a spec or source change must fix: no backoff, the sync waits for that change. */
export class StallError extends Error {
  readonly reason: (typeof Reason)[keyof typeof Reason];
  constructor(reason: (typeof Reason)[keyof typeof Reason], message: string) {
    super(message);
    this.reason = reason;
  }
}

export async function readGitAuth(rest: KubeRest, namespace: string, secretName: string | undefined): Promise<GitAuth | undefined> {
  if (secretName === undefined) return undefined;
  const secret = await readObject<{ data?: Record<string, string> }>(rest, `/api/v1/namespaces/${namespace}/secrets/${secretName}`);
  if (secret === undefined) throw new StallError(Reason.FetchFailed, `the Secret ${namespace}/${secretName} named in spec.source.git.secretRef does not exist`);
  try {
    // authFromSecretData decodes the base64 itself (decoding here too would garble every credential).
    return authFromSecretData(secret.data, `Secret ${namespace}/${secretName}`);
  } catch (error) {
    throw new StallError(Reason.FetchFailed, `the Secret ${namespace}/${secretName}: ${error instanceof Error ? error.message : String(error)}`);
  }
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
  return layerValues(layers);
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

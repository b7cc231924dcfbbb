// Shared pieces of the end-to-end tests: CRDs installed once, typed access to ConfigSyncs, polling.
import { CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { createKubeRest, installCrds as installOperatorCrds, type ConfigSync } from '@syncline/operator';
import { testKubeConfig } from '@syncline/test-support/kube';

export const kc = testKubeConfig();
export const core = kc.makeApiClient(CoreV1Api);
// client-node's typed serializer drops what its models do not know (x-kubernetes-* keys of a CRD schema,
// so the API server would then prune spec.values): CRDs and ConfigSyncs go through a plain REST client.
export const rest = await createKubeRest(kc);
const csPath = (namespace: string, name: string): string => `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs/${name}`;

export async function installCrds(): Promise<void> {
  await installOperatorCrds(rest, { fieldManager: 'syncline-tests' });
}

export async function eventually<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last !== undefined ? ` (last error: ${last instanceof Error ? last.message : JSON.stringify(last)})` : ''}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

export function configSync(namespace: string, name: string, spec: Record<string, unknown>): KubernetesObject {
  return { apiVersion: 'syncline.dev/v1alpha1', kind: 'ConfigSync', metadata: { name, namespace }, spec } as KubernetesObject;
}

export async function applyConfigSync(object: KubernetesObject): Promise<void> {
  await rest.request({
    method: 'PATCH',
    path: csPath(object.metadata?.namespace ?? 'default', object.metadata?.name ?? ''),
    query: { fieldManager: 'syncline-tests', force: true },
    contentType: 'application/apply-patch+yaml',
    body: object,
  });
}

export async function patchConfigSync(namespace: string, name: string, patch: Record<string, unknown>): Promise<void> {
  await rest.request({ method: 'PATCH', path: csPath(namespace, name), contentType: 'application/merge-patch+json', body: patch });
}

export async function deleteConfigSync(namespace: string, name: string): Promise<void> {
  await rest.request({ method: 'DELETE', path: csPath(namespace, name) });
}

export async function readConfigSync(namespace: string, name: string): Promise<ConfigSync> {
  return rest.request<ConfigSync>({ method: 'GET', path: csPath(namespace, name) });
}

export function condition(cs: ConfigSync, type: string): { status: string; reason: string; message: string } | undefined {
  return cs.status?.conditions?.find((c) => c.type === type);
}

/** The ConfigSync once its Ready condition matches, observed for the current generation. */
export function waitForReady(namespace: string, name: string, check: (cs: ConfigSync) => boolean = () => true, timeoutMs = 30_000): Promise<ConfigSync> {
  return untilConfigSync(namespace, name, (cs) => condition(cs, 'Ready')?.status === 'True' && check(cs), 'Ready', timeoutMs);
}

/**
 * The ConfigSync once the operator has observed its current generation and `check` holds (`what` says what
 * is awaited); on timeout the error carries the last status seen.
 */
export async function untilConfigSync(
  namespace: string,
  name: string,
  check: (cs: ConfigSync) => boolean,
  what: string,
  timeoutMs = 90_000,
): Promise<ConfigSync> {
  let last: ConfigSync | undefined;
  try {
    return await eventually(
      async () => {
        const cs = (last = await readConfigSync(namespace, name));
        return cs.status?.observedGeneration === cs.metadata.generation && check(cs) ? cs : undefined;
      },
      `${namespace}/${name}: ${what}`,
      timeoutMs,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; last status: ${JSON.stringify(last?.status)}`);
  }
}

export async function configMapData(namespace: string, name: string): Promise<Record<string, string> | undefined> {
  try {
    return (await core.readNamespacedConfigMap({ name, namespace })).data ?? {};
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  }
}

/** A ConfigMap manifest as it would sit in a repo; `data` is its indented data lines, template text allowed. */
export function configMapYaml(name: string, data: string): string {
  return `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n${data}\n`;
}

// Kubernetes clients for tests: the admin and restricted identities of the shared control plane, and a
// namespace per test that cleans up after itself (`await using ns = await testNamespace()`).
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';

export const ADMIN_CONTEXT = 'admin';
export const RESTRICTED_CONTEXT = 'restricted';
/** The user name of the restricted identity: RBAC bindings in tests name it. */
export const RESTRICTED_USER = 'syncline-restricted';

export function testKubeconfigPath(): string {
  return inject('kubeconfig');
}

/** A KubeConfig for the test cluster, for the admin (default) or the restricted identity. */
export function testKubeConfig(identity: 'admin' | 'restricted' = 'admin'): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(testKubeconfigPath());
  if (identity === 'restricted') {
    if (kc.getContextObject(RESTRICTED_CONTEXT) === null) {
      throw new Error(`the test kubeconfig has no "${RESTRICTED_CONTEXT}" context; RBAC tests need the test control plane's restricted identity`);
    }
    kc.setCurrentContext(RESTRICTED_CONTEXT);
  }
  return kc;
}

export type TestNamespace = {
  readonly name: string;
  [Symbol.asyncDispose](): Promise<void>;
};

/** Creates a uniquely named namespace; disposing it deletes it (the namespace controller empties it). */
export async function testNamespace(options: { prefix?: string; labels?: Record<string, string> } = {}): Promise<TestNamespace> {
  const core = testKubeConfig().makeApiClient(CoreV1Api);
  const name = `${options.prefix ?? 't'}-${randomBytes(4).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name, labels: { 'syncline.dev/test': 'true', ...options.labels } } } });
  return {
    name,
    async [Symbol.asyncDispose]() {
      try {
        await core.deleteNamespace({ name, propagationPolicy: 'Background' });
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    },
  };
}

export function isNotFound(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'code' in error && error.code === 404;
}

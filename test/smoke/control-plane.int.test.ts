// Proves the test control plane is a real Kubernetes: SSA conflicts, CRDs and status subresources,
// watches, RBAC, the namespace controller and the garbage collector all behave as in a cluster.
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  Watch,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { RESTRICTED_USER, isNotFound, testKubeConfig, testNamespace } from '@syncline/test-support/kube';

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);

async function eventually<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 45_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** undefined while the read succeeds, true once it answers 404. */
async function gone(read: () => Promise<unknown>): Promise<true | undefined> {
  try {
    await read();
    return undefined;
  } catch (error) {
    if (isNotFound(error)) return true;
    throw error;
  }
}

function statusCode(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null && 'code' in error ? Number(error.code) : undefined;
}

describe('the test control plane', () => {
  it('server-side apply by two field managers conflicts (409) and force resolves it', async () => {
    await using ns = await testNamespace();
    const objects = KubernetesObjectApi.makeApiClient(kc);
    const configMap = (value: string): KubernetesObject & { data: Record<string, string> } => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'shared', namespace: ns.name },
      data: { key: value },
    });
    // given a field owned by manager "first"
    await objects.patch(configMap('one'), undefined, undefined, 'first', false, PatchStrategy.ServerSideApply);

    // when "second" applies a different value without force, then the API server refuses with 409
    const conflict = await objects.patch(configMap('two'), undefined, undefined, 'second', false, PatchStrategy.ServerSideApply).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(statusCode(conflict)).toBe(409);
    expect(String((conflict as { body?: unknown }).body)).toContain('first');

    // when it forces, then it takes the field over
    await objects.patch(configMap('two'), undefined, undefined, 'second', true, PatchStrategy.ServerSideApply);
    const live = await core.readNamespacedConfigMap({ name: 'shared', namespace: ns.name });
    expect(live.data?.['key']).toBe('two');
    expect(live.metadata?.managedFields?.map((m) => m.manager)).toContain('second');
  });

  it('establishes a CRD and serves its status subresource', async () => {
    await using ns = await testNamespace();
    const group = `smoke${randomBytes(3).toString('hex')}.syncline.dev`;
    const extensions = kc.makeApiClient(ApiextensionsV1Api);
    const crdName = `widgets.${group}`;
    await extensions.createCustomResourceDefinition({
      body: {
        metadata: { name: crdName },
        spec: {
          group,
          scope: 'Namespaced',
          names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              subresources: { status: {} },
              schema: {
                openAPIV3Schema: {
                  type: 'object',
                  properties: {
                    spec: { type: 'object', properties: { size: { type: 'integer' } } },
                    status: { type: 'object', properties: { phase: { type: 'string' } } },
                  },
                },
              },
            },
          ],
        },
      },
    });
    try {
      await eventually(async () => {
        const crd = await extensions.readCustomResourceDefinition({ name: crdName });
        return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') === true ? true : undefined;
      }, 'the CRD to be Established');

      const custom = kc.makeApiClient(CustomObjectsApi);
      const body = { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w' }, spec: { size: 3 }, status: { phase: 'ignored' } };
      const created = await eventually(async () => {
        try {
          return (await custom.createNamespacedCustomObject({ group, version: 'v1', namespace: ns.name, plural: 'widgets', body })) as { status?: unknown };
        } catch (error) {
          if (statusCode(error) === 404) return undefined; // discovery has not caught up with the new CRD yet
          throw error;
        }
      }, 'the Widget resource to be served');
      // status is a subresource: a create ignores it …
      expect(created.status).toBeUndefined();
      // … and a patch of /status sets it (client-node sends a JSON patch for this call)
      const patched = (await custom.patchNamespacedCustomObjectStatus({
        group,
        version: 'v1',
        namespace: ns.name,
        plural: 'widgets',
        name: 'w',
        body: [{ op: 'add', path: '/status', value: { phase: 'Ready' } }],
      })) as { status?: { phase?: string } };
      expect(patched.status?.phase).toBe('Ready');
    } finally {
      await extensions.deleteCustomResourceDefinition({ name: crdName });
    }
  });

  it('delivers ADDED, MODIFIED and DELETED to a watch', async () => {
    await using ns = await testNamespace();
    const seen: string[] = [];
    const watch = new Watch(kc);
    const controller = await watch.watch(
      `/api/v1/namespaces/${ns.name}/configmaps`,
      { fieldSelector: 'metadata.name=watched' },
      (phase: string) => seen.push(phase),
      () => {},
    );
    try {
      await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'watched' }, data: { a: '1' } } });
      await core.replaceNamespacedConfigMap({ name: 'watched', namespace: ns.name, body: { metadata: { name: 'watched' }, data: { a: '2' } } });
      await core.deleteNamespacedConfigMap({ name: 'watched', namespace: ns.name });
      await eventually(() => Promise.resolve(seen.length >= 3 ? true : undefined), 'three watch events', 15_000);
      expect(seen).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
    } finally {
      controller.abort();
    }
  });

  it('answers the restricted identity 403 until RBAC grants it access', async () => {
    await using ns = await testNamespace();
    const restricted = testKubeConfig('restricted').makeApiClient(CoreV1Api);
    const denied = await restricted.listNamespacedConfigMap({ namespace: ns.name }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(statusCode(denied)).toBe(403);

    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns.name,
      body: { metadata: { name: 'read-configmaps' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }] },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns.name,
      body: {
        metadata: { name: 'read-configmaps' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-configmaps' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: RESTRICTED_USER }],
      },
    });
    const allowed = await eventually(() => restricted.listNamespacedConfigMap({ namespace: ns.name }).catch(() => undefined), 'RBAC to allow the list');
    expect(Array.isArray(allowed.items)).toBe(true);
    // still denied outside what the Role grants
    const stillDenied = await restricted.listNamespacedSecret({ namespace: ns.name }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(statusCode(stillDenied)).toBe(403);
  });

  it('removes a deleted namespace and its contents (namespace controller)', async () => {
    const ns = await testNamespace();
    await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'content' } } });
    await ns[Symbol.asyncDispose]();
    await eventually(() => gone(() => core.readNamespace({ name: ns.name })), `namespace ${ns.name} to disappear`, 90_000);
  }, 120_000);

  it('garbage-collects dependents when their owner is deleted', async () => {
    await using ns = await testNamespace();
    const owner = await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'owner' } } });
    await core.createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name: 'dependent', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata?.uid ?? '' }] } },
    });
    await core.deleteNamespacedConfigMap({ name: 'owner', namespace: ns.name, propagationPolicy: 'Background' });
    await eventually(
      () => gone(() => core.readNamespacedConfigMap({ name: 'dependent', namespace: ns.name })),
      'the dependent to be garbage-collected',
      60_000,
    );
  }, 90_000);
});

// Installs the CRDs of the API (@syncline/api) (server-side apply, raw JSON: client-node's typed serializer
// would drop the x-kubernetes-* keys of the schemas) and waits until the API server serves them.
import { type KubeRest } from '@syncline/kube';
import { customResourceDefinitions } from '@syncline/api';

export async function installCrds(rest: KubeRest, options: { fieldManager?: string; timeoutMs?: number } = {}): Promise<void> {
  const crds = customResourceDefinitions();
  for (const crd of crds) {
    await rest.request({
      method: 'PATCH',
      path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${(crd['metadata'] as { name: string }).name}`,
      query: { fieldManager: options.fieldManager ?? 'syncline', force: true },
      contentType: 'application/apply-patch+yaml',
      body: crd,
    });
  }
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (const crd of crds) {
    const spec = crd['spec'] as { group: string; versions: { name: string }[]; names: { plural: string } };
    const path = `/apis/${spec.group}/${spec.versions[0]?.name ?? ''}/${spec.names.plural}`;
    for (;;) {
      try {
        await rest.request({ method: 'GET', path, query: { limit: 1 } });
        break;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }
}

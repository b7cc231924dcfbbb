// A namespace's worth of objects of every kind a NamespaceReplication copies by default (workloads, config,
// network, RBAC, autoscaling and disruption budgets), for the benches and the soak that replicate one, and
// the check that another namespace (or cluster) holds them.
import type { KubeRest } from '@syncline/operator';

export type Creation = { readonly kind: string; readonly name: string; readonly path: string; readonly body: Record<string, unknown> };

/** Collection path of a kind in a namespace: core kinds under /api/v1, the others under their group's version. */
export function collectionPath(namespace: string, plural: string, groupVersion: string): string {
  return groupVersion === 'v1' ? `/api/v1/namespaces/${namespace}/${plural}` : `/apis/${groupVersion}/namespaces/${namespace}/${plural}`;
}

type KindMaker = {
  readonly kind: string;
  readonly plural: string;
  readonly groupVersion: string;
  readonly weight: number;
  spec(name: string, i: number, namespace: string): Record<string, unknown>;
};

const pod = (app: string): Record<string, unknown> => ({
  metadata: { labels: { app } },
  spec: { containers: [{ name: 'app', image: 'nginx:1.27', ports: [{ containerPort: 80 }] }] },
});

/** The fifteen default kinds; the weights share out what is left after one of each (ConfigMaps take the rounding). */
const KINDS: readonly KindMaker[] = [
  { kind: 'ConfigMap', plural: 'configmaps', groupVersion: 'v1', weight: 30, spec: (_, i) => ({ data: { v: `value-${i}`, config: 'x'.repeat(200) } }) },
  { kind: 'Secret', plural: 'secrets', groupVersion: 'v1', weight: 15, spec: (_, i) => ({ stringData: { password: `pw-${i}` } }) },
  {
    kind: 'Service',
    plural: 'services',
    groupVersion: 'v1',
    weight: 10,
    spec: (name, i) => ({ spec: { ...(i % 5 === 0 ? { clusterIP: 'None' } : {}), ports: [{ port: 80 }], selector: { app: name } } }),
  },
  { kind: 'ServiceAccount', plural: 'serviceaccounts', groupVersion: 'v1', weight: 8, spec: () => ({}) },
  {
    kind: 'PersistentVolumeClaim',
    plural: 'persistentvolumeclaims',
    groupVersion: 'v1',
    weight: 3,
    spec: () => ({ spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }),
  },
  {
    kind: 'Deployment',
    plural: 'deployments',
    groupVersion: 'apps/v1',
    weight: 8,
    spec: (name, i) => ({ spec: { replicas: 1 + (i % 3), selector: { matchLabels: { app: name } }, template: pod(name) } }),
  },
  {
    kind: 'StatefulSet',
    plural: 'statefulsets',
    groupVersion: 'apps/v1',
    weight: 3,
    spec: (name) => ({ spec: { replicas: 1, serviceName: name, selector: { matchLabels: { app: name } }, template: pod(name) } }),
  },
  {
    kind: 'DaemonSet',
    plural: 'daemonsets',
    groupVersion: 'apps/v1',
    weight: 2,
    spec: (name) => ({ spec: { selector: { matchLabels: { app: name } }, template: pod(name) } }),
  },
  {
    kind: 'CronJob',
    plural: 'cronjobs',
    groupVersion: 'batch/v1',
    weight: 3,
    spec: () => ({
      spec: { schedule: '0 * * * *', jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } } } } },
    }),
  },
  {
    kind: 'Ingress',
    plural: 'ingresses',
    groupVersion: 'networking.k8s.io/v1',
    weight: 3,
    spec: (name) => ({
      spec: {
        rules: [{ host: `${name}.example.com`, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name, port: { number: 80 } } } }] } }],
      },
    }),
  },
  {
    kind: 'NetworkPolicy',
    plural: 'networkpolicies',
    groupVersion: 'networking.k8s.io/v1',
    weight: 3,
    spec: (name) => ({ spec: { podSelector: { matchLabels: { app: name } }, policyTypes: ['Ingress'] } }),
  },
  {
    kind: 'Role',
    plural: 'roles',
    groupVersion: 'rbac.authorization.k8s.io/v1',
    weight: 4,
    spec: () => ({ rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }] }),
  },
  {
    kind: 'RoleBinding',
    plural: 'rolebindings',
    groupVersion: 'rbac.authorization.k8s.io/v1',
    weight: 4,
    spec: (_, i, namespace) => ({
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `role-${i}` },
      subjects: [{ kind: 'ServiceAccount', name: `serviceaccount-${i}`, namespace }],
    }),
  },
  {
    kind: 'HorizontalPodAutoscaler',
    plural: 'horizontalpodautoscalers',
    groupVersion: 'autoscaling/v2',
    weight: 2,
    spec: (_, i) => ({ spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: `deployment-${i}` }, minReplicas: 1, maxReplicas: 3 } }),
  },
  {
    kind: 'PodDisruptionBudget',
    plural: 'poddisruptionbudgets',
    groupVersion: 'policy/v1',
    weight: 2,
    spec: (_, i) => ({ spec: { minAvailable: 1, selector: { matchLabels: { app: `deployment-${i}` } } } }),
  },
];

/** The number of default kinds (every one is in what defaultKindObjects returns). */
export const DEFAULT_KIND_COUNT = KINDS.length;

/** Exactly `count` (at least one per kind) objects for `namespace`, named `<kind>-<i>` in lower case. */
export function defaultKindObjects(namespace: string, count: number): Creation[] {
  const rest = Math.max(0, count - KINDS.length);
  const total = KINDS.reduce((n, k) => n + k.weight, 0);
  const sizes = KINDS.map((k) => 1 + Math.floor((rest * k.weight) / total));
  sizes[0] = Math.max(1, count - sizes.slice(1).reduce((a, b) => a + b, 0));
  return KINDS.flatMap((k, n) =>
    Array.from({ length: sizes[n] ?? 1 }, (_, i) => {
      const name = `${k.kind.toLowerCase()}-${i}`;
      const { metadata, ...fields } = k.spec(name, i, namespace) as { metadata?: Record<string, unknown> };
      return {
        kind: k.kind,
        name,
        path: collectionPath(namespace, k.plural, k.groupVersion),
        body: { apiVersion: k.groupVersion, kind: k.kind, metadata: { name, labels: { tier: 'replicated' }, ...metadata }, ...fields },
      };
    }),
  );
}

/** The same collection path in another namespace. */
export function inNamespace(path: string, from: string, to: string): string {
  return path.replace(`/namespaces/${from}/`, `/namespaces/${to}/`);
}

/** `Kind/name` of every object of `objects` (created in `from`) that `client` lacks in `to`. */
export async function missingObjects(client: KubeRest, objects: readonly Creation[], from: string, to: string): Promise<string[]> {
  const present = new Set<string>();
  for (const path of new Set(objects.map((o) => o.path))) {
    const list = await client.request<{ items: { metadata: { name: string } }[] }>({ method: 'GET', path: inNamespace(path, from, to) });
    for (const item of list.items) present.add(`${path}/${item.metadata.name}`);
  }
  return objects.filter((o) => !present.has(`${o.path}/${o.name}`)).map((o) => `${o.kind}/${o.name}`);
}

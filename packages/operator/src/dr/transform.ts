// Disaster recovery, the pure half: which objects of a namespace are replicated to the standby cluster, and
// how each lands there (a table of kinds). Workloads land scaled to zero with their count recorded, CronJobs
// suspended, Services and claims without what belongs to the primary cluster. Failover reads those records
// back from the standby's own objects, so it needs nothing from the primary.
import type { KubeObject } from '@syncline/apply';
import { sanitizeCopy, type MirrorKeys } from '../mirror/index.ts';

/** What a failover scales back up (or resumes): see promoted. */
export const PROMOTED_KINDS = [
  { group: 'apps', kind: 'Deployment' },
  { group: 'apps', kind: 'StatefulSet' },
  { group: 'batch', kind: 'CronJob' },
] as const;

type Json = Record<string, unknown>;
const isRecord = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

export const ORIGINAL_REPLICAS_ANNOTATION = 'syncline.dev/original-replicas';
export const ORIGINAL_SUSPEND_ANNOTATION = 'syncline.dev/original-suspend';
export const DR_NOTE_ANNOTATION = 'syncline.dev/dr-note';
/** Label on a source object: `exclude` keeps it out of the standby. */
export const DR_LABEL = 'syncline.dev/dr';

export type ResourceType = { readonly group: string; readonly kind: string };

/** What a NamespaceReplication copies when resourceTypes is not given: workloads, config, network and RBAC. */
export const DEFAULT_RESOURCE_TYPES: readonly ResourceType[] = [
  { group: 'apps', kind: 'Deployment' },
  { group: 'apps', kind: 'StatefulSet' },
  { group: 'apps', kind: 'DaemonSet' },
  { group: 'batch', kind: 'CronJob' },
  { group: '', kind: 'Service' },
  { group: '', kind: 'ConfigMap' },
  { group: '', kind: 'Secret' },
  { group: '', kind: 'ServiceAccount' },
  { group: '', kind: 'PersistentVolumeClaim' },
  { group: 'networking.k8s.io', kind: 'Ingress' },
  { group: 'networking.k8s.io', kind: 'NetworkPolicy' },
  { group: 'rbac.authorization.k8s.io', kind: 'Role' },
  { group: 'rbac.authorization.k8s.io', kind: 'RoleBinding' },
  { group: 'autoscaling', kind: 'HorizontalPodAutoscaler' },
  { group: 'policy', kind: 'PodDisruptionBudget' },
];

/** Kinds that are always derived from others (controllers recreate them in the standby): never copied. */
const DERIVED_KINDS = new Set([
  '/Pod',
  'apps/ReplicaSet',
  'apps/ControllerRevision',
  '/Endpoints',
  'discovery.k8s.io/EndpointSlice',
  '/Event',
  'events.k8s.io/Event',
  'coordination.k8s.io/Lease',
]);

/** `group/Kind` → the type, from `Kind`, `Kind.group` (kubectl's notation) or `group/Kind`. */
export function parseResourceType(text: string): ResourceType {
  if (text.includes('/')) {
    const [group = '', kind = ''] = text.split('/');
    return { group, kind };
  }
  const dot = text.indexOf('.');
  return dot === -1 ? { group: '', kind: text } : { group: text.slice(dot + 1), kind: text.slice(0, dot) };
}

export type Exclusion = { readonly kind: string; readonly name?: string | undefined };

const groupOf = (apiVersion: string): string => (apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '');

/** Why `object` is not replicated, or undefined when it is. */
export function skipReason(object: KubeObject, exclude: readonly Exclusion[]): string | undefined {
  const group = groupOf(object.apiVersion);
  if (DERIVED_KINDS.has(`${group}/${object.kind}`)) return 'derived: its controller recreates it';
  const owners = object.metadata['ownerReferences'];
  if (Array.isArray(owners) && owners.some((o) => isRecord(o) && o['controller'] === true)) return 'derived: it has a controller owner';
  if (object.kind === 'Secret' && group === '' && object['type'] === 'kubernetes.io/service-account-token')
    return 'a service-account token belongs to this cluster';
  if (object.kind === 'ConfigMap' && group === '' && object.metadata.name === 'kube-root-ca.crt') return "this cluster's CA bundle";
  if (object.kind === 'ServiceAccount' && group === '' && object.metadata.name === 'default') return "every namespace's default account";
  if (object.metadata.labels?.[DR_LABEL] === 'exclude') return `labelled ${DR_LABEL}: exclude`;
  if (exclude.some((e) => e.kind === object.kind && (e.name === undefined || e.name === object.metadata.name))) return 'excluded by spec.exclude';
  return undefined;
}

export type TransformOptions = {
  readonly namespace: string;
  readonly workloads: 'Zero' | 'Keep';
  readonly storageClassMap?: Readonly<Record<string, string>> | undefined;
  /** Keep Services' nodePorts (they may collide with the standby's own). */
  readonly keepNodePorts?: boolean | undefined;
  readonly keys: MirrorKeys;
};

type Rule = { readonly why: string; readonly apply: (copy: Json, source: KubeObject, options: TransformOptions) => void };

const annotate = (copy: Json, key: string, value: string): void => {
  const metadata = copy['metadata'] as Json;
  metadata['annotations'] = { ...(isRecord(metadata['annotations']) ? metadata['annotations'] : {}), [key]: value };
};

const scaleDown: Rule = {
  why: 'a warm standby runs nothing: replicas land at 0, the source count in original-replicas (a changed count updates the annotation, not the replicas)',
  apply: (copy, source, options) => {
    const spec = copy['spec'];
    if (!isRecord(spec)) return;
    const original = typeof (source['spec'] as Json | undefined)?.['replicas'] === 'number' ? ((source['spec'] as Json)['replicas'] as number) : 1;
    annotate(copy, ORIGINAL_REPLICAS_ANNOTATION, String(original));
    spec['replicas'] = options.workloads === 'Zero' ? 0 : original;
  },
};

/** The table of kinds, keyed `group/Kind`. Every copy is sanitized first (mirror/copy.ts). */
export const DR_RULES: Readonly<Record<string, readonly Rule[]>> = {
  'apps/Deployment': [scaleDown],
  'apps/StatefulSet': [scaleDown],
  'batch/CronJob': [
    {
      why: 'both clusters would run the jobs: CronJobs land suspended, the source setting in original-suspend',
      apply: (copy, source) => {
        const spec = copy['spec'];
        if (!isRecord(spec)) return;
        annotate(copy, ORIGINAL_SUSPEND_ANNOTATION, String((source['spec'] as Json | undefined)?.['suspend'] === true));
        spec['suspend'] = true;
      },
    },
  ],
  '/Service': [
    {
      why: "nodePorts may collide with the standby's own Services: dropped unless kept (clusterIP, healthCheckNodePort always go: sanitize)",
      apply: (copy, source, options) => {
        if (options.keepNodePorts !== true) return;
        const ports = (copy['spec'] as Json | undefined)?.['ports'];
        const sourcePorts = (source['spec'] as Json | undefined)?.['ports'];
        if (!Array.isArray(ports) || !Array.isArray(sourcePorts)) return;
        ports.forEach((port, i) => {
          const nodePort = (sourcePorts[i] as Json | undefined)?.['nodePort'];
          if (isRecord(port) && typeof nodePort === 'number') port['nodePort'] = nodePort;
        });
      },
    },
  ],
  '/PersistentVolumeClaim': [
    {
      why: "the standby's storage classes may differ: storageClassMap renames them (the volume binding goes: sanitize)",
      apply: (copy, _source, options) => {
        const spec = copy['spec'];
        if (!isRecord(spec) || typeof spec['storageClassName'] !== 'string') return;
        const mapped = options.storageClassMap?.[spec['storageClassName']];
        if (mapped !== undefined) spec['storageClassName'] = mapped;
      },
    },
  ],
  'autoscaling/HorizontalPodAutoscaler': [
    {
      why: 'copied so failover has it, but inert while its target has 0 replicas (an HPA never scales from 0)',
      apply: (copy) => annotate(copy, DR_NOTE_ANNOTATION, 'inert in the standby: its target has 0 replicas until failover'),
    },
  ],
};

/** The object as it lands in the standby: sanitized, moved to the destination namespace, the kind's rules applied. */
export function standbyCopy(source: KubeObject, options: TransformOptions): KubeObject {
  const copy = sanitizeCopy(source, { keys: options.keys }) as KubeObject & Json;
  copy.metadata = { ...copy.metadata, namespace: options.namespace };
  for (const rule of DR_RULES[`${groupOf(source.apiVersion)}/${source.kind}`] ?? []) rule.apply(copy, source, options);
  return copy;
}

/**
 * Failover, from the standby's own object: the desired object with workloads at their recorded count and
 * CronJobs at their recorded suspend, or undefined when the object has nothing to restore.
 */
export function promoted(live: KubeObject, keys: MirrorKeys): KubeObject | undefined {
  const annotations = live.metadata.annotations ?? {};
  const key = `${groupOf(live.apiVersion)}/${live.kind}`;
  if ((key === 'apps/Deployment' || key === 'apps/StatefulSet') && annotations[ORIGINAL_REPLICAS_ANNOTATION] !== undefined) {
    const replicas = Number(annotations[ORIGINAL_REPLICAS_ANNOTATION]);
    if (!Number.isInteger(replicas) || replicas < 0) return undefined;
    const copy = sanitizeCopy(live, { keys }) as KubeObject & Json;
    copy['spec'] = { ...(copy['spec'] as Json), replicas };
    return copy;
  }
  if (key === 'batch/CronJob' && annotations[ORIGINAL_SUSPEND_ANNOTATION] !== undefined) {
    const copy = sanitizeCopy(live, { keys }) as KubeObject & Json;
    copy['spec'] = { ...(copy['spec'] as Json), suspend: annotations[ORIGINAL_SUSPEND_ANNOTATION] === 'true' };
    return copy;
  }
  return undefined;
}

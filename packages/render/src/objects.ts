// Rendered documents → Kubernetes objects: shape checks, namespaces from API discovery, patches, duplicates and
// a deterministic apply order.
import { RenderError, RenderErrorReason } from './errors.ts';
import { setOwn } from './yaml.ts';

export interface ObjectMeta {
  name: string;
  namespace?: string;
  [key: string]: unknown;
}

export interface KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/**
 * What the cluster serves, as the caller knows it (the operator from discovery, the CLI from a static table).
 * `undefined` means the kind is unknown: rendering then fails with an UnknownKind error, unless a
 * CustomResourceDefinition in the same render defines it.
 */
export interface ApiDiscovery {
  isNamespaced(apiVersion: string, kind: string): boolean | undefined;
}

/** Where a document came from, for error messages. */
export interface DocumentOrigin {
  readonly file: string;
  /** 0-based index of the document in its file. */
  readonly document: number;
  /** 0-based index in the document's `items` when the document is a `kind: List`. */
  readonly item?: number;
}

export interface PlacedObject {
  object: KubernetesObject;
  readonly origin: DocumentOrigin;
  /** A target patch changed it: its fields may no longer be on any line of its file. */
  patched?: boolean;
}

export interface TargetPatch {
  /** Which objects to patch: kind and name, optionally namespace and apiVersion. */
  readonly target: { readonly kind: string; readonly name: string; readonly namespace?: string; readonly apiVersion?: string };
  /** An RFC 7386 JSON merge patch. */
  readonly patch: Record<string, unknown>;
}

/** Where a document is; with `path` (e.g. `['data', 'password']`), where that key is when it can be found. */
export type Locate = (origin: DocumentOrigin, path?: readonly (string | number)[]) => { file: string; line?: number; column?: number };

const APPLY_WAVE = 'syncline.dev/apply-wave';

function isMapping(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const isHook = (annotations: unknown): boolean =>
  isMapping(annotations) && (typeof annotations['syncline.dev/hook'] === 'string' || typeof annotations['argocd.argoproj.io/hook'] === 'string');

/** Check a document is an object with apiVersion, kind and metadata.name. */
export function checkObject(document: unknown, origin: DocumentOrigin, locate: Locate): KubernetesObject {
  const fail = (detail: string): never => {
    throw new RenderError({ reason: RenderErrorReason.InvalidObject, ...locate(origin), detail: `document ${origin.document + 1}: ${detail}` });
  };
  if (!isMapping(document)) return fail('is not a mapping');
  if (typeof document.apiVersion !== 'string' || document.apiVersion === '') return fail('has no apiVersion');
  if (typeof document.kind !== 'string' || document.kind === '') return fail('has no kind');
  const metadata = document.metadata;
  if (!isMapping(metadata)) return fail(`${document.kind} has no metadata`);
  // A hook (syncline.dev/hook, argocd.argoproj.io/hook) may name itself by generateName: it stands in as the name
  // here, and the operator derives the object's name per run (reconcile/hooks.ts).
  if (
    (metadata.name === undefined || metadata.name === '') &&
    typeof metadata.generateName === 'string' &&
    metadata.generateName !== '' &&
    isHook(metadata.annotations)
  )
    metadata.name = metadata.generateName;
  if (typeof metadata.name !== 'string' || metadata.name === '') return fail(`${document.kind} has no metadata.name`);
  if (metadata.namespace !== undefined && (typeof metadata.namespace !== 'string' || metadata.namespace === '')) {
    return fail(`${document.kind}/${metadata.name} has an invalid metadata.namespace`);
  }
  // The apply order annotation (see @syncline/apply waveOf): refused here too, where the file is known.
  const wave = isMapping(metadata.annotations) ? metadata.annotations[APPLY_WAVE] : undefined;
  if (wave !== undefined && (typeof wave !== 'string' || !/^\s*[-+]?[0-9]{1,9}\s*$/.test(wave))) {
    return fail(`${document.kind}/${metadata.name}: annotation ${APPLY_WAVE} must be an integer such as "1" or "-1", not ${JSON.stringify(wave)}`);
  }
  return document as KubernetesObject;
}

/** `kind: List` (what `kubectl get -o yaml` writes) stands for its items. */
export function expandLists(document: unknown): unknown[] {
  if (isMapping(document) && document.apiVersion === 'v1' && document.kind === 'List' && Array.isArray(document.items)) return document.items as unknown[];
  return [document];
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash === -1 ? '' : apiVersion.slice(0, slash);
}

/** Scopes declared by CustomResourceDefinitions in the render itself: a CRD and its first CR in one sync. */
function crdScopes(objects: readonly PlacedObject[]): Map<string, boolean> {
  const scopes = new Map<string, boolean>();
  for (const { object } of objects) {
    if (object.kind !== 'CustomResourceDefinition' || groupOf(object.apiVersion) !== 'apiextensions.k8s.io') continue;
    const spec = object.spec;
    if (!isMapping(spec) || typeof spec.group !== 'string' || !isMapping(spec.names) || typeof spec.names.kind !== 'string') continue;
    scopes.set(`${spec.group}/${spec.names.kind}`, spec.scope === 'Namespaced');
  }
  return scopes;
}

export function placeNamespaces(objects: readonly PlacedObject[], options: { discovery: ApiDiscovery; namespace: string | undefined; locate: Locate }): void {
  const declared = crdScopes(objects);
  for (const placed of objects) {
    const { object } = placed;
    const id = `${object.kind}/${object.metadata.name}`;
    const namespaced = declared.get(`${groupOf(object.apiVersion)}/${object.kind}`) ?? options.discovery.isNamespaced(object.apiVersion, object.kind);
    if (namespaced === undefined) {
      throw new RenderError({
        reason: RenderErrorReason.UnknownKind,
        ...options.locate(placed.origin),
        detail: `${id}: the cluster does not serve ${object.kind} in ${object.apiVersion} (is its CustomResourceDefinition installed?)`,
      });
    }
    if (namespaced) {
      if (object.metadata.namespace !== undefined) continue;
      if (options.namespace === undefined || options.namespace === '') {
        throw new RenderError({
          reason: RenderErrorReason.NamespaceMismatch,
          ...options.locate(placed.origin),
          detail: `${id} is namespaced and names no namespace, and the target has none`,
        });
      }
      object.metadata.namespace = options.namespace;
    } else if (object.metadata.namespace !== undefined) {
      throw new RenderError({
        reason: RenderErrorReason.NamespaceMismatch,
        ...options.locate(placed.origin),
        detail: `${id} is cluster-scoped but sets metadata.namespace`,
      });
    }
  }
}

/** RFC 7386 JSON merge patch. Returns a new value; never writes through a prototype. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isMapping(patch)) return patch;
  const out: Record<string, unknown> = {};
  if (isMapping(target)) for (const key of Object.keys(target)) setOwn(out, key, target[key]);
  for (const key of Object.keys(patch)) {
    const value = patch[key];
    if (value === null) delete out[key];
    else setOwn(out, key, mergePatch(Object.prototype.hasOwnProperty.call(out, key) ? out[key] : undefined, value));
  }
  return out;
}

export function applyPatches(objects: PlacedObject[], patches: readonly TargetPatch[], locate: Locate): void {
  patches.forEach((patch, index) => {
    const where = `target patch ${index + 1} (${patch.target.kind}/${patch.target.name})`;
    if (!isMapping(patch.patch)) throw new RenderError({ reason: RenderErrorReason.InvalidPatch, detail: `${where}: the patch must be a mapping` });
    let matched = 0;
    for (const placed of objects) {
      const { object } = placed;
      if (object.kind !== patch.target.kind || object.metadata.name !== patch.target.name) continue;
      if (patch.target.namespace !== undefined && object.metadata.namespace !== patch.target.namespace) continue;
      if (patch.target.apiVersion !== undefined && object.apiVersion !== patch.target.apiVersion) continue;
      matched++;
      placed.patched = true;
      placed.object = checkObject(mergePatch(object, patch.patch), placed.origin, (origin) => ({
        ...locate(origin),
        file: `${locate(origin).file} after ${where}`,
      }));
    }
    if (matched === 0) throw new RenderError({ reason: RenderErrorReason.InvalidPatch, detail: `${where} matches no rendered object` });
  });
}

export function rejectDuplicates(objects: readonly PlacedObject[], locate: Locate): void {
  const seen = new Map<string, PlacedObject>();
  for (const placed of objects) {
    const { object } = placed;
    const key = `${groupOf(object.apiVersion)}/${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
    const first = seen.get(key);
    if (first !== undefined) {
      const a = locate(first.origin);
      const b = locate(placed.origin);
      const at = (l: { file: string; line?: number }) => (l.line === undefined ? l.file : `${l.file}:${l.line}`);
      throw new RenderError({
        reason: RenderErrorReason.DuplicateObject,
        ...b,
        detail: `${object.kind}/${object.metadata.name}${object.metadata.namespace === undefined ? '' : ` in ${object.metadata.namespace}`} is defined twice: in ${at(a)} and in ${at(b)}`,
      });
    }
    seen.set(key, placed);
  }
}

// Namespaces and CRDs first, then what other objects depend on (accounts, config, RBAC), then workloads; the
// rest (custom resources, webhooks) last. Ties keep file order, so the order only depends on the input.
const kindOrder = [
  'Namespace',
  'CustomResourceDefinition',
  'NetworkPolicy',
  'ResourceQuota',
  'LimitRange',
  'PodDisruptionBudget',
  'ServiceAccount',
  'Secret',
  'ConfigMap',
  'StorageClass',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'PriorityClass',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'Service',
  'DaemonSet',
  'Pod',
  'ReplicationController',
  'ReplicaSet',
  'Deployment',
  'HorizontalPodAutoscaler',
  'StatefulSet',
  'Job',
  'CronJob',
  'IngressClass',
  'Ingress',
  'APIService',
];
const kindRank = new Map(kindOrder.map((kind, index) => [kind, index]));

export function orderObjects(objects: readonly PlacedObject[]): PlacedObject[] {
  return objects
    .map((placed, index) => ({ placed, index, rank: kindRank.get(placed.object.kind) ?? kindOrder.length }))
    .sort((a, b) => a.rank - b.rank || a.index - b.index)
    .map(({ placed }) => placed);
}

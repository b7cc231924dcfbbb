// Object identity and the ownership mark: how a sync recognises what it applied.
import { hash as sha } from 'node:crypto';

/** The part of a Kubernetes object the apply package reads; every object has at least this. */
export type KubeObject = {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    managedFields?: ReadonlyArray<{ manager?: string; operation?: string; subresource?: string; fieldsV1?: unknown }>;
    [key: string]: unknown;
  };
  [key: string]: unknown;
};

/** The sync that owns applied objects: a ConfigSync (or ManifestSync) and one of its targets. */
export type Owner = { readonly namespace: string; readonly name: string; readonly target: string };

export const OWNER_LABEL = 'syncline.dev/owner';
/**
 * Readable, selectable ownership (like Flux's kustomize.toolkit.fluxcd.io/name|namespace):
 * `kubectl get all -A -l syncline.dev/name=web,syncline.dev/namespace=apps`. Informational: OWNER_LABEL and
 * OWNED_BY_ANNOTATION stay the only ownership test (prune, conflicts).
 */
export const OWNER_NAME_LABEL = 'syncline.dev/name';
export const OWNER_NAMESPACE_LABEL = 'syncline.dev/namespace';
/** The kind of the owning object: ConfigSync, ManifestSync, NamespaceReplication or Mirror. */
export const OWNER_KIND_LABEL = 'syncline.dev/kind';
/** Every label withOwnership sets: copies of an applied object drop them, the engine adds the copy's own. */
export const OWNERSHIP_LABELS: readonly string[] = [OWNER_LABEL, OWNER_NAME_LABEL, OWNER_NAMESPACE_LABEL, OWNER_KIND_LABEL];
export const OWNED_BY_ANNOTATION = 'syncline.dev/owned-by';
export const PRUNE_ANNOTATION = 'syncline.dev/prune';
/** Digest of the configuration we last applied: a changed render is told apart from drift without a write. */
export const APPLIED_DIGEST_ANNOTATION = 'syncline.dev/applied-digest';
export const DEFAULT_FIELD_MANAGER = 'syncline';
/** An integer: lower waves are applied first (and, with wait, are healthy before the next starts); default 0. */
export const APPLY_WAVE_ANNOTATION = 'syncline.dev/apply-wave';

/** The API group of an apiVersion: '' for the core group (`v1`). */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash === -1 ? '' : apiVersion.slice(0, slash);
}

/** `group/Kind/namespace/name`: the core group is empty (`/ConfigMap/ns/name`), cluster-scoped objects have an empty namespace. */
export function objectId(obj: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): string {
  return `${groupOf(obj.apiVersion)}/${obj.kind}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
}

export type ObjectRef = { readonly group: string; readonly kind: string; readonly namespace: string; readonly name: string };

export function parseObjectId(id: string): ObjectRef {
  const parts = id.split('/');
  if (parts.length !== 4 || parts[1] === '' || parts[3] === '') throw new Error(`not an object id (group/Kind/namespace/name): ${JSON.stringify(id)}`);
  const [group = '', kind = '', namespace = '', name = ''] = parts;
  return { group, kind, namespace, name };
}

/** The (group, Kind, namespace) an id lives in: the unit of one LIST. */
export function scopeOf(id: string): string {
  return id.slice(0, id.lastIndexOf('/'));
}

/**
 * The owner label value: label values are at most 63 characters of [A-Za-z0-9._-], so the label holds a hash of
 * `namespace/name/target` and the annotation holds the readable form.
 */
export function ownerHash(owner: Owner): string {
  const key = ownedBy(owner);
  let hash = ownerHashes.get(key);
  if (hash === undefined) {
    hash = sha('sha256', key, 'hex').slice(0, 40);
    // Planning asks for the same few owners once per object: remember them (bounded, a pure memo).
    if (ownerHashes.size >= 10_000) ownerHashes.clear();
    ownerHashes.set(key, hash);
  }
  return hash;
}
const ownerHashes = new Map<string, string>();

/**
 * The readable labels of an owner. Owner names other than a ConfigSync's carry their kind
 * (`ManifestSync:web`, `Mirror:Secret:db`): the kind and the object's own name go to separate labels. A value
 * longer than a label value may be (63 characters; names may have up to 253) is left out rather than cut, so a
 * selector never matches a truncated name of another sync: such objects are found by the hash label alone.
 */
export function readableOwnerLabels(owner: Owner): Record<string, string> {
  const parts = owner.name.split(':');
  const kind = parts.length === 1 ? 'ConfigSync' : (parts[0] ?? '');
  const name = parts.at(-1) ?? owner.name;
  const labels: Record<string, string> = {};
  for (const [key, value] of [
    [OWNER_NAME_LABEL, name],
    [OWNER_NAMESPACE_LABEL, owner.namespace],
    [OWNER_KIND_LABEL, kind],
  ] as const) {
    if (isLabelValue(value)) labels[key] = value;
  }
  return labels;
}

function isLabelValue(value: string): boolean {
  return value.length <= 63 && /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/.test(value) && value !== '';
}

export function ownedBy(owner: Owner): string {
  return `${owner.namespace}/${owner.name}/${owner.target}`;
}

export type Ownership = { readonly kind: 'ours' } | { readonly kind: 'other'; readonly ownedBy: string } | { readonly kind: 'unmarked' };

/** Whose object is this? Both the label and the annotation must name us. */
export function ownershipOf(live: KubeObject, owner: Owner): Ownership {
  const label = live.metadata.labels?.[OWNER_LABEL];
  const annotation = live.metadata.annotations?.[OWNED_BY_ANNOTATION];
  if (label === undefined && annotation === undefined) return { kind: 'unmarked' };
  if (label === ownerHash(owner) && annotation === ownedBy(owner)) return { kind: 'ours' };
  return { kind: 'other', ownedBy: annotation ?? `owner label ${label ?? '(none)'}` };
}

/**
 * Whether the object records a server-side apply by `fieldManager`: a managedFields entry of that manager with
 * operation Apply on the object itself (not a subresource). The API server writes these entries; a copy made with
 * `kubectl get -o yaml` does not carry them (kubectl leaves managedFields out), and creating the copy records the
 * copier's manager instead. See provenOwnership in plan.ts for what this proves and what it does not.
 */
export function appliedBy(live: KubeObject, fieldManager: string): boolean {
  return (
    live.metadata.managedFields?.some((m) => m.manager === fieldManager && m.operation === 'Apply' && (m.subresource === undefined || m.subresource === '')) ===
    true
  );
}

export function pruneDisabled(live: KubeObject): boolean {
  return live.metadata.annotations?.[PRUNE_ANNOTATION] === 'disabled';
}

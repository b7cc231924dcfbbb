// Turning a live object into a desired copy: sanitize (a table of kinds), then for label-driven mirroring the
// replica marks and the override/patch strategies, and for a ManifestSync the rename and merge patches.
// Pure: the input is never modified; the output is a plain object planApply takes as desired.
import { APPLIED_DIGEST_ANNOTATION, OWNED_BY_ANNOTATION, OWNERSHIP_LABELS, PRUNE_ANNOTATION, type KubeObject } from '@syncline/apply';
import { mergePatch } from '@syncline/render';
import { classifyExisting } from './conflicts.ts';
import { MirrorError, MirrorErrorReason, describeObject } from './errors.ts';
import { formatSourceRef, mirrorObjectKeys, sourceRefHash, type MirrorKeys } from './labels.ts';
import { MirrorStrategy, SERVICE_ACCOUNT_TOKEN, SOPS_KEYS_NEVER_COPIED, isSopsKeySecret } from './spec.ts';

type Json = Record<string, unknown>;

/** A field path; `[]` steps into every item of a list (`['spec', 'ports', '[]', 'nodePort']`). */
export type FieldPath = readonly string[];

/** What a copy of one kind loses, and why. */
export interface CopyRule {
  /** Why these fields go: the test names and the reader's reference. */
  readonly why: string;
  readonly drop?: readonly FieldPath[];
  readonly dropLabels?: readonly string[];
  readonly dropAnnotations?: readonly string[];
  /** What a path cannot say ("unless it is None"). Runs on the copy, which it may modify. */
  readonly transform?: (copy: Json) => void;
  /** Why this object must never be copied, or undefined. */
  readonly refuse?: (object: KubeObject) => string | undefined;
}

/** The kind key of {@link COPY_RULES}: `Kind` for the core group, `Kind.group` otherwise (kubectl's notation). */
export function kindKey(apiVersion: string, kind: string): string {
  const slash = apiVersion.indexOf('/');
  return slash === -1 ? kind : `${kind}.${apiVersion.slice(0, slash)}`;
}

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Rules for every kind: what the API server owns or refuses on create, and other controllers' bookkeeping. */
export const COMMON_COPY_RULES: readonly CopyRule[] = [
  {
    why: 'identity and bookkeeping the API server sets on create (a create carrying resourceVersion is refused)',
    drop: [
      ['metadata', 'uid'],
      ['metadata', 'resourceVersion'],
      ['metadata', 'generation'],
      ['metadata', 'creationTimestamp'],
      ['metadata', 'managedFields'],
      ['metadata', 'selfLink'],
      ['metadata', 'generateName'],
      ['status'],
    ],
  },
  {
    why: 'deletion state belongs to the source object',
    drop: [
      ['metadata', 'deletionTimestamp'],
      ['metadata', 'deletionGracePeriodSeconds'],
    ],
  },
  {
    why: "owners and finalizers: the source's owner does not own the copy, and a finalizer no controller handles in the target namespace would block its deletion forever",
    drop: [
      ['metadata', 'ownerReferences'],
      ['metadata', 'finalizers'],
    ],
  },
  {
    why: "kubectl's last-applied configuration and Syncline's own ownership marks (the apply engine adds the copy's own)",
    dropLabels: [...OWNERSHIP_LABELS],
    dropAnnotations: ['kubectl.kubernetes.io/last-applied-configuration', OWNED_BY_ANNOTATION, APPLIED_DIGEST_ANNOTATION, PRUNE_ANNOTATION],
  },
];

const SERVICE_TRANSFORM = (copy: Json): void => {
  const spec = copy.spec;
  if (!isRecord(spec)) return;
  // A headless Service (`None`) stays headless; any other address is allocated per Service and refused on create.
  if (spec.clusterIP !== 'None') delete spec.clusterIP;
  if (!(Array.isArray(spec.clusterIPs) && spec.clusterIPs.length > 0 && spec.clusterIPs.every((ip) => ip === 'None'))) delete spec.clusterIPs;
};

/** Per-kind rules, keyed by {@link kindKey}. */
export const COPY_RULES: Readonly<Record<string, readonly CopyRule[]>> = {
  Service: [
    {
      why: 'cluster IPs and node ports are allocated per Service: a copy asking for the same ones is refused (headless `None` is kept)',
      drop: [
        ['spec', 'healthCheckNodePort'],
        ['spec', 'ports', '[]', 'nodePort'],
      ],
      transform: SERVICE_TRANSFORM,
    },
  ],
  Secret: [
    {
      why: 'a service-account token belongs to one account in one namespace',
      refuse: (object) =>
        object.type === SERVICE_ACCOUNT_TOKEN
          ? `a ${SERVICE_ACCOUNT_TOKEN} Secret is never copied (its token belongs to one service account in one namespace)`
          : undefined,
    },
    {
      why: 'SOPS decryption keys are a credential the operator decrypts with, for the syncs of one namespace',
      refuse: (object) => (isSopsKeySecret(object) ? SOPS_KEYS_NEVER_COPIED : undefined),
    },
    {
      // The API server does this on write; a desired object with stringData would always differ from the live one.
      why: 'stringData is folded into data (stringData wins, as on the API server)',
      transform: (copy) => {
        const stringData = copy.stringData;
        delete copy.stringData;
        if (!isRecord(stringData)) return;
        const data: Json = isRecord(copy.data) ? { ...copy.data } : {};
        for (const [key, value] of Object.entries(stringData)) if (typeof value === 'string') data[key] = Buffer.from(value, 'utf8').toString('base64');
        copy.data = data;
      },
    },
  ],
  PersistentVolumeClaim: [
    {
      why: 'a claim binds one volume: the copy must get its own (binding annotations go with it)',
      drop: [['spec', 'volumeName']],
      dropAnnotations: [
        'pv.kubernetes.io/bind-completed',
        'pv.kubernetes.io/bound-by-controller',
        'volume.beta.kubernetes.io/storage-provisioner',
        'volume.kubernetes.io/storage-provisioner',
        'volume.kubernetes.io/selected-node',
      ],
    },
  ],
  'Job.batch': [
    {
      why: "the Job controller's generated selector and labels name the source Job's uid: a create carrying them is refused",
      dropLabels: ['controller-uid', 'batch.kubernetes.io/controller-uid', 'job-name', 'batch.kubernetes.io/job-name'],
      drop: [
        ['spec', 'template', 'metadata', 'labels', 'controller-uid'],
        ['spec', 'template', 'metadata', 'labels', 'batch.kubernetes.io/controller-uid'],
        ['spec', 'template', 'metadata', 'labels', 'job-name'],
        ['spec', 'template', 'metadata', 'labels', 'batch.kubernetes.io/job-name'],
      ],
      transform: (copy) => {
        const spec = copy.spec;
        if (isRecord(spec) && spec.manualSelector !== true) delete spec.selector;
      },
    },
  ],
};

function dropPath(value: unknown, path: FieldPath): void {
  const [step, ...rest] = path;
  if (step === undefined) return;
  if (step === '[]') {
    if (Array.isArray(value)) for (const item of value) dropPath(item, rest);
    return;
  }
  if (!isRecord(value) || !Object.prototype.hasOwnProperty.call(value, step)) return;
  if (rest.length === 0) delete value[step];
  else dropPath(value[step], rest);
}

function dropKeys(metadata: Json, field: 'labels' | 'annotations', keys: readonly string[]): void {
  const map = metadata[field];
  if (!isRecord(map)) return;
  for (const key of keys) delete map[key];
  if (Object.keys(map).length === 0) delete metadata[field];
}

/** The rules that apply to an object: the common ones, then its kind's. */
export function copyRulesFor(object: { apiVersion: string; kind: string }): readonly CopyRule[] {
  return [...COMMON_COPY_RULES, ...(COPY_RULES[kindKey(object.apiVersion, object.kind)] ?? [])];
}

/** Why `object` must never be copied, or undefined. */
export function uncopyableReason(object: KubeObject): string | undefined {
  for (const rule of copyRulesFor(object)) {
    const reason = rule.refuse?.(object);
    if (reason !== undefined) return reason;
  }
  return undefined;
}

/**
 * A copy of `object` that a fresh create accepts: the table's fields dropped, and every mirroring key of
 * `keys` stripped, so a copy never becomes a mirroring source (nor looks like a replica of one) by inheriting
 * labels. Throws MirrorError NotCopyable for objects that are never copied.
 */
export function sanitizeCopy(object: KubeObject, options: { readonly keys: MirrorKeys }): KubeObject {
  const refused = uncopyableReason(object);
  if (refused !== undefined) throw new MirrorError({ reason: MirrorErrorReason.NotCopyable, object: describeObject(object), detail: refused });
  const copy = structuredClone(object) as Json & KubeObject;
  if (!isRecord(copy.metadata)) copy.metadata = { name: object.metadata.name };
  const metadata = copy.metadata as Json;
  const mirrorKeys = mirrorObjectKeys(options.keys);
  for (const rule of copyRulesFor(object)) {
    for (const path of rule.drop ?? []) dropPath(copy, path);
    dropKeys(metadata, 'labels', rule.dropLabels ?? []);
    dropKeys(metadata, 'annotations', rule.dropAnnotations ?? []);
    rule.transform?.(copy);
  }
  dropKeys(metadata, 'labels', mirrorKeys);
  dropKeys(metadata, 'annotations', mirrorKeys);
  return copy;
}

/** The data maps of a kind whose keys the patch strategy merges. */
export const DATA_FIELDS: Readonly<Record<string, readonly string[]>> = {
  Secret: ['data'],
  ConfigMap: ['data', 'binaryData'],
};

function dataKeys(object: Json, fields: readonly string[]): Set<string> {
  const keys = new Set<string>();
  for (const field of fields) {
    const map = object[field];
    if (isRecord(map)) for (const key of Object.keys(map)) keys.add(key);
  }
  return keys;
}

export interface MakeReplicaInput {
  /** The live source object (a Secret or ConfigMap). */
  readonly source: KubeObject;
  readonly targetNamespace: string;
  /** Default: the source's name. */
  readonly name?: string | undefined;
  readonly keys: MirrorKeys;
  readonly strategy: MirrorStrategy;
  /** The replica as it is now, when one exists: it must be a replica of this source. */
  readonly existingReplica?: KubeObject | undefined;
}

/**
 * The desired replica of `source` in `targetNamespace`: sanitized, with `<prefix>/sync-replica: "true"`, the
 * `<prefix>/source` annotation and `<prefix>/source-hash` label, and no stale marks (a source that came back
 * takes its replicas back). Secret `type` and `immutable` are kept.
 *
 * - override: data is the source's data (`replicaExtraKeys` says which keys the live replica must lose: a
 *   server-side apply does not remove keys another field manager wrote).
 * - patch: the source's keys are written and the existing replica's other data keys, labels and annotations are
 *   kept (a key that moves between ConfigMap data and binaryData moves in the replica too).
 *
 * Throws MirrorError NotOurReplica when `existingReplica` is not a replica of this source (a foreign object is
 * never overwritten), NotCopyable for a service-account token Secret.
 */
export function makeReplica(input: MakeReplicaInput): KubeObject {
  const { source, keys } = input;
  const sourceRef = { namespace: source.metadata.namespace ?? '', name: source.metadata.name };
  const name = input.name ?? source.metadata.name;
  const existing = input.existingReplica;
  if (existing !== undefined) {
    const found = classifyExisting({ existing, source: sourceRef, keys });
    if (found.kind !== 'ours') {
      throw new MirrorError({
        reason: MirrorErrorReason.NotOurReplica,
        object: describeObject(existing),
        detail:
          found.kind === 'other-replica'
            ? `is a replica of ${found.source}, not of ${formatSourceRef(sourceRef)}`
            : `is not a replica of ${formatSourceRef(sourceRef)}: it is left alone`,
      });
    }
  }
  const replica = sanitizeCopy(source, { keys }) as Json & KubeObject;
  const metadata = replica.metadata as Json;
  metadata.name = name;
  metadata.namespace = input.targetNamespace;

  if (input.strategy === MirrorStrategy.Patch && existing !== undefined) {
    const fields = DATA_FIELDS[source.kind];
    if (fields === undefined) {
      throw new MirrorError({
        reason: MirrorErrorReason.UnsupportedKind,
        object: describeObject(source),
        detail: `the patch strategy merges data keys of Secrets and ConfigMaps only`,
      });
    }
    // Sanitize the existing replica too: its stringData (if any) folded, its marks and bookkeeping gone.
    const kept = sanitizeCopy(existing, { keys }) as Json & KubeObject;
    const written = dataKeys(replica, fields);
    for (const field of fields) {
      const keptMap = isRecord(kept[field]) ? kept[field] : {};
      const sourceMap = isRecord(replica[field]) ? replica[field] : {};
      const merged: Json = {};
      for (const [key, value] of Object.entries(keptMap)) if (!written.has(key)) merged[key] = value;
      Object.assign(merged, sourceMap);
      if (Object.keys(merged).length > 0) replica[field] = merged;
      else delete replica[field];
    }
    const keptMetadata = kept.metadata as Json;
    for (const field of ['labels', 'annotations'] as const) {
      const merged = { ...(isRecord(keptMetadata[field]) ? keptMetadata[field] : {}), ...(isRecord(metadata[field]) ? metadata[field] : {}) };
      if (Object.keys(merged).length > 0) metadata[field] = merged;
    }
  }

  metadata.labels = { ...(isRecord(metadata.labels) ? metadata.labels : {}), [keys.syncReplica]: 'true', [keys.sourceHash]: sourceRefHash(sourceRef) };
  metadata.annotations = { ...(isRecord(metadata.annotations) ? metadata.annotations : {}), [keys.source]: formatSourceRef(sourceRef) };
  return replica;
}

/**
 * Data keys the live replica holds and the desired one does not (override: hand-added keys to remove). The
 * apply engine compares desired fields against live ones, so it does not see these as drift by itself.
 */
export function replicaExtraKeys(existing: KubeObject, desired: KubeObject): string[] {
  const fields = DATA_FIELDS[desired.kind] ?? [];
  const want = dataKeys(desired, fields);
  return [...dataKeys(existing as Json, fields)].filter((key) => !want.has(key)).sort();
}

function sameMap(a: unknown, b: unknown): boolean {
  const x = isRecord(a) ? a : {};
  const y = isRecord(b) ? b : {};
  const keys = Object.keys(x);
  return keys.length === Object.keys(y).length && keys.every((key) => Object.prototype.hasOwnProperty.call(y, key) && x[key] === y[key]);
}

/**
 * Why the live replica cannot be updated in place and must be deleted and created again, or undefined: an
 * immutable Secret/ConfigMap whose data (or immutability) must change, or a Secret whose type changed (the API
 * server refuses both updates).
 */
export function replicaReplacementReason(existing: KubeObject, desired: KubeObject): string | undefined {
  const typeOf = (object: KubeObject): string => (typeof object.type === 'string' && object.type !== '' ? object.type : 'Opaque');
  if (existing.kind === 'Secret' && typeOf(existing) !== typeOf(desired)) {
    return `Secret type changes from ${typeOf(existing)} to ${typeOf(desired)}`;
  }
  if (existing.immutable === true) {
    const fields = DATA_FIELDS[existing.kind] ?? [];
    if (desired.immutable !== true) return 'the replica is immutable and the source no longer is';
    if (fields.some((field) => !sameMap(existing[field], desired[field]))) return 'the replica is immutable and its data changes';
  }
  return undefined;
}

export interface MakeCopyInput {
  readonly source: KubeObject;
  /** Where the copy goes: namespace, optional rename, optional per-target merge patch. */
  readonly target: { readonly namespace: string; readonly name?: string | undefined; readonly patch?: Readonly<Record<string, unknown>> | undefined };
  /** The ManifestSync's overlay patch, applied before the target's. */
  readonly patch?: Readonly<Record<string, unknown>> | undefined;
  readonly keys: MirrorKeys;
}

/**
 * A ManifestSync copy: sanitized, then the spec's JSON merge patch (RFC 7386), then the target's, then moved to
 * the target namespace and name. A patch may not change apiVersion, kind, name or namespace (rename with the
 * target's `name`). Sanitized again after patching: a patch cannot make the copy a mirroring source or hand it
 * an ownership mark.
 */
export function makeCopy(input: MakeCopyInput): KubeObject {
  const { source, keys } = input;
  let copy: unknown = sanitizeCopy(source, { keys });
  const patches: [string, Readonly<Record<string, unknown>> | undefined][] = [
    ['spec.patch', input.patch],
    [`the patch of target ${input.target.namespace}`, input.target.patch],
  ];
  for (const [where, patch] of patches) {
    if (patch === undefined) continue;
    if (!isRecord(patch))
      throw new MirrorError({
        reason: MirrorErrorReason.InvalidPatch,
        object: describeObject(source),
        detail: `${where} is not a JSON merge patch (a mapping)`,
      });
    const patched = mergePatch(copy, patch);
    const before = copy as KubeObject;
    const after = patched as Partial<KubeObject>;
    const moved = [
      after.apiVersion !== before.apiVersion && 'apiVersion',
      after.kind !== before.kind && 'kind',
      after.metadata?.name !== before.metadata.name && 'metadata.name (use the target name to rename)',
      after.metadata?.namespace !== before.metadata.namespace && 'metadata.namespace',
    ].filter((field): field is string => typeof field === 'string');
    if (moved.length > 0)
      throw new MirrorError({ reason: MirrorErrorReason.InvalidPatch, object: describeObject(source), detail: `${where} changes ${moved.join(', ')}` });
    copy = patched;
  }
  const result = sanitizeCopy(copy as KubeObject, { keys });
  const metadata = result.metadata as Json;
  metadata.name = input.target.name ?? source.metadata.name;
  metadata.namespace = input.target.namespace;
  return result;
}

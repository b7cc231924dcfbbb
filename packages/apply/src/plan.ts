// The pure half of apply: desired objects + inventory + live state in, a plan out. No clock, no network.
import { hash } from 'node:crypto';
import { differingPaths } from './compare.ts';
import {
  APPLIED_DIGEST_ANNOTATION,
  APPLY_WAVE_ANNOTATION,
  DEFAULT_FIELD_MANAGER,
  OWNED_BY_ANNOTATION,
  OWNER_LABEL,
  OWNERSHIP_LABELS,
  appliedBy,
  groupOf,
  objectId,
  ownedBy,
  ownerHash,
  ownershipOf,
  pruneDisabled,
  readableOwnerLabels,
  scopeOf,
  type KubeObject,
  type Owner,
  type Ownership,
} from './identity.ts';
import { ApplyCause } from './causes.ts';
import { diffInventory, type Inventory } from './inventory.ts';
import { planFieldTakeover, type FieldTakeover } from './takeover.ts';

/** How to treat an object that exists and is not ours (the names kubernetes-replicator users know). */
export const Policy = {
  /** Create missing objects and update ours; an existing object that is not ours is reported, never touched. */
  Sync: 'Sync',
  /** Take over an existing object that carries no owner mark; conflicting fields of other managers fail it. */
  Adopt: 'Adopt',
  /** Take over an existing object that carries no owner mark, forcing conflicting fields. */
  Overwrite: 'Overwrite',
  /** Create missing objects; never modify an existing one. */
  Keep: 'Keep',
} as const;
export type Policy = (typeof Policy)[keyof typeof Policy];

/** What to do when an object we applied was edited by someone else since. */
export const DriftMode = {
  /** Re-apply it (one forced write). */
  Correct: 'Correct',
  /** Leave it and list what drifted. */
  Report: 'Report',
} as const;
export type DriftMode = (typeof DriftMode)[keyof typeof DriftMode];

/**
 * Live state of the objects a plan touches. `objects` is keyed by objectId; an id whose (group/Kind/namespace)
 * scope is in `unknownScopes` could not be listed (forbidden, kind not served yet), and an id in `unresolved`
 * was not among what was listed (only the owner's objects were): the executor resolves both (created where the
 * name is free, read and planned where it is not). Any other id missing from `objects` does not exist.
 */
export type LiveState = {
  readonly objects: ReadonlyMap<string, KubeObject>;
  readonly unknownScopes?: ReadonlySet<string>;
  readonly unresolved?: ReadonlySet<string>;
  /**
   * Ids not read because a watch proves them unchanged since an apply read them unchanged or wrote them (see
   * unchanged.ts): each is ours, carries `digest`, and held no drift then. Only ids of scopes not listed at all.
   */
  readonly proven?: ReadonlyMap<string, ProvenObject>;
};

/** A live object as an apply last saw it (ours, no drift): its resourceVersion and applied digest. */
export type ProvenObject = { readonly version: string; readonly digest: string };

/** Apply order: Namespaces, CRDs, other cluster-scoped objects, namespaced objects. Deletion runs in reverse. */
export type Tier = 0 | 1 | 2 | 3;

/**
 * Apply steps carry their wave (`syncline.dev/apply-wave`, default 0): waves run in ascending order, each in
 * tier order; prune steps have none.
 */
export type PlanStep =
  /**
   * Server-side apply `object`; `create` says whether it was absent when planned. `takeover` (objects of ours
   * only): first move the fields of kubectl's edits to our manager, so this apply drops what Git does not hold.
   */
  | {
      readonly type: 'apply';
      readonly id: string;
      readonly tier: Tier;
      readonly wave?: number;
      readonly object: KubeObject;
      readonly force: boolean;
      readonly create: boolean;
      readonly reason?: string;
      readonly takeover?: FieldTakeover;
    }
  | { readonly type: 'unchanged'; readonly id: string; readonly tier: Tier; readonly wave?: number }
  /** Nothing to write; `keep` says whether the id stays in the inventory. */
  | {
      readonly type: 'skip';
      readonly id: string;
      readonly tier: Tier;
      readonly wave?: number;
      readonly cause: ApplyCause;
      readonly reason: string;
      readonly keep: boolean;
      readonly drift?: readonly string[];
    }
  /** The desired object cannot be applied as written (an invalid apply-wave): it fails, and holds back pruning. */
  | { readonly type: 'invalid'; readonly id: string; readonly tier: Tier; readonly wave?: number; readonly reason: string }
  /** Live state unknown: the executor reads the object and plans it with planObject. */
  | { readonly type: 'resolve'; readonly id: string; readonly tier: Tier; readonly wave?: number; readonly desired: KubeObject }
  /** Delete a stale object we own (uid precondition: exactly the object that was checked). */
  | {
      readonly type: 'delete';
      readonly id: string;
      readonly tier: Tier;
      readonly wave?: undefined;
      readonly apiVersion: string;
      readonly uid: string | undefined;
    }
  /** A stale id whose live state is unknown: the executor reads it and plans it with planStale. */
  | { readonly type: 'resolveStale'; readonly id: string; readonly tier: Tier; readonly wave?: undefined }
  /** A stale id that leaves the inventory without a delete (already gone, or not ours to delete). */
  | { readonly type: 'forget'; readonly id: string; readonly tier: Tier; readonly wave?: undefined; readonly gone: boolean; readonly reason: string };

export type PlanContext = {
  readonly owner: Owner;
  readonly policy: Policy;
  /** The policy for a desired Namespace that exists and is not ours; default `policy`. */
  readonly namespacePolicy?: Policy;
  /** Owners (OWNED_BY_ANNOTATION values) whose objects this plan takes over: see PlanInput.handoff. */
  readonly handoff?: ReadonlySet<string>;
  readonly drift: DriftMode;
  /** Ids of Namespaces this sync created (from the inventory): only those may be deleted. */
  readonly createdNamespaces: ReadonlySet<string>;
  readonly prune: boolean;
  /** Ids in the inventory: what this target recorded applying. */
  readonly recorded: ReadonlySet<string>;
  /** The field manager the plan is applied with: its Apply entry proves an apply that the inventory missed. */
  readonly fieldManager: string;
};

export type Plan = {
  readonly owner: Owner;
  readonly previous: Inventory;
  /** Apply steps in wave order, each wave in tier order. */
  readonly apply: readonly PlanStep[];
  /** Steps for stale ids, in reverse tier order; the executor holds them back when any apply failed. */
  readonly prune: readonly PlanStep[];
  /** Set when the plan refuses to run (an empty render for a non-empty inventory); nothing is written. */
  readonly blocked?: string;
  readonly context: PlanContext;
};

export type PlanInput = {
  readonly desired: readonly KubeObject[];
  readonly inventory: Inventory;
  readonly live: LiveState;
  readonly owner: Owner;
  readonly policy?: Policy;
  /**
   * The policy for a desired Namespace that exists and is not ours (default: policy). A DR standby takes over the
   * namespace it is given (Adopt) while every object already in it stays its owner's (Sync). An adopted
   * Namespace is never deleted: only one this sync created is.
   */
  readonly namespacePolicy?: Policy;
  /**
   * Owners (OWNED_BY_ANNOTATION values) that hand their objects to this plan: the same sync's targets that left
   * the spec in this pass (a target renamed). An object marked by one of them, with our own apply on it, is
   * applied as ours instead of being a conflict, so a rename never deletes and re-creates it; the leaving
   * target's prune then finds it marked by this plan's owner and leaves it.
   */
  readonly handoff?: ReadonlySet<string>;
  readonly drift?: DriftMode;
  /** Delete stale objects (default true); false leaves them in place and drops them from the inventory. */
  readonly prune?: boolean;
  /** Allow a render of zero objects to prune a non-empty inventory. */
  readonly allowEmpty?: boolean;
  /** Field manager for server-side apply (executePlan applies with it); default `syncline`. */
  readonly fieldManager?: string;
};

/** The apply wave of a desired object: an integer annotation, default 0; negative waves go first. */
export function waveOf(object: KubeObject): { readonly wave: number } | { readonly error: string } {
  const value = object.metadata.annotations?.[APPLY_WAVE_ANNOTATION];
  if (value === undefined) return { wave: 0 };
  const trimmed = value.trim();
  const wave = Number(trimmed);
  if (!/^[-+]?[0-9]{1,9}$/.test(trimmed) || !Number.isSafeInteger(wave)) {
    return {
      error: `${object.kind}/${object.metadata.name}: annotation ${APPLY_WAVE_ANNOTATION} must be an integer such as "1" or "-1", not ${JSON.stringify(value)}`,
    };
  }
  return { wave };
}

export function tierOf(id: string): Tier {
  if (id.startsWith('/Namespace/')) return 0;
  if (id.startsWith('apiextensions.k8s.io/CustomResourceDefinition/')) return 1;
  return scopeOf(id).endsWith('/') ? 2 : 3;
}

const SERVER_METADATA = [
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'managedFields',
  'selfLink',
];

/** The object we send: the desired object, without server-set metadata, with our ownership mark and digest. */
export function withOwnership(desired: KubeObject, owner: Owner): KubeObject {
  // Runs for every object on every resync: `delete` only what is there (a delete turns an object into a slow
  // dictionary for the JSON.stringify below), and keep the key order, which the digest depends on.
  const metadata: KubeObject['metadata'] = { ...desired.metadata };
  for (const key of SERVER_METADATA) if (key in metadata) delete metadata[key];
  const labels: Record<string, string> = { ...desired.metadata.labels };
  // A copied object (ManifestSync, DR) may carry its source's marks: only this owner's go out.
  for (const key of OWNERSHIP_LABELS) if (key in labels) delete labels[key];
  metadata.labels = { ...labels, ...readableOwnerLabels(owner), [OWNER_LABEL]: ownerHash(owner) };
  const annotations: Record<string, string> = { ...desired.metadata.annotations, [OWNED_BY_ANNOTATION]: ownedBy(owner) };
  if (APPLIED_DIGEST_ANNOTATION in annotations) delete annotations[APPLIED_DIGEST_ANNOTATION];
  const marked: KubeObject = { ...desired, metadata: { ...metadata, annotations } };
  // Plain JSON, not canonical: a render is deterministic, and sorting keys was most of the planning time of a
  // no-op resync. A reordered template costs one write, nothing more.
  annotations[APPLIED_DIGEST_ANNOTATION] = `sha256:${hash('sha256', JSON.stringify(marked), 'base64url')}`;
  return marked;
}

/**
 * Whose object is this, on proof rather than on marks alone. The ownership marks (OWNER_LABEL and
 * OWNED_BY_ANNOTATION) are plain metadata: `kubectl get -o yaml`, a rename and `kubectl apply` copy them onto
 * an object Syncline never applied, and prune would then delete that copy. So marks name the owner, and an
 * object is 'ours' only when, besides carrying this owner's exact marks, its managedFields record a server-side
 * apply by our field manager (`operation: Apply`): the API server writes that entry when we apply, so an object
 * applied by a run whose status write was lost (a crash, a leader kill or an API outage between apply and status)
 * is still recognised and pruned, never leaked. The inventory is no proof on its own, for applying as for
 * deleting: it records names, and a name can be re-used. An object someone deleted and re-created there (marks
 * copied along), or whose every field another apply manager took, is not the object we applied; overwriting it
 * would make it ours, and the next prune would delete it.
 * An object with our marks and no such entry is 'unproven': never deleted, and overwritten only the way an
 * object that is not ours would be (policy Adopt or Overwrite).
 *
 * The limit: managedFields can be written deliberately (a create or update that sets them), so someone with
 * write access to an object can forge our entry on it. That only lets them have their own object treated as
 * ours, which they could delete themselves; it never reaches an object they cannot write.
 */
export function provenOwnership(
  live: KubeObject,
  id: string,
  context: Pick<PlanContext, 'owner' | 'recorded' | 'fieldManager'>,
): Ownership | { readonly kind: 'unproven' } {
  const ownership = ownershipOf(live, context.owner);
  if (ownership.kind !== 'ours' || appliedBy(live, context.fieldManager)) return ownership;
  return { kind: 'unproven' };
}

function unprovenWhy(id: string, context: Pick<PlanContext, 'fieldManager' | 'recorded'>): string {
  return context.recorded.has(id)
    ? `it is in the inventory, but has no server-side apply by field manager "${context.fieldManager}" (re-created or taken over by someone else)`
    : `it is not in the inventory and has no server-side apply by field manager "${context.fieldManager}" (marks can be copied)`;
}

function managersOf(live: KubeObject): string {
  const names = [...new Set((live.metadata.managedFields ?? []).map((m) => m.manager).filter((m): m is string => m !== undefined))];
  return names.length === 0 ? '' : ` (field managers: ${names.join(', ')})`;
}

/** Plans one desired object against its live state (undefined: it does not exist). */
export function planObject(desired: KubeObject, live: KubeObject | undefined, context: PlanContext): PlanStep {
  const id = objectId(desired);
  const tier = tierOf(id);
  const object = withOwnership(desired, context.owner);
  if (live === undefined) return { type: 'apply', id, tier, object, force: false, create: true };

  const ownership = provenOwnership(live, id, context);
  switch (ownership.kind) {
    case 'other':
      if (context.handoff?.has(ownership.ownedBy) === true && appliedBy(live, context.fieldManager)) {
        return { type: 'apply', id, tier, object, force: true, create: false, reason: `handed over from ${ownership.ownedBy}` };
      }
      // Two syncs rendering the same object is a reported conflict, never a tug of war: no policy overrides it.
      return { type: 'skip', id, tier, keep: false, cause: ApplyCause.Conflict, reason: `Conflict: the object is owned by ${ownership.ownedBy}` };
    case 'unproven':
    case 'unmarked':
      switch (tier === 0 && context.namespacePolicy !== undefined ? context.namespacePolicy : context.policy) {
        case 'Sync':
          return {
            type: 'skip',
            id,
            tier,
            keep: false,
            cause: ApplyCause.NotOwned,
            reason: `Conflict: the object exists and is not managed by Syncline${ownership.kind === 'unproven' ? ` (it carries this sync's ownership marks, but ${unprovenWhy(id, context)})` : ''}${managersOf(live)}; policy Sync leaves it (Adopt or Overwrite take it over)`,
          };
        case 'Keep':
          return { type: 'skip', id, tier, keep: false, cause: ApplyCause.Kept, reason: 'the object exists; policy Keep never modifies it' };
        case 'Adopt':
          return { type: 'apply', id, tier, object, force: false, create: false, reason: 'adopted' };
        case 'Overwrite':
          return { type: 'apply', id, tier, object, force: true, create: false, reason: 'overwritten' };
      }
      break;
    case 'ours':
      break;
  }

  const changed = live.metadata.annotations?.[APPLIED_DIGEST_ANNOTATION] !== object.metadata.annotations?.[APPLIED_DIGEST_ANNOTATION];
  // Policy Keep never writes an existing object, so kubectl's edits stay theirs (see takeover.ts).
  const takeover = context.policy === 'Keep' ? undefined : planFieldTakeover(live, { fieldManager: context.fieldManager, desired: object });
  return planOurs({ id, object, drift: changed ? undefined : differingPaths(object, live), ...(takeover === undefined ? {} : { takeover }) }, context);
}

/**
 * Plans a desired object whose live state a watch proves (LiveState.proven): ours, without drift, carrying the
 * recorded digest. The same answer planObject gives for that object, without its body.
 */
export function planProven(desired: KubeObject, proven: ProvenObject, context: PlanContext): PlanStep {
  const object = withOwnership(desired, context.owner);
  return planOurs(
    { id: objectId(desired), object, drift: object.metadata.annotations?.[APPLIED_DIGEST_ANNOTATION] === proven.digest ? [] : undefined },
    context,
  );
}

/**
 * An object of ours: `drift` is what differs when its digest is unchanged, undefined when the digest changed;
 * `takeover`, the fields kubectl's edits own (drift too: an env var added inside a list Git sets shows in no path).
 */
function planOurs(ours: { id: string; object: KubeObject; drift: readonly string[] | undefined; takeover?: FieldTakeover }, context: PlanContext): PlanStep {
  const { id, object, takeover } = ours;
  const tier = tierOf(id);
  const edited = takeover?.managers.map((manager) => `fields edited by ${manager}`) ?? [];
  if (ours.drift !== undefined && ours.drift.length === 0 && edited.length === 0) return { type: 'unchanged', id, tier };
  if (context.policy === 'Keep') return { type: 'skip', id, tier, keep: true, cause: ApplyCause.Kept, reason: 'policy Keep never modifies an existing object' };
  const withTakeover = takeover === undefined ? {} : { takeover };
  // Ours: force, as a controller should for the fields it manages (someone's kubectl edit took them over).
  if (ours.drift === undefined)
    return {
      type: 'apply',
      id,
      tier,
      object,
      force: true,
      create: false,
      ...withTakeover,
      ...(edited.length === 0 ? {} : { reason: `taken over: ${edited.join(', ')}` }),
    };
  const drift = [...ours.drift, ...edited];
  if (context.drift === 'Report') return { type: 'skip', id, tier, keep: true, cause: ApplyCause.Drifted, reason: `drifted: ${drift.join(', ')}`, drift };
  return { type: 'apply', id, tier, object, force: true, create: false, reason: `drift corrected: ${drift.join(', ')}`, ...withTakeover };
}

/** Plans one stale inventory id against its live state (undefined: it does not exist). */
export function planStale(id: string, live: KubeObject | undefined, context: PlanContext): PlanStep {
  const tier = tierOf(id);
  if (live === undefined) return { type: 'forget', id, tier, gone: true, reason: 'already absent' };
  if (!context.prune) return { type: 'forget', id, tier, gone: false, reason: 'prune is off: left in place' };
  const ownership = provenOwnership(live, id, context);
  if (ownership.kind === 'other') return { type: 'forget', id, tier, gone: false, reason: `not pruned: now owned by ${ownership.ownedBy}` };
  if (ownership.kind === 'unmarked') return { type: 'forget', id, tier, gone: false, reason: 'not pruned: the object no longer carries our ownership mark' };
  // A delete needs the API server's own record of our apply on this very object (provenOwnership). The inventory
  // names an id, not an object: what sits at that name now may have been deleted and re-created by someone else
  // (marks copied along), or every field of it taken over by another apply manager; either way it is not ours.
  if (ownership.kind === 'unproven')
    return { type: 'forget', id, tier, gone: false, reason: `not pruned: the object carries our ownership marks, but ${unprovenWhy(id, context)}` };
  if (pruneDisabled(live)) return { type: 'forget', id, tier, gone: false, reason: 'not pruned: syncline.dev/prune is disabled' };
  if (tier === 0 && !context.createdNamespaces.has(id))
    return { type: 'forget', id, tier, gone: false, reason: 'not pruned: a Namespace this sync did not create' };
  return { type: 'delete', id, tier, apiVersion: live.apiVersion, uid: live.metadata.uid };
}

function lookup(live: LiveState, id: string): KubeObject | undefined | 'unknown' {
  const found = live.objects.get(id);
  if (found !== undefined) return found;
  return live.unknownScopes?.has(scopeOf(id)) === true || live.unresolved?.has(id) === true ? 'unknown' : undefined;
}

/** Plans an apply: what to write, what is already there, what to prune. Pure. */
export function planApply(input: PlanInput): Plan {
  const context: PlanContext = {
    owner: input.owner,
    policy: input.policy ?? 'Sync',
    ...(input.namespacePolicy === undefined ? {} : { namespacePolicy: input.namespacePolicy }),
    ...(input.handoff === undefined || input.handoff.size === 0 ? {} : { handoff: input.handoff }),
    drift: input.drift ?? 'Correct',
    prune: input.prune ?? true,
    createdNamespaces: new Set(input.inventory.filter((e) => e.created === true).map((e) => e.id)),
    recorded: new Set(input.inventory.map((e) => e.id)),
    fieldManager: input.fieldManager ?? DEFAULT_FIELD_MANAGER,
  };
  const base = { owner: input.owner, previous: input.inventory, context };
  if (input.desired.length === 0 && input.inventory.length > 0 && input.allowEmpty !== true) {
    return {
      ...base,
      apply: [],
      prune: [],
      blocked: `the render yielded no objects while ${input.inventory.length} are applied; refusing to prune them all (allowEmpty overrides)`,
    };
  }

  const seen = new Set<string>();
  const apply: PlanStep[] = [];
  for (const desired of input.desired) {
    const id = objectId(desired);
    if (seen.has(id)) {
      apply.push({
        type: 'skip',
        id,
        tier: tierOf(id),
        keep: false,
        cause: ApplyCause.Invalid,
        reason: 'duplicate: the render holds this object more than once',
      });
      continue;
    }
    seen.add(id);
    if (groupOf(desired.apiVersion) === '' && desired.kind === 'Namespace' && desired.metadata.namespace !== undefined) {
      apply.push({ type: 'skip', id, tier: 0, keep: false, cause: ApplyCause.Invalid, reason: 'a Namespace cannot have a namespace' });
      continue;
    }
    const wave = waveOf(desired);
    if ('error' in wave) {
      apply.push({ type: 'invalid', id, tier: tierOf(id), reason: wave.error });
      continue;
    }
    const live = lookup(input.live, id);
    const proven = live === undefined ? input.live.proven?.get(id) : undefined;
    const step: PlanStep =
      live === 'unknown'
        ? { type: 'resolve', id, tier: tierOf(id), desired }
        : proven === undefined
          ? planObject(desired, live, context)
          : planProven(desired, proven, context);
    apply.push(wave.wave === 0 || step.type === 'delete' || step.type === 'resolveStale' || step.type === 'forget' ? step : { ...step, wave: wave.wave });
  }
  apply.sort((a, b) => (a.wave ?? 0) - (b.wave ?? 0) || a.tier - b.tier);

  // Stale: what the inventory lists and the render no longer has, plus objects in the listed scopes that we
  // provably applied but that never reached the inventory (a run whose status write was lost): without this they
  // would be orphaned for good. Our marks alone prove nothing (see provenOwnership): a copy keeps them.
  const unrecorded = [...input.live.objects]
    .filter(([id, object]) => !seen.has(id) && !context.recorded.has(id) && provenOwnership(object, id, context).kind === 'ours')
    .map(([id]) => id);
  const prune = [...diffInventory(input.inventory, [...seen]), ...unrecorded].map((id): PlanStep => {
    const live = lookup(input.live, id);
    return live === 'unknown' ? { type: 'resolveStale', id, tier: tierOf(id) } : planStale(id, live, context);
  });
  prune.sort((a, b) => b.tier - a.tier);
  return { ...base, apply, prune };
}

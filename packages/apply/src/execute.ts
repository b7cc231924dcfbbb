// The I/O half of apply: reads live state with LISTs, runs a plan tier by tier with bounded parallelism and
// turns every API error into a per-object result. Bookkeeping follows confirmed side effects only.
import { ApplyCause, causeOfError } from './causes.ts';
import { ApiError, type ApplyClient } from './client.ts';
import { differingPaths } from './compare.ts';
import {
  APPLIED_DIGEST_ANNOTATION,
  OWNED_BY_ANNOTATION,
  appliedBy,
  OWNER_LABEL,
  ownedBy,
  ownerHash,
  ownershipOf,
  objectId,
  parseObjectId,
  scopeOf,
  type KubeObject,
  type Owner,
} from './identity.ts';
import type { Inventory, InventoryEntry } from './inventory.ts';
import { healthNeedsLiveObject, healthOf, type Health } from './health.ts';
import { planObject, planStale, type LiveState, type Plan, type PlanStep, type ProvenObject } from './plan.ts';
import { editManagersOf, planFieldTakeover, type FieldTakeover } from './takeover.ts';

export const ChangeAction = {
  created: 'created',
  configured: 'configured',
  unchanged: 'unchanged',
  deleted: 'deleted',
  skipped: 'skipped',
  failed: 'failed',
} as const;
export type ChangeAction = (typeof ChangeAction)[keyof typeof ChangeAction];

type EntryBase = {
  readonly id: string;
  /** Why, for people: the conflicting manager, the API error, the drifted fields, the policy that held it back. */
  readonly reason?: string;
  /** Drifted field paths (drift Report, or corrected under Correct). */
  readonly drift?: readonly string[];
};

/** One object's result. A skipped or failed entry says why as data (`cause`), which callers decide from. */
export type ChangeSetEntry =
  | (EntryBase & { readonly action: 'created' | 'configured' | 'unchanged' | 'deleted' })
  | (EntryBase & { readonly action: 'skipped' | 'failed'; readonly cause: ApplyCause });

export type ChangeSet = {
  /** One entry per desired object and per stale inventory id, in execution order. */
  readonly entries: readonly ChangeSetEntry[];
  /** The inventory to record: applied objects, plus stale ones whose delete is not confirmed. */
  readonly inventory: Inventory;
  /** Set when the plan was refused (nothing was written, the inventory is the previous one). */
  readonly blocked?: string;
  /** Whether stale objects were pruned (false when an apply failed, the plan was blocked or waves were held back). */
  readonly pruned: boolean;
  /** Set when waveGate held later waves back: why (their objects are `skipped`, nothing was pruned). */
  readonly heldBack?: string;
  /**
   * With ExecuteOptions.prove: the written objects whose stored state the apply's response shows to be ours and
   * to hold what was applied, with their resourceVersion and digest (what a no-op read would have proven).
   */
  readonly written?: ReadonlyMap<string, ProvenObject>;
};

/** What waveGate is told after a wave ran: its number and its entries. */
export type WaveResult = { readonly wave: number; readonly entries: readonly ChangeSetEntry[] };

export type ExecuteOptions = {
  readonly client: ApplyClient;
  /** Requests in flight within a tier; default DEFAULT_CONCURRENCY. */
  readonly concurrency?: number;
  readonly signal?: AbortSignal;
  /** How long to wait for an applied CRD to be Established; default 60 s. */
  readonly crdTimeoutMs?: number;
  /**
   * Whose objects may sit in a Namespace this plan deletes: `target` (default) only this owner's stale
   * objects; `sync` those of every target of the same sync (the whole sync is being deleted).
   */
  readonly pruneScope?: 'target' | 'sync';
  /**
   * Runs after each apply wave that has a later one (`syncline.dev/apply-wave`): a returned reason holds the
   * later waves back (not applied, kept in the inventory, nothing pruned), e.g. until this wave is healthy.
   * Not called after a wave in which an object failed: later waves then wait anyway.
   */
  readonly waveGate?: (wave: WaveResult) => Promise<string | undefined>;
  /** Read each apply's response and keep what it proves in ChangeSet.written. */
  readonly prove?: boolean;
};

/**
 * Requests in flight per tier. Measured with `pnpm bench apply` on the 2-core test machine (1,000 objects):
 * throughput rises steeply to 8 and flattens by 16; beyond that the API server is the bottleneck and only
 * latency grows.
 */
export const DEFAULT_CONCURRENCY = 16;

/** Runs `work` over `items` with at most `limit` in flight, preserving result order. */
export async function pool<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, () => worker()));
  return results;
}

function describeError(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 409 && error.reason === 'Conflict') return `Conflict: ${error.message}`;
    if (error.status === 403) return `Forbidden: ${error.message}`;
    return `${error.reason}: ${error.message}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/**
 * Above this many objects of a scope missing from the owner's LIST, one LIST of the whole scope is cheaper than
 * resolving them one by one (a first apply into a namespace, a sync whose labels were stripped).
 */
const MAX_SINGLE_READS_PER_SCOPE = 16;

/**
 * Live state for a set of objects: one LIST per (group, Kind, namespace) they live in. A scope that cannot be
 * listed (forbidden, kind not served yet) is marked unknown and its objects are resolved one by one later.
 *
 * With `owner`, each scope is listed with the owner's label selector: a sync in a namespace of 5,000 objects
 * reads its own few, not all of them (200 syncs sharing a namespace made this quadratic). What that cannot
 * show (an object that does not exist yet, or exists without our mark) the executor resolves one by one: a
 * create-only apply where the name is free, a read where it is not (see the 'resolve' step); when more than
 * MAX_SINGLE_READS_PER_SCOPE of a scope are missing, the whole scope is listed instead.
 *
 * With `proven` (a watch's proof that objects are as the last apply read or wrote them: provenObjects), a
 * scope whose every id is a desired object proven so is not read at all: a new commit for a sync whose objects
 * nobody touched plans without a request. A scope holding anything else (a stale id, a new object, an object
 * someone edited) is listed as above, proven ids and all.
 */
export async function readLive(options: {
  client: ApplyClient;
  desired: readonly KubeObject[];
  inventory: Inventory;
  owner?: Owner;
  proven?: ReadonlyMap<string, ProvenObject>;
  /**
   * Whether a watch vouches that no object of the scope carries the owner's OWNER_LABEL: the owner's LIST of
   * that scope would come back empty, so it is not sent (what is desired there is resolved as after an empty
   * LIST). Only for a scope the watch holds nothing of the owner in: objects it does hold are listed, their
   * managedFields being the proof a lost status write's objects are ours to prune.
   */
  ownerAbsent?: (scope: { group: string; kind: string; namespace: string }) => boolean;
  concurrency?: number;
  signal?: AbortSignal;
}): Promise<LiveState> {
  const idsByScope = new Map<string, Set<string>>();
  const desiredIds = options.desired.map((o) => objectId(o));
  for (const id of [...desiredIds, ...options.inventory.map((e) => e.id)]) {
    const scope = scopeOf(id);
    idsByScope.set(scope, (idsByScope.get(scope) ?? new Set()).add(id));
  }
  const proven = new Map<string, ProvenObject>();
  if (options.proven !== undefined && options.proven.size > 0) {
    const desiredSet = new Set(desiredIds);
    for (const [scope, ids] of idsByScope) {
      const found = new Map<string, ProvenObject>();
      for (const id of ids) {
        const object = desiredSet.has(id) ? options.proven.get(id) : undefined;
        if (object === undefined) break;
        found.set(id, object);
      }
      if (found.size < ids.size) continue;
      for (const [id, object] of found) proven.set(id, object);
      idsByScope.delete(scope);
    }
  }
  const objects = new Map<string, KubeObject>();
  const unknownScopes = new Set<string>();
  const unresolved = new Set<string>();
  const selector = options.owner === undefined ? undefined : `${OWNER_LABEL}=${ownerHash(options.owner)}`;
  await pool([...idsByScope], options.concurrency ?? DEFAULT_CONCURRENCY, async ([scope, ids]) => {
    const [group = '', kind = '', namespace = ''] = scope.split('/');
    try {
      if (selector !== undefined) {
        const vouched = options.ownerAbsent?.({ group, kind, namespace }) === true;
        const owned = new Map(
          vouched ? [] : (await options.client.list({ group, kind, namespace, labelSelector: selector }, options.signal)).map((o) => [objectId(o), o]),
        );
        const missing = [...ids].filter((id) => !owned.has(id));
        // Marked ours but not asked about: kept, so the planner can prune what a lost status write left unrecorded
        // (when its managedFields prove our apply: the LIST returns them, and marks alone prove nothing).
        for (const [id, obj] of owned) objects.set(id, obj);
        if (missing.length <= MAX_SINGLE_READS_PER_SCOPE) {
          for (const id of missing) unresolved.add(id);
          return;
        }
      }
      for (const obj of await options.client.list({ group, kind, namespace }, options.signal)) objects.set(objectId(obj), obj);
    } catch (error) {
      if (options.signal?.aborted === true) throw error;
      unknownScopes.add(scope);
    }
  });
  return { objects, unknownScopes, unresolved, ...(proven.size === 0 ? {} : { proven }) };
}

type Outcome = { entry: ChangeSetEntry; inventory?: InventoryEntry };

/**
 * What an apply's response proves: the stored object is ours, carries the applied digest and holds every field
 * we applied (a mutating webhook may have changed one: then nothing is proven and the next resync reads it).
 */
export function proofOf(applied: KubeObject, stored: KubeObject, owner: Owner): ProvenObject | undefined {
  const version = stored.metadata.resourceVersion;
  const digest = applied.metadata.annotations?.[APPLIED_DIGEST_ANNOTATION];
  if (typeof version !== 'string' || version === '' || digest === undefined) return undefined;
  if (stored.metadata.annotations?.[APPLIED_DIGEST_ANNOTATION] !== digest || ownershipOf(stored, owner).kind !== 'ours') return undefined;
  return differingPaths(applied, stored).length === 0 ? { version, digest } : undefined;
}

/**
 * Moves the fields of kubectl's edits to our manager before an apply corrects an object of ours (see
 * takeover.ts). The patch tests the resourceVersion it was planned from: when the object changed since, it is
 * read again and, if still ours and still edited, the takeover is computed anew and sent once more. Returns why
 * the fields could not be taken over (the apply runs all the same: it corrects every field Git sets, and the
 * leftovers keep the object unproven, so the next resync tries again); undefined once done.
 */
async function takeOverEdits(options: {
  client: ApplyClient;
  desired: KubeObject;
  takeover: FieldTakeover;
  owner: Owner;
  fieldManager: string;
  signal: AbortSignal | undefined;
}): Promise<string | undefined> {
  const { client, desired, signal } = options;
  const id = objectId(desired);
  const aborted = (): boolean => signal?.aborted === true;
  let takeover = options.takeover;
  for (let attempt = 0; takeover.patch !== undefined; attempt++) {
    try {
      await client.jsonPatch(id, takeover.patch, { apiVersion: desired.apiVersion, ...(signal === undefined ? {} : { signal }) });
      return undefined;
    } catch (error) {
      if (aborted()) throw error;
      const changed = error instanceof ApiError && (error.status === 422 || error.status === 409);
      if (!changed || attempt > 0) return `the fields edited by ${takeover.managers.join(', ')} were not taken over: ${describeError(error)}`;
    }
    let fresh: KubeObject | undefined;
    try {
      fresh = await client.get(id, signal);
    } catch (error) {
      if (aborted()) throw error;
      return `the fields edited by ${takeover.managers.join(', ')} were not taken over: ${describeError(error)}`;
    }
    if (fresh === undefined) return undefined;
    if (ownershipOf(fresh, options.owner).kind !== 'ours')
      return `the fields edited by ${takeover.managers.join(', ')} were not taken over: the object no longer carries our ownership mark`;
    const again = planFieldTakeover(fresh, { fieldManager: options.fieldManager, desired });
    if (again === undefined) return undefined;
    takeover = again;
  }
  return undefined;
}

/** Runs a plan. Never throws for a per-object API error; throws only when `signal` aborts. */
export async function executePlan(plan: Plan, options: ExecuteOptions): Promise<ChangeSet> {
  if (plan.blocked !== undefined) return { entries: [], inventory: plan.previous, blocked: plan.blocked, pruned: false };
  const { client, signal } = options;
  // The plan's: its proof of our own applies (provenOwnership) names the manager these applies are made with.
  const { fieldManager } = plan.context;
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  const previous = new Map(plan.previous.map((e) => [e.id, e]));
  const written = options.prove === true ? new Map<string, ProvenObject>() : undefined;
  const keepEntry = (id: string): InventoryEntry | undefined => previous.get(id);

  const runApply = async (step: PlanStep): Promise<Outcome> => {
    switch (step.type) {
      case 'unchanged':
        return { entry: { id: step.id, action: 'unchanged' }, inventory: keepEntry(step.id) ?? { id: step.id } };
      case 'skip':
        return {
          entry: { id: step.id, action: 'skipped', cause: step.cause, reason: step.reason, ...(step.drift === undefined ? {} : { drift: step.drift }) },
          inventory: step.keep ? keepEntry(step.id) : undefined,
        };
      case 'invalid':
        return { entry: { id: step.id, action: 'failed', cause: ApplyCause.Invalid, reason: step.reason }, inventory: keepEntry(step.id) };
      case 'resolve': {
        const readAndPlan = async (): Promise<Outcome> => {
          let live: KubeObject | undefined;
          try {
            live = await client.get(step.id, signal);
          } catch (error) {
            if (signal?.aborted === true) throw error;
            return { entry: { id: step.id, action: 'failed', cause: causeOfError(error), reason: describeError(error) }, inventory: keepEntry(step.id) };
          }
          return runApply(planObject(step.desired, live, plan.context));
        };
        // Most objects a sync cannot see yet do not exist (a first apply): create them where the name is free,
        // in one request that proves the absence itself; an object that exists (409) is read and planned.
        const absent = planObject(step.desired, undefined, plan.context);
        return absent.type === 'apply' ? applyStep(absent, readAndPlan) : readAndPlan();
      }
      case 'apply':
        return applyStep(step);
      case 'delete':
      case 'resolveStale':
      case 'forget':
        throw new Error(`a ${step.type} step among the applies of ${step.id}`);
    }
  };

  /**
   * One apply step. With `ifTaken` it is a create-only apply (see ApplyClient.apply's `ifAbsent`), and when the
   * name turns out to be taken, `ifTaken` decides instead.
   */
  const applyStep = async (step: Extract<PlanStep, { type: 'apply' }>, ifTaken?: () => Promise<Outcome>): Promise<Outcome> => {
    const notTaken =
      step.takeover?.patch === undefined
        ? undefined
        : await takeOverEdits({ client, desired: step.object, takeover: step.takeover, owner: plan.owner, fieldManager, signal });
    const reason = [step.reason, notTaken].filter((r) => r !== undefined).join('; ');
    try {
      const stored = await client.apply(step.object, { fieldManager, force: step.force, read: written !== undefined, ifAbsent: ifTaken !== undefined, signal });
      // An edit that raced the apply still owns fields: not proven, so the next resync reads and corrects it.
      const proof = stored === undefined || editManagersOf(stored, fieldManager).length > 0 ? undefined : proofOf(step.object, stored, plan.owner);
      if (proof !== undefined) written?.set(step.id, proof);
    } catch (error) {
      if (signal?.aborted === true) throw error;
      // 409: something is there. 400/422: an API server that will not take a resourceVersion on a create
      // (an aggregated API): either way the object is read and planned as usual.
      if (ifTaken !== undefined && error instanceof ApiError && [400, 409, 422].includes(error.status)) return ifTaken();
      return {
        entry: {
          id: step.id,
          action: 'failed',
          cause: causeOfError(error),
          reason: [describeError(error), notTaken].filter((r) => r !== undefined).join('; '),
        },
        inventory: keepEntry(step.id),
      };
    }
    const created = step.create || previous.get(step.id)?.created === true;
    const isNamespace = step.id.startsWith('/Namespace/');
    return {
      entry: { id: step.id, action: step.create ? 'created' : 'configured', ...(reason === '' ? {} : { reason }) },
      inventory: isNamespace && created ? { id: step.id, created: true } : { id: step.id },
    };
  };

  const runPrune = async (step: PlanStep): Promise<Outcome> => {
    switch (step.type) {
      case 'forget':
        return {
          entry: step.gone
            ? { id: step.id, action: 'deleted', reason: step.reason }
            : { id: step.id, action: 'skipped', cause: ApplyCause.Left, reason: step.reason },
        };
      case 'resolveStale': {
        let live: KubeObject | undefined;
        try {
          live = await client.get(step.id, signal);
        } catch (error) {
          if (signal?.aborted === true) throw error;
          return {
            entry: { id: step.id, action: 'failed', cause: causeOfError(error), reason: `not pruned: ${describeError(error)}` },
            inventory: keepEntry(step.id),
          };
        }
        return runPrune(planStale(step.id, live, plan.context));
      }
      case 'delete':
        if (step.tier === 0) {
          const held = await namespaceHeldBack(plan, options, parseObjectId(step.id).name);
          if (held !== undefined)
            return {
              entry: { id: step.id, action: held.retry ? 'failed' : 'skipped', cause: held.cause, reason: held.reason },
              ...(held.retry ? { inventory: keepEntry(step.id) } : {}),
            };
        }
        try {
          const result = await client.delete(step.id, { apiVersion: step.apiVersion, uid: step.uid, signal });
          return { entry: { id: step.id, action: 'deleted', ...(result === 'absent' ? { reason: 'already absent' } : {}) } };
        } catch (error) {
          if (signal?.aborted === true) throw error;
          // The entry stays: the delete is retried on the next sync.
          return { entry: { id: step.id, action: 'failed', cause: causeOfError(error), reason: describeError(error) }, inventory: keepEntry(step.id) };
        }
      case 'apply':
      case 'unchanged':
      case 'skip':
      case 'invalid':
      case 'resolve':
        throw new Error(`a ${step.type} step among the prunes of ${step.id}`);
    }
  };

  const { outcomes, heldBack } = await applyWaves(plan, options, runApply, keepEntry);
  const applyFailed = outcomes.filter((o) => o.entry.action === 'failed').length;
  const prunes: Outcome[] = [];
  if (applyFailed > 0 || heldBack !== undefined) {
    const why = applyFailed > 0 ? `${applyFailed} object(s) failed to apply` : `later waves are not applied yet (${heldBack ?? ''})`;
    for (const step of plan.prune) {
      prunes.push({ entry: { id: step.id, action: 'skipped', cause: ApplyCause.PruneHeldBack, reason: `not pruned: ${why}` }, inventory: keepEntry(step.id) });
    }
  } else {
    for (const tier of [3, 2, 1, 0] as const) {
      const steps = plan.prune.filter((s) => s.tier === tier);
      if (steps.length > 0) prunes.push(...(await pool(steps, concurrency, runPrune)));
    }
  }

  return changeSetOf([...outcomes, ...prunes], {
    pruned: applyFailed === 0 && heldBack === undefined,
    heldBack: heldBack === undefined || applyFailed > 0 ? undefined : heldBack,
    written,
  });
}

/**
 * Deleting a Namespace deletes everything in it: only when nothing but our own stale objects is left. Ours on
 * proof, as for a prune (planStale): the mark and our own apply recorded on the object by the API server; a
 * copy that carries our marks, or an object re-created at a name the inventory lists, keeps the Namespace.
 * Undefined when the Namespace may go; otherwise why not, and whether to try again.
 */
async function namespaceHeldBack(
  plan: Plan,
  options: ExecuteOptions,
  namespace: string,
): Promise<{ cause: ApplyCause; reason: string; retry: boolean } | undefined> {
  const { client, signal } = options;
  const { fieldManager } = plan.context;
  const desiredIds = new Set(plan.apply.map((s) => s.id));
  const ours = (object: KubeObject): boolean => {
    const mark = object.metadata.annotations?.[OWNED_BY_ANNOTATION];
    const owned = options.pruneScope === 'sync' ? mark?.startsWith(`${plan.owner.namespace}/${plan.owner.name}/`) === true : mark === ownedBy(plan.owner);
    const id = objectId(object);
    return owned && !desiredIds.has(id) && appliedBy(object, fieldManager);
  };
  let contents: NamespaceContents;
  try {
    contents = await foreignObjectsIn({ client, namespace, ours, concurrency: options.concurrency ?? DEFAULT_CONCURRENCY, signal });
  } catch (error) {
    if (signal?.aborted === true) throw error;
    return { cause: causeOfError(error), reason: `not pruned: could not check what the Namespace holds: ${describeError(error)}`, retry: true };
  }
  if (contents.foreign.length === 0 && contents.unreadable.length === 0) return undefined;
  const shown = contents.foreign.slice(0, 5).join(', ') + (contents.foreign.length > 5 ? ` and ${contents.foreign.length - 5} more` : '');
  const why =
    contents.foreign.length > 0
      ? `it holds objects that are not this sync's (${shown})`
      : `its contents cannot all be read (${contents.unreadable.slice(0, 5).join(', ')}), so it may hold objects that are not this sync's`;
  return { cause: ApplyCause.Orphaned, reason: `not pruned: ${why}; the Namespace is left in place`, retry: false };
}

/**
 * The applies, wave by wave (a wave after a failed one, or one the gate holds, is skipped with the reason) and
 * within a wave tier by tier (CRDs established before the custom resources that need them).
 */
async function applyWaves(
  plan: Plan,
  options: ExecuteOptions,
  runApply: (step: PlanStep) => Promise<Outcome>,
  keepEntry: (id: string) => InventoryEntry | undefined,
): Promise<{ outcomes: Outcome[]; heldBack: string | undefined }> {
  const { client, signal } = options;
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  const outcomes: Outcome[] = [];
  const waves = [...new Set(plan.apply.map((s) => s.wave ?? 0))].sort((a, b) => a - b);
  let heldBack: string | undefined;
  for (const [index, wave] of waves.entries()) {
    const inWave = plan.apply.filter((s) => (s.wave ?? 0) === wave);
    if (heldBack !== undefined) {
      for (const step of inWave)
        outcomes.push({
          entry: { id: step.id, action: 'skipped', cause: ApplyCause.HeldBack, reason: `not applied yet: ${heldBack}` },
          inventory: keepEntry(step.id),
        });
      continue;
    }
    const results: Outcome[] = [];
    for (const tier of [0, 1, 2, 3] as const) {
      const steps = inWave.filter((s) => s.tier === tier);
      if (steps.length === 0) continue;
      const tierResults = await pool(steps, concurrency, runApply);
      results.push(...tierResults);
      if (tier === 1) {
        // Custom resources in later tiers need their CRDs served first.
        const crds = tierResults.filter((r) => r.entry.action === 'created' || r.entry.action === 'configured').map((r) => parseObjectId(r.entry.id).name);
        await pool(crds, concurrency, async (name) => {
          try {
            await client.waitEstablished(name, { timeoutMs: options.crdTimeoutMs ?? 60_000, ...(signal === undefined ? {} : { signal }) });
          } catch (error) {
            if (signal?.aborted === true) throw error;
            // Its custom resources fail on their own with a clear "not served" reason.
          }
        });
      }
    }
    outcomes.push(...results);
    if (index === waves.length - 1) break;
    const entries = results.map((r) => r.entry);
    const failedHere = entries.filter((e) => e.action === 'failed').length;
    heldBack = failedHere > 0 ? `${failedHere} object(s) of wave ${wave} failed to apply` : await options.waveGate?.({ wave, entries });
  }

  return { outcomes, heldBack };
}

/** The change set: every entry, and the inventory (each id once, in the order the outcomes came). */
function changeSetOf(
  all: readonly Outcome[],
  result: { pruned: boolean; heldBack: string | undefined; written: Map<string, ProvenObject> | undefined },
): ChangeSet {
  const inventory: InventoryEntry[] = [];
  const inInventory = new Set<string>();
  for (const o of all) {
    if (o.inventory !== undefined && !inInventory.has(o.inventory.id)) {
      inInventory.add(o.inventory.id);
      inventory.push(o.inventory);
    }
  }
  return {
    entries: all.map((o) => o.entry),
    inventory,
    pruned: result.pruned,
    ...(result.heldBack === undefined ? {} : { heldBack: result.heldBack }),
    ...(result.written === undefined ? {} : { written: result.written }),
  };
}

type NamespaceContents = { readonly foreign: readonly string[]; readonly unreadable: readonly string[] };

/**
 * Kinds that live in every namespace or are derived from other objects: they never make a Namespace
 * "someone else's". Objects with an ownerReference are accounted to their owner, which is listed too.
 */
function incidental(object: KubeObject, group: string): boolean {
  const { kind, metadata } = object;
  if (Array.isArray(metadata['ownerReferences']) && metadata['ownerReferences'].length > 0) return true;
  if (metadata['deletionTimestamp'] !== undefined) return true;
  if (kind === 'Event' && (group === '' || group === 'events.k8s.io')) return true;
  if (group === '' && kind === 'Endpoints') return true;
  if (group === '' && kind === 'ConfigMap' && metadata.name === 'kube-root-ca.crt') return true;
  if (group === '' && kind === 'ServiceAccount' && metadata.name === 'default') return true;
  if (
    group === '' &&
    kind === 'Secret' &&
    object['type'] === 'kubernetes.io/service-account-token' &&
    metadata.annotations?.['kubernetes.io/service-account.name'] === 'default'
  )
    return true;
  return false;
}

/**
 * What a Namespace holds besides `ours`: one LIST per listable namespaced kind. A kind that cannot be listed
 * (forbidden) is `unreadable`; a transport or server failure throws, so the caller retries.
 */
async function foreignObjectsIn(options: {
  client: ApplyClient;
  namespace: string;
  ours: (object: KubeObject) => boolean;
  concurrency: number;
  signal: AbortSignal | undefined;
}): Promise<NamespaceContents> {
  const kinds = (await options.client.discovery()).kinds().filter((k) => k.namespaced && (k.verbs === undefined || k.verbs.includes('list')));
  const foreign: string[] = [];
  const unreadable: string[] = [];
  await pool(kinds, options.concurrency, async (info) => {
    let objects: KubeObject[];
    try {
      objects = await options.client.list({ group: info.group, kind: info.kind, namespace: options.namespace }, options.signal);
    } catch (error) {
      if (options.signal?.aborted === true) throw error;
      if (error instanceof ApiError && error.status === 404) return; // no longer served
      if (error instanceof ApiError && (error.status === 403 || error.status === 401 || error.status === 405)) {
        unreadable.push(`${info.group}/${info.kind}`);
        return;
      }
      throw error;
    }
    for (const object of objects) if (!incidental(object, info.group) && !options.ours(object)) foreign.push(objectId(object));
  });
  return { foreign: foreign.sort(), unreadable: unreadable.sort() };
}

/**
 * Health of what a change set applied (created, configured or unchanged; skipped and failed objects are not
 * ours to judge). Unchanged objects are judged from `live`, the state read before the apply; written ones
 * are read back, unless their kind has no status to wait for. At steady state (nothing written) this reads
 * nothing.
 */
export async function readHealth(options: {
  client: ApplyClient;
  entries: readonly ChangeSetEntry[];
  desired: readonly KubeObject[];
  live: LiveState;
  /** The objects' owner: a read-back LIST then asks for its objects only (what was written carries its mark). */
  owner?: Owner;
  concurrency?: number;
  signal?: AbortSignal;
}): Promise<Map<string, Health>> {
  const desired = new Map(options.desired.map((o) => [objectId(o), o]));
  const health = new Map<string, Health>();
  const toRead: string[] = [];
  for (const entry of options.entries) {
    if (entry.action !== 'created' && entry.action !== 'configured' && entry.action !== 'unchanged') continue;
    const wanted = desired.get(entry.id);
    const written = entry.action !== 'unchanged';
    const live = written ? undefined : options.live.objects.get(entry.id);
    if (live !== undefined) health.set(entry.id, healthOf(live));
    else if (written && wanted !== undefined && !healthNeedsLiveObject(wanted)) health.set(entry.id, { status: 'Current', message: 'applied' });
    else toRead.push(entry.id);
  }
  // Read back: one LIST for a scope with several objects to read, a GET for one or two.
  const byScope = new Map<string, string[]>();
  for (const id of toRead) byScope.set(scopeOf(id), [...(byScope.get(scopeOf(id)) ?? []), id]);
  const unknown = (id: string, error: unknown): void => {
    health.set(id, { status: 'Unknown', reason: 'ReadFailed', message: describeError(error) });
  };
  const judge = (id: string, live: KubeObject | undefined): void => {
    health.set(id, live === undefined ? { status: 'Unknown', reason: 'NotFound', message: 'not found' } : healthOf(live));
  };
  const singles: string[] = [];
  await pool([...byScope], options.concurrency ?? DEFAULT_CONCURRENCY, async ([scope, ids]) => {
    if (ids.length < 3) {
      singles.push(...ids);
      return;
    }
    const [group = '', kind = '', namespace = ''] = scope.split('/');
    try {
      const labelSelector = options.owner === undefined ? undefined : `${OWNER_LABEL}=${ownerHash(options.owner)}`;
      const listed = new Map(
        (await options.client.list({ group, kind, namespace, ...(labelSelector === undefined ? {} : { labelSelector }) }, options.signal)).map((o) => [
          objectId(o),
          o,
        ]),
      );
      for (const id of ids) judge(id, listed.get(id));
    } catch (error) {
      if (options.signal?.aborted === true) throw error;
      singles.push(...ids);
    }
  });
  await pool(singles, options.concurrency ?? DEFAULT_CONCURRENCY, async (id) => {
    try {
      judge(id, await options.client.get(id, options.signal));
    } catch (error) {
      if (options.signal?.aborted === true) throw error;
      unknown(id, error);
    }
  });
  return health;
}

// The NamespaceReplication reconciler: a warm standby of one namespace in another cluster. Steps run in the
// reconcile shell (@syncline/runtime's shell.ts): read the source namespace → the standby copies (pure: dr/transform.ts) →
// applyTarget into the standby (SSA, inventory, guarded prune) → status. With spec.failover the standby is
// promoted instead: replication stops overwriting it and its workloads go to their recorded counts, read from
// the standby's own objects.
import { type EventRecorder, type KubeRest } from '@syncline/kube';
import { DEFAULT_FIELD_MANAGER, OWNER_LABEL, appliedBy, decodeInventory, objectId, ownerHash, type ApplyClient, type KubeObject } from '@syncline/apply';
import type { Logger } from 'pino';
import { NamespaceReplicationSpec, type Condition, type NamespaceReplication, type NamespaceReplicationStatus } from '@syncline/api';
import type { ReconcileOutcome } from '@syncline/runtime';
import { fencedMessage, readFence, type FenceState } from '../dr/fence.ts';
import { DEFAULT_RESOURCE_TYPES, PROMOTED_KINDS, parseResourceType, promoted, skipReason, standbyCopy, type ResourceType } from '../dr/transform.ts';
import { objectLabels, type Metrics } from '../metrics.ts';
import type { MirrorKeys } from '../mirror/index.ts';
import type { RemoteClients, RemoteClusters } from '../remote/clusters.ts';
import type { CredentialHolders } from '../dr/credentials.ts';
import { recordDeletions, type Settling } from '../dr/prune-guard.ts';
import { Reason, removeCondition, setCondition } from '@syncline/runtime';
import type { ApplyIdentity } from '../cluster/identity.ts';
import { MAX_TIMER_MS, boundedInterval, parseDuration, type IntervalBounds } from '@syncline/runtime';
import { createReconciler, type ShellEvent } from '@syncline/runtime';
import { guardPrune, guardedInventory, heldPruneReport, keepHeld, pruneHeldConditions, replicableObjects, sourceNamespaceState } from './replication-guard.ts';
import { applyTarget, describeChanges, truncate } from './target.ts';
import { isConflict } from './findings.ts';
import { claimsOf, standbyWriteVerdict } from '../dr/claims.ts';
import { type StandbyRules, type TrustedNamespaces } from '../tenancy.ts';

export const NAMESPACEREPLICATION_KEY_PREFIX = 'NamespaceReplication/';
/** No system namespace is a standby; the operator's namespace is unknown. */
export const DEFAULT_STANDBY_RULES: StandbyRules = { allowedSystem: new Set() };
const STANDBY_TARGET = 'standby';

/** The owner the standby's objects are marked with (its name carries the kind, see queueKeyOfOwner). */
export function namespaceReplicationOwner(namespace: string, name: string): { namespace: string; name: string; target: string } {
  return { namespace, name: `NamespaceReplication:${name}`, target: STANDBY_TARGET };
}

export type NamespaceReplicationReconcilerDeps = {
  readonly rest: KubeRest;
  readonly applyClient: (identity: ApplyIdentity) => Promise<ApplyClient>;
  readonly remote: RemoteClusters;
  readonly clock: { now(): Date };
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly events: EventRecorder;
  readonly get: (key: string) => NamespaceReplication | undefined;
  /** Namespaces whose NamespaceReplications may read and write other namespaces of this cluster (tenancy.ts); default none. */
  readonly trusted?: TrustedNamespaces;
  /** Where a standby may never be (tenancy.ts's allowedStandby); default: no system namespace, no operator namespace known. */
  readonly standbyRules?: StandbyRules;
  /** Every NamespaceReplication of the cache, for the standby rule's "claimed first"; default none. */
  readonly replications?: () => readonly NamespaceReplication[];
  readonly intervalBounds: IntervalBounds;
  readonly mirrorKeys: MirrorKeys;
  readonly beforeApply?: (ids: readonly string[], remote?: RemoteClients) => Promise<void>;
  /** When the oldest source change not yet replicated was seen (for the lag metric); cleared after a sync. */
  readonly pendingSince?: (key: string) => number | undefined;
  /** Why the watches of this replication's source were refused (the watch budget), if they were. */
  readonly watchRefusal?: (key: string) => string | undefined;
  /**
   * The objects that reference the operator's credentials (informer caches), which are never replicated;
   * undefined until those caches are read. Omitted: nothing references a credential.
   */
  readonly credentialHolders?: () => CredentialHolders | undefined;
};

type Event = ShellEvent;

export function createNamespaceReplicationReconciler(options: NamespaceReplicationReconcilerDeps): (key: string) => Promise<ReconcileOutcome> {
  const deps: ReplicationRun = { ...options, settling: new Map() };
  return createReconciler<NamespaceReplication, NamespaceReplicationSpec, NamespaceReplicationStatus>({
    kind: 'NamespaceReplication',
    plural: 'namespacereplications',
    rest: deps.rest,
    logger: deps.logger,
    events: deps.events,
    clock: deps.clock,
    metrics: deps.metrics,
    read: deps.get,
    parse: (spec) => NamespaceReplicationSpec.safeParse(spec),
    invalid: (object, reason, message, now) => stalled(object, reason, message, now).status,
    suspend: { when: (spec) => spec.suspend, message: 'spec.suspend is true: nothing is replicated or pruned until it is false; the standby stays as it is' },
    run: async ({ object, spec, key }) => {
      const requeueAfterMs = Math.min(boundedInterval('interval', spec.interval, deps.intervalBounds).ms, MAX_TIMER_MS);
      const result = await replicate(deps, object, spec, deps.clock.now().toISOString(), key);
      const next = Math.min(requeueAfterMs, result.requeueAfterMs ?? requeueAfterMs);
      return {
        status: result.status,
        events: result.events,
        result: result.ok ? { kind: 'done', requeueAfterMs: next } : result.stall ? { kind: 'wait', requeueAfterMs: next } : { kind: 'retry' },
      };
    },
  });
}

/** The reconciler's dependencies and its own memory: deletions still settling, per replication (see dr/prune-guard.ts). */
type ReplicationRun = NamespaceReplicationReconcilerDeps & { readonly settling: Map<string, Settling> };

type Result = { ok: boolean; stall?: boolean; status: NamespaceReplicationStatus; events: Event[]; requeueAfterMs?: number };

function stalled(object: NamespaceReplication, reason: Reason, message: string, now: string): Result {
  const at = { generation: object.metadata.generation, now };
  const short = truncate(message);
  let conditions: Condition[] = setCondition(object.status?.conditions ?? [], { type: 'Ready', status: 'False', reason, message: short }, at);
  conditions = setCondition(conditions, { type: 'Stalled', status: 'True', reason, message: short }, at);
  return {
    ok: false,
    stall: true,
    status: { ...object.status, observedGeneration: object.metadata.generation, conditions },
    events: [{ type: 'Warning', reason, message: short }],
  };
}

async function replicate(deps: ReplicationRun, object: NamespaceReplication, spec: NamespaceReplicationSpec, now: string, key: string): Promise<Result> {
  const namespace = object.metadata.namespace ?? 'default';
  const sourceNamespace = spec.sourceNamespace ?? namespace;
  const destinationNamespace = spec.destination.namespace ?? sourceNamespace;
  const cluster = spec.destination.cluster?.name;
  const at = { generation: object.metadata.generation, now };
  const previous = object.status ?? {};
  const metricKey = `${namespace}/${object.metadata.name}`;

  // Tenancy and the standby rule (dr/claims.ts): asked before anything is read from or written to the standby.
  const verdict = standbyWriteVerdict(object, spec, {
    trusted: deps.trusted ?? new Set(),
    rules: deps.standbyRules ?? DEFAULT_STANDBY_RULES,
    claims: claimsOf(deps.replications?.() ?? []),
  });
  if (!verdict.allowed) return stalled(object, verdict.reason, verdict.message, now);
  const refused = deps.watchRefusal?.(key);
  if (refused !== undefined) {
    const conditions = setCondition(
      previous.conditions ?? [],
      { type: 'Ready', status: 'False', reason: Reason.WatchBudgetExceeded, message: truncate(refused) },
      at,
    );
    return {
      ok: false,
      status: { ...previous, observedGeneration: object.metadata.generation, conditions },
      events: [{ type: 'Warning', reason: Reason.WatchBudgetExceeded, message: truncate(refused) }],
    };
  }
  const source = await deps.applyClient(undefined);
  let remote: RemoteClients | undefined;
  try {
    remote = cluster === undefined ? undefined : await deps.remote.clients(namespace, cluster);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const conditions = setCondition(previous.conditions ?? [], { type: 'Ready', status: 'False', reason: Reason.Unreachable, message: truncate(message) }, at);
    return {
      ok: false,
      status: { ...previous, observedGeneration: object.metadata.generation, conditions },
      events: [{ type: 'Warning', reason: Reason.Unreachable, message: truncate(message) }],
    };
  }
  const standby = remote?.apply ?? source;
  const owner = namespaceReplicationOwner(namespace, object.metadata.name);
  const recorded = previous.inventory?.find((i) => i.target === STANDBY_TARGET)?.entries;

  if (spec.failover) return promote(deps, object, { standby, remote, owner, inventory: recorded, destinationNamespace, now, previous });
  // The fence: a standby promoted from its own side (the primary was gone) is never replicated over.
  const fence = await readFence(standby, destinationNamespace);
  if (fence.kind !== 'clear') return fenced(object, { fence, cluster: cluster ?? 'this cluster', destinationNamespace, now });

  // Replicate: every object of the chosen kinds in the source namespace, as it lands in the standby.
  const types: readonly ResourceType[] = spec.resourceTypes === undefined ? DEFAULT_RESOURCE_TYPES : spec.resourceTypes.map(parseResourceType);
  const discovery = await source.discovery();
  const desired: KubeObject[] = [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: destinationNamespace } }];
  const skipped = new Map<string, number>();
  const unserved: string[] = [];
  const lists = await Promise.all(
    types.map(async (type) => {
      if (discovery.preferred(type.group, type.kind) === undefined) {
        unserved.push(`${type.kind}${type.group === '' ? '' : `.${type.group}`}`);
        return [];
      }
      return source.list({ group: type.group, kind: type.kind, namespace: sourceNamespace });
    }),
  );
  const inventory = await guardedInventory({ standby, owner, types, namespace: destinationNamespace, inventory: recorded });
  const holders = deps.credentialHolders === undefined ? { remoteClusters: [], configSyncs: [] } : deps.credentialHolders();
  const replicable = replicableObjects(lists.flat(), sourceNamespace, holders);
  // Until the caches say which Secrets are credentials, nothing is replicated (a copy could not be taken back).
  if (replicable === undefined) return { ok: false, status: previous, events: [] };
  for (const item of replicable.replicate) {
    const why = skipReason(item, spec.exclude ?? []);
    if (why !== undefined) {
      skipped.set(item.kind, (skipped.get(item.kind) ?? 0) + 1);
      continue;
    }
    desired.push(
      standbyCopy(item, {
        namespace: destinationNamespace,
        workloads: spec.workloads.replicas,
        storageClassMap: spec.storageClassMap,
        keepNodePorts: spec.services.nodePorts === 'Keep',
        keys: deps.mirrorKeys,
      }),
    );
  }
  const guard = guardPrune({
    spec,
    previous,
    inventory,
    desired,
    // A credential copied before it was known as one leaves the standby whatever the guard says.
    credentialIds: new Set(replicable.excluded.map((e) => `/Secret/${destinationNamespace}/${e.name}`)),
    sourceNamespace: await sourceNamespaceState(source, sourceNamespace),
    settling: deps.settling,
    key,
    now: deps.clock.now(),
  });
  const applied = await applyTarget({
    client: standby,
    target: { name: STANDBY_TARGET, namespace: destinationNamespace, ...(cluster === undefined ? {} : { cluster }) },
    desired,
    inventory,
    owner,
    // The standby Namespace is the replication's to mark (fencing and a failover from the standby read it), but
    // an object someone else made in it stays theirs: taking it over would write their data and let a later
    // deletion in the source prune it. It is a conflict, named in status.failed (data wins over a full standby).
    policy: 'Sync',
    namespacePolicy: 'Adopt',
    drift: 'Correct',
    // A held deletion: this pass deletes nothing, the held objects stay in the inventory (keepHeld).
    prune: spec.prune && guard.action === 'prune',
    now,
    ...(deps.beforeApply === undefined ? {} : { beforeApply: (ids: readonly string[]) => deps.beforeApply?.(ids, remote) ?? Promise.resolve() }),
    metrics: deps.metrics,
    syncKey: metricKey,
  });
  const outcome = guard.action === 'prune' ? applied : { ...applied, inventory: keepHeld(applied.inventory, inventory, guard.held) };
  const held =
    guard.action === 'hold'
      ? heldPruneReport(guard, { spec, sourceNamespace, command: `syncline confirm-prune ${object.metadata.name} -n ${namespace}` })
      : undefined;
  deps.metrics.drPruneHeld.set(objectLabels(metricKey), guard.action === 'hold' ? guard.held.length : 0);

  return replicationResult(deps, {
    object,
    spec,
    key,
    now,
    desired,
    skipped,
    unserved,
    cluster,
    destinationNamespace,
    outcome,
    guard,
    held,
    excludedCredentials: replicable.excluded.length,
  });
}

/** What one replication pass produced, as status, Events and metrics: counts by kind, failures, the prune guard. */
function replicationResult(
  deps: ReplicationRun,
  pass: {
    object: NamespaceReplication;
    spec: NamespaceReplicationSpec;
    key: string;
    now: string;
    desired: readonly KubeObject[];
    skipped: ReadonlyMap<string, number>;
    unserved: readonly string[];
    cluster: string | undefined;
    destinationNamespace: string;
    outcome: Awaited<ReturnType<typeof applyTarget>>;
    guard: ReturnType<typeof guardPrune>;
    held: ReturnType<typeof heldPruneReport> | undefined;
    excludedCredentials: number;
  },
): Result {
  const { object, spec, key, now, desired, skipped, unserved, cluster, destinationNamespace, outcome, guard, held } = pass;
  const previous = object.status ?? {};
  const at = { generation: object.metadata.generation, now };
  const metricKey = `${object.metadata.namespace ?? 'default'}/${object.metadata.name}`;
  const byKind = new Map<string, number>();
  for (const d of desired.slice(1)) byKind.set(d.kind, (byKind.get(d.kind) ?? 0) + 1);
  for (const [kind, count] of byKind) deps.metrics.drObjects.set({ ...objectLabels(metricKey), kind, result: 'replicated' }, count);
  for (const [kind, count] of skipped) deps.metrics.drObjects.set({ ...objectLabels(metricKey), kind, result: 'skipped' }, count);
  // Failures, then conflicts, as status.failed lists them: the object (or the target as a whole) and why.
  const failed = [...outcome.findings.filter((f) => !isConflict(f)), ...outcome.findings.filter(isConflict)].map((f) => ({
    id: f.subject ?? '',
    reason: truncate(f.reason, 300),
  }));
  deps.metrics.drObjects.set({ ...objectLabels(metricKey), kind: '*', result: 'failed' }, failed.length);
  const ok = failed.length === 0;
  let conditions = removeCondition(previous.conditions ?? [], 'Stalled');
  const wasFailedOver = previous.conditions?.some((c) => c.type === 'FailedOver' && c.status === 'True') === true;
  const replicated = `${desired.length - 1} object(s) replicated to ${cluster ?? 'this cluster'}/${destinationNamespace}${unserved.length > 0 ? ` (not served here: ${unserved.join(', ')})` : ''}`;
  conditions = pruneHeldConditions(conditions, held?.condition, at);
  conditions = ok
    ? setCondition(
        conditions,
        held === undefined
          ? { type: 'Ready', status: 'True', reason: Reason.Replicated, message: replicated }
          : { type: 'Ready', status: 'False', reason: Reason.PruneHeld, message: truncate(`${replicated}; ${held.message}`) },
        at,
      )
    : setCondition(
        conditions,
        {
          type: 'Ready',
          status: 'False',
          reason: Reason.ApplyFailed,
          message: truncate(`${failed.length} object(s) not replicated: ${failed.map((f) => `${f.id}: ${f.reason}`).join('; ')}`),
        },
        at,
      );
  conditions = setCondition(
    conditions,
    { type: 'FailedOver', status: 'False', reason: Reason.Replicated, message: 'the standby follows the source; workloads at zero' },
    at,
  );
  if (ok && (outcome.changed || previous.lastSyncedTime === undefined)) {
    const since = deps.pendingSince?.(key);
    if (since !== undefined) deps.metrics.drLag.set(objectLabels(metricKey), (Date.now() - since) / 1000);
  }
  const status: NamespaceReplicationStatus = {
    ...previous,
    observedGeneration: object.metadata.generation,
    conditions,
    lastSyncedTime: ok && (outcome.changed || previous.lastSyncedTime === undefined) ? now : previous.lastSyncedTime,
    kinds: [...byKind].sort(([a], [b]) => (a < b ? -1 : 1)).map(([kind, objects]) => ({ kind, objects })),
    failed: failed.slice(0, 20),
    inventory: [{ ...outcome.inventory, ...(cluster === undefined ? {} : { cluster }) }],
    excludedCredentials: pass.excludedCredentials,
    ...(guard.action === 'hold' ? { pruneHold: guard.hold } : {}),
    recentDeletions: recordDeletions({
      recent: previous.recentDeletions,
      windowMs: parseDuration(spec.pruneGuard.window),
      now: deps.clock.now(),
      deleted: guard.action === 'prune' && ok ? outcome.counts.deleted : 0,
      released: guard.action === 'prune' && guard.released !== undefined && ok,
    }),
  };
  if (status.recentDeletions?.length === 0) delete status.recentDeletions;
  delete status.failedOverAt;
  delete status.standbyPromotion;
  status.conditions = removeCondition(conditions, 'Fenced');
  if (guard.action !== 'hold') delete status.pruneHold;
  const summary = `${outcome.counts.created} created, ${outcome.counts.configured} configured, ${outcome.counts.deleted} deleted`;
  const events: Event[] = [];
  if (wasFailedOver)
    events.push({ type: 'Normal', reason: Reason.FailedBack, message: `failed back: replicating again, workloads in ${destinationNamespace} at zero` });
  if (held !== undefined) events.push({ type: 'Warning', reason: Reason.PruneHeld, message: truncate(held.message) });
  if (guard.action === 'prune' && guard.released !== undefined && ok) {
    events.push({
      type: 'Normal',
      reason: guard.released === 'confirmed' ? Reason.PruneConfirmed : Reason.PruneReleased,
      message: truncate(
        `held deletion ${guard.released === 'confirmed' ? 'confirmed' : `released after ${spec.pruneGuard.delay ?? ''}`}: ${outcome.counts.deleted} object(s) deleted from the standby`,
      ),
    });
  }
  if (!ok)
    events.push({
      type: 'Warning',
      reason: Reason.ApplyFailed,
      message: truncate(`${summary}; ${failed.length} failed: ${failed.map((f) => `${f.id}: ${f.reason}`).join('; ')}`),
    });
  else if (outcome.changed) events.push({ type: 'Normal', reason: Reason.Replicated, message: truncate(`${summary}: ${describeChanges(outcome.changes)}`) });
  return {
    ok,
    status,
    events,
    ...(guard.action !== 'prune' && guard.retryAfterMs !== undefined ? { requeueAfterMs: Math.min(guard.retryAfterMs + 250, MAX_TIMER_MS) } : {}),
  };
}

/** Failover: the standby's workloads to their recorded counts, CronJobs resumed; nothing else is touched. */
async function promote(
  deps: NamespaceReplicationReconcilerDeps,
  object: NamespaceReplication,
  context: {
    standby: ApplyClient;
    remote: RemoteClients | undefined;
    owner: ReturnType<typeof namespaceReplicationOwner>;
    inventory: readonly string[] | undefined;
    destinationNamespace: string;
    now: string;
    previous: NamespaceReplicationStatus;
  },
): Promise<Result> {
  const { standby, owner, inventory, now, previous } = context;
  const at = { generation: object.metadata.generation, now };
  // The workloads are what the standby holds of ours, not only what the status lists: a failover asked for right
  // after a replication can find a status (in the cache, or lost) that does not list them yet, and would then
  // restore nothing and say it failed over.
  const labelSelector = `${OWNER_LABEL}=${ownerHash(owner)}`;
  // A kind the standby will not list (rights, not served) leaves its workloads to the inventory, as before. The
  // label finds candidates; only those our own apply is on are ours (a copy carrying the marks is not, see
  // @syncline/apply's provenOwnership).
  const marked = (
    await Promise.all(PROMOTED_KINDS.map((k) => standby.list({ ...k, namespace: context.destinationNamespace, labelSelector }).catch((): KubeObject[] => [])))
  )
    .flat()
    .filter((o) => appliedBy(o, DEFAULT_FIELD_MANAGER));
  const listed = new Set(marked.map((o) => objectId(o)));
  const promotable = (id: string): boolean => PROMOTED_KINDS.some((k) => id.startsWith(`${k.group}/${k.kind}/`));
  const recorded = decodeInventory(inventory)
    .map((e) => e.id)
    .filter((id) => !listed.has(id) && promotable(id));
  // A recorded name proves nothing about what sits there now: an object re-created there (marks and recorded
  // count copied along) is someone else's, and only one our own apply is on is scaled.
  const live = [
    ...marked,
    ...(await Promise.all(recorded.map((id) => standby.get(id)))).filter((o): o is KubeObject => o !== undefined && appliedBy(o, DEFAULT_FIELD_MANAGER)),
  ];
  const desired = live.map((o) => promoted(o, deps.mirrorKeys)).filter((o): o is KubeObject => o !== undefined);
  // Only the promoted objects are planned (their own inventory): nothing else is applied or pruned.
  const outcome = await applyTarget({
    client: standby,
    target: { name: STANDBY_TARGET },
    desired,
    inventory: desired.map(
      (d) => `${d.apiVersion.includes('/') ? d.apiVersion.slice(0, d.apiVersion.indexOf('/')) : ''}/${d.kind}/${d.metadata.namespace ?? ''}/${d.metadata.name}`,
    ),
    owner,
    policy: 'Sync',
    prune: false,
    now,
    syncKey: `${object.metadata.namespace ?? 'default'}/${object.metadata.name}`,
  });
  const ok = outcome.failures.length === 0 && outcome.conflicts.length === 0;
  const message = ok
    ? `failed over at ${previous.failedOverAt ?? now}: ${desired.length} workload(s) restored to their recorded counts, replication stopped`
    : truncate(`failover incomplete: ${[...outcome.failures, ...outcome.conflicts].join('; ')}`);
  let conditions = setCondition(
    previous.conditions ?? [],
    { type: 'FailedOver', status: ok ? 'True' : 'False', reason: ok ? Reason.FailedOver : Reason.ApplyFailed, message },
    at,
  );
  conditions = setCondition(conditions, { type: 'Ready', status: ok ? 'True' : 'False', reason: ok ? Reason.FailedOver : Reason.ApplyFailed, message }, at);
  const status: NamespaceReplicationStatus = {
    ...previous,
    observedGeneration: object.metadata.generation,
    conditions,
    ...(ok ? { failedOverAt: previous.failedOverAt ?? now } : {}),
  };
  const events: Event[] = ok
    ? outcome.changed
      ? [{ type: 'Normal', reason: Reason.FailedOver, message }]
      : []
    : [{ type: 'Warning', reason: Reason.ApplyFailed, message }];
  return { ok, status, events };
}

/** A promoted standby (fence.ts) or one whose promotion could not be checked: nothing is replicated. */
function fenced(
  object: NamespaceReplication,
  options: { fence: Exclude<FenceState, { kind: 'clear' }>; cluster: string; destinationNamespace: string; now: string },
): Result {
  const previous = object.status ?? {};
  const at = { generation: object.metadata.generation, now: options.now };
  const { fence } = options;
  if (fence.kind === 'unknown') {
    const message = truncate(fence.message);
    const conditions = setCondition(previous.conditions ?? [], { type: 'Ready', status: 'False', reason: Reason.Unreachable, message }, at);
    return {
      ok: false,
      status: { ...previous, observedGeneration: object.metadata.generation, conditions },
      events: [{ type: 'Warning', reason: Reason.Unreachable, message }],
    };
  }
  const message = truncate(fencedMessage({ namespace: options.destinationNamespace, cluster: options.cluster, promotion: fence.promotion }));
  let conditions = setCondition(previous.conditions ?? [], { type: 'Ready', status: 'False', reason: Reason.StandbyPromoted, message }, at);
  conditions = setCondition(conditions, { type: 'Fenced', status: 'True', reason: Reason.StandbyPromoted, message }, at);
  return {
    ok: false,
    stall: true,
    status: { ...previous, observedGeneration: object.metadata.generation, conditions, standbyPromotion: { at: fence.promotion.at, by: fence.promotion.by } },
    events: [{ type: 'Warning', reason: Reason.StandbyPromoted, message }],
  };
}

// The ManifestSync reconciler: three steps, run in the reconcile shell (@syncline/runtime's shell.ts): read the source object →
// turn it into one desired copy per target namespace (pure: mirror/copy.ts) → apply each namespace through
// the shared applyTarget (SSA, inventory, guarded prune, policies, drift) → status. A source that cannot be read
// never prunes: copies stay as they are until the source is back.
import { type EventRecorder, type KubeRest } from '@syncline/kube';
import { ApplyCause, causeOfError, decodeInventory, objectId, pool, type ApplyClient, type KubeObject } from '@syncline/apply';
import type { Logger } from 'pino';
import { ManifestSyncSpec, type Condition, type ManifestSync, type ManifestSyncStatus, type ManifestTargetStatus, type TargetInventory } from '@syncline/api';
import type { ReconcileOutcome } from '@syncline/runtime';
import { ServiceAccountError } from '../cluster/errors.ts';
import type { Metrics } from '../metrics.ts';
import { expandCopyTargets, isMirrorError, makeCopy, type MirrorKeys, type MirrorNamespace } from '../mirror/index.ts';
import { Reason, removeCondition, setCondition } from '@syncline/runtime';
import type { ApplyIdentity } from '../cluster/identity.ts';
import { MAX_TIMER_MS, boundedInterval, type IntervalBounds } from '@syncline/runtime';
import { createReconciler, removeFinalizer, type ShellEvent, type ShellOutcome } from '@syncline/runtime';
import {
  appliedConditions,
  applyTarget,
  combineTargets,
  describeChanges,
  emptyCounts,
  onlyRefused,
  partitionInventory,
  truncate,
  type TargetOutcome,
} from './target.ts';
import { NAMESPACE_NOT_ALLOWED, allowedWrite, type Actor, type TrustedNamespaces } from '../tenancy.ts';
import { RemoteClusterError, type RemoteClients, type RemoteClusters } from '../remote/clusters.ts';
import { FindingCause, findingMessage, isConflict, isTransient, sortFindings, type Finding } from './findings.ts';

export const MANIFESTSYNC_FINALIZER = 'syncline.dev/finalizer';

/** Queue keys of ManifestSyncs carry their kind: ConfigSync keys are plain `namespace/name`. */
export const MANIFESTSYNC_KEY_PREFIX = 'ManifestSync/';

/**
 * The owner a ManifestSync's copies are marked with. Its name carries the kind, so the drift watch
 * (which reads only the owned-by annotation) can tell whose queue an edited copy belongs to.
 */
export function manifestSyncOwner(namespace: string, name: string, target: string): { namespace: string; name: string; target: string } {
  return { namespace, name: `ManifestSync:${name}`, target };
}

export type ManifestSyncReconcilerDeps = {
  readonly rest: KubeRest;
  readonly applyClient: (identity: ApplyIdentity) => Promise<ApplyClient>;
  readonly clock: { now(): Date };
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly events: EventRecorder;
  /** The informer cache, by `namespace/name`. */
  readonly get: (key: string) => ManifestSync | undefined;
  /** Namespaces as the namespace informer knows them; undefined while it cannot list them. */
  readonly namespaces: () => readonly MirrorNamespace[] | undefined;
  /** True while the Namespace cache is listing for the first time and has not failed: selectors wait for it. */
  readonly namespacesListing?: () => boolean;
  readonly defaultServiceAccount?: string;
  /** Namespaces whose ManifestSyncs may read and write outside their own namespace with the operator's rights (tenancy.ts); default none. */
  readonly trusted?: TrustedNamespaces;
  readonly intervalBounds: IntervalBounds;
  readonly mirrorKeys: MirrorKeys;
  readonly beforeApply?: (ids: readonly string[], remote?: RemoteClients) => Promise<void>;
  /** Clients of RemoteClusters, for targets with `cluster`. */
  readonly remote?: RemoteClusters;
  readonly random?: () => number;
};

/** Target namespaces applied at once: each is a handful of requests; the API server is the limit. */
const TARGET_CONCURRENCY = 16;

type SyncEvent = ShellEvent;
type Outcome = ShellOutcome<ManifestSyncStatus>;

export function createManifestSyncReconciler(deps: ManifestSyncReconcilerDeps): (key: string) => Promise<ReconcileOutcome> {
  return createReconciler<ManifestSync, ManifestSyncSpec, ManifestSyncStatus>({
    kind: 'ManifestSync',
    plural: 'manifestsyncs',
    rest: deps.rest,
    logger: deps.logger,
    events: deps.events,
    clock: deps.clock,
    metrics: deps.metrics,
    read: deps.get,
    finalizer: { name: MANIFESTSYNC_FINALIZER, finalize: (object, log) => finalize(deps, object, log) },
    parse: (spec) => ManifestSyncSpec.safeParse(spec),
    invalid: (object, reason, message, now) => stalledStatus(object, reason, message, now),
    suspend: { when: (spec) => spec.suspend, message: 'spec.suspend is true: nothing is copied or pruned until it is false' },
    run: ({ object, spec, log }) => sync(deps, object, spec, log),
  });
}

function identityOf(deps: ManifestSyncReconcilerDeps, namespace: string, spec: ManifestSyncSpec | undefined): ApplyIdentity {
  const serviceAccountName = spec?.serviceAccountName ?? deps.defaultServiceAccount;
  return serviceAccountName === undefined ? undefined : { namespace, serviceAccountName };
}

/** Who reads the source and writes a copy, for the tenancy rule (a copy in another cluster writes with that cluster's credentials). */
function actorOf(deps: ManifestSyncReconcilerDeps, namespace: string, spec: ManifestSyncSpec | undefined, cluster?: string): Actor {
  return { objectNamespace: namespace, serviceAccount: identityOf(deps, namespace, spec)?.serviceAccountName, trusted: deps.trusted ?? new Set(), cluster };
}

/** One reconcile of one ManifestSync: what every step reads. */
type CopyRun = {
  readonly deps: ManifestSyncReconcilerDeps;
  readonly object: ManifestSync;
  readonly spec: ManifestSyncSpec;
  readonly namespace: string;
  readonly now: string;
  readonly requeueAfterMs: number;
};

/** A step that cannot go on: the sync stalls with this reason until the spec or the cluster changes. */
type Stall = { readonly stall: { readonly reason: Reason; readonly message: string } };
const isStall = (value: object): value is Stall => 'stall' in value;

/** The copies of one target (a namespace here, or `cluster/namespace` in another cluster). */
type DesiredTarget = { namespace: string; cluster?: string; objects: KubeObject[] };

async function sync(deps: ManifestSyncReconcilerDeps, object: ManifestSync, spec: ManifestSyncSpec, log: Logger): Promise<Outcome> {
  const interval = boundedInterval('syncPolicy.interval', spec.syncPolicy.interval, deps.intervalBounds);
  const run: CopyRun = {
    deps,
    object,
    spec,
    namespace: object.metadata.namespace ?? 'default',
    now: deps.clock.now().toISOString(),
    requeueAfterMs: Math.min(Math.round(interval.ms * (0.9 + (deps.random ?? Math.random)() * 0.2)), MAX_TIMER_MS),
  };
  const stalled = ({ stall: { reason, message } }: Stall): Outcome => ({
    status: stalledStatus(object, reason, message, run.now),
    result: { kind: 'wait', requeueAfterMs: run.requeueAfterMs },
    events: [{ type: 'Warning', reason, message: truncate(message) }],
  });
  const read = await readSource(run);
  if (isStall(read)) return stalled(read);
  const copies = desiredCopies(run, read.source, read.sourceNamespace);
  if (isStall(copies)) return stalled(copies);
  // The operator has just started: what a selector picks is known in a moment. Nothing is written meanwhile.
  if (copies.selectorsUnknown && deps.namespacesListing?.() === true)
    return { status: object.status ?? {}, result: { kind: 'wait', requeueAfterMs: 1000 }, events: [] };
  const outcomes = await applyCopies(run, read.client, copies.desired, copies.selectorsUnknown);
  return copyOutcome(run, log, {
    source: read.source,
    sourceNamespace: read.sourceNamespace,
    desired: copies.desired,
    unresolved: copies.unresolved,
    outcomes,
  });
}

/** Step 1: the source, read with the identity that will write the copies. */
async function readSource(run: CopyRun): Promise<Stall | { client: ApplyClient; source: KubeObject; sourceNamespace: string }> {
  const { deps, spec, namespace } = run;
  const stall = (reason: Reason, message: string): Stall => ({ stall: { reason, message } });
  const sourceNamespace = spec.sourceRef.namespace ?? namespace;
  // Reading a source is held to the same rule as writing a copy: a copy in the tenant's own namespace would
  // otherwise hand it another namespace's Secret.
  if (!allowedWrite({ ...actorOf(deps, namespace, spec), targetNamespace: sourceNamespace }).allowed) {
    return stall(
      Reason.SourceNotAllowed,
      `spec.sourceRef names namespace ${sourceNamespace}: a ManifestSync reads another namespace only with spec.serviceAccountName (whose RBAC decides) or from a trusted namespace (the operator's own, --trusted-namespaces)`,
    );
  }
  let client: ApplyClient;
  try {
    client = await deps.applyClient(identityOf(deps, namespace, spec));
  } catch (error) {
    if (error instanceof ServiceAccountError) return stall(Reason.ApplyFailed, error.message);
    throw error;
  }
  const discovery = await client.discovery();
  const info = discovery.resource(spec.sourceRef.apiVersion, spec.sourceRef.kind);
  if (info === undefined) return stall(Reason.SourceNotFound, `the API server does not serve ${spec.sourceRef.apiVersion} ${spec.sourceRef.kind}`);
  if (!info.namespaced) return stall(Reason.InvalidSpec, `${spec.sourceRef.kind} is cluster-scoped: a ManifestSync copies namespaced objects into namespaces`);
  const sourceId = objectId({
    apiVersion: spec.sourceRef.apiVersion,
    kind: spec.sourceRef.kind,
    metadata: { name: spec.sourceRef.name, namespace: sourceNamespace },
  });
  let source: KubeObject | undefined;
  try {
    source = await client.get(sourceId);
  } catch (error) {
    if (causeOfError(error) === ApplyCause.Forbidden)
      return stall(
        Reason.SourceForbidden,
        `reading the source ${sourceNamespace}/${spec.sourceRef.name}: ${error instanceof Error ? error.message : String(error)}`,
      );
    throw error;
  }
  if (source === undefined)
    return stall(
      Reason.SourceNotFound,
      `the source ${spec.sourceRef.kind} ${sourceNamespace}/${spec.sourceRef.name} does not exist; copies are left as they are`,
    );
  return { client, source, sourceNamespace };
}

/** Step 2: one copy per target namespace (pure). A target in another cluster is keyed `cluster/namespace`. */
function desiredCopies(
  run: CopyRun,
  source: KubeObject,
  sourceNamespace: string,
): Stall | { desired: Map<string, DesiredTarget>; unresolved: string[]; selectorsUnknown: boolean } {
  const { deps, spec } = run;
  const namespaces = deps.namespaces();
  const desired = new Map<string, DesiredTarget>();
  const unresolved: string[] = [];
  const selectorsUnknown = namespaces === undefined && spec.targets.some((t) => t.namespaceSelector !== undefined && t.cluster === undefined);
  if (selectorsUnknown)
    unresolved.push('namespaceSelector: the operator cannot list namespaces (yet); copies in the namespaces it selected are left as they are');
  for (const target of spec.targets) {
    if (target.cluster !== undefined && target.namespaceSelector !== undefined)
      unresolved.push(`cluster ${target.cluster.name}: a namespaceSelector in another cluster is not supported yet; name the namespace`);
  }
  try {
    const { targets } = expandCopyTargets({
      source: { namespace: sourceNamespace, name: spec.sourceRef.name },
      targets: spec.targets,
      namespaces: namespaces ?? [],
      keys: deps.mirrorKeys,
    });
    for (const target of targets) {
      const id = target.cluster === undefined ? target.namespace : `${target.cluster.name}/${target.namespace}`;
      const copy = makeCopy({
        source,
        target: { namespace: target.namespace, name: target.name, patch: target.patch },
        patch: spec.patch,
        keys: deps.mirrorKeys,
      });
      const entry = desired.get(id) ?? { namespace: target.namespace, ...(target.cluster === undefined ? {} : { cluster: target.cluster.name }), objects: [] };
      entry.objects.push(copy);
      desired.set(id, entry);
    }
  } catch (error) {
    if (isMirrorError(error)) return { stall: { reason: Reason.InvalidSpec, message: error.message } };
    throw error;
  }
  return { desired, unresolved, selectorsUnknown };
}

/**
 * Step 3: apply per target namespace, a bounded number at once; namespaces that left the list are pruned
 * (their desired set is empty), in whichever cluster their inventory says. While the namespaces a selector
 * picks are unknown (`selectorsUnknown`: the Namespace cache has not listed, or may not), a namespace of this
 * cluster that is not named is not known to have left: its copy is kept, and its line of the status too.
 */
async function applyCopies(
  run: CopyRun,
  client: ApplyClient,
  desired: ReadonlyMap<string, DesiredTarget>,
  selectorsUnknown: boolean,
): Promise<TargetOutcome[]> {
  const { deps, object, spec, namespace, now } = run;
  const previous = object.status ?? {};
  const previousInventory = new Map((previous.inventory ?? []).map((i) => [i.target, i]));
  const previousTargets = new Map((previous.targets ?? []).map((t) => [t.name, t]));
  const ids = [...new Set([...desired.keys(), ...previousInventory.keys()])].sort();
  const applyOne = async (id: string): Promise<TargetOutcome> => {
    const want = desired.get(id);
    const recorded = previousInventory.get(id);
    if (want === undefined && recorded !== undefined && recorded.cluster === undefined && selectorsUnknown)
      return keptAsItWas(recorded, previousTargets.get(id));
    const cluster = want?.cluster ?? recorded?.cluster;
    const targetNamespace = want?.namespace ?? id.slice(id.lastIndexOf('/') + 1);
    const before = previousTargets.get(id);
    let targetClient = client;
    let remote: RemoteClients | undefined;
    if (cluster !== undefined) {
      try {
        if (deps.remote === undefined) throw new Error('remote clusters are not enabled in this operator');
        remote = await deps.remote.clients(namespace, cluster);
        targetClient = remote.apply;
      } catch (error) {
        const finding: Finding = {
          cause: error instanceof RemoteClusterError ? FindingCause.ClusterUnavailable : causeOfError(error),
          subject: id,
          reason: error instanceof Error ? error.message : String(error),
        };
        return {
          status: {
            name: id,
            namespace: targetNamespace,
            cluster,
            phase: 'Failed',
            objects: recorded?.entries.length ?? 0,
            message: truncate(findingMessage(finding)),
            ...(before?.lastSuccessfulSyncTime === undefined ? {} : { lastSyncedTime: before.lastSuccessfulSyncTime }),
          },
          inventory: { target: id, cluster, entries: [...(recorded?.entries ?? [])] },
          counts: emptyCounts(),
          ...sortFindings([finding]),
          drift: [],
          orphaned: [],
          changed: false,
          changes: [],
        };
      }
    }
    const outcome = await applyTarget({
      client: targetClient,
      target: { name: id, namespace: targetNamespace, ...(cluster === undefined ? {} : { cluster }) },
      desired: want?.objects ?? [],
      inventory: recorded?.entries,
      owner: manifestSyncOwner(namespace, object.metadata.name, id),
      policy: spec.resourceManagementPolicy,
      drift: spec.drift,
      prune: spec.prune,
      allowEmpty: true,
      ...(before === undefined ? {} : { previous: { ...before, lastSyncedTime: before.lastSuccessfulSyncTime } }),
      now,
      ...(deps.beforeApply === undefined ? {} : { beforeApply: (applied: readonly string[]) => deps.beforeApply?.(applied, remote) ?? Promise.resolve() }),
      metrics: deps.metrics,
      syncKey: `${namespace}/${object.metadata.name}`,
      tenancy: actorOf(deps, namespace, spec, cluster),
    });
    return cluster === undefined ? outcome : { ...outcome, inventory: { ...outcome.inventory, cluster } };
  };
  return pool(ids, TARGET_CONCURRENCY, applyOne);
}

/** A target left untouched this run: its inventory and status line as they were. */
function keptAsItWas(recorded: TargetInventory, before: ManifestTargetStatus | undefined): TargetOutcome {
  const { lastSuccessfulSyncTime, ...line } = before ?? {
    name: recorded.target,
    namespace: recorded.target,
    phase: 'Synced' as const,
    objects: decodeInventory(recorded.entries).length,
  };
  return {
    status: { ...line, ...(lastSuccessfulSyncTime === undefined ? {} : { lastSyncedTime: lastSuccessfulSyncTime }) },
    inventory: recorded,
    counts: emptyCounts(),
    ...sortFindings([]),
    drift: [],
    orphaned: [],
    changed: false,
    changes: [],
  };
}

/** Step 4: status, Events and when to come back. */
function copyOutcome(
  run: CopyRun,
  log: Logger,
  done: {
    source: KubeObject;
    sourceNamespace: string;
    desired: ReadonlyMap<string, DesiredTarget>;
    unresolved: readonly string[];
    outcomes: readonly TargetOutcome[];
  },
): Outcome {
  const { object, spec, now, requeueAfterMs } = run;
  const { source, sourceNamespace, desired, unresolved, outcomes } = done;
  const previous = object.status ?? {};
  const combined = combineTargets(outcomes);
  const failures = [...unresolved, ...combined.failures];
  const live = outcomes.filter((o) => desired.has(o.status.name) || o.inventory.entries.length > 0 || o.status.phase === 'Failed');
  const applied = live.filter((o) => o.status.phase === 'Synced').length;
  const at = { generation: object.metadata.generation, now };
  const conditions = appliedConditions(
    previous.conditions ?? [],
    { failures, conflicts: combined.conflicts, drift: combined.drift },
    {
      readyMessage: `Copied ${spec.sourceRef.kind} ${sourceNamespace}/${spec.sourceRef.name} into ${applied} namespace(s)`,
      applied,
      total: live.length + unresolved.length,
      at,
      refused: unresolved.length === 0 && onlyRefused(outcomes),
    },
  );
  const ok = failures.length === 0 && combined.conflicts.length === 0;
  const changed = combined.changed || previous.sourceResourceVersion !== source.metadata.resourceVersion;
  const status: ManifestSyncStatus = {
    ...previous,
    observedGeneration: object.metadata.generation,
    sourceResourceVersion: source.metadata.resourceVersion,
    lastSyncedTime: ok && (combined.changed || previous.lastSyncedTime === undefined) ? now : previous.lastSyncedTime,
    conditions,
    targets: live.map(toManifestTargetStatus),
    inventory: outcomes.filter((o) => o.inventory.entries.length > 0).map((o) => o.inventory),
  };
  const summary = `${combined.counts.created} created, ${combined.counts.configured} configured, ${combined.counts.deleted} deleted`;
  const events: SyncEvent[] = combined.orphaned.map((o) => ({ type: 'Warning', reason: Reason.NamespaceOrphaned, message: truncate(o) }));
  if (combined.conflicts.length > 0)
    events.push({
      type: 'Warning',
      reason: Reason.Conflict,
      message: truncate(`${combined.conflicts.length} copy(ies) not written: ${combined.conflicts.join('; ')}`),
    });
  if (failures.length > 0)
    events.push({
      type: 'Warning',
      reason: unresolved.length === 0 && onlyRefused(outcomes) ? Reason.NamespaceNotAllowed : Reason.ApplyFailed,
      message: truncate(`${summary}; ${failures.join('; ')}`),
    });
  if (ok && combined.changed) {
    events.push({ type: 'Normal', reason: 'Synced', message: truncate(`${summary}: ${describeChanges(combined.changes)}`), logged: true });
    log.info(combined.counts, 'copied');
  }
  // What needs a person (RBAC, the tenancy rule) or another cluster, and what this operator cannot resolve yet
  // (`unresolved`), is looked at again at the interval, not retried with backoff.
  const onlyWaiting = combined.findings.filter((f) => !isConflict(f)).every((f) => !isTransient(f.cause) || f.cause === FindingCause.ClusterUnavailable);
  return { status, result: ok || onlyWaiting ? { kind: 'done', requeueAfterMs } : { kind: 'retry' }, events: changed || !ok ? events : [] };
}

function toManifestTargetStatus(outcome: TargetOutcome): ManifestTargetStatus {
  const { lastSyncedTime, ...rest } = outcome.status;
  return { ...rest, ...(lastSyncedTime === undefined ? {} : { lastSuccessfulSyncTime: lastSyncedTime }) };
}

function stalledStatus(object: ManifestSync, reason: Reason, message: string, now: string): ManifestSyncStatus {
  const previous = object.status ?? {};
  const at = { generation: object.metadata.generation, now };
  const short = truncate(message);
  let conditions: Condition[] = removeCondition(previous.conditions ?? [], 'Reconciling');
  conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason, message: short }, at);
  conditions = setCondition(conditions, { type: 'Stalled', status: 'True', reason, message: short }, at);
  return { ...previous, observedGeneration: object.metadata.generation, conditions };
}

/** Deletion: delete the copies (deletionPolicy Delete) or leave them (Orphan), then let go. */
async function finalize(deps: ManifestSyncReconcilerDeps, object: ManifestSync, log: Logger): Promise<ReconcileOutcome> {
  if (!(object.metadata.finalizers ?? []).includes(MANIFESTSYNC_FINALIZER)) return { kind: 'done' };
  const parsed = ManifestSyncSpec.safeParse(object.spec);
  const deletionPolicy = parsed.success ? parsed.data.deletionPolicy : 'Orphan';
  if (deletionPolicy === 'Delete') {
    const namespace = object.metadata.namespace ?? 'default';
    const client = await deps.applyClient(identityOf(deps, namespace, parsed.success ? parsed.data : undefined));
    for (const { target, entries, cluster } of object.status?.inventory ?? []) {
      if (entries.length === 0) continue;
      let targetClient = client;
      if (cluster !== undefined) {
        try {
          if (deps.remote === undefined) throw new Error('remote clusters are not enabled in this operator');
          targetClient = (await deps.remote.clients(namespace, cluster)).apply;
        } catch (error) {
          // The finalizer holds until that cluster answers (deletionPolicy Orphan releases it).
          log.warn({ target, cluster, err: error instanceof Error ? error.message : String(error) }, 'cannot reach the cluster to delete copies; retrying');
          return { kind: 'retry' };
        }
      }
      const { allowed, refused } = partitionInventory(actorOf(deps, namespace, parsed.success ? parsed.data : undefined, cluster), entries);
      if (refused.length > 0)
        log.warn({ target, left: refused.length }, `copies left in place: ${NAMESPACE_NOT_ALLOWED} (this ManifestSync may not delete outside its namespace)`);
      const outcome = await applyTarget({
        client: targetClient,
        target: { name: target },
        desired: [],
        inventory: allowed,
        owner: manifestSyncOwner(namespace, object.metadata.name, target),
        prune: true,
        allowEmpty: true,
        now: deps.clock.now().toISOString(),
        syncKey: `${namespace}/${object.metadata.name}`,
      });
      if (outcome.failures.length > 0) {
        log.warn({ target, failed: outcome.failures.length }, 'could not delete every copy; retrying');
        return { kind: 'retry' };
      }
    }
  }
  await removeFinalizer(deps.rest, 'manifestsyncs', object, MANIFESTSYNC_FINALIZER);
  log.info({ deletionPolicy }, 'finalized');
  return { kind: 'done' };
}

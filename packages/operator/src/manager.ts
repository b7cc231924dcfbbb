// The controller manager: it runs what the controllers declare (controller/controller.ts: the kind each one
// reconciles, what else wakes it and how that maps to its keys) over one work queue, one watch budget, the
// Secret/ConfigMap reference watches and the drift watches they share; leader election (only the leader
// reconciles, so only the leader writes); and the readiness and liveness the health server reports. Each
// controller's wiring is in its own module under controller/.
import { DEFAULT_RENEW_DEADLINE_MS, DEFAULT_WATCH_BUDGET, WatchBudget, WatchBudgetError, runLeaderElection, type Informer, type KubeObject } from '@syncline/kube';
import type { ConfigSync } from '@syncline/api';
import { configSyncController } from './controller/configsync-controller.ts';
import { errorMessage, type Controller, type ControllerContext, type ManagerOptions, type WatchedChange, type WatchedKind } from './controller/controller.ts';
import { createDriftWatches } from './controller/drift-watches.ts';
import { manifestSyncController } from './controller/manifestsync-controller.ts';
import { WorkQueue, type ReconcileOutcome } from '@syncline/runtime';
import { createReferenceWatches } from './controller/references.ts';
import { probedRemoteClusters, remoteClusterController } from './controller/remotecluster-controller.ts';
import { replicationController } from './controller/replication-controller.ts';
import { MANIFESTSYNC_KEY_PREFIX } from './reconcile/manifestsync.ts';
import { NAMESPACEREPLICATION_KEY_PREFIX } from './reconcile/namespacereplication.ts';
import type { RemoteClients } from './remote/clusters.ts';
import { shardSelector } from './shard.ts';
import { ResourceKind, objectLabels } from './metrics.ts';

export { projectManaged, sameButStatus, writtenLastBy } from './controller/drift-watches.ts';
export { errorMessage, onlyStatusChanged } from './controller/controller.ts';
export type { ManagerOptions, WatchedChange, WatchedKind } from './controller/controller.ts';

const LEFT_KIND = { configsync: ResourceKind.ConfigSync, manifestsync: ResourceKind.ManifestSync, namespacereplication: ResourceKind.NamespaceReplication } as const;

/** Logged when a sync leaves this operator's view: deleted, or relabelled to another shard (see shard.ts). */
export const LEFT_SHARD_MESSAGE = 'left this shard (deleted, or relabelled to another shard); forgotten, nothing pruned';

/** How long the leader waits for its caches to fill before it reconciles anyway (see startWork). */
const CACHE_SYNC_TIMEOUT_MS = 60_000;

/** What /healthz reports: fine, or why the process should be restarted. */
export type Liveness = { readonly ok: true } | { readonly ok: false; readonly reason: string };

export const DEFAULT_STALL_TIMEOUT_MS = 10 * 60_000;
export type Manager = {
  /** Caches synced and watches alive. */
  ready(): boolean;
  /** Whether the process still makes progress: the queue moves, and a leader renews its Lease. */
  live(): Liveness;
  isLeader(): boolean;
  /** Enqueue a ConfigSync now (webhooks, the CLI's reconcile request). */
  enqueue(key: string): void;
  configSyncs(): ConfigSync[];
  /**
   * The other shards' ConfigSyncs, metadata and spec.source.git only: a push delivered to this shard's
   * webhook receiver wakes them through the reconcile-request annotation their own shard watches.
   */
  otherShardConfigSyncs(): ConfigSync[];
  /** Whether a ConfigSync key belongs to another shard (as far as this operator's watch knows). */
  inOtherShard(key: string): boolean;
  /** The objects of one kind in this operator's cache (read only: the web UI lists these). */
  watched(kind: WatchedKind): KubeObject[];
  /** Calls `listener` on every change of a watched object; returns the function that stops it. */
  observe(listener: WatchedChange): () => void;
  stop(): Promise<void>;
};

export function startManager(options: ManagerOptions): Manager {
  const { rest, logger, metrics } = options;
  const budget = options.watchBudget ?? new WatchBudget(DEFAULT_WATCH_BUDGET);
  const queue = new WorkQueue({ concurrency: options.concurrency, onDepthChange: (depth) => metrics.queueDepth.set(depth) });
  const ns = options.watchNamespace;
  const collection = (group: string, version: string, plural: string): string =>
    `${group === '' ? '/api' : `/apis/${group}`}/${version}${ns !== undefined ? `/namespaces/${ns}` : ''}/${plural}`;
  const observers = new Set<WatchedChange>();
  const leadership = { leader: options.leaderElection === undefined };
  // Managed objects: the drift watches (controller/drift-watches.ts) of the kinds and namespaces the syncs write.
  const drift = createDriftWatches({
    rest,
    budget,
    logger,
    watchNamespace: ns,
    applyClient: () => options.applyClient(undefined),
    onDrift: (ownedBy) => {
      const key = queueKeyOfOwner(ownedBy);
      if (key !== undefined) queue.add(key);
    },
  });
  // Filled once every controller is declared: the first event comes after the watches start, below.
  let controllers: readonly Controller[] = [];
  let wakeReplicationsOf: (namespace: string) => void = () => undefined;
  const ctx: ControllerContext = {
    options,
    rest,
    logger,
    metrics,
    budget,
    queue,
    drift,
    references: createReferenceWatches({ rest, budget, logger, queue, collection, secretNamespaces: options.secretNamespaces }),
    collection,
    // The sync kinds are watched through the shard's label selector: the others' syncs never reach this cache.
    shardLabelSelector: shardSelector(options.shard),
    notify: (kind, type, object) => {
      for (const observer of observers) observer(kind, type, object);
    },
    leftShard: (kind, key) => {
      logger.info({ [kind]: key }, LEFT_SHARD_MESSAGE);
      const { namespace, name } = objectLabels(key);
      void metrics.forgetObject(LEFT_KIND[kind], namespace, name);
    },
    isLeader: () => leadership.leader,
    watchBeforeApply: async (ids: readonly string[], cluster?: RemoteClients): Promise<void> => {
      try {
        await drift.watch(ids, cluster);
      } catch (error) {
        // Past the watch budget the apply fails (its target reports why): drift it writes would go unseen.
        if (error instanceof WatchBudgetError) throw error;
        logger.debug({ err: errorMessage(error) }, 'could not watch managed objects');
      }
    },
    wakeReplicationsOf: (namespace) => wakeReplicationsOf(namespace),
    wakeNamingCluster: (namespace, name) => {
      for (const controller of controllers) for (const key of controller.namingCluster?.(namespace, name) ?? []) queue.add(key);
    },
  };
  const remoteClusters = remoteClusterController(ctx);
  const configSyncs = configSyncController(ctx, remoteClusters.remote);
  const manifestSyncs = manifestSyncController(ctx, remoteClusters.remote);
  const replications = replicationController(ctx, {
    remote: remoteClusters.remote,
    credentials: { remoteClusters: remoteClusters.controller.for, configSyncs: configSyncs.controller.for, otherShards: configSyncs.otherShards },
  });
  wakeReplicationsOf = replications.wakeReplicationsOf;
  controllers = [configSyncs.controller, manifestSyncs, remoteClusters.controller, replications.controller];
  // The caches a reconcile looks other objects up in (a target's RemoteCluster, a referenced Secret, the syncs
  // themselves). A controller's other watches are left out: a namespace-scoped operator may not list namespaces.
  const caches = [...controllers.map((c) => c.for), ...ctx.references.informers];
  const watches: Informer[] = [...caches, ...controllers.flatMap((c) => c.watches)];
  const run = runControllers({ controllers, caches, queue, logger, metrics, leadership, resyncMs: options.resyncMs ?? 10 * 60_000 });
  for (const informer of watches) informer.start();
  const election = lead({ options, queue, leadership, startWork: run.startWork });

  const byKind = new Map(controllers.map((c) => [c.kind, c.for]));
  // syncline_resource_info: reported by the replica that leads (one series per object across replicas), from
  // the caches at each scrape; RemoteClusters by the shard that probes them.
  const untrackResources = metrics.trackResources(() =>
    leadership.leader
      ? [
          { kind: ResourceKind.ConfigSync, objects: configSyncs.controller.for.list() },
          { kind: ResourceKind.ManifestSync, objects: manifestSyncs.for.list() },
          { kind: ResourceKind.NamespaceReplication, objects: replications.controller.for.list() },
          { kind: ResourceKind.RemoteCluster, objects: probedRemoteClusters(options.shard, remoteClusters.controller.for.list()) },
        ]
      : [],
  );

  return {
    ready: () => caches.every((i) => i.synced && i.healthy),
    live: () => election.live(),
    isLeader: () => leadership.leader,
    // A push: this run must see the branch as it is now, not a shared listing from before the push.
    enqueue: (key) => configSyncs.requestFresh(key),
    configSyncs: () => configSyncs.controller.for.list() as unknown as ConfigSync[],
    otherShardConfigSyncs: () => configSyncs.otherShards.list() as unknown as ConfigSync[],
    inOtherShard: (key) => configSyncs.otherShards.get(key) !== undefined,
    watched: (kind) => byKind.get(kind)?.list() ?? [],
    observe: (listener) => {
      observers.add(listener);
      return () => observers.delete(listener);
    },
    async stop() {
      run.stop();
      untrackResources();
      replications.stopHeartbeats();
      election.abort();
      await queue.shutdown();
      for (const controller of controllers) await controller.stop?.();
      await drift.stop();
      await Promise.all(watches.map((i) => i.stop()));
    },
  };
}

/**
 * The leader's work: once the caches are filled, every declared controller's keys are enqueued and the queue
 * routes each key to the controller whose prefix it carries; a periodic resync enqueues the resync keys again.
 */
function runControllers(input: {
  controllers: readonly Controller[];
  caches: readonly Informer[];
  queue: WorkQueue;
  logger: ManagerOptions['logger'];
  metrics: ManagerOptions['metrics'];
  leadership: { leader: boolean };
  resyncMs: number;
}): { readonly startWork: (signal: AbortSignal) => Promise<void>; readonly stop: () => void } {
  const { controllers, caches, queue, logger, leadership } = input;
  // ConfigSync keys carry no prefix: the controllers with one are asked first.
  const routed = [...controllers].sort((a, b) => b.keyPrefix.length - a.keyPrefix.length);
  const reconcile = (key: string): Promise<ReconcileOutcome> => {
    const controller = routed.find((c) => key.startsWith(c.keyPrefix));
    if (controller === undefined) throw new Error(`no controller reconciles ${key}`);
    return controller.reconcile(key);
  };
  // Periodic resync: enqueue everything, so a missed event is repaired within resyncMs at worst.
  const resync = setInterval(() => {
    if (!leadership.leader) return;
    for (const controller of controllers) for (const key of controller.resyncKeys?.() ?? []) queue.add(key);
  }, input.resyncMs);
  resync.unref();
  return {
    startWork: async (signal) => {
      input.metrics.leader.set(1);
      // No reconcile runs before the caches it reads are filled: one that did would find a RemoteCluster (or a
      // Secret) missing, report it and wait for a retry. A cache that cannot list (rights) must not hold every
      // other object back forever: past the bound the work starts anyway, and says which cache is missing.
      const synced = await Promise.all(caches.map((informer) => informer.waitSynced(CACHE_SYNC_TIMEOUT_MS)));
      if (signal.aborted || !leadership.leader) return;
      if (synced.includes(false)) logger.warn({ timeoutMs: CACHE_SYNC_TIMEOUT_MS }, 'some caches did not sync in time (see the watch errors above); reconciling anyway');
      queue.start(reconcile);
      for (const controller of controllers) for (const key of controller.keys()) queue.add(key);
    },
    stop: () => clearInterval(resync),
  };
}

/**
 * Leader election (or none: this replica leads), and the liveness it implies: a leader that cannot renew its
 * Lease stops writing at once (fencing), stops reconciling and says so.
 */
function lead(input: { options: ManagerOptions; queue: WorkQueue; leadership: { leader: boolean }; startWork: (signal: AbortSignal) => Promise<void> }): { live(): Liveness; abort(): void } {
  const { options, queue, leadership } = input;
  const { logger, metrics } = options;
  const abort = new AbortController();
  let lostLeadership = false;
  let renewedAt = 0;
  const stallTimeoutMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
  if (options.leaderElection === undefined) {
    void input.startWork(abort.signal);
  } else {
    const election = options.leaderElection;
    void runLeaderElection(
      {
        ...election,
        rest: election.rest ?? options.rest,
        onStartedLeading: () => {
          leadership.leader = true;
          logger.info({ identity: election.identity }, 'became leader');
          void input.startWork(abort.signal);
        },
        onRenewed: () => {
          renewedAt = Date.now();
        },
        onStoppedLeading: () => {
          // Fencing: another replica may lead from now on, so this one writes nothing more. The callback fences
          // the clients (a write in flight is cut) and no further reconcile starts; the process then exits.
          leadership.leader = false;
          lostLeadership = true;
          options.onLostLeadership();
          queue.halt();
          metrics.leader.set(0);
          logger.error({ identity: election.identity }, 'lost leadership (the Lease could not be renewed in time, or another replica holds it): writes fenced, reconciles stopped; exiting so that a fresh process competes again');
        },
        onError: (error) => logger.warn({ err: errorMessage(error) }, 'leader election: could not reach the lease'),
      },
      abort.signal,
    );
  }
  return {
    live: () => {
      if (lostLeadership) return { ok: false, reason: 'lost leadership: writes are fenced and the process is exiting' };
      const sinceRenewal = Date.now() - renewedAt;
      if (leadership.leader && options.leaderElection !== undefined && sinceRenewal > DEFAULT_RENEW_DEADLINE_MS) return { ok: false, reason: `the leader has not renewed its Lease for ${Math.round(sinceRenewal / 1000)}s` };
      const stalled = queue.stalledForMs();
      if (stalled > stallTimeoutMs) return { ok: false, reason: `the work queue has had work and finished none of it for ${Math.round(stalled / 1000)}s` };
      return { ok: true };
    },
    abort: () => abort.abort(),
  };
}

/**
 * The queue key of the sync an owned-by annotation names: `namespace/name/target` for a ConfigSync,
 * `namespace/ManifestSync:name/target` for a ManifestSync (see manifestSyncOwner); none for a mirroring replica.
 */
export function queueKeyOfOwner(ownedBy: string): string | undefined {
  const [namespace, name] = ownedBy.split('/');
  if (namespace === undefined || name === undefined || namespace === '' || name === '') return undefined;
  // Mirroring replicas (`Mirror:Kind:name`): the mirror controller's own replica watch handles their edits.
  if (name.startsWith('Mirror:')) return undefined;
  if (name.startsWith('ManifestSync:')) return `${MANIFESTSYNC_KEY_PREFIX}${namespace}/${name.slice('ManifestSync:'.length)}`;
  if (name.startsWith('NamespaceReplication:')) return `${NAMESPACEREPLICATION_KEY_PREFIX}${namespace}/${name.slice('NamespaceReplication:'.length)}`;
  return `${namespace}/${name}`;
}


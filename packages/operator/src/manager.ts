// The operator's manager: its four kinds (ConfigSync, ManifestSync, NamespaceReplication, RemoteCluster:
// controller/controller.ts says what each declares) registered on the process's controller manager
// (@syncline/runtime's createManager: one work queue with a lane per controller, leader election, liveness), with
// what they share: one watch budget, the Secret/ConfigMap reference watches and the drift watches, which wake the
// owner's controller with its key; the caches the web UI reads; and the resource metrics. Each controller's
// wiring is in its own module under controller/.
import { DEFAULT_WATCH_BUDGET, WatchBudget, WatchBudgetError, type Informer, type KubeObject } from '@syncline/kube';
import type { ConfigSync } from '@syncline/api';
import type { ApplyClient } from '@syncline/apply';
import { configSyncController } from './controller/configsync-controller.ts';
import {
  errorMessage,
  type Controller,
  type ControllerContext,
  type ControllerKeys,
  type ManagerOptions,
  type WatchedChange,
  type WatchedKind,
} from './controller/controller.ts';
import { createDriftWatches } from './controller/drift-watches.ts';
import { manifestSyncController } from './controller/manifestsync-controller.ts';
import { SlotPool, createManager, type ControllerQueue, type LaneState, type Liveness, type Manager as ControllerManager } from '@syncline/runtime';
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
export type { Liveness } from '@syncline/runtime';

const LEFT_KIND = {
  configsync: ResourceKind.ConfigSync,
  manifestsync: ResourceKind.ManifestSync,
  namespacereplication: ResourceKind.NamespaceReplication,
} as const;

/** Log when a sync leaves this operator's view: deleted, or relabelled to another shard (see shard.ts). */
export const LEFT_SHARD_MESSAGE = 'left this shard (deleted, or relabelled to another shard); forgotten, nothing pruned';

/** The controller names of the operator's kinds (queue metrics, logs, liveness). */
export const CONTROLLER_NAMES: Readonly<Record<WatchedKind, string>> = {
  ConfigSync: 'configsync',
  ManifestSync: 'manifestsync',
  NamespaceReplication: 'namespacereplication',
  RemoteCluster: 'remotecluster',
};

export type Manager = {
  /** Caches synced and watches alive (every registered controller's that declares readiness). */
  ready(): boolean;
  /** Whether the process still makes progress: every controller's lane moves, and a leader renews its Lease. */
  live(): Liveness;
  isLeader(): boolean;
  /** Every controller's lane: depth, reconciles in flight, how long it made no progress. */
  lanes(): LaneState[];
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
  /** Stops every controller of the controller manager (the others registered on it included). */
  stop(): Promise<void>;
};

/** The controller manager the operator's kinds register on: the caller's, or one of its own (started here). */
function controllerManager(options: ManagerOptions): { controllers: ControllerManager; own: boolean } {
  if (options.controllers !== undefined) return { controllers: options.controllers, own: false };
  const election = options.leaderElection;
  const controllers = createManager({
    logger: options.logger,
    metrics: options.metrics,
    ...(election === undefined ? {} : { leaderElection: { ...election, rest: election.rest ?? options.rest } }),
    ...(options.onLostLeadership === undefined ? {} : { onLostLeadership: options.onLostLeadership }),
    ...(options.stallTimeoutMs === undefined ? {} : { stallTimeoutMs: options.stallTimeoutMs }),
  });
  return { controllers, own: true };
}

export function startManager(options: ManagerOptions): Manager {
  const { rest, logger, metrics } = options;
  const { controllers: runtime, own } = controllerManager(options);
  const budget = options.watchBudget ?? new WatchBudget(DEFAULT_WATCH_BUDGET);
  const ns = options.watchNamespace;
  const collection = (group: string, version: string, plural: string): string =>
    `${group === '' ? '/api' : `/apis/${group}`}/${version}${ns !== undefined ? `/namespaces/${ns}` : ''}/${plural}`;
  const observers = new Set<WatchedChange>();
  // Each kind's lane, filled as they register: an event comes only once the manager starts the watches.
  const lanes = new Map<WatchedKind, { readonly controller: Controller; readonly queue: ControllerQueue<string> }>();
  // Managed objects: the drift watches (controller/drift-watches.ts) of the kinds and namespaces the syncs write.
  const drift = createDriftWatches({
    rest,
    budget,
    logger,
    watchNamespace: ns,
    applyClient: () => options.applyClient(undefined),
    onDrift: (ownedBy) => {
      const owner = queueKeyOfOwner(ownedBy);
      if (owner !== undefined) lanes.get(owner.kind)?.queue.add(owner.key);
    },
  });
  let wakeReplicationsOf: (namespace: string) => void = () => undefined;
  const base: Omit<ControllerContext, 'queue'> = {
    options,
    rest,
    logger,
    metrics,
    budget,
    drift,
    references: createReferenceWatches({ rest, budget, logger, collection, secretNamespaces: options.secretNamespaces }),
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
    isLeader: () => runtime.isLeader(),
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
      for (const { controller, queue } of lanes.values()) for (const key of controller.namingCluster?.(namespace, name) ?? []) queue.add(key);
    },
  };
  // The caches a reconcile of any of the four kinds looks other objects up in (a target's RemoteCluster, a
  // referenced Secret, the syncs themselves), waited for before the first reconcile; filled once all registered.
  // A controller's other watches are left out: a namespace-scoped operator may not list namespaces.
  const shared: Informer[] = [];
  const ready = (): boolean => shared.every((i) => i.synced && i.healthy);
  // The four kinds share --concurrency as one queue did: a slot of the pool, whichever kind's key waits.
  const pool = new SlotPool(options.concurrency);
  const register = <Kind extends WatchedKind, R>(
    kind: Kind,
    build: (ctx: ControllerContext<ControllerKeys[Kind]>) => R,
    pick: (built: R) => Controller<ControllerKeys[Kind]>,
  ): R => {
    let built: R | undefined;
    runtime.register<ControllerKeys[Kind], ReturnType<typeof declaration<ControllerKeys[Kind]>>>(
      CONTROLLER_NAMES[kind],
      { concurrency: options.concurrency, pool },
      (queue) => {
        const made = build({ ...base, queue });
        built = made;
        const controller = pick(made);
        lanes.set(kind, { controller, queue });
        return declaration(controller, { caches: shared, ready, ...(options.resyncMs === undefined ? {} : { resyncMs: options.resyncMs }) });
      },
    );
    return built as R;
  };
  const remoteClusters = register(
    'RemoteCluster',
    (ctx) => remoteClusterController(ctx),
    (r) => r.controller,
  );
  const configSyncs = register(
    'ConfigSync',
    (ctx) => configSyncController(ctx, remoteClusters.remote),
    (r) => r.controller,
  );
  const manifestSyncs = register(
    'ManifestSync',
    (ctx) => manifestSyncController(ctx, remoteClusters.remote),
    (r) => r,
  );
  const replications = register(
    'NamespaceReplication',
    (ctx) =>
      replicationController(ctx, {
        remote: remoteClusters.remote,
        credentials: { remoteClusters: remoteClusters.controller.for, configSyncs: configSyncs.controller.for, otherShards: configSyncs.otherShards },
      }),
    (r) => r.controller,
  );
  wakeReplicationsOf = replications.wakeReplicationsOf;
  shared.push(...[...lanes.values()].map(({ controller }) => controller.for), ...base.references.informers);
  if (own) runtime.start();
  readDiscoveryAhead(() => options.applyClient(undefined));

  const byKind = new Map([...lanes.entries()].map(([kind, { controller }]) => [kind, controller.for]));
  // syncline_resource_info: reported by the replica that leads (one series per object across replicas), from
  // the caches at each scrape; RemoteClusters by the shard that probes them.
  const untrackResources = metrics.trackResources(() =>
    runtime.isLeader()
      ? [
          { kind: ResourceKind.ConfigSync, objects: configSyncs.controller.for.list() },
          { kind: ResourceKind.ManifestSync, objects: manifestSyncs.for.list() },
          { kind: ResourceKind.NamespaceReplication, objects: replications.controller.for.list() },
          { kind: ResourceKind.RemoteCluster, objects: probedRemoteClusters(options.shard, remoteClusters.controller.for.list()) },
        ]
      : [],
  );

  return {
    ready: () => runtime.ready(),
    live: () => runtime.live(),
    isLeader: () => runtime.isLeader(),
    lanes: () => runtime.lanes(),
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
      untrackResources();
      replications.stopHeartbeats();
      await runtime.stop();
      await drift.stop();
    },
  };
}

/**
 * Reads the API server's discovery (which kinds it serves, and where) now, while the caches list, rather than by
 * the first sync that renders: every run of a first wave would wait on that one read (two GETs, one of them a JSON
 * document of every served kind) between its fetch and its render. The same requests, made earlier; a failure
 * caches nothing (the client drops a failed read), and the first render reads it then.
 */
export function readDiscoveryAhead(applyClient: () => Promise<Pick<ApplyClient, 'discovery'>>): void {
  void applyClient()
    .then((client) => client.discovery())
    .catch(() => undefined);
}

/** One of the four kinds as the controller manager runs it: its own cache and the shared ones, its keys. */
function declaration<K extends string>(controller: Controller<K>, input: { caches: readonly Informer[]; ready: () => boolean; resyncMs?: number }) {
  return {
    for: controller.for,
    caches: input.caches,
    watches: controller.watches,
    keys: () => controller.keys(),
    ...(controller.resyncKeys === undefined ? {} : { resyncKeys: controller.resyncKeys }),
    ...(input.resyncMs === undefined ? {} : { resyncMs: input.resyncMs }),
    reconcile: (key: K) => controller.reconcile(key),
    ready: input.ready,
    ...(controller.stop === undefined ? {} : { stop: controller.stop }),
  };
}

/**
 * The controller and key of the sync an owned-by annotation names: `namespace/name/target` for a ConfigSync,
 * `namespace/ManifestSync:name/target` for a ManifestSync (see manifestSyncOwner); none for a mirroring replica.
 */
export function queueKeyOfOwner(
  ownedBy: string,
):
  | { [Kind in 'ConfigSync' | 'ManifestSync' | 'NamespaceReplication']: { readonly kind: Kind; readonly key: ControllerKeys[Kind] } }[
      'ConfigSync' | 'ManifestSync' | 'NamespaceReplication']
  | undefined {
  const [namespace, name] = ownedBy.split('/');
  if (namespace === undefined || name === undefined || namespace === '' || name === '') return undefined;
  // Mirroring replicas (`Mirror:Kind:name`): the mirror controller's own replica watch handles their edits.
  if (name.startsWith('Mirror:')) return undefined;
  if (name.startsWith('ManifestSync:')) return { kind: 'ManifestSync', key: `${MANIFESTSYNC_KEY_PREFIX}${namespace}/${name.slice('ManifestSync:'.length)}` };
  if (name.startsWith('NamespaceReplication:'))
    return { kind: 'NamespaceReplication', key: `${NAMESPACEREPLICATION_KEY_PREFIX}${namespace}/${name.slice('NamespaceReplication:'.length)}` };
  return { kind: 'ConfigSync', key: `${namespace}/${name}` };
}

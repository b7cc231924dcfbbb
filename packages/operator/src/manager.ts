// The controller manager: informers for ConfigSyncs, the Secrets/ConfigMaps they reference and the
// objects they manage; the work queue; leader election (only the leader reconciles, so only the leader
// writes); and the readiness the health server reports.
import { SharedWatches, Informer, objectKey, type KubeObject, DEFAULT_WATCH_BUDGET, WatchBudget, WatchBudgetError, DEFAULT_RENEW_DEADLINE_MS, runLeaderElection } from '@syncline/kube';
import { decodeInventory } from '@syncline/apply';
import { createDriftWatches } from './controller/drift-watches.ts';
import type { ConfigSync, ManifestSync, NamespaceReplication, RemoteCluster } from './api/v1alpha1.ts';
import { DEFAULT_RESOURCE_TYPES, parseResourceType } from './dr/transform.ts';
import { NAMESPACEREPLICATION_KEY_PREFIX, createNamespaceReplicationReconciler } from './reconcile/namespacereplication.ts';
import { retireHeartbeat, startHeartbeats } from './dr/heartbeat.ts';
import { createRemoteClusters, type RemoteClients } from './remote/clusters.ts';
import { createTargetBackoff } from './remote/backoff.ts';
import { REMOTECLUSTER_KEY_PREFIX, createRemoteClusterReconciler } from './reconcile/remotecluster.ts';
import { WorkQueue } from './controller/queue.ts';
import type { MirrorKeys, MirrorNamespace } from './mirror/index.ts';
import { DEFAULT_INTERVAL_BOUNDS, createConfigSyncReconciler, type ConfigSyncReconcilerDeps } from './reconcile/configsync.ts';
import type { TargetNoop } from './reconcile/target.ts';
import { MANIFESTSYNC_KEY_PREFIX, createManifestSyncReconciler } from './reconcile/manifestsync.ts';
import { inShard, otherShardsSelector, shardSelector } from './shard.ts';
import { allowedWrite } from './tenancy.ts';
import { ResourceKind, objectLabels } from './metrics.ts';

export { projectManaged, sameButStatus, writtenLastBy } from './controller/drift-watches.ts';

const LEFT_KIND = { configsync: ResourceKind.ConfigSync, manifestsync: ResourceKind.ManifestSync, namespacereplication: ResourceKind.NamespaceReplication } as const;

/** Logged when a sync leaves this operator's view: deleted, or relabelled to another shard (see shard.ts). */
export const LEFT_SHARD_MESSAGE = 'left this shard (deleted, or relabelled to another shard); forgotten, nothing pruned';

/** How long the leader waits for its caches to fill before it reconciles anyway (see startWork). */
const CACHE_SYNC_TIMEOUT_MS = 60_000;

export type ManagerOptions = Omit<ConfigSyncReconcilerDeps, 'get' | 'beforeApply' | 'remote' | 'targetBackoff' | 'remoteWatchesHealthy' | 'unwatchedDrift' | 'takeFreshRequest' | 'noop'> & {
  /** Admit RemoteClusters with http:// servers or insecure-skip-tls-verify (tests only). */
  readonly allowInsecureRemote?: boolean;
  /** The webhook receiver's Secret (--webhook-secret): a credential, never replicated by a NamespaceReplication. */
  readonly webhookSecret?: { readonly namespace: string; readonly name: string };
  readonly mirrorKeys: MirrorKeys;
  readonly concurrency: number;
  /** Watch ConfigSyncs in this namespace only; undefined = all namespaces. */
  readonly watchNamespace?: string;
  /**
   * Watch Secrets in these namespaces only (one watch each), for an operator without cluster-wide Secret
   * rights (--secret-namespaces); undefined = one watch over all namespaces (or watchNamespace).
   */
  readonly secretNamespaces?: readonly string[];
  /**
   * The shard this operator runs (--shard): it watches the syncs labelled syncline.dev/shard=<shard>;
   * undefined = the default shard, which takes the unlabelled ones. See shard.ts.
   */
  readonly shard?: string;
  readonly leaderElection?: { readonly namespace: string; readonly name: string; readonly identity: string; readonly leaseDurationMs?: number };
  /** Bounds the watches the manager opens, in every cluster (default DEFAULT_WATCH_BUDGET). */
  readonly watchBudget?: WatchBudget;
  /** Re-list every informer this often even when watches look healthy (missed events cannot stall a sync). */
  readonly resyncMs?: number;
  readonly onLostLeadership: () => void;
  /** The fence of every client this manager makes (remote clusters'); main aborts it when leadership is lost. */
  readonly writeFence?: AbortSignal;
  /** Liveness fails when the work queue has had work and finished none of it for this long (default 10 min). */
  readonly stallTimeoutMs?: number;
  /** Renew a heartbeat Lease per NamespaceReplication in its standby this often (dr/heartbeat.ts); undefined = none. */
  readonly drHeartbeat?: { readonly intervalMs: number; readonly identity: string };
};

/** What /healthz reports: fine, or why the process should be restarted. */
export type Liveness = { readonly ok: true } | { readonly ok: false; readonly reason: string };

export const DEFAULT_STALL_TIMEOUT_MS = 10 * 60_000;
/** The kinds whose objects the web UI shows, straight from this operator's informers. */
export type WatchedKind = 'ConfigSync' | 'ManifestSync' | 'NamespaceReplication' | 'RemoteCluster';
/** A change of a watched object, as its informer saw it (DELETED: `object` is its last known state). */
export type WatchedChange = (kind: WatchedKind, type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubeObject) => void;

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
  const abort = new AbortController();
  const budget = options.watchBudget ?? new WatchBudget(DEFAULT_WATCH_BUDGET);
  const queue = new WorkQueue({ concurrency: options.concurrency, onDepthChange: (depth) => metrics.queueDepth.set(depth) });
  const ns = options.watchNamespace;
  // The sync kinds are watched through the shard's label selector: the others' syncs never reach this cache.
  const shardLabelSelector = shardSelector(options.shard);
  /** A sync left this shard's view: deleted, or relabelled to another shard. Forgotten, never finalized here. */
  const leftShard = (kind: 'configsync' | 'manifestsync' | 'namespacereplication', key: string): void => {
    logger.info({ [kind]: key }, LEFT_SHARD_MESSAGE);
    const { namespace, name } = objectLabels(key);
    void metrics.forgetObject(LEFT_KIND[kind], namespace, name);
  };
  const collection = (group: string, version: string, plural: string): string =>
    `${group === '' ? '/api' : `/apis/${group}`}/${version}${ns !== undefined ? `/namespaces/${ns}` : ''}/${plural}`;

  const observers = new Set<WatchedChange>();
  const notify: WatchedChange = (kind, type, object) => {
    for (const observer of observers) observer(kind, type, object);
  };

  // Referenced Secrets/ConfigMaps: `namespace/kind/name` → ConfigSync keys.
  const references = new Map<string, Set<string>>();
  const indexReferences = (object: ConfigSync, remove: boolean): void => {
    const namespace = object.metadata.namespace ?? 'default';
    index(objectKey(object), remove ? [] : [
      ...(object.spec.source.git.secretRef !== undefined ? [`${namespace}/Secret/${object.spec.source.git.secretRef.name}`] : []),
      ...(object.spec.source.git.proxySecretRef !== undefined ? [`${namespace}/Secret/${object.spec.source.git.proxySecretRef.name}`] : []),
      ...(object.spec.valuesFrom ?? []).map((v) => `${namespace}/${v.kind}/${v.name}`),
    ]);
  };
  /** `key` is woken when any of `refs` (`namespace/Kind/name`) changes. */
  const index = (key: string, refs: readonly string[]): void => {
    for (const set of references.values()) set.delete(key);
    for (const ref of refs) {
      const set = references.get(ref) ?? new Set<string>();
      set.add(key);
      references.set(ref, set);
    }
  };

  /** When a push or a change of the object last asked a ConfigSync (`namespace/name`) to look at its source now. */
  const freshRequests = new Map<string, number>();
  const configSyncs = new Informer({
    budget,
    rest,
    path: collection('syncline.dev', 'v1alpha1', 'configsyncs'),
    labelSelector: shardLabelSelector,
    onEvent: (type, object, previous) => {
      // The informer holds untyped objects; this path serves only ConfigSyncs, whose shape the CRD's schema enforces.
      const cs = object as unknown as ConfigSync;
      notify('ConfigSync', type, object);
      indexReferences(cs, type === 'DELETED');
      if (type === 'DELETED') {
        // Deleted (the finalizer already ran, on a MODIFIED with a deletionTimestamp) or relabelled to another
        // shard (no deletionTimestamp: nothing is pruned, the new shard adopts the inventory as it stands).
        queue.forget(objectKey(object));
        drift.release(objectKey(object));
        forgetNoops(objectKey(object));
        freshRequests.delete(objectKey(object));
        leftShard('configsync', objectKey(object));
      } else {
        // The namespaces its inventory applied into are the ones its drift watches cover.
        drift.settle(objectKey(object), cs.status?.inventory);
      }
      // Our own status writes come back as MODIFIED: they change nothing to act on.
      if (type !== 'DELETED' && (type === 'ADDED' || previous === undefined || !onlyStatusChanged(previous, object))) {
        // A new spec or a reconcile request looks at the source as it is from now on (a ref listing begun later).
        freshRequests.set(objectKey(object), options.clock.now().getTime());
        queue.add(objectKey(object));
        if (cs.spec.source.git.secretRef !== undefined) wakeReplicationsOf(cs.metadata.namespace ?? 'default');
      }
      // spec.dependsOn: a dependency that became Ready (or stopped being Ready, or left) wakes its dependents.
      if (type !== 'MODIFIED' || previous === undefined || readiness(previous as unknown as ConfigSync) !== readiness(cs)) {
        const namespace = cs.metadata.namespace ?? 'default';
        for (const other of configSyncs.list() as unknown as ConfigSync[]) {
          if (other.metadata.namespace === namespace && (other.spec.dependsOn ?? []).some((d) => d.name === cs.metadata.name)) queue.add(objectKey(other));
        }
      }
    },
    onError: (error) => logger.warn({ err: errorMessage(error) }, 'ConfigSync watch failed; restarting'),
  });

  const otherShards = new Informer({
    budget,
    rest,
    path: collection('syncline.dev', 'v1alpha1', 'configsyncs'),
    labelSelector: otherShardsSelector(options.shard),
    project: (object) => {
      const git = (object['spec'] as ConfigSync['spec'] | undefined)?.source?.git;
      return {
        apiVersion: object.apiVersion,
        kind: object.kind,
        metadata: { name: object.metadata.name, namespace: object.metadata.namespace, resourceVersion: object.metadata.resourceVersion },
        // secretRef: a NamespaceReplication never copies another shard's Git credentials either.
        spec: { source: { git: { repo: git?.repo, revision: git?.revision, ...(git?.secretRef === undefined ? {} : { secretRef: git.secretRef }) } } },
      };
    },
    onEvent: () => undefined,
    onError: (error) => logger.debug({ err: errorMessage(error) }, "other shards' ConfigSync watch failed; restarting"),
  });

  const referenceInformer = (kind: 'Secret' | 'ConfigMap', plural: string, namespace?: string): Informer =>
    new Informer({
      budget,
      rest,
      path: namespace === undefined ? collection('', 'v1', plural) : `/api/v1/namespaces/${namespace}/${plural}`,
      // Metadata only: Secret data never sits in this process's cache.
      project: (object) => ({ apiVersion: object.apiVersion, kind, metadata: { name: object.metadata.name, namespace: object.metadata.namespace, resourceVersion: object.metadata.resourceVersion } }),
      onEvent: (_type, object) => {
        for (const key of references.get(`${object.metadata.namespace ?? ''}/${kind}/${object.metadata.name}`) ?? []) queue.add(key);
      },
      onError: (error) => logger.warn({ err: errorMessage(error) }, `${kind} watch failed; restarting`),
    });
  // One cluster-wide (or watchNamespace) watch, or one per namespace the operator may read Secrets in.
  const secretInformers = new Map<string, Informer>(
    options.secretNamespaces === undefined ? [['', referenceInformer('Secret', 'secrets')]] : options.secretNamespaces.map((n) => [n, referenceInformer('Secret', 'secrets', n)]),
  );
  const secretMeta = (namespace: string, name: string): KubeObject | undefined => (secretInformers.get(namespace) ?? secretInformers.get(''))?.get(`${namespace}/${name}`);
  const configMaps = referenceInformer('ConfigMap', 'configmaps');

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
  /** The last clean no-op of each ConfigSync target, by `namespace/name/target`; dropped with the sync. */
  const noopRecords = new Map<string, TargetNoop>();
  const forgetNoops = (key: string): void => {
    for (const record of noopRecords.keys()) if (record.startsWith(`${key}/`)) noopRecords.delete(record);
  };

  /** Every reconciler's beforeApply: the kinds it is about to write are watched (drift) before it writes. */
  const watchBeforeApply = async (ids: readonly string[], cluster?: RemoteClients): Promise<void> => {
    try {
      await drift.watch(ids, cluster);
    } catch (error) {
      // Past the watch budget the apply fails (its target reports why): drift it writes would go unseen.
      if (error instanceof WatchBudgetError) throw error;
      logger.debug({ err: errorMessage(error) }, 'could not watch managed objects');
    }
  };

  // RemoteClusters: probed on an interval and whenever a Secret they read changes; their clients are cached
  // per credentials version (remote/clusters.ts).
  const remoteKey = (object: { metadata: { name: string; namespace?: string } }): string => `${REMOTECLUSTER_KEY_PREFIX}${objectKey(object)}`;
  // Every shard watches every RemoteCluster (the syncs of any shard may target it), but only the shard its
  // label selects probes it and writes its status: one writer per object, as with the syncs.
  const probedHere = (rc: RemoteCluster): boolean => inShard(options.shard, rc.metadata.labels);
  const remoteClusters = new Informer({
    budget,
    rest,
    path: collection('syncline.dev', 'v1alpha1', 'remoteclusters'),
    onEvent: (type, object, previous) => {
      const rc = object as unknown as RemoteCluster;
      notify('RemoteCluster', type, object);
      const key = remoteKey(rc);
      const namespace = rc.metadata.namespace ?? 'default';
      index(key, type === 'DELETED' ? [] : remote.secretsOf(rc.spec).map((name) => `${namespace}/Secret/${name}`));
      if (type === 'DELETED' || !probedHere(rc)) queue.forget(key);
      else if (type === 'ADDED' || previous === undefined || !onlyStatusChanged(previous, object)) queue.add(key);
      // A Secret that became a credential leaves the standby now, not at the next relist.
      if (type !== 'DELETED' && (previous === undefined || !onlyStatusChanged(previous, object))) wakeReplicationsOf(namespace);
      // Appeared, left, reachable again (or no longer): every object with a target there runs now rather than
      // at its next retry; one that ran before this cache held the RemoteCluster would otherwise keep saying it
      // does not exist.
      const ready = (o: KubeObject | undefined): string | undefined => (o as RemoteCluster | undefined)?.status?.conditions?.find((c) => c.type === 'Ready')?.status;
      if (type !== 'MODIFIED' || ready(previous) !== ready(object)) wakeClusterUsers(namespace, rc.metadata.name);
    },
    onError: (error) => logger.warn({ err: errorMessage(error) }, 'RemoteCluster watch failed; restarting'),
  });
  /** Wakes the ConfigSyncs, ManifestSyncs and NamespaceReplications of `namespace` that name RemoteCluster `name`. */
  const wakeClusterUsers = (namespace: string, name: string): void => {
    for (const cs of configSyncs.list() as unknown as ConfigSync[]) {
      if (cs.metadata.namespace === namespace && cs.spec.targets.some((t) => t.cluster?.name === name)) queue.add(objectKey(cs));
    }
    for (const ms of manifestSyncs.list() as unknown as ManifestSync[]) {
      if (ms.metadata.namespace === namespace && (ms.spec.targets as ManifestSync['spec']['targets'] | undefined)?.some((t) => t.cluster?.name === name) === true) queue.add(manifestKey(ms));
    }
    for (const nr of namespaceReplications.list() as unknown as NamespaceReplication[]) {
      if (nr.metadata.namespace === namespace && (nr.spec as NamespaceReplication['spec'] | undefined)?.destination.cluster?.name === name) queue.add(replicationKey(nr));
    }
  };
  const remote = createRemoteClusters({
    rest,
    getRemoteCluster: (key) => remoteClusters.get(key) as RemoteCluster | undefined,
    secretVersion: (namespace, name) => secretMeta(namespace, name)?.metadata.resourceVersion,
    allowInsecureHttp: options.allowInsecureRemote === true,
    allowInsecureTLS: options.allowInsecureRemote === true,
    ...(options.writeFence === undefined ? {} : { writeFence: options.writeFence }),
  });
  const reconcileRemote = createRemoteClusterReconciler({
    rest,
    remote,
    clock: options.clock,
    logger,
    events: options.events,
    get: (key) => remoteClusters.get(key) as RemoteCluster | undefined,
    intervalBounds: options.intervalBounds ?? DEFAULT_INTERVAL_BOUNDS,
  });
  const targetBackoff = createTargetBackoff();

  // NamespaceReplications: Continuous mode watches every replicated kind in the source namespace (metadata
  // only); the first change not yet replicated starts the lag clock.
  const replicationKey = (object: { metadata: { name: string; namespace?: string } }): string => `${NAMESPACEREPLICATION_KEY_PREFIX}${objectKey(object)}`;
  const pendingSince = new Map<string, number>();
  const drWatches = new SharedWatches({
    budget,
    rest,
    wake: (key) => {
      if (!pendingSince.has(key)) pendingSince.set(key, Date.now());
      queue.add(key);
    },
    onError: (error, watch) => logger.debug({ err: errorMessage(error), watch }, 'replication source watch failed; restarting'),
  });
  /** Why a replication's source watches were refused (the watch budget), for its status; by queue key. */
  const sourceWatchRefusals = new Map<string, string>();
  const setSourceWatches = (key: string, specs: Parameters<SharedWatches['set']>[1]): void => {
    try {
      drWatches.set(key, specs);
      sourceWatchRefusals.delete(key);
    } catch (error) {
      if (!(error instanceof WatchBudgetError)) throw error;
      sourceWatchRefusals.set(key, error.message);
    }
  };
  const watchReplicationSource = async (nr: NamespaceReplication): Promise<void> => {
    const key = replicationKey(nr);
    const spec = nr.spec as NamespaceReplication['spec'] | undefined;
    if (spec === undefined || spec.mode === 'Interval' || spec.suspend === true || spec.failover === true) return setSourceWatches(key, []);
    const sourceNamespace = spec.sourceNamespace ?? nr.metadata.namespace ?? 'default';
    // A source the tenancy rule refuses is not watched either (the reconcile reports the refusal).
    const actor = { objectNamespace: nr.metadata.namespace ?? 'default', serviceAccount: undefined, trusted: options.trusted ?? new Set<string>() };
    if (!allowedWrite({ ...actor, targetNamespace: sourceNamespace }).allowed) return drWatches.set(key, []);
    if (spec.destination.cluster === undefined && !allowedWrite({ ...actor, targetNamespace: spec.destination.namespace ?? sourceNamespace }).allowed) return drWatches.set(key, []);
    const discovery = await (await options.applyClient(undefined)).discovery();
    const types = spec.resourceTypes === undefined ? DEFAULT_RESOURCE_TYPES : spec.resourceTypes.map(parseResourceType);
    setSourceWatches(
      key,
      types.flatMap((type) => {
        const info = discovery.preferred(type.group, type.kind);
        if (info === undefined || !info.namespaced) return [];
        return [{
          path: `${info.group === '' ? '/api' : `/apis/${info.group}`}/${info.version}/namespaces/${sourceNamespace}/${info.plural}`,
          project: (object: KubeObject) => ({ apiVersion: object.apiVersion, kind: object.kind, metadata: { name: object.metadata.name, namespace: object.metadata.namespace, resourceVersion: object.metadata.resourceVersion } }),
        }];
      }),
    );
  };
  const namespaceReplications = new Informer({
    budget,
    rest,
    path: collection('syncline.dev', 'v1alpha1', 'namespacereplications'),
    labelSelector: shardLabelSelector,
    onEvent: (type, object, previous) => {
      const nr = object as unknown as NamespaceReplication;
      notify('NamespaceReplication', type, object);
      const key = replicationKey(nr);
      if (type === 'DELETED') {
        if (options.drHeartbeat !== undefined && leader) void retireHeartbeat({ applyClient: () => options.applyClient(undefined), remote, logger }, nr);
        setSourceWatches(key, []);
        drift.release(key);
        queue.forget(key);
        leftShard('namespacereplication', objectKey(nr));
        return;
      }
      drift.settle(key, nr.status?.inventory);
      void watchReplicationSource(nr).catch((error: unknown) => logger.debug({ err: errorMessage(error), namespacereplication: key }, 'could not watch the source namespace'));
      if (type === 'ADDED' || previous === undefined || !onlyStatusChanged(previous, object)) queue.add(key);
    },
    onError: (error) => logger.warn({ err: errorMessage(error) }, 'NamespaceReplication watch failed; restarting'),
  });
  /** Wakes the NamespaceReplications that replicate `namespace` (a credential there changed). */
  const wakeReplicationsOf = (namespace: string): void => {
    for (const nr of namespaceReplications.list() as unknown as NamespaceReplication[]) {
      if ((nr.spec.sourceNamespace ?? nr.metadata.namespace ?? 'default') === namespace) queue.add(replicationKey(nr));
    }
  };
  const reconcileReplication = createNamespaceReplicationReconciler({
    rest,
    applyClient: options.applyClient,
    remote,
    clock: options.clock,
    logger,
    metrics,
    events: options.events,
    get: (key) => namespaceReplications.get(key) as NamespaceReplication | undefined,
    ...(options.trusted === undefined ? {} : { trusted: options.trusted }),
    intervalBounds: options.intervalBounds ?? DEFAULT_INTERVAL_BOUNDS,
    mirrorKeys: options.mirrorKeys,
    pendingSince: (key) => pendingSince.get(`${NAMESPACEREPLICATION_KEY_PREFIX}${key}`),
    watchRefusal: (key) => sourceWatchRefusals.get(`${NAMESPACEREPLICATION_KEY_PREFIX}${key}`),
    beforeApply: watchBeforeApply,
    // Which Secrets are the operator's credentials is known once these caches have been read.
    credentialHolders: () =>
      remoteClusters.synced && configSyncs.synced && otherShards.synced
        ? {
            remoteClusters: remoteClusters.list() as unknown as RemoteCluster[],
            configSyncs: [...(configSyncs.list() as unknown as ConfigSync[]), ...(otherShards.list() as unknown as ConfigSync[])],
            webhookSecret: options.webhookSecret,
          }
        : undefined,
  });

  // ManifestSyncs, their source objects (one single-object watch per source in Immediate mode) and the
  // namespaces their selectors match.
  const manifestKey = (object: { metadata: { name: string; namespace?: string } }): string => `${MANIFESTSYNC_KEY_PREFIX}${objectKey(object)}`;
  const sourceWatches = new Map<string, { informer: Informer; subscribers: Set<string> }>();
  const subscriptions = new Map<string, string>(); // ManifestSync key → source watch key
  const unsubscribe = (key: string): void => {
    const watched = subscriptions.get(key);
    subscriptions.delete(key);
    const entry = watched === undefined ? undefined : sourceWatches.get(watched);
    if (watched === undefined || entry === undefined) return;
    entry.subscribers.delete(key);
    if (entry.subscribers.size === 0) {
      sourceWatches.delete(watched);
      void entry.informer.stop();
    }
  };
  const watchSource = async (ms: ManifestSync): Promise<void> => {
    const key = manifestKey(ms);
    const ref = ms.spec.sourceRef as ManifestSync['spec']['sourceRef'] | undefined;
    if (ms.spec.syncPolicy?.mode === 'Interval' || ref === undefined || ms.metadata.deletionTimestamp !== undefined) {
      unsubscribe(key);
      return;
    }
    const namespace = ref.namespace ?? ms.metadata.namespace ?? 'default';
    // A source the tenancy rule refuses is not watched either (the reconcile reports the refusal).
    const serviceAccount = (ms.spec as { serviceAccountName?: string }).serviceAccountName ?? options.defaultServiceAccount;
    if (!allowedWrite({ objectNamespace: ms.metadata.namespace ?? 'default', serviceAccount, trusted: options.trusted ?? new Set<string>(), targetNamespace: namespace }).allowed) return unsubscribe(key);
    const info = (await (await options.applyClient(undefined)).discovery()).resource(ref.apiVersion, ref.kind);
    if (info === undefined || !info.namespaced) return unsubscribe(key);
    const watchKey = `${ref.apiVersion}/${ref.kind}/${namespace}/${ref.name}`;
    if (subscriptions.get(key) === watchKey) return;
    unsubscribe(key);
    subscriptions.set(key, watchKey);
    let entry = sourceWatches.get(watchKey);
    if (entry === undefined) {
      const subscribers = new Set<string>();
      const informer = new Informer({
        budget,
        rest,
        path: `${info.group === '' ? '/api' : `/apis/${info.group}`}/${info.version}/namespaces/${namespace}/${info.plural}`,
        fieldSelector: `metadata.name=${ref.name}`,
        // Metadata only: a Secret's data is read when a copy is made, never kept here.
        project: (object) => ({ apiVersion: object.apiVersion, kind: object.kind, metadata: { name: object.metadata.name, namespace: object.metadata.namespace, resourceVersion: object.metadata.resourceVersion } }),
        onEvent: () => {
          for (const subscriber of subscribers) queue.add(subscriber);
        },
        onError: (error) => logger.debug({ err: errorMessage(error), source: watchKey }, 'source watch failed; restarting'),
      });
      entry = { informer, subscribers };
      sourceWatches.set(watchKey, entry);
      informer.start();
    }
    entry.subscribers.add(key);
  };

  const manifestSyncs = new Informer({
    budget,
    rest,
    path: collection('syncline.dev', 'v1alpha1', 'manifestsyncs'),
    labelSelector: shardLabelSelector,
    onEvent: (type, object, previous) => {
      const ms = object as unknown as ManifestSync;
      notify('ManifestSync', type, object);
      const key = manifestKey(ms);
      if (type === 'DELETED') {
        unsubscribe(key);
        drift.release(key);
        queue.forget(key);
        leftShard('manifestsync', objectKey(ms));
        return;
      }
      drift.settle(key, ms.status?.inventory);
      void watchSource(ms).catch((error: unknown) => logger[error instanceof WatchBudgetError ? 'warn' : 'debug']({ err: errorMessage(error), manifestsync: key }, 'could not watch the source'));
      if (type === 'ADDED' || previous === undefined || !onlyStatusChanged(previous, object)) queue.add(key);
    },
    onError: (error) => logger.warn({ err: errorMessage(error) }, 'ManifestSync watch failed; restarting'),
  });

  const namespaces = new Informer({
    budget,
    rest,
    path: '/api/v1/namespaces',
    project: (object) => ({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: object.metadata.name, resourceVersion: object.metadata.resourceVersion, labels: object.metadata['labels'], deletionTimestamp: object.metadata['deletionTimestamp'] },
      status: { phase: (object['status'] as { phase?: string } | undefined)?.phase },
    }),
    onEvent: (type, object, previous) => {
      // A namespace appeared, left, or changed its labels: selectors may now match differently.
      if (type === 'MODIFIED' && JSON.stringify(previous?.metadata['labels']) === JSON.stringify(object.metadata['labels']) && previous?.metadata['deletionTimestamp'] === object.metadata['deletionTimestamp']) return;
      for (const ms of manifestSyncs.list() as unknown as ManifestSync[]) {
        if ((ms.spec.targets as ManifestSync['spec']['targets'] | undefined)?.some((t) => t.namespaceSelector !== undefined) === true) queue.add(manifestKey(ms));
      }
    },
    onError: (error) => logger.debug({ err: errorMessage(error) }, 'Namespace watch failed; restarting'),
  });
  const namespaceList = (): MirrorNamespace[] | undefined =>
    namespaces.synced
      ? namespaces.list().map((n) => ({
          name: n.metadata.name,
          labels: n.metadata['labels'] as Record<string, string> | undefined,
          deletionTimestamp: n.metadata['deletionTimestamp'] as string | undefined,
          phase: (n['status'] as { phase?: string } | undefined)?.phase,
        }))
      : undefined;

  const reconcile = createConfigSyncReconciler({
    ...options,
    takeFreshRequest: (key) => {
      const at = freshRequests.get(key);
      freshRequests.delete(key);
      return at;
    },
    remote,
    targetBackoff,
    remoteWatchesHealthy: (cluster) => drift.remoteHealthy(cluster),
    unwatchedDrift: (ids) => drift.unwatched(ids),
    get: (key) => configSyncs.get(key) as ConfigSync | undefined,
    beforeApply: watchBeforeApply,
    noop: { records: noopRecords, watched: (id, cluster) => drift.version(id, cluster) },
  });
  const reconcileManifest = createManifestSyncReconciler({
    ...options,
    intervalBounds: options.intervalBounds ?? DEFAULT_INTERVAL_BOUNDS,
    get: (key) => manifestSyncs.get(key) as ManifestSync | undefined,
    namespaces: namespaceList,
    remote,
    beforeApply: watchBeforeApply,
  });
  const reconcileAndWatch = async (key: string): ReturnType<typeof reconcile> => {
    if (key.startsWith(MANIFESTSYNC_KEY_PREFIX)) return reconcileManifest(key.slice(MANIFESTSYNC_KEY_PREFIX.length));
    if (key.startsWith(REMOTECLUSTER_KEY_PREFIX)) {
      // A Secret it reads changed, but another shard probes it: that shard's own Secret watch wakes it.
      const rc = remoteClusters.get(key.slice(REMOTECLUSTER_KEY_PREFIX.length)) as RemoteCluster | undefined;
      if (rc !== undefined && !probedHere(rc)) return { kind: 'done' };
      return reconcileRemote(key.slice(REMOTECLUSTER_KEY_PREFIX.length));
    }
    if (key.startsWith(NAMESPACEREPLICATION_KEY_PREFIX)) {
      // The source watches are settled before the run, so that it reports a refusal by the budget (and asks
      // again at every retry: others may have given watches back). Unchanged watches cost nothing here.
      const nr = namespaceReplications.get(key.slice(NAMESPACEREPLICATION_KEY_PREFIX.length)) as NamespaceReplication | undefined;
      if (nr !== undefined) await watchReplicationSource(nr).catch((error: unknown) => logger.debug({ err: errorMessage(error), namespacereplication: key }, 'could not watch the source namespace'));
      // The lag clock restarts with the changes seen from here on.
      const since = pendingSince.get(key);
      const outcome = await reconcileReplication(key.slice(NAMESPACEREPLICATION_KEY_PREFIX.length));
      if (outcome.kind === 'done' && pendingSince.get(key) === since) pendingSince.delete(key);
      return outcome;
    }
    const outcome = await reconcile(key);
    const object = configSyncs.get(key) as ConfigSync | undefined;
    const ids = (object?.status?.inventory ?? []).flatMap((i) => decodeInventory(i.entries).map((e) => e.id));
    if (ids.length > 0) await drift.watch(ids).catch((error: unknown) => logger.debug({ err: errorMessage(error) }, 'could not watch managed objects'));
    return outcome;
  };

  let leader = options.leaderElection === undefined;
  let lostLeadership = false;
  let renewedAt = 0;
  const stallTimeoutMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
  // The caches a reconcile looks other objects up in (a target's RemoteCluster, a referenced Secret, the
  // syncs themselves). The namespace watch is left out: a namespace-scoped operator may not list namespaces.
  const caches = [configSyncs, ...secretInformers.values(), configMaps, manifestSyncs, remoteClusters, namespaceReplications];
  const startWork = async (): Promise<void> => {
    metrics.leader.set(1);
    // No reconcile runs before the caches it reads are filled: one that did would find a RemoteCluster (or a
    // Secret) missing, report it and wait for a retry. A cache that cannot list (rights) must not hold every
    // other object back forever: past the bound the work starts anyway, and says which cache is missing.
    const synced = await Promise.all(caches.map((informer) => informer.waitSynced(CACHE_SYNC_TIMEOUT_MS)));
    if (abort.signal.aborted || !leader) return;
    if (synced.includes(false)) logger.warn({ timeoutMs: CACHE_SYNC_TIMEOUT_MS }, 'some caches did not sync in time (see the watch errors above); reconciling anyway');
    queue.start(reconcileAndWatch);
    for (const object of configSyncs.list()) queue.add(objectKey(object));
    for (const object of manifestSyncs.list()) queue.add(manifestKey(object));
    for (const object of remoteClusters.list() as unknown as RemoteCluster[]) if (probedHere(object)) queue.add(remoteKey(object));
    for (const object of namespaceReplications.list()) queue.add(replicationKey(object));
  };

  // syncline_resource_info: reported by the replica that leads (one series per object across replicas), from
  // the caches at each scrape; RemoteClusters by the shard that probes them.
  const untrackResources = metrics.trackResources(() =>
    leader
      ? [
          { kind: ResourceKind.ConfigSync, objects: configSyncs.list() },
          { kind: ResourceKind.ManifestSync, objects: manifestSyncs.list() },
          { kind: ResourceKind.NamespaceReplication, objects: namespaceReplications.list() },
          { kind: ResourceKind.RemoteCluster, objects: (remoteClusters.list() as unknown as RemoteCluster[]).filter(probedHere) },
        ]
      : [],
  );

  for (const informer of [configSyncs, otherShards, ...secretInformers.values(), configMaps, manifestSyncs, namespaces, remoteClusters, namespaceReplications]) informer.start();
  if (options.leaderElection === undefined) {
    void startWork();
  } else {
    const election = options.leaderElection;
    void runLeaderElection(
      {
        rest,
        ...election,
        onStartedLeading: () => {
          leader = true;
          logger.info({ identity: election.identity }, 'became leader');
          void startWork();
        },
        onRenewed: () => {
          renewedAt = Date.now();
        },
        onStoppedLeading: () => {
          // Fencing: another replica may lead from now on, so this one writes nothing more. The callback fences
          // the clients (a write in flight is cut) and no further reconcile starts; the process then exits.
          leader = false;
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

  const heartbeats =
    options.drHeartbeat === undefined
      ? undefined
      : startHeartbeats({
          rest,
          applyClient: () => options.applyClient(undefined),
          remote,
          replications: () => namespaceReplications.list() as unknown as NamespaceReplication[],
          isLeader: () => leader,
          clock: options.clock,
          logger,
          ...options.drHeartbeat,
        });

  // Periodic resync: enqueue everything, so a missed event is repaired within resyncMs at worst.
  const resync = setInterval(() => {
    if (!leader) return;
    for (const object of configSyncs.list()) queue.add(objectKey(object));
    for (const object of manifestSyncs.list()) queue.add(manifestKey(object));
  }, options.resyncMs ?? 10 * 60_000);
  resync.unref();

  return {
    ready: () => caches.every((i) => i.synced && i.healthy),
    live: () => {
      if (lostLeadership) return { ok: false, reason: 'lost leadership: writes are fenced and the process is exiting' };
      const sinceRenewal = Date.now() - renewedAt;
      if (leader && options.leaderElection !== undefined && sinceRenewal > DEFAULT_RENEW_DEADLINE_MS) return { ok: false, reason: `the leader has not renewed its Lease for ${Math.round(sinceRenewal / 1000)}s` };
      const stalled = queue.stalledForMs();
      if (stalled > stallTimeoutMs) return { ok: false, reason: `the work queue has had work and finished none of it for ${Math.round(stalled / 1000)}s` };
      return { ok: true };
    },
    isLeader: () => leader,
    enqueue: (key) => {
      // A push: this run must see the branch as it is now, not a shared listing from before the push.
      freshRequests.set(key, options.clock.now().getTime());
      queue.add(key);
    },
    configSyncs: () => configSyncs.list() as unknown as ConfigSync[],
    otherShardConfigSyncs: () => otherShards.list() as unknown as ConfigSync[],
    inOtherShard: (key) => otherShards.get(key) !== undefined,
    watched: (kind) => ({ ConfigSync: configSyncs, ManifestSync: manifestSyncs, NamespaceReplication: namespaceReplications, RemoteCluster: remoteClusters })[kind].list(),
    observe: (listener) => {
      observers.add(listener);
      return () => observers.delete(listener);
    },
    async stop() {
      clearInterval(resync);
      untrackResources();
      heartbeats?.stop();
      abort.abort();
      await queue.shutdown();
      await drWatches.stop();
      await drift.stop();
      await Promise.all([configSyncs, otherShards, ...secretInformers.values(), configMaps, manifestSyncs, namespaces, remoteClusters, namespaceReplications, ...[...sourceWatches.values()].map((w) => w.informer)].map((i) => i.stop()));
    },
  };
}

/**
 * True when an update touched nothing but status (spec changes bump generation; metadata is compared). For any
 * of the watched kinds: it reads metadata only.
 */
export function onlyStatusChanged(before: Pick<KubeObject, 'metadata'>, after: Pick<KubeObject, 'metadata'>): boolean {
  const relevant = (o: Pick<KubeObject, 'metadata'>): string =>
    JSON.stringify([o.metadata.generation, o.metadata.annotations ?? {}, o.metadata.labels ?? {}, o.metadata.finalizers ?? [], o.metadata.deletionTimestamp ?? null]);
  return relevant(before) === relevant(after);
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

/** What dependents of a ConfigSync look at (see dependencyNotReady): a change wakes them. */
function readiness(cs: ConfigSync): string {
  const ready = cs.status?.conditions?.find((c) => c.type === 'Ready');
  return JSON.stringify([cs.metadata.generation, cs.status?.observedGeneration, ready?.status, ready?.reason, ready?.observedGeneration, cs.status?.sourceRevision, cs.status?.lastAttemptedRevision, cs.metadata.deletionTimestamp ?? null]);
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

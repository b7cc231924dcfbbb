// What one of the operator's four kinds declares, and what the operator's manager lends it. The
// controller-runtime builder idea: each controller states the kind it reconciles (For: its own watch, the cache
// its reconciles read), what else wakes it and how an event there maps to its keys (Watches: a Secret it
// references, a RemoteCluster it names, a source object), and the operator's manager registers it on the
// process's controller manager (@syncline/runtime's createManager), which runs it in a lane of its own: it
// starts and stops the watches, waits for the caches before the first reconcile and enqueues every key at the
// start of leadership and at each resync. What it writes (Owns) wakes it through the drift watches
// (drift-watches.ts), which map the owned-by annotation of a changed object to its owner's controller and key.
import { FINALIZER } from '@syncline/api';
import type { Informer, KubeObject, KubeRest, WatchBudget } from '@syncline/kube';
import type { Logger } from 'pino';
import type { MirrorKeys } from '../mirror/index.ts';
import type { ConfigSyncReconcilerDeps } from '../reconcile/configsync.ts';
import type { StandbyRules } from '../tenancy.ts';
import type { Metrics } from '../metrics.ts';
import type { DriftWatches } from './drift-watches.ts';
import { sameJson, type ControllerQueue, type Manager as ControllerManager, type ReconcileOutcome } from '@syncline/runtime';
import type { ReferenceWatches } from './references.ts';
import type { RemoteClients } from '../remote/clusters.ts';

/** What the manager is started with (main.ts): the reconcilers' dependencies and the manager's own settings. */
export type ManagerOptions = Omit<
  ConfigSyncReconcilerDeps,
  'get' | 'beforeApply' | 'remote' | 'targetBackoff' | 'remoteWatchesHealthy' | 'unwatchedDrift' | 'freshRequest' | 'freshRequestHandled' | 'noop'
> & {
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
  /** `rest`: the client the Lease is read and renewed with (default: the manager's own `rest`). */
  readonly leaderElection?: {
    readonly namespace: string;
    readonly name: string;
    readonly identity: string;
    readonly leaseDurationMs?: number;
    readonly rest?: KubeRest;
  };
  /** Bounds the watches the manager opens, in every cluster (default DEFAULT_WATCH_BUDGET). */
  readonly watchBudget?: WatchBudget;
  /** Re-list every informer this often even when watches look healthy (missed events cannot stall a sync). */
  readonly resyncMs?: number;
  /**
   * The process's controller manager, which the other controllers (mirroring, policies, failover, notifications)
   * register on too; the caller starts it once every controller is registered. Absent: the operator's manager
   * makes its own from leaderElection, onLostLeadership and stallTimeoutMs, and starts it.
   */
  readonly controllers?: ControllerManager;
  /** Fencing, when the manager makes its own controller manager (see controllers). */
  readonly onLostLeadership?: () => void;
  /** The fence of every client this manager makes (remote clusters'); main aborts it when leadership is lost. */
  readonly writeFence?: AbortSignal;
  /** Liveness fails when a controller's lane has had work and finished none of it for this long (default 10 min). */
  readonly stallTimeoutMs?: number;
  /** Renew a heartbeat Lease per NamespaceReplication in its standby this often (dr/heartbeat.ts); undefined = none. */
  readonly drHeartbeat?: { readonly intervalMs: number; readonly identity: string };
  /** Where a DR standby may never be (tenancy.ts's allowedStandby); default: no system namespace. */
  readonly standbyRules?: StandbyRules;
};

/** The kinds whose objects the web UI shows, straight from this operator's informers. */
export type WatchedKind = 'ConfigSync' | 'ManifestSync' | 'NamespaceReplication' | 'RemoteCluster';
/** A change of a watched object, as its informer saw it (DELETED: `object` is its last known state). */
export type WatchedChange = (kind: WatchedKind, type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubeObject) => void;

/** The keys of each kind's lane: the object key, after the kind's name for all but ConfigSync (drift watches and
 * other bookkeeping share these texts, so they stay distinct across kinds). */
export type ControllerKeys = {
  readonly ConfigSync: string;
  readonly ManifestSync: `ManifestSync/${string}`;
  readonly NamespaceReplication: `NamespaceReplication/${string}`;
  readonly RemoteCluster: `RemoteCluster/${string}`;
};

export type Controller<K extends string = string> = {
  /** The kind it reconciles (and the web UI lists). */
  readonly kind: WatchedKind;
  /** For: the watch of its own objects, whose cache its reconciles read. */
  readonly for: Informer;
  /** Watches: the other watches that wake it; each maps its events to this controller's keys. */
  readonly watches: readonly Informer[];
  /** A RemoteCluster appeared, left, or became reachable or not: the keys of the objects that name it. */
  readonly namingCluster?: (namespace: string, name: string) => Iterable<K>;
  /** The keys to reconcile when this replica starts to lead. */
  keys(): Iterable<K>;
  /** The keys of the periodic resync (a missed event is repaired within the resync period); none when absent. */
  readonly resyncKeys?: () => Iterable<K>;
  reconcile(key: K): Promise<ReconcileOutcome>;
  /** Stops what the controller started besides its declared watches. */
  readonly stop?: () => Promise<void>;
};

/** What the manager lends every controller (`K`: its keys). */
export type ControllerContext<K extends string = string> = {
  readonly options: ManagerOptions;
  readonly rest: KubeRest;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly budget: WatchBudget;
  /** The lane of the controller being declared (each kind's keys go to its own lane, never by their text). */
  readonly queue: ControllerQueue<K>;
  readonly drift: DriftWatches;
  readonly references: ReferenceWatches;
  /** The collection path of a kind in the watched namespace (all namespaces without --namespace). */
  readonly collection: (group: string, version: string, plural: string) => string;
  /** The shard's label selector for the sync kinds. */
  readonly shardLabelSelector: string;
  /** Tells the web UI's observers about a change of a watched object. */
  readonly notify: WatchedChange;
  /** A sync left this shard's view (deleted, or relabelled): logged, its metrics forgotten, never finalized here. */
  readonly leftShard: (kind: 'configsync' | 'manifestsync' | 'namespacereplication', key: string) => void;
  readonly isLeader: () => boolean;
  /** Every reconciler's beforeApply: the kinds (and namespaces) it is about to write are watched for drift first. */
  readonly watchBeforeApply: (ids: readonly string[], remote?: RemoteClients) => Promise<void>;
  /** Wakes the NamespaceReplications of a namespace (a Secret there may have become a credential). */
  readonly wakeReplicationsOf: (namespace: string) => void;
  /** Wakes every object that names RemoteCluster `namespace/name` (each controller's namingCluster). */
  readonly wakeNamingCluster: (namespace: string, name: string) => void;
};

/**
 * True when an update touched nothing but status (spec changes bump generation; metadata is compared). For any
 * of the watched kinds: it reads metadata only. Our finalizer, added, is no news either: the reconcile shell adds
 * it and goes on with the same run (@syncline/runtime's shell.ts). Removed, it is: the next run puts it back.
 */
export function onlyStatusChanged(before: Pick<KubeObject, 'metadata'>, after: Pick<KubeObject, 'metadata'>): boolean {
  // Compared field by field, not through JSON copies: every status write of ours comes back through here.
  const was = finalizersOf(before);
  const now = finalizersOf(after);
  const ours = was.includes(FINALIZER) ? now : now.filter((f) => f !== FINALIZER);
  return (
    before.metadata['generation'] === after.metadata['generation'] &&
    (before.metadata['deletionTimestamp'] ?? null) === (after.metadata['deletionTimestamp'] ?? null) &&
    sameJson(before.metadata['annotations'] ?? {}, after.metadata['annotations'] ?? {}) &&
    sameJson(before.metadata['labels'] ?? {}, after.metadata['labels'] ?? {}) &&
    was.length === ours.length &&
    was.every((f, i) => ours[i] === f)
  );
}

const finalizersOf = (o: Pick<KubeObject, 'metadata'>): readonly string[] => (o.metadata['finalizers'] as readonly string[] | undefined) ?? [];

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

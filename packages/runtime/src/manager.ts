// The controller manager, generic over the kind (controller-runtime's manager; fluxcd/pkg/runtime's shape): every
// controller of the process registers here and runs on what the manager owns: one work queue with a lane per
// controller (its own slots, so a slow controller never takes another's; its keys typed and never mixed with
// another's, so nothing is routed by the text of a key), its watches started and stopped, its caches waited for
// before its first reconcile, a periodic resync, leader election (only the leader reconciles; a leader that
// cannot renew its Lease is fenced at once) and the readiness and liveness the health server reports, which name
// the controller that is not ready or makes no progress. What a controller is (its kind, its reconciler, what
// wakes it) is the registering package's: the operator's kinds, mirroring, policies, failover, notifications.
import { DEFAULT_RENEW_DEADLINE_MS, runLeaderElection, type Informer, type KubeRest } from '@syncline/kube';
import type { Logger } from 'pino';
import { WorkQueue, type ReconcileOutcome, type SlotPool } from './queue.ts';

/** What /healthz reports: fine, or why the process should be restarted. */
export type Liveness = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** Liveness fails when a controller's lane has had work and finished none of it for this long (default). */
export const DEFAULT_STALL_TIMEOUT_MS = 10 * 60_000;
/** How long a controller waits for its caches to fill before it reconciles anyway (see startLane). */
export const CACHE_SYNC_TIMEOUT_MS = 60_000;
/** The periodic resync of a controller that declares no period of its own. */
export const DEFAULT_RESYNC_MS = 10 * 60_000;

/** A controller's lane of the manager's queue, typed by its keys. */
export type ControllerQueue<K extends string> = {
  /** Enqueue now; a no-op when the key is already waiting. */
  add(key: K): void;
  /** Enqueue after a delay; an earlier pending schedule wins. */
  addAfter(key: K, delayMs: number): void;
  /** Forget a key's schedule and backoff (its object is gone). */
  forget(key: K): void;
};

/** What a controller declares: the manager runs it. */
export type ControllerDeclaration<K extends string> = {
  /** For: the watch of its own objects, whose cache its reconciles read (none for a periodic controller). */
  readonly for?: Informer;
  /** The other caches its reconciles read: started, and waited for before its first reconcile like `for`. */
  readonly caches?: readonly Informer[];
  /** Watches that only wake it (mapping their events to its keys): started and stopped, never waited for. */
  readonly watches?: readonly Informer[];
  /** The keys to reconcile when this replica starts to lead. */
  keys(): Iterable<K>;
  /** The keys of the periodic resync (a missed event is repaired within resyncMs at worst); none when absent. */
  readonly resyncKeys?: () => Iterable<K>;
  /** Its resync period; default the manager's. */
  readonly resyncMs?: number;
  reconcile(key: K): Promise<ReconcileOutcome>;
  /** Whether it can serve (/readyz); absent: it does not hold readiness back. */
  readonly ready?: () => boolean;
  /** Stops what it started besides its declared watches (after its lane drained). */
  readonly stop?: () => Promise<void>;
};

export type ControllerOptions = {
  /** Its reconciles at once: its own slots in the queue, whatever the other controllers' keys wait. */
  readonly concurrency: number;
  /** Slots it shares with other controllers (a group that shares one --concurrency), on top of its own. */
  readonly pool?: SlotPool;
};

/** What a package that brings a controller is handed (the composition root's: it never sees the operator). */
export type ControllerRegistry = {
  /** Declares a controller named `name` (unique: it labels the queue metrics, the logs and liveness). */
  register<K extends string, D extends ControllerDeclaration<K>>(name: string, options: ControllerOptions, declare: (queue: ControllerQueue<K>) => D): D;
  /** Whether this replica leads (only the leader reconciles, sends and writes). */
  isLeader(): boolean;
};

/** One controller's lane at a scrape (syncline_workqueue_* by controller). */
export type LaneState = { readonly controller: string; readonly depth: number; readonly inFlight: number; readonly stalledSeconds: number };

/** The metrics the manager reports, injected (the operator's Metrics satisfies it). */
export type ManagerMetrics = {
  readonly leader: { set(value: number): void };
  /** Reports the lanes at every scrape until the returned function is called. */
  trackQueue(source: () => readonly LaneState[]): () => void;
};

export type ManagerOptions = {
  readonly logger: Logger;
  readonly metrics: ManagerMetrics;
  /** `rest`: the client the Lease is read and renewed with. Undefined: no election, this replica leads. */
  readonly leaderElection?: {
    readonly rest: KubeRest;
    readonly namespace: string;
    readonly name: string;
    readonly identity: string;
    readonly leaseDurationMs?: number;
  };
  /** Fencing: called the moment leadership is lost (the caller aborts its clients' writes and exits). */
  readonly onLostLeadership?: () => void;
  /** Liveness fails when a lane has had work and finished none of it for this long (default 10 min). */
  readonly stallTimeoutMs?: number;
  readonly resyncMs?: number;
  readonly cacheSyncTimeoutMs?: number;
  /** Queue backoff (tests). */
  readonly initialBackoffMs?: number;
};

export type Manager = ControllerRegistry & {
  /** Starts every registered controller's watches, and leader election (or leads at once). */
  start(): void;
  /** Every controller that declares readiness is ready. */
  ready(): boolean;
  /** Whether the process still makes progress: every lane moves, and a leader renews its Lease. */
  live(): Liveness;
  /** The lanes as they are now (the queue metrics read the same). */
  lanes(): LaneState[];
  stop(): Promise<void>;
};

type Lane = { readonly name: string; readonly queue: WorkQueue; readonly declaration: ControllerDeclaration<string> };

export function createManager(options: ManagerOptions): Manager {
  const { logger, metrics } = options;
  const lanes = new Map<string, Lane>();
  const leadership = { leader: options.leaderElection === undefined, lost: false, renewedAt: 0 };
  const abort = new AbortController();
  const timers: NodeJS.Timeout[] = [];
  let started = false;
  const stallTimeoutMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
  const informers = (): Set<Informer> =>
    new Set([...lanes.values()].flatMap(({ declaration: d }) => [...(d.for === undefined ? [] : [d.for]), ...(d.caches ?? []), ...(d.watches ?? [])]));
  const laneStates = (): LaneState[] =>
    [...lanes.values()].map(({ name, queue }) => ({
      controller: name,
      depth: queue.depth,
      inFlight: queue.inFlight,
      stalledSeconds: queue.stalledForMs() / 1000,
    }));
  const untrack = metrics.trackQueue(laneStates);

  const startWork = (): void => {
    metrics.leader.set(1);
    for (const lane of lanes.values())
      void startLane(lane, { leadership, signal: abort.signal, logger, timeoutMs: options.cacheSyncTimeoutMs ?? CACHE_SYNC_TIMEOUT_MS });
    for (const lane of lanes.values()) {
      const resyncKeys = lane.declaration.resyncKeys;
      if (resyncKeys === undefined) continue;
      const timer = setInterval(
        () => {
          if (leadership.leader) for (const key of resyncKeys()) lane.queue.add(key);
        },
        lane.declaration.resyncMs ?? options.resyncMs ?? DEFAULT_RESYNC_MS,
      );
      timer.unref();
      timers.push(timer);
    }
  };
  const lostLeadership = (): void => {
    // Fencing: another replica may lead from now on, so this one writes nothing more. The callback fences the
    // clients (a write in flight is cut) and no further reconcile starts, in any lane; the process then exits.
    leadership.leader = false;
    leadership.lost = true;
    options.onLostLeadership?.();
    for (const lane of lanes.values()) lane.queue.halt();
    metrics.leader.set(0);
  };

  return {
    register(name, controllerOptions, declare) {
      if (started) throw new Error(`controller ${name} registered after the manager started`);
      if (lanes.has(name)) throw new Error(`controller ${name} registered twice`);
      const queue = new WorkQueue({
        concurrency: controllerOptions.concurrency,
        ...(controllerOptions.pool === undefined ? {} : { pool: controllerOptions.pool }),
        ...(options.initialBackoffMs === undefined ? {} : { initialBackoffMs: options.initialBackoffMs }),
      });
      const declaration = declare(queue);
      lanes.set(name, { name, queue, declaration });
      return declaration;
    },
    isLeader: () => leadership.leader,
    start() {
      if (started) return;
      started = true;
      for (const informer of informers()) informer.start();
      const election = options.leaderElection;
      if (election === undefined) {
        startWork();
        return;
      }
      void runLeaderElection(
        {
          ...election,
          onStartedLeading: () => {
            leadership.leader = true;
            logger.info({ identity: election.identity }, 'became leader');
            startWork();
          },
          onRenewed: () => {
            leadership.renewedAt = Date.now();
          },
          onStoppedLeading: () => {
            lostLeadership();
            logger.error(
              { identity: election.identity },
              'lost leadership (the Lease could not be renewed in time, or another replica holds it): writes fenced, reconciles stopped; exiting so that a fresh process competes again',
            );
          },
          onError: (error) => logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'leader election: could not reach the lease'),
        },
        abort.signal,
      );
    },
    ready: () => [...lanes.values()].every(({ declaration }) => declaration.ready?.() ?? true),
    live: () => liveness({ leadership, elected: options.leaderElection !== undefined, lanes: [...lanes.values()], stallTimeoutMs }),
    lanes: laneStates,
    async stop() {
      for (const timer of timers) clearInterval(timer);
      untrack();
      abort.abort();
      await Promise.all([...lanes.values()].map((lane) => lane.queue.shutdown()));
      for (const lane of lanes.values()) await lane.declaration.stop?.();
      await Promise.all([...informers()].map((informer) => informer.stop()));
    },
  };
}

/**
 * A lane's start, once this replica leads: no reconcile runs before the caches it reads are filled (one that did
 * would find a referenced object missing, report it and wait for a retry). A cache that cannot list (rights)
 * must not hold every object back forever: past the bound the lane starts anyway, and says which controller.
 */
async function startLane(lane: Lane, input: { leadership: { leader: boolean }; signal: AbortSignal; logger: Logger; timeoutMs: number }): Promise<void> {
  const { declaration } = lane;
  const caches = [...(declaration.for === undefined ? [] : [declaration.for]), ...(declaration.caches ?? [])];
  const synced = await Promise.all(caches.map((informer) => informer.waitSynced(input.timeoutMs)));
  if (input.signal.aborted || !input.leadership.leader) return;
  if (synced.includes(false))
    input.logger.warn(
      { controller: lane.name, timeoutMs: input.timeoutMs },
      'some caches did not sync in time (see the watch errors above); reconciling anyway',
    );
  lane.queue.start((key) => declaration.reconcile(key));
  for (const key of declaration.keys()) lane.queue.add(key);
}

function liveness(input: {
  leadership: { leader: boolean; lost: boolean; renewedAt: number };
  elected: boolean;
  lanes: readonly Lane[];
  stallTimeoutMs: number;
}): Liveness {
  const { leadership } = input;
  if (leadership.lost) return { ok: false, reason: 'lost leadership: writes are fenced and the process is exiting' };
  const sinceRenewal = Date.now() - leadership.renewedAt;
  if (leadership.leader && input.elected && sinceRenewal > DEFAULT_RENEW_DEADLINE_MS)
    return { ok: false, reason: `the leader has not renewed its Lease for ${Math.round(sinceRenewal / 1000)}s` };
  const stalled = input.lanes.map((lane) => ({ name: lane.name, ms: lane.queue.stalledForMs() })).filter((lane) => lane.ms > input.stallTimeoutMs);
  if (stalled.length > 0)
    return {
      ok: false,
      reason: stalled
        .map((lane) => `controller ${lane.name}: its work queue has had work and finished none of it for ${Math.round(lane.ms / 1000)}s`)
        .join('; '),
    };
  return { ok: true };
}

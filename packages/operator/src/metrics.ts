// Prometheus metrics (prom-client), one registry per operator process.
//
// Series about one object carry it as separate `namespace` and `name` labels (never one `ns/name` label), so
// alerts and dashboards can join them with kube-state-metrics; they are removed when the object leaves
// (`forgetObject`), so a deleted sync leaves no series behind.
import type { LaneState } from '@syncline/runtime';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export type Metrics = ReturnType<typeof createMetrics>;

/** The kinds `syncline_resource_info` reports. */
export const ResourceKind = {
  ConfigSync: 'ConfigSync',
  ManifestSync: 'ManifestSync',
  NamespaceReplication: 'NamespaceReplication',
  RemoteCluster: 'RemoteCluster',
} as const;
export type ResourceKind = (typeof ResourceKind)[keyof typeof ResourceKind];

/** The slice of an object `syncline_resource_info` reads. */
export type ResourceState = {
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly spec?: unknown;
  readonly status?: unknown;
};

/** A source of the objects this replica reports: read at every scrape, so the series follow the cache. */
export type ResourceSource = () => ReadonlyArray<{ readonly kind: ResourceKind; readonly objects: Iterable<ResourceState> }>;

const DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function createMetrics() {
  const registry = new Registry();
  // prom-client's default metrics already start with `process_` or `nodejs_`: the prefix makes
  // `syncline_process_cpu_seconds_total`, `syncline_nodejs_heap_size_used_bytes`.
  // The event-loop-delay histograms sample every 100 ms, not prom-client's 10 ms: at 10 ms the sampling alone costs
  // about 0.4 % of a core (0.12 s of CPU per 30 s in a bare process), which is most of an idle operator's CPU; at
  // 100 ms, 0.01 s. A stall of the event loop still shows whole; only delays shorter than 100 ms blur.
  collectDefaultMetrics({ register: registry, prefix: 'syncline_', eventLoopMonitoringPrecision: 100 });
  // Gauges named like counters (`_total`), which Prometheus's naming rules refuse; `nodejs_active_handles`,
  // `nodejs_active_requests` and `nodejs_active_resources` give the same counts by type.
  for (const name of ['active_handles_total', 'active_requests_total', 'active_resources_total']) registry.removeSingleMetric(`syncline_nodejs_${name}`);
  const registers = [registry];
  const sources: ResourceSource[] = [];
  const resourceInfo = new Gauge({
    name: 'syncline_resource_info',
    help: 'One series per Syncline object with value 1: its Ready condition (True, False, Unknown) and whether it is suspended.',
    labelNames: ['kind', 'namespace', 'name', 'ready', 'suspended'],
    registers,
    // Rebuilt from the caches at every scrape: a deleted object, or the old ready/suspended pair of a changed
    // one, has no series left.
    collect() {
      this.reset();
      for (const source of sources) {
        for (const { kind, objects } of source()) {
          for (const object of objects) this.set(resourceLabels(kind, object), 1);
        }
      }
    },
  });
  // The controller manager's lanes (@syncline/runtime's createManager), read at every scrape.
  const lanes: (() => readonly LaneState[])[] = [];
  const laneGauge = (metric: { name: string; help: string }, value: (lane: LaneState) => number): Gauge =>
    new Gauge({
      ...metric,
      labelNames: ['controller'],
      registers,
      collect() {
        this.reset();
        for (const source of lanes) for (const lane of source()) this.set({ controller: lane.controller }, value(lane));
      },
    });
  laneGauge({ name: 'syncline_workqueue_depth', help: 'Keys waiting to be reconciled, by controller.' }, (lane) => lane.depth);
  laneGauge({ name: 'syncline_workqueue_in_flight', help: 'Reconciles running now, by controller.' }, (lane) => lane.inFlight);
  laneGauge(
    {
      name: 'syncline_workqueue_stalled_seconds',
      help: 'How long a controller has had work and finished none of it (0: idle or moving); liveness fails past --stall-timeout.',
    },
    (lane) => lane.stalledSeconds,
  );
  const perObject = {
    targetFailures: new Counter({
      name: 'syncline_target_failures_total',
      help: 'Targets that finished a sync with failures, by sync (namespace, name) and target.',
      labelNames: ['namespace', 'name', 'target'],
      registers,
    }),
    managedObjects: new Gauge({
      name: 'syncline_managed_objects',
      help: 'Objects in the inventory of each ConfigSync.',
      labelNames: ['namespace', 'name'],
      registers,
    }),
    drLag: new Gauge({
      name: 'syncline_dr_replication_lag_seconds',
      help: 'NamespaceReplication: from the first source change not yet replicated to its replication.',
      labelNames: ['namespace', 'name'],
      registers,
    }),
    drObjects: new Gauge({
      name: 'syncline_dr_objects',
      help: 'NamespaceReplication: objects by replicated kind and result (replicated, failed, skipped).',
      labelNames: ['namespace', 'name', 'kind', 'result'],
      registers,
    }),
    drPruneHeld: new Gauge({
      name: 'syncline_dr_prune_held_objects',
      help: 'NamespaceReplication: standby objects whose deletion is held for a confirmation (0: none held).',
      labelNames: ['namespace', 'name'],
      registers,
    }),
    mirrorConflicts: new Gauge({
      name: 'syncline_mirror_conflicts',
      help: 'Replicas a mirroring source (kind, namespace, name) could not write because another object holds the name.',
      labelNames: ['kind', 'namespace', 'name'],
      registers,
    }),
  };
  /** The per-object metrics whose series belong to an object of that kind. */
  const ofKind: Record<ResourceKind, ReadonlyArray<Gauge | Counter>> = {
    ConfigSync: [perObject.targetFailures, perObject.managedObjects],
    ManifestSync: [perObject.targetFailures],
    NamespaceReplication: [perObject.targetFailures, perObject.drLag, perObject.drObjects, perObject.drPruneHeld],
    RemoteCluster: [],
  };
  return {
    registry,
    reconcileDuration: new Histogram({
      name: 'syncline_reconcile_duration_seconds',
      help: 'Duration of reconciles by result.',
      labelNames: ['result'],
      buckets: DURATION_BUCKETS,
      registers,
    }),
    reconcileTotal: new Counter({ name: 'syncline_reconcile_total', help: 'Reconciles by result.', labelNames: ['result'], registers }),
    objectsApplied: new Counter({
      name: 'syncline_objects_applied_total',
      help: 'Objects written by action (created, configured, deleted, skipped, failed).',
      labelNames: ['action'],
      registers,
    }),
    gitDuration: new Histogram({
      name: 'syncline_git_duration_seconds',
      help: 'Duration of git operations (resolve, fetch).',
      labelNames: ['operation'],
      buckets: DURATION_BUCKETS,
      registers,
    }),
    gitCacheHits: new Counter({
      name: 'syncline_git_fetches_total',
      help: 'Snapshot requests by outcome (hit = served from cache, miss = fetched).',
      labelNames: ['outcome'],
      registers,
    }),
    webhookDeliveries: new Counter({
      name: 'syncline_webhook_deliveries_total',
      help: 'Webhook deliveries by provider and result.',
      labelNames: ['provider', 'result'],
      registers,
    }),
    drPromotions: new Counter({
      name: 'syncline_dr_promotions_total',
      help: 'Standby namespaces promoted by this (standby-side) operator, by namespace and trigger.',
      labelNames: ['namespace', 'trigger'],
      registers,
    }),
    leader: new Gauge({ name: 'syncline_leader', help: '1 while this replica holds the leader lease.', registers }),
    ...perObject,
    resourceInfo,
    /** Reports the objects `source` returns in `syncline_resource_info` at every scrape, until untracked. */
    trackResources(source: ResourceSource): () => void {
      sources.push(source);
      return () => {
        const at = sources.indexOf(source);
        if (at !== -1) sources.splice(at, 1);
      };
    },
    /** Reports the controller manager's lanes (syncline_workqueue_*{controller}) at every scrape, until untracked. */
    trackQueue(source: () => readonly LaneState[]): () => void {
      lanes.push(source);
      return () => {
        const at = lanes.indexOf(source);
        if (at !== -1) lanes.splice(at, 1);
      };
    },
    /** Removes every series about an object that left (deleted, or moved to another shard). */
    async forgetObject(kind: ResourceKind, namespace: string, name: string): Promise<void> {
      for (const metric of ofKind[kind]) await removeSeries(metric, namespace, name);
    },
  };
}

/** `namespace/name` (as the reconcilers key syncs; mirroring keys are `Kind/namespace/name`) → labels. */
export function objectLabels(key: string): { namespace: string; name: string } {
  const parts = key.split('/');
  return { namespace: parts.at(-2) ?? '', name: parts.at(-1) ?? '' };
}

function resourceLabels(kind: ResourceKind, object: ResourceState): Record<'kind' | 'namespace' | 'name' | 'ready' | 'suspended', string> {
  const conditions = (object.status as { conditions?: Array<{ type?: string; status?: string }> } | undefined)?.conditions;
  const ready = conditions?.find((c) => c.type === 'Ready')?.status ?? 'Unknown';
  const suspended = (object.spec as { suspend?: boolean } | undefined)?.suspend === true;
  return { kind, namespace: object.metadata.namespace ?? '', name: object.metadata.name, ready, suspended: String(suspended) };
}

/** prom-client removes series by their full label set only: this finds those of one object. */
async function removeSeries(metric: Gauge | Counter, namespace: string, name: string): Promise<void> {
  for (const { labels } of (await metric.get()).values) {
    if (labels['namespace'] === namespace && labels['name'] === name) metric.remove(labels);
  }
}

// Prometheus metrics (prom-client), one registry per operator process.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'syncline_process_' });
  const registers = [registry];
  return {
    registry,
    reconcileDuration: new Histogram({ name: 'syncline_reconcile_duration_seconds', help: 'Duration of ConfigSync reconciles by result.', labelNames: ['result'], buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers }),
    reconcileTotal: new Counter({ name: 'syncline_reconcile_total', help: 'ConfigSync reconciles by result.', labelNames: ['result'], registers }),
    objectsApplied: new Counter({ name: 'syncline_objects_applied_total', help: 'Objects written by action (created, configured, deleted, skipped, failed).', labelNames: ['action'], registers }),
    targetFailures: new Counter({ name: 'syncline_target_failures_total', help: 'Targets that finished a sync with failures.', labelNames: ['configsync', 'target'], registers }),
    gitDuration: new Histogram({ name: 'syncline_git_duration_seconds', help: 'Duration of git operations (resolve, fetch).', labelNames: ['operation'], buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers }),
    gitCacheHits: new Counter({ name: 'syncline_git_fetches_total', help: 'Snapshot requests by outcome (hit = served from cache, miss = fetched).', labelNames: ['outcome'], registers }),
    queueDepth: new Gauge({ name: 'syncline_workqueue_depth', help: 'ConfigSyncs waiting to be reconciled.', registers }),
    managedObjects: new Gauge({ name: 'syncline_managed_objects', help: 'Objects in the inventory of each ConfigSync.', labelNames: ['configsync'], registers }),
    webhookDeliveries: new Counter({ name: 'syncline_webhook_deliveries_total', help: 'Webhook deliveries by provider and result.', labelNames: ['provider', 'result'], registers }),
    drLag: new Gauge({ name: 'syncline_dr_replication_lag_seconds', help: 'NamespaceReplication: from the first source change not yet replicated to its replication.', labelNames: ['namespacereplication'], registers }),
    drObjects: new Gauge({ name: 'syncline_dr_objects', help: 'NamespaceReplication: objects by kind and result (replicated, failed, skipped).', labelNames: ['namespacereplication', 'kind', 'result'], registers }),
    drPruneHeld: new Gauge({ name: 'syncline_dr_prune_held_objects', help: 'NamespaceReplication: standby objects whose deletion is held for a confirmation (0: none held).', labelNames: ['namespacereplication'], registers }),
    leader: new Gauge({ name: 'syncline_leader', help: '1 while this replica holds the leader lease.', registers }),
  };
}

// Public entry point of @syncline/operator: every export is named here.
export {
  API_VERSION,
  GROUP,
  VERSION,
  ConfigSync,
  ConfigSyncSpec,
  ConfigSyncStatus,
  Target,
  GitSource,
  ManifestSync,
  ManifestSyncSpec,
  ManifestSyncStatus,
  RemoteCluster,
  RemoteClusterSpec,
  RemoteClusterStatus,
  NamespaceReplication,
  NamespaceReplicationSpec,
  NamespaceReplicationStatus,
  NamespaceReplicationPolicy,
  NamespaceReplicationPolicySpec,
  NamespaceReplicationPolicyStatus,
  NotificationProvider,
  NotificationAlert,
  crdDefinitions,
} from '@syncline/api';
export type { Condition, HistoryEntry, TargetStatus, SyncPolicy, DriftPolicy, DeletionPolicy } from '@syncline/api';
export { customResourceDefinitions } from '@syncline/api';
export { runOperator } from './main.ts';
export { FINALIZER, RECONCILE_REQUESTED_ANNOTATION } from '@syncline/api';
export { coalescingWindows } from './webhook/wake.ts';
export { createKubeRest, KubeApiError, WATCH_FRESH_MS } from '@syncline/kube';
export type { KubeRest, KubeRequest } from '@syncline/kube';
export { installCrds } from '@syncline/runtime';
export { createMetrics } from './metrics.ts';

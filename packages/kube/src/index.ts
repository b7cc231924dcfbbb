// Public entry point of @syncline/kube, the Kubernetes edge shared by apply and the operator: where an API
// server is (kubeconfig → KubeConnection), a REST client whose watches and requests use separate connection
// pools (every request with a deadline, every write behind an optional fence), list-watch caches and a
// budget for their watch streams, Events, and leader election on a Lease. Every export is named here.
//
// Use: `const connection = await connectKubeconfig(loadKubeConfig({ env }))`;
// `const rest = await createKubeRest(connection)`; `new Informer({ rest, path, onEvent, budget }).start()`.
export { ApiError, connectionFromKubeConfig, dispatcherFor, secureContextFor, toKubeConnection } from './transport.ts';
export type { KubeConnection, KubeConfigLike, KubeTlsOptions } from './transport.ts';
export { connectKubeconfig } from './connection.ts';
export {
  Kubeconfig,
  SERVICE_ACCOUNT_DIR,
  loadKubeConfig,
  mergeKubeConfigFiles,
  mergeKubeConfigs,
  readKubeconfigFile,
  parseKubeconfigText,
  inClusterKubeconfig,
} from './kubeconfig.ts';
export type { KubeconfigCluster, KubeconfigUser, KubeconfigContext, KubeconfigData, KubeConfigOptions } from './kubeconfig.ts';
export { KubeApiError, BOOKMARK_PERIOD_MS, DEFAULT_REQUEST_TIMEOUT_MS, REQUEST_SOCKETS, WATCH_FRESH_MS, createKubeRest, isStatus } from './rest.ts';
export type { KubeRequest, KubeRest, KubeRestOptions } from './rest.ts';
export { Informer, objectKey, withUnchangedSpec, withoutManagedFields } from './informer.ts';
export type { KubeObject, InformerEvent, InformerOptions } from './informer.ts';
export { SharedWatches } from './shared-watches.ts';
export type { WatchSpec } from './shared-watches.ts';
export { DEFAULT_WATCH_BUDGET, WatchBudget, WatchBudgetError } from './watch-budget.ts';
export { createEventRecorder } from './events.ts';
export type { EventRecorder } from './events.ts';
export { DEFAULT_RENEW_DEADLINE_MS, runLeaderElection } from './leader.ts';
export type { LeaderElectionOptions } from './leader.ts';
export { sleep } from './sleep.ts';
export { requestSignal } from './request-signal.ts';
export type { RequestSignal } from './request-signal.ts';

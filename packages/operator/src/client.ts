// Entry point `@syncline/operator/client`: what the packages above the operator (the CLI, the web UI,
// notifications) take from its domains, without starting anything. It stays light: none of these modules loads
// @kubernetes/client-node (footprint.test.ts), so the CLI's commands start as fast as before the split.
export { createDecryptionContext, decryptFiles } from './reconcile/decryption.ts';
export { mirrorKeys, parseMirrorSourceNamespaces, replicaSelector, sourceSelector, DEFAULT_MIRROR_PREFIX } from './mirror/index.ts';
export type { MirrorKeys, MirrorNamespace, NamePattern } from './mirror/index.ts';
export { trustedNamespaces } from './tenancy.ts';
export type { TrustedNamespaces } from './tenancy.ts';
export { formatMirrorRows, mirrorStatusRows, resolveSource } from './mirror/status.ts';
export type { MirrorRow } from './mirror/status.ts';
export { parseDuration } from '@syncline/runtime';
export { StallError, readGitAccess } from './reconcile/inputs.ts';
export { readsWholeRepository } from './reconcile/engines.ts';
export { Reason } from '@syncline/runtime';
export { diffSync, readSource, diffRenders, renderSync } from './diff/sync-diff.ts';
export { listStandbyNamespaces, promoteStandby, resetStandby } from './dr/standby.ts';
export type { StandbyNamespace } from './dr/standby.ts';
export { readHeartbeat, heartbeatLeaseName, standbyNamespaceOf, HEARTBEAT_LABEL } from './dr/heartbeat.ts';
export type { Heartbeat } from './dr/heartbeat.ts';
export { promotionOf } from './dr/fence.ts';
export { RemoteClusterError, createRemoteClusters } from './remote/clusters.ts';
export type { WatchedKind, WatchedChange } from './manager.ts';
export { listen } from './server.ts';
export type { WebUi, WebUiOptions } from './main.ts';
export { NAMESPACE_NOT_ALLOWED } from './tenancy.ts';
export { objectPath, writeStatus } from '@syncline/runtime';
export type { NotificationsPart } from './main.ts';

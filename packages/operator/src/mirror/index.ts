// The pure half of in-cluster replication: label-driven mirroring of Secrets/ConfigMaps and ManifestSync copies.
// No I/O and no clock: reconcilers read the cluster, call these, and feed the desired objects to planApply.
//
// Label-driven mirroring, per source: `parseMirrorSpec` → `resolveTargetNamespaces` → per target
// `decideReplicaWrite` (who may write it) → `makeReplica` (the desired replica; `replicaReplacementReason`
// when an update would be refused, `replicaExtraKeys` for override) → apply. Per kind, after the source and
// replica caches synced: `planReplicaCleanup` (source gone, namespace no longer targeted, stale TTL).
// ManifestSync: `expandCopyTargets` → `makeCopy` per target → apply.
export { MirrorError, MirrorErrorReason, isMirrorError, describeObject } from './errors.ts';
export {
  DEFAULT_MIRROR_PREFIX,
  NAMESPACE_MIRROR_DISABLED,
  mirrorKeys,
  mirrorObjectKeys,
  formatSourceRef,
  parseSourceRef,
  sourceRefHash,
  replicaSelector,
  sourceSelector,
  isMirrorSource,
  isMirrorReplica,
  isMirrorDisabled,
} from './labels.ts';
export type { MirrorKeys, SourceRef } from './labels.ts';
export { matchesPattern, parsePatternList, isGlob, isNamespaceName } from './glob.ts';
export type { NamePattern } from './glob.ts';
export { MirrorStrategy, MirrorKind, SERVICE_ACCOUNT_TOKEN, parseMirrorSpec } from './spec.ts';
export type { MirrorSpec, NamespaceList } from './spec.ts';
export {
  SkipReason,
  isTerminating,
  splitDashedNames,
  resolveTargetNamespaces,
  parseMirrorSourceNamespaces,
  mayBeMirrorSource,
  matchesLabelSelector,
  expandCopyTargets,
  namespaceProjection,
  mirrorNamespaces,
} from './targets.ts';
export type {
  MirrorNamespace,
  SkippedNamespace,
  DashedAmbiguity,
  DashedNames,
  TargetResolution,
  ResolveTargetsInput,
  LabelSelector,
  LabelSelectorRequirement,
  CopyTargetSpec,
  CopyTarget,
  CopyTargetResolution,
} from './targets.ts';
export {
  COMMON_COPY_RULES,
  COPY_RULES,
  DATA_FIELDS,
  kindKey,
  copyRulesFor,
  uncopyableReason,
  sanitizeCopy,
  makeReplica,
  replicaExtraKeys,
  replicaReplacementReason,
  makeCopy,
} from './copy.ts';
export type { CopyRule, FieldPath, MakeReplicaInput, MakeCopyInput } from './copy.ts';
export { classifyExisting, claimOf, compareClaims, decideTargetOwner, decideReplicaWrite } from './conflicts.ts';
export type { ExistingObject, SourceClaim, TargetOwner, ReplicaWrite } from './conflicts.ts';
export { StalePolicy, CleanupReason, formatTime, markStalePatch, unmarkStalePatch, planReplicaCleanup } from './stale.ts';
export type { MetadataPatch, ReplicaAction, SourceState, PlanReplicaCleanupInput, ReplicaCleanupPlan } from './stale.ts';

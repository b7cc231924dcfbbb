// Standard metav1 Conditions, pure: a condition's lastTransitionTime moves only when its status does,
// so a no-op resync produces an identical status and therefore no write.
import type { Condition, ConditionType } from '@syncline/api';

export const Reason = {
  Succeeded: 'ReconciliationSucceeded',
  Progressing: 'Progressing',
  FetchFailed: 'FetchFailed',
  RenderFailed: 'RenderFailed',
  /** A SOPS-encrypted file of the source could not be decrypted (no decryption configured, no key opens it, MAC mismatch, bad key Secret, key service unreachable). */
  DecryptionFailed: 'DecryptionFailed',
  InvalidSpec: 'InvalidSpec',
  ApplyFailed: 'ApplyFailed',
  PruneFailed: 'PruneFailed',
  EmptyRenderRefused: 'EmptyRenderRefused',
  Suspended: 'Suspended',
  DriftDetected: 'DriftDetected',
  /** An object the sync renders is owned by another sync or by nobody we may take it from. */
  Conflict: 'Conflict',
  /** A Namespace the sync created was left in place because it holds objects that are not the sync's. */
  NamespaceOrphaned: 'NamespaceOrphaned',
  /** Every applied object is healthy (kstatus Current). */
  Healthy: 'Healthy',
  /** An applied object failed (ProgressDeadlineExceeded, a failed Job, ...) or did not become healthy within spec.timeout. */
  HealthCheckFailed: 'HealthCheckFailed',
  /** A PreSync, Sync or PostSync hook of the current commit is still running (reconcile/hooks.ts). */
  HookRunning: 'HookRunning',
  /** A hook failed or timed out: PreSync keeps the previous version applied; SyncFail hooks ran. */
  HookFailed: 'HookFailed',
  /** A ConfigSync in spec.dependsOn is missing or not Ready at its current revision. */
  DependencyNotReady: 'DependencyNotReady',
  /** spec.dependsOn leads back to this ConfigSync. */
  DependencyCycle: 'DependencyCycle',
  /** An interval field was outside the operator's bounds and was clamped. */
  IntervalClamped: 'IntervalClamped',
  /** A ManifestSync's source object does not exist (copies are left as they are). */
  SourceNotFound: 'SourceNotFound',
  /** A ManifestSync's source may not be read with its identity. */
  SourceForbidden: 'SourceForbidden',
  /** A ManifestSync names a source in another namespace without the rights to say so. */
  SourceNotAllowed: 'SourceNotAllowed',
  /** A target reaches a namespace (or cluster-scoped objects) its sync may not write to (see tenancy.ts). */
  NamespaceNotAllowed: 'NamespaceNotAllowed',
  // RemoteCluster (remote/clusters.ts RemoteClusterReason uses the same words)
  Connected: 'Connected',
  RemoteClusterNotFound: 'RemoteClusterNotFound',
  SecretNotFound: 'SecretNotFound',
  InvalidKubeconfig: 'InvalidKubeconfig',
  Unreachable: 'Unreachable',
  Unauthorized: 'Unauthorized',
  /** A watch the object needs was refused: the operator's watch budget (--watch-budget) is exhausted. */
  WatchBudgetExceeded: 'WatchBudgetExceeded',
  // NamespaceReplication
  Replicated: 'Replicated',
  FailedOver: 'FailedOver',
  FailedBack: 'FailedBack',
  StandbyPromoted: 'StandbyPromoted',
  /** A mass deletion (or the source namespace's deletion) is held back from the standby. */
  PruneHeld: 'PruneHeld',
  /** A held deletion was confirmed (spec.confirmPrune) and applied. */
  PruneConfirmed: 'PruneConfirmed',
  /** A held deletion was applied after spec.pruneGuard.delay. */
  PruneReleased: 'PruneReleased',
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

export type ConditionInput = {
  readonly type: ConditionType;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: Reason;
  readonly message: string;
};

export function setCondition(conditions: readonly Condition[], input: ConditionInput, at: { generation: number | undefined; now: string }): Condition[] {
  const existing = conditions.find((c) => c.type === input.type);
  const next: Condition = {
    type: input.type,
    status: input.status,
    observedGeneration: at.generation,
    lastTransitionTime: existing !== undefined && existing.status === input.status ? existing.lastTransitionTime : at.now,
    reason: input.reason,
    message: input.message,
  };
  const others = conditions.filter((c) => c.type !== input.type);
  return [...others, next].sort((a, b) => conditionOrder(a.type) - conditionOrder(b.type));
}

/**
 * Conditions built in steps (Ready set True by the apply, then False by the health check) keep the
 * lastTransitionTime they had before this run when their status ends up where it was: no write for nothing.
 */
export function keepTransitions(previous: readonly Condition[] | undefined, next: readonly Condition[]): Condition[] {
  return next.map((c) => {
    const before = previous?.find((p) => p.type === c.type);
    return before !== undefined && before.status === c.status ? { ...c, lastTransitionTime: before.lastTransitionTime } : c;
  });
}

export function removeCondition(conditions: readonly Condition[], type: ConditionType): Condition[] {
  return conditions.filter((c) => c.type !== type);
}

export function findCondition(conditions: readonly Condition[] | undefined, type: ConditionType): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

const order: readonly string[] = ['Ready', 'Synced', 'Healthy', 'Reconciling', 'Stalled', 'InvalidSource', 'Failed', 'Suspended', 'IntervalClamped'];
function conditionOrder(type: string): number {
  const i = order.indexOf(type);
  return i === -1 ? order.length : i;
}

/** A condition or Event message: at most `max` characters (the API server refuses a longer condition message than 32 KiB; people read the first line). */
export function truncate(text: string, max = 1024): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

// What went wrong with a target, as data. A target's failures and conflicts are findings: each has a cause from
// a closed set (@syncline/apply's ApplyCause, plus what only the operator knows: the tenancy rule, a remote
// cluster, a refused plan) and a reason for people. Reconcilers decide from the cause (wait for a person, retry
// with backoff, back a remote target off); the text is what conditions and Events show and may be reworded.
// A test over the reconcilers' source keeps them from matching on error text (findings.test.ts).
import { ApplyCause, isTransientCause } from '@syncline/apply';

export const FindingCause = {
  ...ApplyCause,
  /** The tenancy rule refused the target whole (tenancy.ts): nothing read or written. Not transient: it needs a ServiceAccount or a trusted namespace. */
  NotAllowed: 'NotAllowed',
  /** The target's cluster (a RemoteCluster) cannot be used now. Transient. */
  ClusterUnavailable: 'ClusterUnavailable',
  /** The plan was refused: the render yielded no objects for a non-empty inventory (allowEmpty overrides). Transient. */
  EmptyRender: 'EmptyRender',
  /** A hook of the target failed at this commit (a PreSync hook, or PostSync/Sync after the apply). Not transient: a hook runs once per sync, target and commit, so only a new commit runs it again. */
  HookFailed: 'HookFailed',
} as const;
export type FindingCause = (typeof FindingCause)[keyof typeof FindingCause];

/** A failure or a conflict of a target. */
export type Finding = {
  readonly cause: FindingCause;
  /** What it is about: an object's id, the target's name (the target as a whole), or undefined (the plan). */
  readonly subject?: string;
  /** Why, for people. */
  readonly reason: string;
};

/** True when retrying with backoff may help; false when a person must change something first (RBAC, the spec, another owner's object). */
export function isTransient(cause: FindingCause): boolean {
  if (cause === FindingCause.NotAllowed || cause === FindingCause.HookFailed) return false;
  if (cause === FindingCause.ClusterUnavailable || cause === FindingCause.EmptyRender) return true;
  return isTransientCause(cause);
}

/** Whether a finding is a conflict (another owner's object, or one that is not Syncline's) rather than a failure. */
export function isConflict(finding: Finding): boolean {
  return finding.cause === FindingCause.Conflict || finding.cause === FindingCause.NotOwned;
}

/** Whether the target could not reach its API server: the request timed out or the connection failed. */
export function isUnreachable(finding: Finding): boolean {
  return finding.cause === FindingCause.Timeout || finding.cause === FindingCause.Transport;
}

/** `subject: reason`, as conditions, Events and status lines show a finding. */
export function findingMessage(finding: Finding): string {
  return finding.subject === undefined ? finding.reason : `${finding.subject}: ${finding.reason}`;
}

/** Findings as a target outcome holds them: every finding, and the messages of its failures and of its conflicts. */
export function sortFindings(findings: readonly Finding[]): { findings: readonly Finding[]; failures: readonly string[]; conflicts: readonly string[] } {
  return {
    findings,
    failures: findings.filter((f) => !isConflict(f)).map(findingMessage),
    conflicts: findings.filter(isConflict).map(findingMessage),
  };
}

// Health of a sync, pure: per-object kstatus results (from @syncline/apply readHealth) → a target's counts,
// the Healthy condition, and what `wait` makes of Ready. The clock comes in as `now`; the health-check window
// starts at the last apply or when health last stopped being True, whichever is later, and is stored in the
// Healthy condition itself (its lastTransitionTime), so a restarted operator keeps the same deadline.
import { parseObjectId, type Health } from '@syncline/apply';
import type { Condition, TargetHealth } from '@syncline/api';
import { Reason, findCondition, setCondition, truncate } from '@syncline/runtime';
import { formatDuration } from '@syncline/runtime';

/** How many objects a condition message names before it says "and N more". */
const NAMED = 5;

export type HealthReport = {
  readonly counts: TargetHealth;
  /** `Kind/name: Reason: message` of every object that is not Current, failed ones first. */
  readonly failed: readonly string[];
  readonly progressing: readonly string[];
};

/** One target's health: `heldBack` objects of later waves (not applied yet) count as progressing. */
export function summarizeHealth(health: ReadonlyMap<string, Health>, heldBack: readonly string[] = []): HealthReport {
  const counts: TargetHealth = { healthy: 0, progressing: heldBack.length, failed: 0, unknown: 0 };
  const failed: string[] = [];
  const progressing: string[] = [];
  for (const [id, h] of [...health].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const { kind, name } = parseObjectId(id);
    const line = `${kind}/${name}: ${h.reason === undefined ? '' : `${h.reason}: `}${h.message}`;
    switch (h.status) {
      case 'Current':
        counts.healthy++;
        break;
      case 'Failed':
        counts.failed++;
        failed.push(line);
        break;
      case 'InProgress':
        counts.progressing++;
        progressing.push(line);
        break;
      case 'Unknown':
        counts.unknown++;
        progressing.push(line);
        break;
    }
  }
  if (heldBack.length > 0) progressing.push(`${heldBack.length} object(s) of later apply waves not applied yet`);
  return { counts, failed, progressing };
}

export type TargetHealthInput = { readonly name: string; readonly wait: boolean; readonly report: HealthReport };

export type HealthVerdict = {
  readonly conditions: Condition[];
  /** Re-check then (the timeout expires) unless an event comes first. */
  readonly requeueAfterMs?: number;
  /** Set when health turned into a failure this run can report (a Warning event, news once). */
  readonly failure?: string;
};

const named = (items: readonly string[]): string => items.slice(0, NAMED).join('; ') + (items.length > NAMED ? `; and ${items.length - NAMED} more` : '');

/**
 * Healthy, and Ready/Reconciling for targets that wait. `conditions` already hold Ready from the apply: only a
 * Ready=True is turned into waiting or HealthCheckFailed (an apply failure or conflict says more).
 */
export function healthConditions(input: {
  readonly conditions: readonly Condition[];
  readonly targets: readonly TargetHealthInput[];
  /** When the sync last wrote something (status.lastSyncedTime after this run). */
  readonly lastSyncedTime: string | undefined;
  readonly timeoutMs: number;
  readonly at: { readonly generation: number | undefined; readonly now: string };
}): HealthVerdict {
  const { at, timeoutMs } = input;
  const now = Date.parse(at.now);
  const prefix = input.targets.length > 1;
  const lines = (t: TargetHealthInput, items: readonly string[]): string[] => (prefix ? items.map((i) => `${t.name}: ${i}`) : [...items]);
  const failed = input.targets.flatMap((t) => lines(t, t.report.failed));
  const progressing = input.targets.flatMap((t) => lines(t, t.report.progressing));
  const healthy = input.targets.reduce((n, t) => n + t.report.counts.healthy, 0);
  let conditions = [...input.conditions];
  if (failed.length === 0 && progressing.length === 0) {
    conditions = setCondition(conditions, { type: 'Healthy', status: 'True', reason: Reason.Healthy, message: `${healthy} object(s) healthy` }, at);
    return { conditions };
  }

  // The window: from the last apply, or from when health stopped being True (the Healthy condition's
  // transition), whichever is later. A window that ran out stays out until something is applied again.
  const previous = findCondition(input.conditions, 'Healthy');
  const lastSynced = input.lastSyncedTime === undefined ? Number.NaN : Date.parse(input.lastSyncedTime);
  const since = previous === undefined ? Number.NaN : Date.parse(previous.lastTransitionTime);
  let start: number;
  let expired = false;
  if (previous?.status === 'Unknown') start = Math.max(since, Number.isNaN(lastSynced) ? since : lastSynced);
  else if (previous?.status === 'False') {
    start = lastSynced > since ? lastSynced : since;
    expired = !(lastSynced > since) && previous.reason === Reason.HealthCheckFailed;
  } else start = now; // health was True (or never judged, e.g. a sync from before health existed): a fresh window
  if (Number.isNaN(start)) start = now;
  const left = start + timeoutMs - now;
  const timedOut = expired || left <= 0;

  let verdict: HealthVerdict;
  if (failed.length > 0 || timedOut) {
    const message = truncate(
      failed.length > 0
        ? `${failed.length} object(s) failed: ${named(failed)}${progressing.length > 0 ? `; ${progressing.length} not healthy yet: ${named(progressing)}` : ''}`
        : `not healthy within ${formatDuration(timeoutMs)}: ${named(progressing)}`,
    );
    conditions = setCondition(conditions, { type: 'Healthy', status: 'False', reason: Reason.HealthCheckFailed, message }, at);
    verdict = { conditions, failure: message };
  } else {
    const message = truncate(`waiting for ${progressing.length} object(s) to become healthy: ${named(progressing)}`);
    conditions = setCondition(conditions, { type: 'Healthy', status: 'Unknown', reason: Reason.Progressing, message }, at);
    verdict = { conditions, requeueAfterMs: Math.max(1000, left + 500) };
  }

  // wait: Ready follows the health of the targets that wait.
  const waiting = input.targets.filter((t) => t.wait);
  const waitFailed = waiting.flatMap((t) => lines(t, t.report.failed));
  const waitProgressing = waiting.flatMap((t) => lines(t, t.report.progressing));
  const ready = findCondition(conditions, 'Ready');
  if (ready?.status !== 'True' || (waitFailed.length === 0 && waitProgressing.length === 0)) return verdict;
  if (waitFailed.length > 0 || timedOut) {
    const message = truncate(
      waitFailed.length > 0
        ? `health check failed: ${named(waitFailed)}`
        : `health check failed: not healthy within ${formatDuration(timeoutMs)}: ${named(waitProgressing)}`,
    );
    conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason: Reason.HealthCheckFailed, message }, at);
    return { ...verdict, conditions, failure: message };
  }
  const message = truncate(
    `applied; waiting (up to ${formatDuration(timeoutMs)}) for ${waitProgressing.length} object(s) to become healthy: ${named(waitProgressing)}`,
  );
  conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason: Reason.Progressing, message }, at);
  conditions = setCondition(conditions, { type: 'Reconciling', status: 'True', reason: Reason.Progressing, message }, at);
  return { ...verdict, conditions };
}

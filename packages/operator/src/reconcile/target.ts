// "Apply to a target and summarize it": the step every reconciler shares (ConfigSync today; ManifestSync,
// mirroring and DR next). The desired objects come from wherever the reconciler got them (a render, a
// copy, a DR transform); this reads live state, plans, executes and prunes through the one apply engine,
// then turns the change set into the target's status line and the findings the sync reports.
import {
  ApplyCause,
  FingerprintMemo,
  causeOfError,
  decodeInventory,
  encodeInventory,
  parseObjectId,
  executePlan,
  objectId,
  ownerHash,
  scopeOf,
  provenObjects,
  planApply,
  readHealth,
  readLive,
  recordNoop,
  stillUnchanged,
  unchangedChangeSet,
  type Inventory,
  type LiveState,
  type NoopRecord,
  type WatchedVersion,
  type WaveResult,
  type ApplyClient,
  type ChangeSet,
  type KubeObject,
  type Owner,
  type Policy,
  type DriftMode,
} from '@syncline/apply';
import type { Condition, TargetInventory, TargetStatus } from '@syncline/api';
import { objectLabels, type Metrics } from '../metrics.ts';
import { Reason, removeCondition, setCondition, truncate } from '@syncline/runtime';
import { summarizeHealth, type HealthReport } from './health.ts';
import { NAMESPACE_NOT_ALLOWED, describeRefusal, refusedObjects, type Actor } from '../tenancy.ts';
import { FindingCause, findingMessage, sortFindings, type Finding } from './findings.ts';

export type TargetApplyInput = {
  readonly client: ApplyClient;
  /** The target's status line: its id, and where it applies. */
  readonly target: { readonly name: string; readonly namespace?: string; readonly cluster?: string };
  readonly desired: readonly KubeObject[];
  /** The target's recorded inventory (encoded), the source of truth for pruning. */
  readonly inventory: readonly string[] | undefined;
  readonly owner: Owner;
  readonly policy?: Policy;
  /** The policy for a desired Namespace that exists and is not ours (default: policy); see @syncline/apply's planApply. */
  readonly namespacePolicy?: Policy;
  /** Owners handing their objects to this target (a renamed target); see @syncline/apply's planApply. */
  readonly handoff?: ReadonlySet<string>;
  readonly drift?: DriftMode;
  readonly prune?: boolean;
  readonly allowEmpty?: boolean;
  /** Whose objects may remain in a Namespace this target deletes (see executePlan). */
  readonly pruneScope?: 'target' | 'sync';
  /** The target's previous status line: lastSyncedTime moves only when something changed. */
  readonly previous?: TargetStatus;
  readonly now: string;
  /** Runs before anything is written, with the ids about to be applied (drift watches start here). */
  readonly beforeApply?: (ids: readonly string[]) => Promise<void>;
  readonly metrics?: Pick<Metrics, 'objectsApplied' | 'targetFailures'>;
  /** `namespace/name` of the sync, for metric labels. */
  readonly syncKey: string;
  /**
   * Judge the health of what was applied (kstatus); with `wait`, each apply wave must be healthy before the
   * next one is applied (the later ones wait for the next run, woken by the objects' status changes).
   */
  readonly health?: { readonly wait: boolean };
  /**
   * Skips a resync that would change nothing, without a request: the last clean apply of this target (kept in
   * `records` under `key`) still holds when the inputs are the same and the watch cache still has the versions
   * it read or wrote (see @syncline/apply's unchanged.ts); new inputs read only what the watch cannot vouch for.
   * Without it every apply reads the live objects.
   */
  readonly noop?: { readonly records: Map<string, TargetNoop>; readonly key: string; readonly watched: WatchedVersion; readonly firstApply?: FirstApply };
  /**
   * Who causes the write (see tenancy.ts): when set, a target whose desired objects or inventory reach where
   * the actor may not write is refused whole (Failed, reason NamespaceNotAllowed) before anything is read or
   * written, and keeps its inventory.
   */
  readonly tenancy?: Actor;
};

/**
 * A target's first apply in this process asks its owner's LIST of a scope only where the drift watches do not
 * vouch that the owner has nothing there (see readLive's ownerAbsent): 200 new syncs send 200 LISTs fewer. Only the
 * first: once this process has written for a target, a write of its own may not have reached the watch yet, and
 * the LIST's managedFields are what prove a lost status write's objects ours to prune.
 */
export type FirstApply = {
  /** Keys of the targets this process has applied (or tried to): their later applies list as before. */
  readonly applied: Set<string>;
  /** Whether a synced, fresh watch holds an object of the scope carrying OWNER_LABEL `ownerLabel`; undefined: none vouches. */
  readonly ownerSeen: (scope: { readonly group: string; readonly kind: string; readonly namespace: string }, ownerLabel: string) => boolean | undefined;
  /**
   * Starts (or joins) the drift watches of these ids before the first read, resolving once they listed (or gave
   * up waiting): the targets of a burst of new syncs then ask ownerSeen of a listed watch instead of each sending
   * its LIST while the first one's watch is still listing. Best effort: it never rejects (a watch that cannot
   * start leaves the LIST, and the write's own beforeApply says why).
   */
  readonly watch?: (ids: readonly string[]) => Promise<void>;
};

/** readLive's ownerAbsent for this apply of the target: only for its first in this process, once the watches of its scopes are there. */
async function ownerAbsentFor(
  noop: TargetApplyInput['noop'],
  input: Pick<TargetApplyInput, 'owner' | 'desired'>,
  inventory: Inventory,
): Promise<((scope: { group: string; kind: string; namespace: string }) => boolean) | undefined> {
  const first = noop?.firstApply;
  if (noop === undefined || first === undefined) return undefined;
  const earlier = first.applied.has(noop.key);
  first.applied.add(noop.key);
  if (earlier) return undefined;
  // Only for scopes where the inventory names nothing: where it does, the owner has objects there (the watch
  // would say so) and the LIST goes out anyway, so a restarted process's first applies do not wait for a watch.
  const recorded = new Set(inventory.map((e) => scopeOf(e.id)));
  const fresh = input.desired.map((o) => objectId(o)).filter((id) => !recorded.has(scopeOf(id)));
  if (first.watch !== undefined && fresh.length > 0) await first.watch(fresh);
  const label = ownerHash(input.owner);
  return (scope) => first.ownerSeen(scope, label) === false;
}

/** What a target's last apply proved, and the health judged then: the same versions mean the same health. */
export type TargetNoop = { readonly record: NoopRecord; readonly health?: HealthReport };

export type Counts = { created: number; configured: number; deleted: number; failed: number; drifted: number };

export type TargetOutcome = {
  readonly status: TargetStatus;
  readonly inventory: TargetInventory;
  readonly counts: Counts;
  /** Every failure and conflict with its cause: what reconcilers decide from (see findings.ts). */
  readonly findings: readonly Finding[];
  /** `id: reason` of objects that failed (and a refused plan): the findings' messages, for people. */
  readonly failures: readonly string[];
  /** `id: reason` of objects held back because someone else owns them: the findings' messages, for people. */
  readonly conflicts: readonly string[];
  /** `id (paths)` of objects that drifted and were left (drift Report). */
  readonly drift: readonly string[];
  /** `id: reason` of Namespaces left in place because they hold objects that are not ours. */
  readonly orphaned: readonly string[];
  /** Whether anything was written. */
  readonly changed: boolean;
  /** The health of the applied objects, when asked for. */
  readonly health?: HealthReport;
  /** What was written, in execution order: `Kind/namespace/name created|configured|deleted` (for the Event). */
  readonly changes: readonly string[];
};

export const emptyCounts = (): Counts => ({ created: 0, configured: 0, deleted: 0, failed: 0, drifted: 0 });

/** Never throws for the cluster's answers: a failure to read or write becomes the target's Failed status. */
export async function applyTarget(input: TargetApplyInput): Promise<TargetOutcome> {
  const previousInventory = decodeInventory(input.inventory);
  if (input.tenancy !== undefined) {
    const refused = refusedObjects(input.tenancy, [...input.desired, ...previousInventory.map((entry) => scopedObject(entry.id))]);
    if (refused.length > 0) return refusedTarget(input, describeRefusal(refused));
  }
  const { noop } = input;
  const fingerprint =
    noop === undefined
      ? undefined
      : fingerprints.fingerprint({
          desired: input.desired,
          inventory: input.inventory,
          owner: input.owner,
          options: {
            policy: input.policy,
            namespacePolicy: input.namespacePolicy,
            handoff: input.handoff === undefined ? undefined : [...input.handoff].sort().join(','),
            drift: input.drift,
            prune: input.prune,
            allowEmpty: input.allowEmpty,
            pruneScope: input.pruneScope,
            wait: input.health?.wait,
          },
        });
  const last = noop?.records.get(noop.key);
  if (
    fingerprint !== undefined &&
    noop !== undefined &&
    last !== undefined &&
    (input.health === undefined || last.health !== undefined) &&
    stillUnchanged(last.record, fingerprint, noop.watched)
  )
    return unchangedOutcome(input, last, previousInventory);
  noop?.records.delete(noop.key);
  // The inputs changed (a new commit): what the last apply read or wrote, and the watch still holds, needs no read.
  const proven = noop === undefined ? undefined : provenObjects(last?.record, input.owner, noop.watched);
  let changes: ChangeSet;
  let live: LiveState;
  try {
    const ownerAbsent = await ownerAbsentFor(noop, input, previousInventory);
    live = await readLive({
      client: input.client,
      desired: input.desired,
      inventory: previousInventory,
      owner: input.owner,
      ...(proven === undefined ? {} : { proven }),
      ...(ownerAbsent === undefined ? {} : { ownerAbsent }),
    });
    const plan = planApply({
      desired: input.desired,
      inventory: previousInventory,
      live,
      owner: input.owner,
      policy: input.policy,
      ...(input.namespacePolicy === undefined ? {} : { namespacePolicy: input.namespacePolicy }),
      ...(input.handoff === undefined ? {} : { handoff: input.handoff }),
      drift: input.drift,
      prune: input.prune,
      allowEmpty: input.allowEmpty,
    });
    await input.beforeApply?.(plan.apply.map((s) => s.id));
    const observed = live;
    const waveGate =
      input.health?.wait === true
        ? async ({ wave, entries }: WaveResult): Promise<string | undefined> => {
            const report = summarizeHealth(await readHealth({ client: input.client, entries, desired: input.desired, live: observed, owner: input.owner }));
            const waiting = [...report.failed, ...report.progressing];
            return waiting.length === 0 ? undefined : `wave ${wave} is not healthy yet (${waiting.slice(0, 3).join('; ')}${waiting.length > 3 ? '; …' : ''})`;
          }
        : undefined;
    changes = await executePlan(plan, {
      client: input.client,
      ...(input.pruneScope === undefined ? {} : { pruneScope: input.pruneScope }),
      ...(waveGate === undefined ? {} : { waveGate }),
      ...(noop === undefined ? {} : { prove: true }), // what it writes, read back, needs no read next time
    });
  } catch (error) {
    const finding: Finding = { cause: causeOfError(error), subject: input.target.name, reason: error instanceof Error ? error.message : String(error) };
    input.metrics?.targetFailures.inc({ ...objectLabels(input.syncKey), target: input.target.name });
    return {
      status: {
        ...statusBase(input),
        phase: 'Failed',
        objects: previousInventory.length,
        message: findingMessage(finding),
        lastSyncedTime: input.previous?.lastSyncedTime,
      },
      inventory: { target: input.target.name, entries: encodeInventory(previousInventory) },
      counts: { ...emptyCounts(), failed: 1 },
      ...sortFindings([finding]),
      drift: [],
      orphaned: [],
      changed: false,
      changes: [],
    };
  }
  const outcome = summarizeChanges(input, changes);
  const record =
    noop === undefined || fingerprint === undefined
      ? undefined
      : recordNoop(fingerprint, { desired: input.desired, inventory: previousInventory, live, changes, owner: input.owner });
  if (input.health === undefined) {
    if (noop !== undefined && record !== undefined) noop.records.set(noop.key, { record });
    return outcome;
  }
  const heldBack =
    changes.heldBack === undefined ? [] : changes.entries.filter((e) => e.action === 'skipped' && e.cause === ApplyCause.HeldBack).map((e) => e.id);
  const health = summarizeHealth(
    await readHealth({ client: input.client, entries: changes.entries, desired: input.desired, live, owner: input.owner }),
    heldBack,
  );
  if (noop !== undefined && record !== undefined) noop.records.set(noop.key, { record, health });
  return { ...outcome, status: { ...outcome.status, health: health.counts }, health };
}

/** The fingerprints of the desired lists applied, remembered (a resync's render hands back the same list). */
const fingerprints = new FingerprintMemo();

/**
 * The outcome of a no-op resync, by the proof it stands on: kept for the next no-op of the same target. It is a
 * function of the target's status line, its name and place, the desired list, the inventory and the proof (with
 * the health judged then); a status line that is not Synced with a sync time would take this run's time, so
 * that one is summarized every time. Any other input summarizes anew.
 */
type UnchangedOutcome = {
  readonly previous: TargetStatus;
  readonly target: TargetApplyInput['target'];
  readonly desired: readonly KubeObject[];
  readonly inventory: readonly string[] | undefined;
  readonly outcome: TargetOutcome;
};
const unchangedOutcomes = new WeakMap<TargetNoop, UnchangedOutcome>();
/** Outcomes of a proven no-op: every desired object's version came from a synced, healthy and fresh drift watch. */
const provenOutcomes = new WeakSet<TargetOutcome>();

/**
 * Whether `outcome` is a no-op proven by the drift watches: each desired object is watched by a synced, healthy and
 * fresh watch (else it would not have been proven), so none of them needs saying that its drift cannot be watched.
 */
export function provenByWatches(outcome: TargetOutcome): boolean {
  return provenOutcomes.has(outcome);
}

function unchangedOutcome(input: TargetApplyInput, last: TargetNoop, previousInventory: Inventory): TargetOutcome {
  const { previous, target } = input;
  const known = unchangedOutcomes.get(last);
  if (
    known !== undefined &&
    known.previous === previous &&
    known.desired === input.desired &&
    known.inventory === input.inventory &&
    known.target.name === target.name &&
    known.target.namespace === target.namespace &&
    known.target.cluster === target.cluster
  )
    return known.outcome;
  const summarized = summarizeChanges(input, unchangedChangeSet(input.desired, previousInventory));
  const outcome = last.health === undefined ? summarized : { ...summarized, status: { ...summarized.status, health: last.health.counts }, health: last.health };
  if (previous?.phase === 'Synced' && previous.lastSyncedTime !== undefined)
    unchangedOutcomes.set(last, { previous, target: { ...target }, desired: input.desired, inventory: input.inventory, outcome });
  provenOutcomes.add(outcome);
  return outcome;
}

/** An inventory id as the tenancy rule reads it (namespace '' = cluster-scoped). */
function scopedObject(id: string): { kind: string; metadata: { name: string; namespace: string } } {
  const { kind, namespace, name } = parseObjectId(id);
  return { kind, metadata: { name, namespace } };
}

/**
 * A deleted sync's inventory split by the tenancy rule: what it may prune, and the ids it may not (left in
 * place: a sync that may not write somewhere may not delete there either).
 */
export function partitionInventory(actor: Actor, encoded: readonly string[]): { allowed: string[]; refused: string[] } {
  const allowed = [];
  const refused: string[] = [];
  for (const entry of decodeInventory(encoded)) {
    if (refusedObjects(actor, [scopedObject(entry.id)]).length === 0) allowed.push(entry);
    else refused.push(entry.id);
  }
  return { allowed: encodeInventory(allowed), refused };
}

/** A target the tenancy rule refused: nothing read or written, its inventory and last sync time kept. */
export function refusedTarget(input: Pick<TargetApplyInput, 'target' | 'inventory' | 'previous' | 'metrics' | 'syncKey'>, message: string): TargetOutcome {
  input.metrics?.targetFailures.inc({ ...objectLabels(input.syncKey), target: input.target.name });
  return {
    status: {
      ...statusBase(input),
      phase: 'Failed',
      reason: NAMESPACE_NOT_ALLOWED,
      objects: input.inventory?.length === undefined ? 0 : decodeInventory(input.inventory).length,
      message: truncate(message),
      ...(input.previous?.lastSyncedTime === undefined ? {} : { lastSyncedTime: input.previous.lastSyncedTime }),
    },
    inventory: { target: input.target.name, entries: [...(input.inventory ?? [])] },
    counts: emptyCounts(),
    ...sortFindings([{ cause: FindingCause.NotAllowed, subject: input.target.name, reason: message }]),
    drift: [],
    orphaned: [],
    changed: false,
    changes: [],
  };
}

/** Whether every failure of these targets is a tenancy refusal (the condition then names that rule). */
export function onlyRefused(outcomes: readonly TargetOutcome[]): boolean {
  const failed = outcomes.filter((o) => o.failures.length > 0 || o.conflicts.length > 0);
  return failed.length > 0 && failed.every((o) => o.status.reason === NAMESPACE_NOT_ALLOWED && o.conflicts.length === 0);
}

/** Pure: a change set → the target's status line and findings. */
export function summarizeChanges(input: Pick<TargetApplyInput, 'target' | 'previous' | 'now' | 'metrics' | 'syncKey'>, changes: ChangeSet): TargetOutcome {
  const counts = emptyCounts();
  const findings: Finding[] = changes.blocked === undefined ? [] : [{ cause: FindingCause.EmptyRender, reason: changes.blocked }];
  const drift: string[] = [];
  const orphaned: string[] = [];
  for (const entry of changes.entries) {
    if (entry.action === 'created') counts.created++;
    if (entry.action === 'configured') counts.configured++;
    if (entry.action === 'deleted') counts.deleted++;
    if (entry.action === 'failed') {
      counts.failed++;
      findings.push({ cause: entry.cause, subject: entry.id, reason: entry.reason ?? 'failed' });
    }
    if (entry.action === 'skipped' && (entry.cause === ApplyCause.Conflict || entry.cause === ApplyCause.NotOwned))
      findings.push({ cause: entry.cause, subject: entry.id, reason: entry.reason ?? 'conflict' });
    if (entry.action === 'skipped' && entry.cause === ApplyCause.Orphaned) orphaned.push(`${entry.id}: ${entry.reason ?? ''}`);
    if (entry.drift !== undefined && entry.drift.length > 0 && entry.action !== 'configured') {
      counts.drifted++;
      drift.push(`${entry.id} (${entry.drift.slice(0, 3).join(', ')})`);
    }
    if (entry.action !== 'unchanged') input.metrics?.objectsApplied.inc({ action: entry.action });
  }
  const { failures, conflicts } = sortFindings(findings);
  const problems = [...failures, ...conflicts];
  if (problems.length > 0) input.metrics?.targetFailures.inc({ ...objectLabels(input.syncKey), target: input.target.name });
  const ok = problems.length === 0;
  const written = changes.entries.filter((e) => e.action === 'created' || e.action === 'configured' || e.action === 'deleted');
  const changed = written.length > 0;
  const before = input.previous;
  return {
    status: {
      ...statusBase(input),
      // Later apply waves held back (waiting for an earlier wave's health): applied so far, not done.
      phase: ok ? (changes.heldBack === undefined ? 'Synced' : 'Pending') : 'Failed',
      objects: changes.inventory.length,
      ...(ok
        ? changes.heldBack === undefined
          ? {}
          : { message: truncate(`later apply waves wait: ${changes.heldBack}`) }
        : { message: truncate(problems.join('; ')) }),
      lastSyncedTime: ok && (changed || before?.phase !== 'Synced' || before.lastSyncedTime === undefined) ? input.now : before?.lastSyncedTime,
    },
    inventory: { target: input.target.name, entries: encodeInventory(changes.inventory) },
    counts,
    ...sortFindings(findings),
    drift,
    orphaned,
    changed,
    changes: written.map((e) => `${readableId(e.id)} ${e.action}`),
  };
}

/** `Kind/namespace/name` (`Kind/name` when cluster-scoped), as Flux and kubectl name objects in their output. */
export function readableId(id: string): string {
  try {
    const { kind, namespace, name } = parseObjectId(id);
    return namespace === '' ? `${kind}/${name}` : `${kind}/${namespace}/${name}`;
  } catch {
    return id;
  }
}

/** The changed objects for an Event message: the first `max`, then how many more. */
export function describeChanges(changes: readonly string[], max = 10): string {
  if (changes.length <= max) return changes.join(', ');
  return `${changes.slice(0, max).join(', ')} and ${changes.length - max} more`;
}

function statusBase(input: Pick<TargetApplyInput, 'target'>): Pick<TargetStatus, 'name' | 'namespace' | 'cluster'> {
  return {
    name: input.target.name,
    ...(input.target.namespace === undefined ? {} : { namespace: input.target.namespace }),
    ...(input.target.cluster === undefined ? {} : { cluster: input.target.cluster }),
  };
}

/** The findings of several targets, prefixed with their target's name. */
export function combineTargets(outcomes: readonly TargetOutcome[]): {
  counts: Counts;
  findings: readonly Finding[];
  failures: readonly string[];
  conflicts: readonly string[];
  drift: string[];
  orphaned: string[];
  changed: boolean;
  changes: string[];
} {
  const counts = emptyCounts();
  // Each finding named by its target: one about the target as a whole names it already.
  const named = outcomes.flatMap((o) =>
    o.findings.map((f): Finding => (f.subject === o.status.name ? f : { cause: f.cause, subject: o.status.name, reason: findingMessage(f) })),
  );
  for (const o of outcomes) for (const key of Object.keys(counts) as (keyof Counts)[]) counts[key] += o.counts[key];
  return {
    counts,
    ...sortFindings(named),
    drift: outcomes.flatMap((o) => o.drift),
    orphaned: outcomes.flatMap((o) => o.orphaned),
    changed: outcomes.some((o) => o.changed),
    // Targets in other clusters may hold the same Kind/namespace/name: name their cluster.
    changes: outcomes.flatMap((o) => o.changes.map((c) => (o.inventory.cluster === undefined ? c : `${c} in cluster ${o.inventory.cluster}`))),
  };
}

export { truncate };

/**
 * Ready/Synced/Failed after the targets were applied. A conflict (another owner's object) is named as
 * such, not as an apply failure; drift under Report leaves Synced False with the drifted objects.
 */
export function appliedConditions(
  conditions: readonly Condition[],
  combined: Pick<ReturnType<typeof combineTargets>, 'failures' | 'conflicts' | 'drift'>,
  options: { readyMessage: string; applied: number; total: number; at: { generation: number | undefined; now: string }; refused?: boolean },
): Condition[] {
  const { failures, conflicts, drift } = combined;
  const { at } = options;
  let next = removeCondition(removeCondition(removeCondition(conditions, 'Reconciling'), 'Stalled'), 'InvalidSource');
  if (failures.length === 0 && conflicts.length === 0) {
    next = setCondition(next, { type: 'Ready', status: 'True', reason: Reason.Succeeded, message: options.readyMessage }, at);
    next = setCondition(next, { type: 'Synced', status: 'True', reason: Reason.Succeeded, message: `${options.applied} target(s) synced` }, at);
    next = removeCondition(next, 'Failed');
    if (drift.length > 0)
      next = setCondition(next, { type: 'Synced', status: 'False', reason: Reason.DriftDetected, message: truncate(`drifted: ${drift.join('; ')}`) }, at);
    return next;
  }
  const reason = failures.length === 0 ? Reason.Conflict : options.refused === true ? Reason.NamespaceNotAllowed : Reason.ApplyFailed;
  const message = truncate([...failures, ...conflicts].join('; '));
  next = setCondition(next, { type: 'Ready', status: 'False', reason, message }, at);
  next = setCondition(
    next,
    { type: 'Synced', status: 'False', reason, message: truncate(`${options.applied} of ${options.total} target(s) synced: ${message}`) },
    at,
  );
  return setCondition(next, { type: 'Failed', status: 'True', reason, message }, at);
}

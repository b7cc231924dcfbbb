// Running a target's hooks around its apply: PreSync hooks must succeed before the ordinary objects are applied,
// Sync hooks run once they are applied, PostSync hooks once they are healthy, SyncFail hooks when the apply, the
// objects' health or a hook failed. Each hook runs once per (sync, target, commit): its record in the target's
// status (hooksRevision, hooks) says it ran, and its object carries the run (HOOK_RUN_ANNOTATION) under a name
// derived from the run, so a restart between creating it and writing the status finds it instead of starting
// another. A hook object is created by server-side apply with our field manager and the target's ownership
// marks: only an object so proven is ever deleted (delete policies, a named hook's previous run).
import {
  ApiError,
  DEFAULT_FIELD_MANAGER,
  appliedBy,
  decodeInventory,
  objectId,
  ownedBy,
  ownershipOf,
  withOwnership,
  type ApplyClient,
  type KubeObject,
  type Owner,
} from '@syncline/apply';
import type { Condition, HookStatus, TargetStatus } from '@syncline/api';
import { describeRefusal, refusedObjects, type Actor } from '../tenancy.ts';
import { Reason, setCondition } from '@syncline/runtime';
import { FindingCause, sortFindings } from './findings.ts';
import { HOOK_RUN_ANNOTATION, HookDeletePolicy, HookPhase, formatDuration, hookObjectName, hookResult, hookRunKey, splitHooks, type Hook } from './hooks.ts';
import { emptyCounts, readableId, refusedTarget, truncate, type TargetApplyInput, type TargetOutcome } from './target.ts';

/** How often a sync with a running hook looks again when no watch wakes it (a Tekton run's status, say). */
export const HOOK_POLL_MS = 5_000;

export type HookedApplyInput = TargetApplyInput & {
  /** The commit being applied: hooks run once per commit. */
  readonly revision: string;
  /** How long a hook may run (its own syncline.dev/hook-timeout wins), and PostSync wait for health. */
  readonly hookTimeoutMs: number;
};

type Run = {
  readonly input: HookedApplyInput;
  readonly hooks: readonly Hook[];
  /** This commit's hook records by `phase|source`, updated as the hooks go. */
  readonly records: Map<string, HookStatus>;
  /** Records of an earlier commit: their objects go before a hook of the same source runs again (BeforeHookCreation). */
  readonly earlier: readonly HookStatus[];
};

type PhaseResult = { readonly state: 'done' | 'running' | 'failed'; readonly message: string };

const recordKey = (phase: HookPhase, source: string): string => `${phase}|${source}`;
const hookLabel = (record: HookStatus): string =>
  `${record.hook} hook ${readableId(`${record.apiVersion.includes('/') ? record.apiVersion.slice(0, record.apiVersion.indexOf('/')) : ''}/${record.kind}/${record.namespace ?? ''}/${record.name}`)}`;

/**
 * Applies a target whose render may hold hooks. Without hooks (now and in its last status) this is applyTarget's
 * outcome, unchanged.
 */
export async function applyTargetWithHooks(input: HookedApplyInput, apply: (input: TargetApplyInput) => Promise<TargetOutcome>): Promise<TargetOutcome> {
  const split = splitHooks(input.desired);
  const previous = input.previous;
  if (split.hooks.length === 0 && split.invalid.length === 0 && previous?.hooks === undefined) return apply(input);
  if (split.invalid.length > 0) return notApplied(input, 'Failed', Reason.HookFailed, `invalid hook(s): ${split.invalid.join('; ')}`, {});
  if (input.tenancy !== undefined) {
    const refused = refusedObjects(
      input.tenancy,
      split.hooks.map((h) => h.object),
    );
    if (refused.length > 0) return refusedTarget(input, describeRefusal(refused));
  }
  const sameCommit = previous?.hooksRevision === input.revision;
  const run: Run = {
    input,
    hooks: split.hooks,
    records: new Map((sameCommit ? (previous.hooks ?? []) : []).map((r) => [recordKey(r.hook, r.source), r])),
    earlier: sameCommit ? [] : (previous?.hooks ?? []),
  };
  const pre = await runPhase(run, HookPhase.PreSync);
  if (pre.state === 'running') return notApplied(input, 'Pending', Reason.HookRunning, pre.message, hookFields(run));
  if (pre.state === 'failed') {
    await runPhase(run, HookPhase.SyncFail);
    return notApplied(input, 'Failed', Reason.HookFailed, `${pre.message}; nothing of this commit was applied`, hookFields(run));
  }
  const outcome = await apply({ ...input, desired: split.objects });
  if (outcome.status.phase === 'Failed') {
    await runPhase(run, HookPhase.SyncFail);
    return withHooks(run, outcome);
  }
  if (outcome.status.phase === 'Pending') return withHooks(run, outcome);
  const sync = await runPhase(run, HookPhase.Sync);
  if (sync.state !== 'done') return afterApply(run, outcome, sync);
  const health = outcome.health;
  if (health !== undefined && health.failed.length > 0) {
    await runPhase(run, HookPhase.SyncFail);
    return withHooks(run, outcome);
  }
  if (health !== undefined && health.progressing.length > 0 && hasPhase(run, HookPhase.PostSync)) {
    return afterApply(run, outcome, waitForHealth(run, health.progressing));
  }
  return afterApply(run, outcome, await runPhase(run, HookPhase.PostSync));
}

const hasPhase = (run: Run, phase: HookPhase): boolean => run.hooks.some((h) => h.phases.includes(phase));

/** PostSync waits for health, up to the hook timeout from the apply; then it fails (and SyncFail runs next time). */
function waitForHealth(run: Run, progressing: readonly string[]): PhaseResult {
  const since = run.input.previous?.lastSyncedTime;
  const waited = since === undefined ? 0 : Date.parse(run.input.now) - Date.parse(since);
  const what = `${progressing.slice(0, 3).join('; ')}${progressing.length > 3 ? '; …' : ''}`;
  if (waited > run.input.hookTimeoutMs)
    return {
      state: 'failed',
      message: `PostSync hooks not run: the objects did not become healthy within ${formatDuration(run.input.hookTimeoutMs)} (${what})`,
    };
  return { state: 'running', message: `PostSync hooks wait for the objects to become healthy (${what})` };
}

/** The target after its objects were applied: Synced when every hook is done, else waiting or failed. */
async function afterApply(run: Run, outcome: TargetOutcome, result: PhaseResult): Promise<TargetOutcome> {
  if (result.state === 'done') return withHooks(run, outcome);
  if (result.state === 'failed') await runPhase(run, HookPhase.SyncFail);
  const failed = result.state === 'failed';
  // Applied and not Synced: the target's sync time moves only with a change (as summarizeChanges has it for Synced).
  const lastSyncedTime = outcome.changed ? outcome.status.lastSyncedTime : (run.input.previous?.lastSyncedTime ?? outcome.status.lastSyncedTime);
  return withHooks(run, {
    ...outcome,
    status: {
      ...outcome.status,
      phase: failed ? 'Failed' : 'Pending',
      reason: failed ? Reason.HookFailed : Reason.HookRunning,
      message: truncate(result.message),
      ...(lastSyncedTime === undefined ? {} : { lastSyncedTime }),
    },
    ...(failed ? sortFindings([...outcome.findings, { cause: FindingCause.HookFailed, subject: run.input.target.name, reason: result.message }]) : {}),
  });
}

function recordsOf(run: Run): HookStatus[] {
  const order = Object.values(HookPhase);
  return [...run.records.values()].sort((a, b) => order.indexOf(a.hook) - order.indexOf(b.hook) || a.source.localeCompare(b.source));
}

/**
 * The status fields of the hooks: this commit's once any of its hooks started, else the previous commit's, kept
 * so that their objects can still go when this commit's hooks are created (BeforeHookCreation).
 */
function hookFields(run: Run): Pick<TargetStatus, 'hooks' | 'hooksRevision'> {
  const hooks = recordsOf(run);
  if (hooks.length > 0) return { hooksRevision: run.input.revision, hooks };
  const previous = run.input.previous;
  return run.earlier.length > 0 && previous?.hooksRevision !== undefined ? { hooksRevision: previous.hooksRevision, hooks: [...run.earlier] } : {};
}

function withHooks(run: Run, outcome: TargetOutcome): TargetOutcome {
  const { hooks: _h, hooksRevision: _r, ...status } = outcome.status;
  return { ...outcome, status: { ...status, ...hookFields(run) } };
}

/** The target when its objects were not applied (a PreSync hook runs or failed): its inventory and sync time kept. */
function notApplied(
  input: HookedApplyInput,
  phase: 'Pending' | 'Failed',
  reason: string,
  message: string,
  hooks: Pick<TargetStatus, 'hooks' | 'hooksRevision'>,
): TargetOutcome {
  const { target, previous } = input;
  const inventory = input.inventory ?? [];
  return {
    status: {
      name: target.name,
      ...(target.namespace === undefined ? {} : { namespace: target.namespace }),
      ...(target.cluster === undefined ? {} : { cluster: target.cluster }),
      phase,
      reason,
      objects: decodeInventory(inventory).length,
      message: truncate(message),
      ...(previous?.lastSyncedTime === undefined ? {} : { lastSyncedTime: previous.lastSyncedTime }),
      ...(previous?.health === undefined ? {} : { health: previous.health }),
      ...hooks,
    },
    inventory: { target: target.name, entries: [...inventory] },
    counts: phase === 'Failed' ? { ...emptyCounts(), failed: 1 } : emptyCounts(),
    ...sortFindings(phase === 'Failed' ? [{ cause: FindingCause.HookFailed, subject: target.name, reason: message }] : []),
    drift: [],
    orphaned: [],
    changed: false,
    changes: [],
  };
}

/** Runs (or looks at) every hook of one phase; done when all succeeded, failed when any failed. */
async function runPhase(run: Run, phase: HookPhase): Promise<PhaseResult> {
  const hooks = run.hooks.filter((h) => h.phases.includes(phase));
  const fresh = hooks.filter((h) => run.records.get(recordKey(phase, h.source)) === undefined);
  // The drift watches follow the hook objects too: a Job's completion wakes the sync.
  if (fresh.length > 0) await run.input.beforeApply?.(fresh.map((h) => objectId(hookObject(run, h, phase))));
  const results = await Promise.all(hooks.map((h) => stepHook(run, h, phase)));
  const failed = results.filter((r) => r.phase === 'Failed');
  if (failed.length > 0) return { state: 'failed', message: failed.map((r) => `${hookLabel(r)} failed: ${r.message ?? ''}`).join('; ') };
  const waiting = results.filter((r) => r.phase !== 'Succeeded');
  if (waiting.length > 0)
    return {
      state: 'running',
      message: waiting
        .map((r) => `${hookLabel(r)} ${r.phase === 'Pending' ? 'waits' : 'is running'}${r.message === undefined ? '' : `: ${r.message}`}`)
        .join('; '),
    };
  return { state: 'done', message: '' };
}

/** The object a hook creates for this run: its derived name, the run annotation and the target's ownership marks. */
function hookObject(run: Run, hook: Hook, phase: HookPhase): KubeObject {
  const runKey = hookRunKey({ owner: ownedBy(run.input.owner), revision: run.input.revision }, phase);
  const { generateName: _g, ...metadata } = hook.object.metadata;
  const object = {
    ...hook.object,
    metadata: { ...metadata, name: hookObjectName(hook, runKey), annotations: { ...hook.object.metadata.annotations, [HOOK_RUN_ANNOTATION]: runKey } },
  };
  return withOwnership(object, run.input.owner);
}

const proven = (live: KubeObject, owner: Owner): boolean => ownershipOf(live, owner).kind === 'ours' && appliedBy(live, DEFAULT_FIELD_MANAGER);

/** One hook, one step: create it, or read how it is doing, and apply its delete policy once it finished. */
async function stepHook(run: Run, hook: Hook, phase: HookPhase): Promise<HookStatus> {
  const key = recordKey(phase, hook.source);
  const record = run.records.get(key);
  if (record?.phase === 'Succeeded' || record?.phase === 'Failed') return record;
  const desired = hookObject(run, hook, phase);
  const id = objectId(desired);
  const base: HookStatus = {
    hook: phase,
    kind: desired.kind,
    apiVersion: desired.apiVersion,
    ...(desired.metadata.namespace === undefined ? {} : { namespace: desired.metadata.namespace }),
    name: desired.metadata.name,
    source: hook.source,
    phase: 'Pending',
  };
  const save = (next: HookStatus): HookStatus => {
    run.records.set(key, next);
    return next;
  };
  try {
    const { client, owner } = run.input;
    let live = await client.get(id);
    if (live === undefined && record?.uid !== undefined) {
      // Created by this run and gone before its result was seen: not run again (once per commit); a person decides.
      return save(finish(run, { ...record }, { phase: 'Failed', message: 'its object was deleted before its result was seen; not run again for this commit' }));
    }
    if (live !== undefined && live.metadata.annotations?.[HOOK_RUN_ANNOTATION] !== desired.metadata.annotations?.[HOOK_RUN_ANNOTATION]) {
      if (!proven(live, owner))
        return save({ ...base, phase: 'Failed', message: `${readableId(id)} exists and was not created by this sync's hooks; left alone` });
      // The previous run's object of a named hook: it goes before this run creates its own.
      if (live.metadata['deletionTimestamp'] === undefined)
        await client.delete(id, { apiVersion: live.apiVersion, ...(live.metadata.uid === undefined ? {} : { uid: live.metadata.uid }) });
      return save({ ...base, message: "waiting for the previous run's object to be deleted" });
    }
    if (live === undefined) {
      if (hook.deletePolicies.has(HookDeletePolicy.BeforeHookCreation)) await deleteEarlier(run, hook, phase, id);
      try {
        live = await client.apply(desired, { fieldManager: DEFAULT_FIELD_MANAGER, force: false, read: true, ifAbsent: true });
      } catch (error) {
        // Someone created it between the read and the create: the next step looks at it.
        if (error instanceof ApiError && error.status === 409) return save({ ...base, message: 'created concurrently; looking again' });
        throw error;
      }
      if (live === undefined) return save({ ...base, message: 'created' });
    } else if (!proven(live, owner)) {
      return save({ ...base, phase: 'Failed', message: `${readableId(id)} carries this run's mark but was not created by this sync; left alone` });
    }
    const started = record?.startedAt ?? (typeof live.metadata['creationTimestamp'] === 'string' ? live.metadata['creationTimestamp'] : run.input.now);
    const running: HookStatus = { ...base, phase: 'Running', ...(live.metadata.uid === undefined ? {} : { uid: live.metadata.uid }), startedAt: started };
    const result = hookResult(live);
    const timeoutMs = hook.timeoutMs ?? run.input.hookTimeoutMs;
    if (result.phase === 'Running' && Date.parse(run.input.now) - Date.parse(started) > timeoutMs) {
      return save(
        await cleanUp(
          run,
          hook,
          finish(run, running, { phase: 'Failed', message: `did not finish within ${formatDuration(timeoutMs)} (${result.message})` }),
          live,
        ),
      );
    }
    // No progress text while it runs: a Job's active count or a pipeline's task tally would cost a status write each.
    if (result.phase === 'Running') return save(running);
    return save(await cleanUp(run, hook, finish(run, running, { phase: result.phase, message: result.message }), live));
  } catch (error) {
    // A read or write the API server refused (forbidden, a kind it does not serve): the hook fails, naming why.
    return save({ ...(record ?? base), phase: 'Failed', message: truncate(`${error instanceof Error ? error.message : String(error)}`, 256) });
  }
}

function finish(run: Run, record: HookStatus, result: { phase: 'Succeeded' | 'Failed'; message: string }): HookStatus {
  const started = record.startedAt === undefined ? Number.NaN : Date.parse(record.startedAt);
  const duration = Number.isNaN(started) ? {} : { duration: formatDuration(Date.parse(run.input.now) - started) };
  return { ...record, phase: result.phase, finishedAt: run.input.now, ...duration, message: truncate(result.message, 256) };
}

/** HookSucceeded / HookFailed: the finished object goes (with the uid we created, so never a successor). */
async function cleanUp(run: Run, hook: Hook, record: HookStatus, live: KubeObject): Promise<HookStatus> {
  const policy = record.phase === 'Succeeded' ? HookDeletePolicy.HookSucceeded : HookDeletePolicy.HookFailed;
  if (!hook.deletePolicies.has(policy)) return record;
  await run.input.client.delete(objectId(live), { apiVersion: live.apiVersion, ...(live.metadata.uid === undefined ? {} : { uid: live.metadata.uid }) });
  const { uid: _uid, ...rest } = record;
  return { ...rest, message: truncate(`${record.message ?? ''} (deleted: ${policy})`, 256) };
}

/** BeforeHookCreation for a generated name: the objects earlier commits created for this hook go first. */
async function deleteEarlier(run: Run, hook: Hook, phase: HookPhase, id: string): Promise<void> {
  for (const earlier of run.earlier) {
    if (earlier.source !== hook.source || earlier.hook !== phase || earlier.uid === undefined) continue;
    const earlierId = `${id.slice(0, id.lastIndexOf('/'))}/${earlier.name}`;
    if (earlierId === id) continue;
    const live = await run.input.client.get(earlierId);
    if (live === undefined || live.metadata.uid !== earlier.uid || !proven(live, run.input.owner)) continue;
    await run.input.client.delete(earlierId, { apiVersion: live.apiVersion, uid: earlier.uid });
  }
}

/** Whether any target waits on a hook: the sync then looks again soon (a watch may not wake it). */
export function hooksRunning(targets: readonly Pick<TargetStatus, 'reason'>[]): boolean {
  return targets.some((t) => t.reason === Reason.HookRunning);
}

/** Whether a target failed because of a hook (the Event and the Ready condition say HookFailed). */
export function hooksFailed(targets: readonly Pick<TargetStatus, 'reason'>[]): boolean {
  return targets.some((t) => t.reason === Reason.HookFailed);
}

/**
 * Ready waits on hooks: False with HookRunning while a PreSync, Sync or PostSync hook of the commit runs (or
 * PostSync waits for health), HookFailed when a hook failed, naming the hooks.
 */
export function hookConditions(
  conditions: readonly Condition[],
  targets: readonly TargetOutcome[],
  at: { readonly generation: number | undefined; readonly now: string },
): Condition[] {
  const running = targets.filter((t) => t.status.reason === Reason.HookRunning);
  const failed = targets.filter((t) => t.status.reason === Reason.HookFailed);
  const lines = (list: readonly TargetOutcome[]): string =>
    truncate(list.map((t) => (targets.length > 1 ? `${t.status.name}: ${t.status.message ?? ''}` : (t.status.message ?? ''))).join('; '));
  if (failed.length > 0) return setCondition([...conditions], { type: 'Ready', status: 'False', reason: Reason.HookFailed, message: lines(failed) }, at);
  if (running.length === 0) return [...conditions];
  const next = setCondition([...conditions], { type: 'Ready', status: 'False', reason: Reason.HookRunning, message: lines(running) }, at);
  return setCondition(next, { type: 'Reconciling', status: 'True', reason: Reason.HookRunning, message: lines(running) }, at);
}

/**
 * Deleting the sync (deletionPolicy Delete): the hook objects its targets' last hooked commits left, as Argo CD's
 * cascading delete takes an application's hook objects with its other resources. A hook is never in the
 * inventory; its record is the proof: only the object with the uid the record holds (never a successor under the
 * same name) that our field manager applied with this target's marks is deleted, and none where the sync may not
 * write (tenancy). Returns what it deleted, and the failures that should hold the finalizer.
 */
export async function deleteHookObjects(input: {
  client: ApplyClient;
  owner: Owner;
  hooks: readonly HookStatus[];
  tenancy?: Actor;
}): Promise<{ deleted: string[]; failures: string[] }> {
  const deleted: string[] = [];
  const failures: string[] = [];
  for (const record of input.hooks) {
    if (record.uid === undefined) continue;
    const object = {
      apiVersion: record.apiVersion,
      kind: record.kind,
      metadata: { name: record.name, ...(record.namespace === undefined ? {} : { namespace: record.namespace }) },
    };
    if (input.tenancy !== undefined && refusedObjects(input.tenancy, [object]).length > 0) continue;
    const id = objectId(object);
    try {
      const live = await input.client.get(id);
      if (live === undefined || live.metadata.uid !== record.uid || !proven(live, input.owner)) continue;
      if (live.metadata['deletionTimestamp'] === undefined) await input.client.delete(id, { apiVersion: live.apiVersion, uid: record.uid });
      deleted.push(id);
    } catch (error) {
      // Gone, or replaced (the uid precondition failed) between the read and the delete: nothing of ours is left.
      if (error instanceof ApiError && (error.status === 404 || error.status === 409)) continue;
      failures.push(`${hookLabel(record)}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return { deleted, failures };
}

// Hooks, pure: which rendered objects are hooks (syncline.dev/hook, or Argo CD's argocd.argoproj.io/hook so an
// Argo CD repository works unchanged), when they run, what their delete policy is, the name a generated hook
// gets, and whether a hook object finished (Job Complete/Failed, Tekton's Succeeded condition, else kstatus).
// A hook is not an ordinary object: it is never planned, pruned or checked for drift; hook-run.ts runs it.
import { createHash } from 'node:crypto';
import { healthOf, type KubeObject } from '@syncline/apply';
import { parseDuration } from '@syncline/runtime';

export const HOOK_ANNOTATION = 'syncline.dev/hook';
export const HOOK_DELETE_POLICY_ANNOTATION = 'syncline.dev/hook-delete-policy';
export const ARGOCD_HOOK_ANNOTATION = 'argocd.argoproj.io/hook';
export const ARGOCD_HOOK_DELETE_POLICY_ANNOTATION = 'argocd.argoproj.io/hook-delete-policy';
/** How long a hook may run before it counts as failed (a duration, e.g. 30m); default the sync's spec.timeout. */
export const HOOK_TIMEOUT_ANNOTATION = 'syncline.dev/hook-timeout';
/** Set on the hook object: the run (sync, target, commit, hook phase) that created it. */
export const HOOK_RUN_ANNOTATION = 'syncline.dev/hook-run';

export const HookPhase = { PreSync: 'PreSync', Sync: 'Sync', PostSync: 'PostSync', SyncFail: 'SyncFail' } as const;
export type HookPhase = (typeof HookPhase)[keyof typeof HookPhase];

export const HookDeletePolicy = { BeforeHookCreation: 'BeforeHookCreation', HookSucceeded: 'HookSucceeded', HookFailed: 'HookFailed' } as const;
export type HookDeletePolicy = (typeof HookDeletePolicy)[keyof typeof HookDeletePolicy];

export type Hook = {
  /** `Kind/name`, or `Kind/generateName` for a generated name: the hook's identity across commits. */
  readonly source: string;
  readonly phases: readonly HookPhase[];
  readonly deletePolicies: ReadonlySet<HookDeletePolicy>;
  /** Set when the object has metadata.generateName and no name: the name is derived per run. */
  readonly generateName?: string;
  readonly timeoutMs?: number;
  readonly object: KubeObject;
};

export type HookSplit = {
  /** The ordinary objects: planned, applied, pruned and watched for drift as always. */
  readonly objects: KubeObject[];
  readonly hooks: Hook[];
  /** `Kind/name: why` of hooks that cannot run (an unknown hook type, a deletion hook, a bad timeout). */
  readonly invalid: string[];
};

const PHASES = new Set<string>(Object.values(HookPhase));
const POLICIES = new Set<string>(Object.values(HookDeletePolicy));
/** Argo CD hook types that run around deleting an application: nothing here runs them. */
const DELETION_HOOKS = new Set(['PreDelete', 'PostDelete']);

const list = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');

/**
 * Separates hooks from ordinary objects. syncline.dev/hook wins over argocd.argoproj.io/hook on the same object;
 * Argo CD's `Skip` leaves the object out altogether (neither applied nor run), as Argo CD does.
 */
export function splitHooks(rendered: readonly KubeObject[]): HookSplit {
  const objects: KubeObject[] = [];
  const hooks: Hook[] = [];
  const invalid: string[] = [];
  for (const object of rendered) {
    const annotations = object.metadata.annotations ?? {};
    const own = annotations[HOOK_ANNOTATION];
    const value = own ?? annotations[ARGOCD_HOOK_ANNOTATION];
    if (value === undefined) {
      objects.push(object);
      continue;
    }
    // Render puts a hook's generateName in as its name when it has none (render's checkObject).
    const generated = object.metadata['generateName'];
    const generateName =
      typeof generated === 'string' && generated !== '' && (object.metadata.name === '' || object.metadata.name === generated) ? generated : undefined;
    const source = `${object.kind}/${generateName ?? object.metadata.name}`;
    const types = list(value);
    if (own === undefined && types.includes('Skip')) continue;
    const annotation = own === undefined ? ARGOCD_HOOK_ANNOTATION : HOOK_ANNOTATION;
    const problems = types.flatMap((t) => {
      if (PHASES.has(t)) return [];
      if (DELETION_HOOKS.has(t)) return [`${annotation}: ${t} runs when an application is deleted, and Syncline runs no deletion hooks`];
      return [`${annotation}: unknown hook "${t}" (PreSync, Sync, PostSync or SyncFail)`];
    });
    if (types.length === 0) problems.push(`${annotation} is empty`);
    const policyValue =
      annotations[own === undefined ? ARGOCD_HOOK_DELETE_POLICY_ANNOTATION : HOOK_DELETE_POLICY_ANNOTATION] ?? annotations[HOOK_DELETE_POLICY_ANNOTATION];
    const policies = list(policyValue);
    for (const p of policies) if (!POLICIES.has(p)) problems.push(`unknown hook-delete-policy "${p}" (BeforeHookCreation, HookSucceeded or HookFailed)`);
    let timeoutMs: number | undefined;
    const timeout = annotations[HOOK_TIMEOUT_ANNOTATION];
    if (timeout !== undefined) {
      try {
        timeoutMs = parseDuration(timeout);
      } catch {
        problems.push(`${HOOK_TIMEOUT_ANNOTATION}: "${timeout}" is not a duration (e.g. 10m)`);
      }
    }
    if (object.metadata.name === '' && generateName === undefined) problems.push('has neither metadata.name nor metadata.generateName');
    if (problems.length > 0) {
      invalid.push(`${source}: ${problems.join('; ')}`);
      continue;
    }
    hooks.push({
      source,
      phases: types as HookPhase[],
      // Argo CD's default: without a policy, the previous run's object goes when the hook runs again.
      deletePolicies: new Set((policies.length === 0 ? [HookDeletePolicy.BeforeHookCreation] : policies) as HookDeletePolicy[]),
      ...(generateName === undefined ? {} : { generateName }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      object,
    });
  }
  return { objects, hooks, invalid };
}

/** The run a hook object belongs to: one per sync, target, commit and hook phase (the value of HOOK_RUN_ANNOTATION). */
export function hookRunKey(run: { readonly owner: string; readonly revision: string }, phase: HookPhase): string {
  return `${createHash('sha256').update(`${run.owner}@${run.revision}`).digest('hex').slice(0, 16)}-${phase}`;
}

/**
 * The hook object's name: its own, or for a generated name the generateName and a suffix derived from the run, so
 * the run finds its object again after a restart instead of creating a second one (as the API server's random
 * suffix would).
 */
export function hookObjectName(hook: Hook, runKey: string): string {
  if (hook.generateName === undefined) return hook.object.metadata.name;
  const suffix = createHash('sha256').update(`${runKey}/${hook.source}`).digest('hex').slice(0, 5);
  return `${hook.generateName.slice(0, 58)}${suffix}`;
}

export type HookResult = { readonly phase: 'Running' | 'Succeeded' | 'Failed'; readonly message: string };

type Condition = { type?: unknown; status?: unknown; reason?: unknown; message?: unknown };

function conditionsOf(object: KubeObject): Condition[] {
  const status = object['status'] as { conditions?: unknown } | undefined;
  return Array.isArray(status?.conditions) ? (status.conditions as Condition[]) : [];
}

const words = (c: Condition): string => [c.reason, c.message].filter((v) => typeof v === 'string' && v !== '').join(': ');

/**
 * Whether a hook object finished, and how: a Job by its Complete/Failed conditions; anything with Tekton's
 * `Succeeded` condition (PipelineRun, TaskRun, and Knative-style runs) by it; a Pod by its phase; else by kstatus
 * (Current = done, Failed = failed).
 */
export function hookResult(object: KubeObject): HookResult {
  const conditions = conditionsOf(object);
  const find = (type: string): Condition | undefined => conditions.find((c) => c.type === type);
  if (object.kind === 'Job' && object.apiVersion.startsWith('batch/')) {
    const failed = find('Failed');
    if (failed?.status === 'True') return { phase: 'Failed', message: words(failed) || 'the Job failed' };
    const complete = find('Complete');
    if (complete?.status === 'True') return { phase: 'Succeeded', message: words(complete) || 'the Job completed' };
    const active = (object['status'] as { active?: number } | undefined)?.active ?? 0;
    return { phase: 'Running', message: `${active} active pod(s)` };
  }
  const succeeded = find('Succeeded');
  if (succeeded !== undefined || object.apiVersion.startsWith('tekton.dev/')) {
    if (succeeded?.status === 'True') return { phase: 'Succeeded', message: words(succeeded) || 'succeeded' };
    if (succeeded?.status === 'False') return { phase: 'Failed', message: words(succeeded) || 'failed' };
    return { phase: 'Running', message: succeeded === undefined ? 'not started yet' : words(succeeded) || 'running' };
  }
  if (object.kind === 'Pod' && object.apiVersion === 'v1') {
    const phase = (object['status'] as { phase?: string } | undefined)?.phase;
    if (phase === 'Succeeded') return { phase: 'Succeeded', message: 'the Pod succeeded' };
    if (phase === 'Failed') return { phase: 'Failed', message: 'the Pod failed' };
    return { phase: 'Running', message: `Pod ${phase ?? 'Pending'}` };
  }
  const health = healthOf(object);
  if (health.status === 'Current') return { phase: 'Succeeded', message: health.message };
  if (health.status === 'Failed') return { phase: 'Failed', message: [health.reason, health.message].filter((v) => v !== undefined && v !== '').join(': ') };
  return { phase: 'Running', message: health.message };
}

/** `12s`, `3m4s`, `1h2m`: how long a hook ran. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${seconds % 60 === 0 ? '' : `${seconds % 60}s`}`;
  return `${Math.floor(minutes / 60)}h${minutes % 60 === 0 ? '' : `${minutes % 60}m`}`;
}

const SUMMARY_ORDER = ['Failed', 'Running', 'Pending', 'Succeeded'] as const;

/**
 * The Hooks column: the targets' hooks counted by phase, failures first ("1 Failed, 2 Succeeded"); undefined when
 * no target has hooks. It changes only with the hook records, so it costs no write of its own.
 */
export function hookSummary(targets: readonly { readonly hooks?: readonly { readonly phase: (typeof SUMMARY_ORDER)[number] }[] }[]): string | undefined {
  const counts = new Map<string, number>();
  for (const target of targets) for (const hook of target.hooks ?? []) counts.set(hook.phase, (counts.get(hook.phase) ?? 0) + 1);
  if (counts.size === 0) return undefined;
  return SUMMARY_ORDER.filter((phase) => counts.has(phase))
    .map((phase) => `${counts.get(phase) ?? 0} ${phase}`)
    .join(', ');
}

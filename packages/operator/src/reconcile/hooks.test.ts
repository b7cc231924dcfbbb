import type { KubeObject } from '@syncline/apply';
import { describe, expect, it } from 'vitest';
import { formatDuration, hookObjectName, hookResult, hookRunKey, hookSummary, splitHooks } from './hooks.ts';

const object = (kind: string, name: string, annotations?: Record<string, string>, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: kind === 'Job' ? 'batch/v1' : kind === 'PipelineRun' ? 'tekton.dev/v1' : 'v1',
  kind,
  metadata: { name, namespace: 'apps', ...(annotations === undefined ? {} : { annotations }), ...extra },
});

describe('splitHooks', () => {
  it('separates hooks from ordinary objects, by our annotation or Argo CD’s, with Argo CD’s default delete policy', () => {
    const split = splitHooks([
      object('ConfigMap', 'plain'),
      object('Job', 'migrate', { 'syncline.dev/hook': 'PreSync', 'syncline.dev/hook-delete-policy': 'HookSucceeded,HookFailed' }),
      object('Job', 'smoke', { 'argocd.argoproj.io/hook': 'PostSync' }),
      object('ConfigMap', 'skipped', { 'argocd.argoproj.io/hook': 'Skip' }),
    ]);
    expect(split.objects.map((o) => o.metadata.name)).toEqual(['plain']);
    expect(split.invalid).toEqual([]);
    expect(split.hooks.map((h) => [h.source, h.phases, [...h.deletePolicies]])).toEqual([
      ['Job/migrate', ['PreSync'], ['HookSucceeded', 'HookFailed']],
      ['Job/smoke', ['PostSync'], ['BeforeHookCreation']],
    ]);
  });

  it('takes several hook types, a generated name (render puts generateName in as the name) and a timeout', () => {
    const [hook] = splitHooks([
      object('Job', 'check-', { 'syncline.dev/hook': 'PreSync, PostSync', 'syncline.dev/hook-timeout': '30m' }, { generateName: 'check-' }),
    ]).hooks;
    expect(hook).toMatchObject({ source: 'Job/check-', phases: ['PreSync', 'PostSync'], generateName: 'check-', timeoutMs: 1_800_000 });
  });

  it('refuses unknown hook types, deletion hooks, unknown policies and bad timeouts, naming the object', () => {
    const split = splitHooks([
      object('Job', 'a', { 'syncline.dev/hook': 'PreApply' }),
      object('Job', 'b', { 'argocd.argoproj.io/hook': 'PostDelete' }),
      object('Job', 'c', { 'syncline.dev/hook': 'PostSync', 'syncline.dev/hook-delete-policy': 'Never' }),
      object('Job', 'd', { 'syncline.dev/hook': 'PostSync', 'syncline.dev/hook-timeout': 'soon' }),
    ]);
    expect(split.hooks).toEqual([]);
    expect(split.invalid).toEqual([
      'Job/a: syncline.dev/hook: unknown hook "PreApply" (PreSync, Sync, PostSync or SyncFail)',
      'Job/b: argocd.argoproj.io/hook: PostDelete runs when an application is deleted, and Syncline runs no deletion hooks',
      'Job/c: unknown hook-delete-policy "Never" (BeforeHookCreation, HookSucceeded or HookFailed)',
      'Job/d: syncline.dev/hook-timeout: "soon" is not a duration (e.g. 10m)',
    ]);
  });

  it('lets syncline.dev/hook win over argocd.argoproj.io/hook', () => {
    const [hook] = splitHooks([object('Job', 'x', { 'syncline.dev/hook': 'SyncFail', 'argocd.argoproj.io/hook': 'Skip' })]).hooks;
    expect(hook?.phases).toEqual(['SyncFail']);
  });
});

describe('hook names and runs', () => {
  it('derives a generated name from the run, the same after a restart and new for the next commit', () => {
    const [hook] = splitHooks([object('Job', 'migrate-', { 'syncline.dev/hook': 'PreSync' }, { generateName: 'migrate-' })]).hooks;
    if (hook === undefined) throw new Error('no hook');
    const run = hookRunKey({ owner: 'apps/web/main', revision: 'a'.repeat(40) }, 'PreSync');
    const next = hookRunKey({ owner: 'apps/web/main', revision: 'b'.repeat(40) }, 'PreSync');
    expect(hookObjectName(hook, run)).toMatch(/^migrate-[0-9a-f]{5}$/);
    expect(hookObjectName(hook, run)).toBe(hookObjectName(hook, run));
    expect(hookObjectName(hook, next)).not.toBe(hookObjectName(hook, run));
  });

  it('keeps a named hook’s name', () => {
    const [hook] = splitHooks([object('Job', 'migrate', { 'syncline.dev/hook': 'PreSync' })]).hooks;
    if (hook === undefined) throw new Error('no hook');
    expect(hookObjectName(hook, 'x-PreSync')).toBe('migrate');
  });
});

describe('hookResult', () => {
  const withStatus = (kind: string, status: Record<string, unknown>): KubeObject => ({ ...object(kind, 'x'), status });

  it('reads a Job from its Complete and Failed conditions', () => {
    expect(hookResult(withStatus('Job', { active: 1 }))).toEqual({ phase: 'Running', message: '1 active pod(s)' });
    expect(hookResult(withStatus('Job', { conditions: [{ type: 'Complete', status: 'True' }] })).phase).toBe('Succeeded');
    expect(
      hookResult(
        withStatus('Job', {
          conditions: [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }],
        }),
      ),
    ).toEqual({
      phase: 'Failed',
      message: 'BackoffLimitExceeded: Job has reached the specified backoff limit',
    });
  });

  it('reads a Tekton run from its Succeeded condition', () => {
    expect(hookResult(withStatus('PipelineRun', {})).phase).toBe('Running');
    expect(hookResult(withStatus('PipelineRun', { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running' }] })).phase).toBe('Running');
    expect(hookResult(withStatus('PipelineRun', { conditions: [{ type: 'Succeeded', status: 'True', reason: 'Succeeded' }] })).phase).toBe('Succeeded');
    expect(
      hookResult(
        withStatus('PipelineRun', { conditions: [{ type: 'Succeeded', status: 'False', reason: 'Failed', message: 'Tasks Completed: 1 (Failed: 1)' }] }),
      ),
    ).toEqual({ phase: 'Failed', message: 'Failed: Tasks Completed: 1 (Failed: 1)' });
  });

  it('reads a Pod from its phase and any other kind by kstatus', () => {
    expect(hookResult(withStatus('Pod', { phase: 'Succeeded' })).phase).toBe('Succeeded');
    expect(hookResult(withStatus('Pod', { phase: 'Failed' })).phase).toBe('Failed');
    expect(hookResult(withStatus('Pod', { phase: 'Running' })).phase).toBe('Running');
    expect(hookResult(object('ConfigMap', 'x')).phase).toBe('Succeeded');
  });
});

describe('formatDuration', () => {
  it('says seconds, minutes and hours as a Go duration would', () => {
    expect([formatDuration(12_400), formatDuration(184_000), formatDuration(3_720_000)]).toEqual(['12s', '3m4s', '1h2m']);
  });
});

describe('hookSummary', () => {
  it('counts the hooks of every target by phase, failures first, and is absent without hooks', () => {
    const targets = [
      { hooks: [{ phase: 'Succeeded' as const }, { phase: 'Running' as const }] },
      { hooks: [{ phase: 'Succeeded' as const }, { phase: 'Failed' as const }] },
      {},
    ];
    expect(hookSummary(targets)).toBe('1 Failed, 1 Running, 2 Succeeded');
    expect(hookSummary([{}, { hooks: [] }])).toBeUndefined();
  });
});

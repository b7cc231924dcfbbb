import { describe, expect, it } from 'vitest';
import type { Condition } from '@syncline/api';
import { hookConditions, hooksFailed, hooksRunning } from './hook-run.ts';
import { emptyCounts, type TargetOutcome } from './target.ts';

const target = (name: string, reason?: string, message?: string): TargetOutcome => ({
  status: {
    name,
    phase: reason === undefined ? 'Synced' : reason === 'HookFailed' ? 'Failed' : 'Pending',
    objects: 1,
    ...(reason === undefined ? {} : { reason }),
    ...(message === undefined ? {} : { message }),
  },
  inventory: { target: name, entries: [] },
  counts: emptyCounts(),
  findings: [],
  failures: [],
  conflicts: [],
  drift: [],
  orphaned: [],
  changed: false,
  changes: [],
});
const at = { generation: 1, now: '2026-01-01T00:00:00Z' };
const ready: Condition = {
  type: 'Ready',
  status: 'True',
  reason: 'ReconciliationSucceeded',
  message: 'Applied revision x',
  lastTransitionTime: '2025-12-31T00:00:00Z',
  observedGeneration: 1,
};

describe('hookConditions', () => {
  it('leaves the conditions alone when no hook runs or failed', () => {
    expect(hookConditions([ready], [target('main')], at)).toEqual([ready]);
  });

  it('holds Ready while a hook runs, naming it (and the target when there are several)', () => {
    const next = hookConditions([ready], [target('dev', 'HookRunning', 'PreSync hook Job/dev/migrate-1a2b3 is running'), target('prod')], at);
    expect(next.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'HookRunning',
      message: 'dev: PreSync hook Job/dev/migrate-1a2b3 is running',
    });
    expect(next.find((c) => c.type === 'Reconciling')).toMatchObject({ status: 'True', reason: 'HookRunning' });
  });

  it('says HookFailed when a hook failed, over a running one elsewhere', () => {
    const next = hookConditions(
      [ready],
      [target('dev', 'HookRunning', 'x'), target('prod', 'HookFailed', 'PreSync hook Job/prod/migrate failed: BackoffLimitExceeded')],
      at,
    );
    expect(next.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'HookFailed',
      message: 'prod: PreSync hook Job/prod/migrate failed: BackoffLimitExceeded',
    });
  });
});

describe('hooksRunning / hooksFailed', () => {
  it('read the targets’ reasons', () => {
    expect([
      hooksRunning([{ reason: 'HookRunning' }]),
      hooksRunning([{}]),
      hooksFailed([{ reason: 'HookFailed' }]),
      hooksFailed([{ reason: 'NamespaceNotAllowed' }]),
    ]).toEqual([true, false, true, false]);
  });
});

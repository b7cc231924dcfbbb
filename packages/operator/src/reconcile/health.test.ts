import { describe, expect, it } from 'vitest';
import type { Health } from '@syncline/apply';
import type { Condition } from '@syncline/api';
import { findCondition, setCondition, Reason } from '@syncline/runtime';
import { healthConditions, summarizeHealth, type TargetHealthInput } from './health.ts';

const FIVE_MIN = 5 * 60_000;
const t0 = '2026-11-23T10:00:00.000Z';
const plus = (ms: number): string => new Date(Date.parse(t0) + ms).toISOString();
const readyTrue = setCondition([], { type: 'Ready', status: 'True', reason: Reason.Succeeded, message: 'Applied revision abc' }, { generation: 1, now: t0 });
const target = (health: Record<string, Health>, wait = true, name = 'prod'): TargetHealthInput => ({
  name,
  wait,
  report: summarizeHealth(new Map(Object.entries(health))),
});
const current: Health = { status: 'Current', message: 'ok' };
const rolling: Health = { status: 'InProgress', reason: 'LessReady', message: 'ready: 0/1' };
const stuck: Health = { status: 'Failed', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "web-1" has timed out progressing.' };

/** As syncedOutcome calls it: the apply has just set Ready=True again. */
const judge = (conditions: readonly Condition[], targets: TargetHealthInput[], now: string, lastSyncedTime = t0) =>
  healthConditions({
    conditions: setCondition(conditions, { type: 'Ready', status: 'True', reason: Reason.Succeeded, message: 'Applied revision abc' }, { generation: 1, now }),
    targets,
    lastSyncedTime,
    timeoutMs: FIVE_MIN,
    at: { generation: 1, now },
  });

describe('summarizeHealth', () => {
  it('counts per status and names what is not healthy as Kind/name: Reason: message', () => {
    const report = summarizeHealth(
      new Map<string, Health>([
        ['apps/Deployment/shop/web', stuck],
        ['apps/Deployment/shop/api', rolling],
        ['/ConfigMap/shop/c', current],
      ]),
      ['/ConfigMap/shop/late'],
    );
    expect(report.counts).toEqual({ healthy: 1, progressing: 2, failed: 1, unknown: 0 });
    expect(report.failed).toEqual(['Deployment/web: ProgressDeadlineExceeded: ReplicaSet "web-1" has timed out progressing.']);
    expect(report.progressing).toEqual(['Deployment/api: LessReady: ready: 0/1', '1 object(s) of later apply waves not applied yet']);
  });
});

describe('healthConditions', () => {
  it('all Current: Healthy=True and Ready stays True', () => {
    const verdict = judge(readyTrue, [target({ 'apps/Deployment/shop/web': current })], t0);
    expect(findCondition(verdict.conditions, 'Healthy')).toMatchObject({ status: 'True', reason: 'Healthy' });
    expect(findCondition(verdict.conditions, 'Ready')?.status).toBe('True');
    expect(verdict.requeueAfterMs).toBeUndefined();
  });

  it('with wait, in progress: Ready=False Progressing, Reconciling, a requeue at the deadline', () => {
    const verdict = judge(readyTrue, [target({ 'apps/Deployment/shop/web': rolling })], plus(60_000));
    expect(findCondition(verdict.conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'Progressing' });
    expect(findCondition(verdict.conditions, 'Ready')?.message).toContain('Deployment/web: LessReady: ready: 0/1');
    expect(findCondition(verdict.conditions, 'Reconciling')?.status).toBe('True');
    expect(findCondition(verdict.conditions, 'Healthy')).toMatchObject({ status: 'Unknown', reason: 'Progressing' });
    expect(verdict.requeueAfterMs).toBe(FIVE_MIN + 500);
  });

  it('without wait, in progress: Ready stays True and Healthy says so', () => {
    const verdict = judge(readyTrue, [target({ 'apps/Deployment/shop/web': rolling }, false)], t0);
    expect(findCondition(verdict.conditions, 'Ready')?.status).toBe('True');
    expect(findCondition(verdict.conditions, 'Healthy')).toMatchObject({ status: 'Unknown', reason: 'Progressing' });
  });

  it('a failed object: HealthCheckFailed naming it, at once', () => {
    const verdict = judge(readyTrue, [target({ 'apps/Deployment/shop/web': stuck, '/ConfigMap/shop/c': current })], t0);
    expect(findCondition(verdict.conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'HealthCheckFailed' });
    expect(findCondition(verdict.conditions, 'Ready')?.message).toContain('Deployment/web: ProgressDeadlineExceeded');
    expect(findCondition(verdict.conditions, 'Healthy')).toMatchObject({ status: 'False', reason: 'HealthCheckFailed' });
    expect(verdict.failure).toBeDefined();
  });

  it('the timeout runs from when health stopped being True and stays expired until the next apply', () => {
    // given health went from True to in progress at t0 (no apply since)
    const healthy = judge(readyTrue, [target({ 'apps/Deployment/shop/web': current })], t0).conditions;
    const progressing = judge(healthy, [target({ 'apps/Deployment/shop/web': rolling })], plus(60_000), plus(-3_600_000)).conditions;
    expect(findCondition(progressing, 'Healthy')).toMatchObject({ status: 'Unknown', lastTransitionTime: plus(60_000) });
    // when the timeout has passed since then
    const late = judge(progressing, [target({ 'apps/Deployment/shop/web': rolling })], plus(60_000 + FIVE_MIN), plus(-3_600_000));
    // then it failed, and a later look without an apply does not restart the clock
    expect(findCondition(late.conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'HealthCheckFailed' });
    expect(findCondition(late.conditions, 'Ready')?.message).toContain('not healthy within 5m');
    const again = judge(late.conditions, [target({ 'apps/Deployment/shop/web': rolling })], plus(2 * FIVE_MIN), plus(-3_600_000));
    expect(findCondition(again.conditions, 'Healthy')?.reason).toBe('HealthCheckFailed');
    // and a new apply opens a new window
    const applied = judge(late.conditions, [target({ 'apps/Deployment/shop/web': rolling })], plus(2 * FIVE_MIN), plus(2 * FIVE_MIN));
    expect(findCondition(applied.conditions, 'Healthy')?.reason).toBe('Progressing');
  });

  it('does not override an apply failure, and judges only the targets that wait for Ready', () => {
    const failedApply = setCondition([], { type: 'Ready', status: 'False', reason: Reason.ApplyFailed, message: 'x' }, { generation: 1, now: t0 });
    const verdict = healthConditions({
      conditions: failedApply,
      targets: [target({ 'apps/Deployment/shop/web': stuck })],
      lastSyncedTime: t0,
      timeoutMs: FIVE_MIN,
      at: { generation: 1, now: t0 },
    });
    expect(findCondition(verdict.conditions, 'Ready')?.reason).toBe('ApplyFailed');
    const mixed = judge(
      readyTrue,
      [target({ 'apps/Deployment/dev/web': stuck }, false, 'dev'), target({ 'apps/Deployment/prod/web': current }, true, 'prod')],
      t0,
    );
    expect(findCondition(mixed.conditions, 'Ready')?.status).toBe('True');
    expect(findCondition(mixed.conditions, 'Healthy')?.message).toContain('dev: Deployment/web');
  });
});

import { describe, expect, it } from 'vitest';
import type { ConfigSync } from '@syncline/api';
import type { KubernetesObject } from '@syncline/render';
import { SteadyOutcomes, type SteadyInputs } from './steady-outcome.ts';
import type { TargetOutcome } from './target.ts';

const configSync = (): ConfigSync =>
  ({ metadata: { name: 's', namespace: 'ns', generation: 1 }, spec: { source: { git: { repo: 'r' } }, targets: [] } }) as unknown as ConfigSync;
const target = (extra: Partial<TargetOutcome> = {}): TargetOutcome =>
  ({ status: { name: 't', phase: 'Synced', objects: 1 }, inventory: { target: 't', entries: [] }, findings: [], ...extra }) as unknown as TargetOutcome;
const object = (): KubernetesObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns' } });
const done = { kind: 'done' as const, requeueAfterMs: 30_000 };
const status = { observedGeneration: 1 };

describe('SteadyOutcomes', () => {
  const base = (): SteadyInputs => {
    const cs = configSync();
    return { object: cs, spec: cs.spec, revision: 'abc', targets: [target()], desired: [object()], renderedBy: '[]', refreshAdjusted: undefined };
  };

  it('hands back a no-op outcome only for the very same inputs', () => {
    // given a no-op outcome kept
    const memo = new SteadyOutcomes<object>();
    const inputs = base();
    memo.keep(inputs, { status, result: done, events: [] }, { stored: true, refreshMs: 30_000 });
    // when the same inputs come again (new lists of the same items), then it is handed back
    expect(memo.status({ ...inputs, targets: [...inputs.targets], desired: [...inputs.desired] })).toBe(status);
    // and any changed input is not served it: the ConfigSync read anew, its spec, the revision, a target's outcome,
    // a rendered object, the engine, the interval notice
    const changed: SteadyInputs[] = [
      { ...inputs, object: configSync() },
      { ...inputs, spec: {} },
      { ...inputs, revision: 'def' },
      { ...inputs, targets: [target()] },
      { ...inputs, targets: [] },
      { ...inputs, desired: [object()] },
      { ...inputs, renderedBy: '[["t",{"engine":"helm"}]]' },
      { ...inputs, refreshAdjusted: 'clamped' },
    ];
    for (const other of changed) expect(memo.status(other)).toBeUndefined();
  });

  it('keeps nothing that depends on the time or says something: a write, an Event, a shorter requeue, health or hooks in progress', () => {
    const memo = new SteadyOutcomes<object>();
    const cases: [string, SteadyInputs, Parameters<SteadyOutcomes<object>['keep']>[1], boolean][] = [
      ['a status to write', base(), { status, result: done, events: [] }, false],
      ['an Event', base(), { status, result: done, events: [{ type: 'Normal' }] }, true],
      ['a retry', base(), { status, result: { kind: 'retry' }, events: [] }, true],
      ['a health check waiting', base(), { status, result: { kind: 'done', requeueAfterMs: 5_000 }, events: [] }, true],
      [
        'an object not healthy yet',
        { ...base(), targets: [target({ health: { counts: {}, failed: [], progressing: ['x'] } as never })] },
        { status, result: done, events: [] },
        true,
      ],
      [
        'a hook',
        { ...base(), targets: [target({ status: { name: 't', phase: 'Synced', objects: 1, hooks: [] } as never })] },
        { status, result: done, events: [] },
        true,
      ],
    ];
    for (const [why, inputs, outcome, stored] of cases) {
      memo.keep(inputs, outcome, { stored, refreshMs: 30_000 });
      expect(memo.status(inputs), why).toBeUndefined();
    }
    // and a kept outcome is dropped once its object's outcome is not a no-op any more
    const inputs = base();
    memo.keep(inputs, { status, result: done, events: [] }, { stored: true, refreshMs: 30_000 });
    memo.keep(inputs, { status, result: done, events: [{ type: 'Warning' }] }, { stored: true, refreshMs: 30_000 });
    expect(memo.status(inputs)).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { Reason, findCondition, keepTransitions, removeCondition, setCondition } from './conditions.ts';

describe('setCondition', () => {
  const at = (now: string) => ({ generation: 3, now });

  it('keeps lastTransitionTime while the status holds, so a repeated result changes nothing', () => {
    // given Ready=True set at t1
    const first = setCondition([], { type: 'Ready', status: 'True', reason: Reason.Succeeded, message: 'Applied revision a' }, at('t1'));
    // when the same status is set again at t2 with a new message
    const second = setCondition(first, { type: 'Ready', status: 'True', reason: Reason.Succeeded, message: 'Applied revision b' }, at('t2'));
    // then the transition time is still t1
    expect(findCondition(second, 'Ready')).toMatchObject({ lastTransitionTime: 't1', message: 'Applied revision b', observedGeneration: 3 });
  });

  it('moves lastTransitionTime when the status flips', () => {
    const ready = setCondition([], { type: 'Ready', status: 'True', reason: Reason.Succeeded, message: 'ok' }, at('t1'));
    const failed = setCondition(ready, { type: 'Ready', status: 'False', reason: Reason.RenderFailed, message: 'bad' }, at('t2'));
    expect(findCondition(failed, 'Ready')).toMatchObject({ status: 'False', reason: 'RenderFailed', lastTransitionTime: 't2' });
  });

  it('orders conditions Ready first whatever order they were set in, and removes them', () => {
    let conditions = setCondition([], { type: 'Stalled', status: 'True', reason: Reason.RenderFailed, message: 'x' }, at('t'));
    conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason: Reason.RenderFailed, message: 'x' }, at('t'));
    expect(conditions.map((c) => c.type)).toEqual(['Ready', 'Stalled']);
    expect(removeCondition(conditions, 'Stalled').map((c) => c.type)).toEqual(['Ready']);
  });
});

describe('keepTransitions', () => {
  it('keeps the earlier transition time of a condition that ends the run with the status it started with', () => {
    const before = setCondition([], { type: 'Ready', status: 'False', reason: Reason.Progressing, message: 'waiting' }, { generation: 1, now: 't1' });
    // the apply sets Ready True at t2, then the health check sets it False again
    const flipped = setCondition(
      setCondition(before, { type: 'Ready', status: 'True', reason: Reason.Succeeded, message: 'ok' }, { generation: 1, now: 't2' }),
      { type: 'Ready', status: 'False', reason: Reason.Progressing, message: 'waiting' },
      { generation: 1, now: 't2' },
    );
    expect(findCondition(flipped, 'Ready')?.lastTransitionTime).toBe('t2');
    expect(findCondition(keepTransitions(before, flipped), 'Ready')?.lastTransitionTime).toBe('t1');
  });
});

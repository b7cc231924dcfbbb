import { describe, expect, it } from 'vitest';
import { allowedDeletions, decidePrune, holdToken, PruneHoldReason, recordDeletions, type PruneGuardInput, type RecentDeletion } from './prune-guard.ts';

const ns = '/Namespace//shop';
const cm = (name: string): string => `/ConfigMap/shop/${name}`;
const names = (n: number): string[] => Array.from({ length: n }, (_, i) => cm(`c${i}`));
const now = new Date('2026-11-25T12:00:00Z');
const base = (over: Partial<PruneGuardInput> = {}): PruneGuardInput => {
  const inventory = [ns, ...names(8)];
  return { inventory, desired: inventory, sourceNamespace: 'Active', policy: { maxDeletions: '25%' }, now, ...over };
};

describe('allowedDeletions', () => {
  it('reads a count or a percentage of the replicated objects, rounded down, never below one for a percentage', () => {
    expect(allowedDeletions('25%', 8)).toBe(2);
    expect(allowedDeletions('25%', 10)).toBe(2);
    expect(allowedDeletions('25%', 3)).toBe(1);
    expect(allowedDeletions('100%', 7)).toBe(7);
    expect(allowedDeletions('10', 3)).toBe(10);
    expect(allowedDeletions('0', 30)).toBe(0);
  });

  it('names the field and the accepted forms for anything else', () => {
    expect(() => allowedDeletions('a lot', 3)).toThrow(/spec\.pruneGuard\.maxDeletions "a lot": a count such as "10" or a percentage such as "25%"/);
  });
});

describe('decidePrune', () => {
  it('given nothing deleted in the source, prunes nothing', () => {
    expect(decidePrune(base())).toEqual({ action: 'prune', stale: [] });
  });

  it('given deletions within the threshold (a single one included), prunes them as before', () => {
    const inventory = [ns, ...names(8)];
    expect(decidePrune(base({ desired: inventory.filter((id) => id !== cm('c3')) }))).toEqual({ action: 'prune', stale: [cm('c3')] });
    expect(decidePrune(base({ desired: inventory.slice(0, -2) }))).toMatchObject({ action: 'prune', stale: [cm('c6'), cm('c7')] });
    // a small namespace: one of two objects is half of it, and still one deletion
    expect(decidePrune(base({ inventory: [ns, cm('a'), cm('b')], desired: [ns, cm('a')] }))).toMatchObject({ action: 'prune' });
  });

  it('given more deletions than allowed in one pass, holds exactly them under a token', () => {
    const decision = decidePrune(base({ desired: [ns, cm('c0')] }));
    expect(decision).toMatchObject({ action: 'hold', hold: { reason: PruneHoldReason.MassDeletion, objects: 7, since: now.toISOString() } });
    if (decision.action !== 'hold') throw new Error('held');
    expect(decision.held).toEqual(names(8).slice(1).sort());
    expect(decision.hold.token).toBe(holdToken(now.toISOString(), decision.held));
    expect(decision.retryAfterMs).toBeUndefined();
  });

  it('given the source namespace being deleted or gone, holds even a single deletion', () => {
    const inventory = [ns, ...names(8)];
    for (const sourceNamespace of ['Terminating', 'Absent'] as const) {
      expect(decidePrune(base({ sourceNamespace, desired: inventory.filter((id) => id !== cm('c3')) }))).toMatchObject({
        action: 'hold',
        held: [cm('c3')],
        hold: { reason: PruneHoldReason.SourceNamespaceDeleted },
      });
    }
    // nothing to delete: nothing to hold
    expect(decidePrune(base({ sourceNamespace: 'Absent' }))).toEqual({ action: 'prune', stale: [] });
  });

  it('"0" holds every deletion', () => {
    expect(decidePrune(base({ policy: { maxDeletions: '0' }, desired: [ns, ...names(7)] }))).toMatchObject({ action: 'hold', held: [cm('c7')] });
  });

  it('keeps the hold (its start and token) while the held set is the same, and starts a new one when it changes', () => {
    const first = decidePrune(base({ desired: [ns, cm('c0')] }));
    if (first.action !== 'hold') throw new Error('held');
    const later = new Date(now.getTime() + 60_000);
    expect(decidePrune(base({ desired: [ns, cm('c0')], previous: first.hold, now: later }))).toMatchObject({ action: 'hold', hold: first.hold });
    // one more deleted: a larger set, a new hold
    const grown = decidePrune(base({ desired: [ns], previous: first.hold, now: later }));
    expect(grown).toMatchObject({ action: 'hold', hold: { objects: 8, since: later.toISOString() } });
    if (grown.action !== 'hold') throw new Error('held');
    expect(grown.hold.token).not.toBe(first.hold.token);
  });

  it('releases a held set when its token is confirmed, and only that set', () => {
    const first = decidePrune(base({ desired: [ns, cm('c0')] }));
    if (first.action !== 'hold') throw new Error('held');
    const confirmed = decidePrune(base({ desired: [ns, cm('c0')], previous: first.hold, confirmed: first.hold.token }));
    expect(confirmed).toEqual({ action: 'prune', stale: names(8).slice(1), released: 'confirmed' });
    // the same token does not confirm a larger deletion
    const later = new Date(now.getTime() + 1000);
    expect(decidePrune(base({ desired: [ns], previous: first.hold, confirmed: first.hold.token, now: later }))).toMatchObject({
      action: 'hold',
      hold: { objects: 8 },
    });
    // nor the same names deleted again in a later hold (a stale confirmation left in the spec)
    expect(decidePrune(base({ desired: [ns, cm('c0')], confirmed: first.hold.token, now: later }))).toMatchObject({ action: 'hold' });
  });

  it('with a delay, releases an unchanged hold once it has lasted that long, and says when', () => {
    const policy = { maxDeletions: '25%', delayMs: 3_600_000 };
    const first = decidePrune(base({ policy, desired: [ns] }));
    expect(first).toMatchObject({ action: 'hold', retryAfterMs: 3_600_000 });
    if (first.action !== 'hold') throw new Error('held');
    expect(decidePrune(base({ policy, desired: [ns], previous: first.hold, now: new Date(now.getTime() + 1_800_000) }))).toMatchObject({
      action: 'hold',
      retryAfterMs: 1_800_000,
    });
    expect(decidePrune(base({ policy, desired: [ns], previous: first.hold, now: new Date(now.getTime() + 3_600_000) }))).toMatchObject({
      action: 'prune',
      released: 'delay',
    });
  });

  it('never holds (nor counts) the deletion of copies that must leave the standby, such as credentials', () => {
    const secret = '/Secret/shop/dr-kubeconfig';
    const inventory = [ns, ...names(3), secret];
    expect(decidePrune(base({ inventory, desired: [ns, ...names(3)], alwaysPrunable: new Set([secret]) }))).toEqual({ action: 'prune', stale: [secret] });
    // with them in a mass deletion, the hold covers the others only
    expect(decidePrune(base({ inventory, desired: [ns], alwaysPrunable: new Set([secret]) }))).toMatchObject({ action: 'hold', held: names(3) });
  });

  it('with a settle time, lets deletions under the threshold through only once the set has stopped changing', () => {
    const inventory = [ns, ...names(8)];
    const first = decidePrune(base({ desired: inventory.filter((id) => id !== cm('c3')), settleMs: 5000 }));
    expect(first).toMatchObject({ action: 'settle', held: [cm('c3')], retryAfterMs: 5000 });
    if (first.action !== 'settle') throw new Error('settling');
    const later = (ms: number): Date => new Date(now.getTime() + ms);
    // a second deletion arrives: a new set, a new wait
    const second = decidePrune(
      base({ desired: inventory.filter((id) => id !== cm('c3') && id !== cm('c4')), settleMs: 5000, settling: first.settling, now: later(2000) }),
    );
    expect(second).toMatchObject({ action: 'settle', retryAfterMs: 5000 });
    if (second.action !== 'settle') throw new Error('settling');
    expect(
      decidePrune(base({ desired: inventory.filter((id) => id !== cm('c3') && id !== cm('c4')), settleMs: 5000, settling: second.settling, now: later(7000) })),
    ).toEqual({ action: 'prune', stale: [cm('c3'), cm('c4')] });
    // the rest of a mass deletion arriving while the first ones settle is held as a whole
    expect(decidePrune(base({ desired: [ns], settleMs: 5000, settling: second.settling, now: later(3000) }))).toMatchObject({
      action: 'hold',
      hold: { objects: 8 },
    });
  });

  describe('within a window', () => {
    const windowed = { maxDeletions: '25%', windowMs: 600_000 };
    const later = (ms: number): Date => new Date(now.getTime() + ms);
    const minus = (...gone: string[]) => [ns, ...names(8)].filter((id) => !gone.includes(id));

    it('counts the deletions earlier passes made: a source emptied one object at a time is held at the threshold', () => {
      // given: 8 objects, 25% of them is 2; an earlier pass deleted c0 and another c1 (the inventory lost them)
      let recent: RecentDeletion[] = [];
      let inventory = [ns, ...names(8)];
      for (const [i, gone] of [cm('c0'), cm('c1')].entries()) {
        const at = later(i * 30_000);
        const decision = decidePrune(base({ inventory, desired: inventory.filter((id) => id !== gone), policy: windowed, recent, now: at }));
        expect(decision).toEqual({ action: 'prune', stale: [gone] });
        recent = recordDeletions({ recent, windowMs: windowed.windowMs, now: at, deleted: 1, released: false });
        inventory = inventory.filter((id) => id !== gone);
      }
      expect(recent).toEqual([
        { at: now.toISOString(), objects: 1 },
        { at: later(30_000).toISOString(), objects: 1 },
      ]);
      // when a third pass would delete one more
      const third = decidePrune(base({ inventory, desired: inventory.filter((id) => id !== cm('c2')), policy: windowed, recent, now: later(60_000) }));
      // then it is held: three of the eight the window began with
      expect(third).toMatchObject({ action: 'hold', held: [cm('c2')], earlier: 2, hold: { reason: PruneHoldReason.MassDeletion, objects: 1 } });
      // and once the window has passed the earlier deletions no longer count
      expect(
        decidePrune(base({ inventory, desired: inventory.filter((id) => id !== cm('c2')), policy: windowed, recent, now: later(30_000 + 600_000) })),
      ).toEqual({ action: 'prune', stale: [cm('c2')] });
      // without a window each pass is counted alone, as before
      expect(
        decidePrune(base({ inventory, desired: inventory.filter((id) => id !== cm('c2')), policy: { maxDeletions: '25%' }, recent, now: later(60_000) })),
      ).toMatchObject({ action: 'prune' });
    });

    it('a confirmed hold starts the count afresh, and old entries leave the record', () => {
      expect(recordDeletions({ recent: [{ at: now.toISOString(), objects: 5 }], windowMs: 600_000, now: later(1000), deleted: 3, released: true })).toEqual([]);
      expect(recordDeletions({ recent: [{ at: now.toISOString(), objects: 5 }], windowMs: 600_000, now: later(600_000), deleted: 0, released: false })).toEqual(
        [],
      );
      expect(recordDeletions({ recent: undefined, windowMs: 0, now, deleted: 4, released: false })).toEqual([]);
      expect(decidePrune(base({ desired: minus(cm('c7')), policy: windowed, recent: [{ at: now.toISOString(), objects: 1 }] }))).toMatchObject({
        action: 'prune',
      });
    });

    it('keeps the record bounded, merging the oldest entries (they then count a little longer, never shorter)', () => {
      let recent: RecentDeletion[] = [];
      for (let i = 0; i < 50; i += 1) recent = recordDeletions({ recent, windowMs: 3_600_000, now: later(i * 1000), deleted: 1, released: false });
      expect(recent.length).toBeLessThanOrEqual(20);
      expect(recent.reduce((sum, r) => sum + r.objects, 0)).toBe(50);
      expect(recent.at(-1)).toEqual({ at: later(49_000).toISOString(), objects: 1 });
    });
  });
});

// The watch budget: watches past it are refused with an error that names the budget; given-back watches
// make room again; SharedWatches takes a subscriber's watches all or none.
import { describe, expect, it } from 'vitest';
import type { KubeRest } from './rest.ts';
import { SharedWatches } from './shared-watches.ts';
import { WatchBudget, WatchBudgetError } from './watch-budget.ts';

/** A REST client whose watches stay open until aborted, and whose lists are empty. */
const idleRest: KubeRest = {
  server: 'https://example.invalid',
  request: <T>() => Promise.resolve({ metadata: { resourceVersion: '1' }, items: [] } as T),
  watch: (_path, _query, _onEvent, signal) =>
    new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    }),
};

describe('WatchBudget', () => {
  it('refuses a watch past the limit, naming the flag, and takes it again once one is given back', () => {
    const budget = new WatchBudget(2);
    const first = budget.acquire('a');
    budget.acquire('b');
    expect(() => budget.acquire('the drift watch of Deployments')).toThrow(WatchBudgetError);
    expect(() => budget.acquire('the drift watch of Deployments')).toThrow(
      /--watch-budget=2.*2 watches are open and the drift watch of Deployments needs 1 more/,
    );
    first();
    first(); // giving back twice counts once
    expect(budget.open).toBe(1);
    expect(() => budget.acquire('c')).not.toThrow();
  });

  it('rejects a limit that is not a positive integer', () => {
    expect(() => new WatchBudget(0)).toThrow(/positive integer/);
  });
});

describe('SharedWatches with a budget', () => {
  it("starts all of a subscriber's watches or none, and frees them when released", async () => {
    const budget = new WatchBudget(3);
    const watches = new SharedWatches({ rest: idleRest, wake: () => undefined, onError: () => undefined, budget });
    const spec = (plural: string) => ({ path: `/api/v1/namespaces/shop/${plural}` });
    watches.set('nr-a', [spec('configmaps'), spec('secrets')]);
    expect(budget.open).toBe(2);

    // Two more do not fit: nothing of nr-b starts.
    expect(() => watches.set('nr-b', [spec('services'), spec('serviceaccounts')])).toThrow(WatchBudgetError);
    expect(budget.open).toBe(2);
    // A watch already open is shared, not counted again.
    watches.set('nr-b', [spec('configmaps'), spec('services')]);
    expect(budget.open).toBe(3);

    watches.set('nr-a', []);
    expect(budget.open).toBe(2); // secrets given back; configmaps still serves nr-b
    await watches.stop();
    expect(budget.open).toBe(0);
  });
});

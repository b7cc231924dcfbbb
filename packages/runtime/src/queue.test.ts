import { afterEach, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import type { IBackoff } from 'cockatiel';
import { LONG_DELAY_MS, SLOT_MS, WorkQueue, type ReconcileOutcome } from './queue.ts';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const until = async (check: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
};

describe('WorkQueue', () => {
  it('runs a key once however often it is added while waiting', async () => {
    const queue = new WorkQueue({ concurrency: 1 });
    const gate = deferred();
    const runs: string[] = [];
    queue.start(async (key) => {
      runs.push(key);
      if (key === 'first') await gate.promise;
      return { kind: 'done' };
    });
    queue.add('first');
    queue.add('second');
    queue.add('second');
    queue.add('second');
    gate.resolve();
    await until(() => runs.length === 2);
    await new Promise((r) => setTimeout(r, 20));
    expect(runs).toEqual(['first', 'second']);
  });

  it('never runs one key twice at once, and runs it again when it was added meanwhile', async () => {
    const queue = new WorkQueue({ concurrency: 4 });
    const gate = deferred();
    let concurrent = 0;
    let maxConcurrent = 0;
    let runs = 0;
    queue.start(async () => {
      runs++;
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      if (runs === 1) await gate.promise;
      concurrent--;
      return { kind: 'done' };
    });
    queue.add('a');
    await until(() => runs === 1);
    queue.add('a');
    queue.add('a');
    gate.resolve();
    await until(() => runs === 2);
    expect(maxConcurrent).toBe(1);
  });

  it('backs off transient failures per key and resets after a success', async () => {
    // a backoff whose n-th step waits n ms, so the test sees which step each retry used
    const used: number[] = [];
    const step = (n: number): IBackoff<unknown> => ({
      duration: n,
      next: () => {
        used.push(n + 1);
        return step(n + 1);
      },
    });
    const queue = new WorkQueue({
      concurrency: 2,
      backoff: {
        next: () => {
          used.push(1);
          return step(1);
        },
      },
    });
    const outcomes: ReconcileOutcome[] = [{ kind: 'retry' }, { kind: 'retry' }, { kind: 'retry' }, { kind: 'done' }, { kind: 'retry' }, { kind: 'done' }];
    let runs = 0;
    queue.start(() => {
      runs++;
      return Promise.resolve(outcomes.shift() ?? { kind: 'done' });
    });
    queue.add('flaky');
    await until(() => runs === 4);
    expect(used).toEqual([1, 2, 3]);
    queue.add('flaky');
    await until(() => runs === 6);
    expect(used).toEqual([1, 2, 3, 1]); // the success reset the chain
  });

  it('does not retry a stalled key on a timer', async () => {
    const queue = new WorkQueue({ concurrency: 1, initialBackoffMs: 5 });
    let runs = 0;
    queue.start(() => {
      runs++;
      return Promise.resolve({ kind: 'stalled' });
    });
    queue.add('bad');
    await new Promise((r) => setTimeout(r, 60));
    expect(runs).toBe(1);
    queue.add('bad'); // a change event
    await until(() => runs === 2);
  });

  it('keeps the earliest of two delayed requeues and shuts down after running work finishes', async () => {
    const queue = new WorkQueue({ concurrency: 1 });
    const runs: number[] = [];
    const started = Date.now();
    queue.start(() => {
      runs.push(Date.now() - started);
      return Promise.resolve({ kind: 'done' });
    });
    queue.addAfter('k', 10_000);
    queue.addAfter('k', 20);
    await until(() => runs.length === 1);
    expect(runs[0]).toBeLessThan(5_000);
    await queue.shutdown();
    queue.add('k');
    await new Promise((r) => setTimeout(r, 20));
    expect(runs).toHaveLength(1);
  });

  it.each([1000 * 3_600_000, 2 ** 31, Number.POSITIVE_INFINITY])('holds a delay of %d ms instead of letting the timer overflow to 1 ms', async (delay) => {
    const queue = new WorkQueue({ concurrency: 1 });
    let runs = 0;
    queue.start(() => {
      runs++;
      return Promise.resolve({ kind: 'done' });
    });
    queue.addAfter('k', delay);
    // An overflowing timer fires after 1 ms; give it ample time to show.
    await new Promise((r) => setTimeout(r, 100));
    expect(runs).toBe(0);
    await queue.shutdown();
  });

  describe('long delays on the shared grid', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    /** A started queue on fake timers that records when (ms from the start) each key ran. */
    const fakeQueue = () => {
      vi.useFakeTimers({ now: 1_000_000_123 });
      const started = Date.now();
      const queue = new WorkQueue({ concurrency: 4 });
      const runs: { key: string; at: number }[] = [];
      queue.start((key) => {
        runs.push({ key, at: Date.now() - started });
        return Promise.resolve({ kind: 'done' });
      });
      return { queue, runs, started };
    };

    it('adds every key due in one slot with one timer, never before its delay and at most a slot late', async () => {
      const { queue, runs, started } = fakeQueue();
      const delays = { a: LONG_DELAY_MS, b: LONG_DELAY_MS + 300, c: LONG_DELAY_MS + 700, d: 30_000, e: 29_400 };
      for (const [key, delay] of Object.entries(delays)) queue.addAfter(key, delay);
      // one timer for the grid, not one per key
      expect(vi.getTimerCount()).toBe(1);
      expect(queue.scheduled).toBe(5);
      await vi.advanceTimersByTimeAsync(31_000);
      expect(runs.map((r) => r.key).sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
      for (const run of runs) {
        const delay = delays[run.key as keyof typeof delays];
        expect(run.at).toBeGreaterThanOrEqual(delay);
        expect(run.at).toBeLessThanOrEqual(delay + SLOT_MS);
        expect((started + run.at) % SLOT_MS).toBe(0);
      }
      // a, b and c share a slot: they ran at the same moment
      expect(new Set(runs.filter((r) => 'abc'.includes(r.key)).map((r) => r.at)).size).toBe(1);
      expect(queue.scheduled).toBe(0);
      expect(vi.getTimerCount()).toBe(0);
    });

    it('keeps the earliest schedule whether it is on the grid or its own timer, and forgets a key in a slot', async () => {
      const { queue, runs } = fakeQueue();
      queue.addAfter('early-own', 20_000);
      queue.addAfter('early-own', 100); // earlier, on a timer of its own: wins
      queue.addAfter('early-grid', 500);
      queue.addAfter('early-grid', 20_000); // later: ignored
      queue.addAfter('gone', 15_000);
      queue.forget('gone');
      queue.addAfter('moved', 25_000);
      queue.addAfter('moved', 12_000); // an earlier slot: the grid's timer is armed for it
      await vi.advanceTimersByTimeAsync(1_000);
      expect(runs.map((r) => r.key).sort()).toEqual(['early-grid', 'early-own']);
      await vi.advanceTimersByTimeAsync(30_000);
      expect(runs.map((r) => r.key).sort()).toEqual(['early-grid', 'early-own', 'moved']);
      expect(runs.find((r) => r.key === 'moved')?.at).toBeLessThanOrEqual(12_000 + SLOT_MS);
      expect(queue.scheduled).toBe(0);
    });

    it('runs each key once, at its earliest requested time (a long one rounded up to its slot), whatever the order of the requests', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({ key: fc.constantFrom('a', 'b', 'c', 'd'), delay: fc.integer({ min: 1, max: 40_000 }), after: fc.integer({ min: 0, max: 3_000 }) }),
            {
              minLength: 1,
              maxLength: 12,
            },
          ),
          async (requests) => {
            const { queue, runs, started } = fakeQueue();
            // the earliest due time each key asked for, as the queue promises it
            const due = new Map<string, { min: number; max: number }>();
            let elapsed = 0;
            for (const { key, delay, after } of requests) {
              // a request after the key already ran starts its own schedule; keep the property to one run per key
              if (elapsed + after >= Math.min(...[...due.values()].map((d) => d.min), Infinity) - 1) continue;
              await vi.advanceTimersByTimeAsync(after);
              elapsed += after;
              queue.addAfter(key, delay);
              const now = started + elapsed;
              const min = elapsed + delay;
              const max = delay >= LONG_DELAY_MS ? Math.ceil((now + delay) / SLOT_MS) * SLOT_MS - started : min;
              const previous = due.get(key);
              if (previous === undefined || min < previous.min) due.set(key, { min, max: previous === undefined ? max : Math.min(max, previous.max) });
              else if (max < previous.max) due.set(key, { min: previous.min, max });
            }
            await vi.advanceTimersByTimeAsync(50_000);
            expect(runs.map((r) => r.key).sort()).toEqual([...due.keys()].sort());
            for (const run of runs) {
              const want = due.get(run.key);
              // never before a delay it asked for; exactly at the earliest schedule (fake timers fire on time)
              expect(run.at).toBeGreaterThanOrEqual(want?.min ?? 0);
              expect(run.at).toBe(want?.max);
            }
            queue.halt();
            vi.useRealTimers();
          },
        ),
        { numRuns: 200 },
      );
    });
  });

  describe('progress (liveness)', () => {
    it('counts the time a started queue has work and finishes none of it; a finished reconcile resets it', async () => {
      let now = 1_000;
      const queue = new WorkQueue({ concurrency: 1, now: () => now });
      const stuck = deferred();
      queue.add('a'); // not started yet (a follower): never stalled
      now += 60_000;
      expect(queue.stalledForMs()).toBe(0);
      queue.start(async (key) => {
        if (key === 'a') await stuck.promise;
        return { kind: 'done' };
      });
      queue.add('b');
      now += 90_000;
      expect(queue.stalledForMs()).toBe(90_000);
      stuck.resolve();
      await until(() => queue.stalledForMs() === 0); // a and b done: idle
      now += 600_000;
      expect(queue.stalledForMs()).toBe(0);
      // Work arriving at an idle queue starts the clock then, not at the last finish.
      const again = deferred();
      queue.start(async () => {
        await again.promise;
        return { kind: 'done' };
      });
      queue.add('c');
      now += 5_000;
      expect(queue.stalledForMs()).toBe(5_000);
      again.resolve();
      await queue.shutdown();
    });

    it('halt() starts nothing more, while the running reconcile goes on', async () => {
      const queue = new WorkQueue({ concurrency: 1 });
      const gate = deferred();
      const runs: string[] = [];
      queue.start(async (key) => {
        runs.push(key);
        await gate.promise;
        return { kind: 'done', requeueAfterMs: 1 };
      });
      queue.add('running');
      queue.add('waiting');
      queue.halt();
      queue.add('later');
      gate.resolve();
      await queue.shutdown();
      expect(runs).toEqual(['running']);
    });
  });
});

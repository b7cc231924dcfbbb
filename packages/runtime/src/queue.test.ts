import { describe, expect, it } from 'vitest';
import type { IBackoff } from 'cockatiel';
import { WorkQueue, type ReconcileOutcome } from './queue.ts';

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

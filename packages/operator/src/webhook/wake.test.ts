import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeliveryLog } from './replay.ts';
import { coalescingWindows, createCoalescer, createWaker, type CoalescedWake } from './wake.ts';

describe('createCoalescer', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('wakes a quiet repository at once, then once more after a burst, and at the latest maxWaitMs after the first held push', () => {
    // given a coalescer with a 150 ms quiet period and a 2 s ceiling
    const woken: string[] = [];
    const coalescer = createCoalescer({ wake: (key) => woken.push(key), quietMs: 150, maxWaitMs: 2_000 });

    // when one push arrives at a quiet repository, then its syncs are woken at once
    coalescer.add('git.example.com/acme/configs', ['ns/a']);
    expect(woken).toEqual(['ns/a']);
    vi.advanceTimersByTime(150);
    expect(woken).toEqual(['ns/a']);

    // when 50 pushes arrive within a second, then the first wakes at once, the others are held until the
    // repository is quiet, then wake each sync once
    woken.length = 0;
    for (let i = 0; i < 50; i++) {
      coalescer.add('git.example.com/acme/configs', ['ns/a', i % 2 === 0 ? 'ns/b' : 'ns/a']);
      vi.advanceTimersByTime(20);
    }
    expect(woken.sort()).toEqual(['ns/a', 'ns/b']);
    vi.advanceTimersByTime(150);
    expect(woken.sort()).toEqual(['ns/a', 'ns/a', 'ns/b', 'ns/b']);

    // when pushes never stop, then the ceiling still wakes
    woken.length = 0;
    vi.advanceTimersByTime(1_000);
    for (let i = 0; i < 30; i++) {
      coalescer.add('git.example.com/acme/configs', ['ns/a']);
      vi.advanceTimersByTime(100);
    }
    expect(woken).toEqual(['ns/a', 'ns/a']); // at once, then the ceiling 2 s after the first held push
    vi.advanceTimersByTime(150);
    expect(woken).toEqual(['ns/a', 'ns/a', 'ns/a']);
  });

  it('a push after a quiet gap wakes at once; held pushes never wait past the ceiling', () => {
    // given a coalescer on a fake clock
    const wakes: CoalescedWake[] = [];
    const coalescer = createCoalescer({ wake: () => undefined, onWake: (wake) => wakes.push(wake), quietMs: 150, maxWaitMs: 2_000 });

    // when two pushes come 149 ms apart, then 150 ms of quiet passes, then one more push comes
    coalescer.add('r', ['ns/a']);
    vi.advanceTimersByTime(149);
    coalescer.add('r', ['ns/a']);
    vi.advanceTimersByTime(150);
    coalescer.add('r', ['ns/a']);
    vi.advanceTimersByTime(150);

    // then the first woke at once, the second was held 150 ms (until the quiet), the third woke at once
    expect(wakes).toEqual([
      { repo: 'r', syncs: 1, pushes: 1, heldMs: 0 },
      { repo: 'r', syncs: 1, pushes: 1, heldMs: 150 },
      { repo: 'r', syncs: 1, pushes: 1, heldMs: 0 },
    ]);

    // when pushes come every 149 ms for 5 s, then the first wakes at once and the held ones every 2 s
    const fired: number[] = [];
    const started = Date.now();
    const timed = createCoalescer({ wake: () => fired.push(Date.now() - started), quietMs: 150, maxWaitMs: 2_000 });
    for (let t = 0; t < 5_000; t += 149) {
      timed.add('r', ['ns/a']);
      vi.advanceTimersByTime(149);
    }
    vi.advanceTimersByTime(150);
    expect(fired.slice(0, 3)).toEqual([0, 2_149, 4_235]);
    expect(fired).toHaveLength(4);
  });

  it('repositories coalesce independently', () => {
    const woken: string[] = [];
    const coalescer = createCoalescer({ wake: (key) => woken.push(key) });
    for (let i = 0; i < 10; i++) {
      coalescer.add('one', ['ns/a']);
      coalescer.add('two', ['ns/b', 'ns/c']);
      vi.advanceTimersByTime(50);
    }
    // the first push of each woke at once
    expect(woken.sort()).toEqual(['ns/a', 'ns/b', 'ns/c']);
    vi.advanceTimersByTime(150);
    expect(woken.sort()).toEqual(['ns/a', 'ns/a', 'ns/b', 'ns/b', 'ns/c', 'ns/c']);
  });

  it('wakes exactly as often as coalescingWindows counts, for any arrival pattern', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 2_500 }), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 1, max: 3_000 }),
        (gaps, quietMs, maxWaitMs) => {
          // given pushes to one repository arriving `gaps` ms apart (the first at once)
          const wakes: CoalescedWake[] = [];
          const coalescer = createCoalescer({ wake: () => undefined, onWake: (wake) => wakes.push(wake), quietMs, maxWaitMs });
          const times: number[] = [];
          let now = 0;
          for (const [index, gap] of gaps.entries()) {
            if (index > 0) {
              vi.advanceTimersByTime(gap);
              now += gap;
            }
            times.push(now);
            coalescer.add('r', ['ns/a']);
          }
          vi.advanceTimersByTime(maxWaitMs + quietMs);
          // then it woke as often as counted, every push was passed on, the first at once, and none was held
          // past the ceiling
          expect(wakes).toHaveLength(coalescingWindows(times, { quietMs, maxWaitMs }));
          expect(wakes.reduce((sum, wake) => sum + wake.pushes, 0)).toBe(gaps.length);
          expect(wakes[0]).toMatchObject({ pushes: 1, heldMs: 0 });
          for (const wake of wakes) expect(wake.heldMs).toBeLessThanOrEqual(maxWaitMs);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never wakes at once when a timer fires before the clock says the repository was quiet (a busy event loop)', () => {
    // given a push handled 20 ms after the event loop last read the clock: its timer is due 20 ms early
    const wakes: CoalescedWake[] = [];
    let lag = 20;
    const coalescer = createCoalescer({ wake: () => undefined, onWake: (wake) => wakes.push(wake), quietMs: 150, now: () => Date.now() + lag });
    coalescer.add('r', ['ns/a']); // at 20 by the clock: woken at once
    lag = 0;
    // when two more pushes come 140 and 180 ms after it by the clock (inside the quiet time), after that early timer
    vi.advanceTimersByTime(160);
    coalescer.add('r', ['ns/a']); // at 160
    vi.advanceTimersByTime(40);
    coalescer.add('r', ['ns/a']); // at 200
    vi.advanceTimersByTime(400);
    // then the two were held into one trailing wake, as coalescingWindows counts
    expect(wakes.map((wake) => wake.pushes)).toEqual([1, 2]);
    expect(coalescingWindows([20, 160, 200], { quietMs: 150 })).toBe(2);
  });

  it('a reminder that has not run when the repository is quiet again passes its held pushes with the next push, in one wake', () => {
    // given a push held behind a wake, and a clock that runs ahead of the timers (a blocked event loop)
    const wakes: CoalescedWake[] = [];
    let lag = 0;
    const coalescer = createCoalescer({ wake: () => undefined, onWake: (wake) => wakes.push(wake), quietMs: 150, now: () => Date.now() + lag });
    coalescer.add('r', ['ns/a']);
    vi.advanceTimersByTime(100);
    coalescer.add('r', ['ns/b']);
    // when the next push comes 300 ms later by the clock, before the held one's reminder ran
    lag = 300;
    coalescer.add('r', ['ns/c']);
    // then it wakes at once together with the held one, and the reminder finds nothing left
    vi.advanceTimersByTime(1_000);
    expect(wakes).toEqual([
      { repo: 'r', syncs: 1, pushes: 1, heldMs: 0 },
      { repo: 'r', syncs: 2, pushes: 2, heldMs: 300 },
    ]);
  });

  it('flush wakes what is held at once', () => {
    const woken: string[] = [];
    const coalescer = createCoalescer({ wake: (key) => woken.push(key) });
    coalescer.add('r', ['ns/a']);
    coalescer.add('r', ['ns/b']);
    expect(woken).toEqual(['ns/a']);
    coalescer.flush();
    expect(woken).toEqual(['ns/a', 'ns/b']);
  });
});

describe('coalescingWindows', () => {
  it('counts a wake per quiet gap, and one per held run of pushes, cut by the ceiling', () => {
    expect(coalescingWindows([])).toBe(0);
    expect(coalescingWindows([0])).toBe(1);
    // 50 pushes in a second: the first at once, the rest in one trailing wake
    expect(coalescingWindows(Array.from({ length: 50 }, (_, i) => i * 20))).toBe(2);
    // the same 50 spread over 5 s (100 ms apart): the first at once, the held ones cut in three by the 2 s ceiling
    expect(coalescingWindows(Array.from({ length: 50 }, (_, i) => i * 100))).toBe(4);
    // 200 ms apart: every push wakes at once
    expect(coalescingWindows(Array.from({ length: 50 }, (_, i) => i * 200))).toBe(50);
    expect(coalescingWindows([0, 149, 298, 448], { quietMs: 150 })).toBe(3);
  });
});

describe('DeliveryLog', () => {
  it('drops a duplicate within the window, per provider; a later redelivery (same id) is processed and recognised', () => {
    let now = 0;
    const log = new DeliveryLog({ windowMs: 1_000, now: () => now });
    expect(log.sight('github', 'a')).toEqual({ kind: 'first' });
    now = 400;
    expect(log.sight('github', 'a')).toEqual({ kind: 'duplicate', agoMs: 400 });
    expect(log.sight('gitea', 'a')).toEqual({ kind: 'first' });
    // GitHub's "Redeliver" an hour later keeps X-GitHub-Delivery: it must act
    now = 3_600_000;
    expect(log.sight('github', 'a')).toEqual({ kind: 'redelivery', agoMs: 3_600_000 });
    expect(log.sight('github', 'a')).toEqual({ kind: 'duplicate', agoMs: 0 });
  });

  it('stays bounded in count and forgets after its memory', () => {
    let now = 0;
    const log = new DeliveryLog({ maxEntries: 3, windowMs: 10, memoryMs: 1_000, now: () => now });
    for (const id of ['b', 'c', 'd', 'e']) expect(log.sight('github', id)).toEqual({ kind: 'first' });
    now = 20;
    // the oldest fell out of the bounded log; the others are remembered as redeliveries
    expect(log.sight('github', 'b')).toEqual({ kind: 'first' });
    expect(log.sight('github', 'e')).toEqual({ kind: 'redelivery', agoMs: 20 });
    now = 5_000;
    expect(log.sight('github', 'e')).toEqual({ kind: 'first' });
  });
});

describe('createWaker on a follower', () => {
  const logger = { warn: () => undefined } as unknown as Parameters<typeof createWaker>[0]['logger'];
  const flush = async (): Promise<void> => {
    for (let i = 0; i < 20; i++) await Promise.resolve();
  };

  it('retries asking the leader through an API outage, so an acknowledged push is not lost', async () => {
    // given a REST client that fails twice (the API server cut), then answers
    let calls = 0;
    const rest = { request: () => (++calls <= 2 ? Promise.reject(new Error('connect ECONNREFUSED')) : Promise.resolve(undefined)) } as unknown as Parameters<
      typeof createWaker
    >[0]['rest'];
    const wake = createWaker({ rest, isLeader: () => false, enqueue: () => undefined, logger, retryDelaysMs: [1, 1, 1] });
    // when a push wakes a sync
    wake('ns/web');
    // then the request is tried until it lands
    for (let i = 0; i < 50 && calls < 3; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(calls).toBe(3);
  });

  it('gives up after its bounded tries, and enqueues itself when it became the leader meanwhile', async () => {
    let calls = 0;
    let leader = false;
    const enqueued: string[] = [];
    const rest = {
      request: () => {
        calls++;
        leader = true;
        return Promise.reject(new Error('503'));
      },
    } as unknown as Parameters<typeof createWaker>[0]['rest'];
    createWaker({ rest, isLeader: () => leader, enqueue: (key) => enqueued.push(key), logger, retryDelaysMs: [1] })('ns/web');
    for (let i = 0; i < 50 && enqueued.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    await flush();
    expect([calls, enqueued]).toEqual([1, ['ns/web']]);

    let tries = 0;
    const down = {
      request: () => {
        tries++;
        return Promise.reject(new Error('connect ECONNREFUSED'));
      },
    } as unknown as Parameters<typeof createWaker>[0]['rest'];
    createWaker({ rest: down, isLeader: () => false, enqueue: () => undefined, logger, retryDelaysMs: [1, 1] })('ns/web');
    for (let i = 0; i < 400 && tries < 3; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(tries).toBe(3);
  });
});

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeliveryLog } from './replay.ts';
import { createCoalescer } from './wake.ts';

describe('createCoalescer', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('wakes each sync of a repository once after a burst, and at the latest maxWaitMs after its first push', () => {
    // given a coalescer with a 150 ms quiet period and a 2 s ceiling
    const woken: string[] = [];
    const coalescer = createCoalescer({ wake: (key) => woken.push(key), quietMs: 150, maxWaitMs: 2_000 });

    // when 50 pushes arrive within a second, then nothing is woken until the repository is quiet, then each sync once
    for (let i = 0; i < 50; i++) {
      coalescer.add('git.example.com/acme/configs', ['ns/a', i % 2 === 0 ? 'ns/b' : 'ns/a']);
      vi.advanceTimersByTime(20);
    }
    expect(woken).toEqual([]);
    vi.advanceTimersByTime(150);
    expect(woken.sort()).toEqual(['ns/a', 'ns/b']);

    // when pushes never stop, then the ceiling still wakes
    woken.length = 0;
    for (let i = 0; i < 30; i++) {
      coalescer.add('git.example.com/acme/configs', ['ns/a']);
      vi.advanceTimersByTime(100);
    }
    expect(woken.length).toBeGreaterThanOrEqual(1);
    expect(woken.length).toBeLessThanOrEqual(2);
  });

  it('flush wakes what is held at once', () => {
    const woken: string[] = [];
    const coalescer = createCoalescer({ wake: (key) => woken.push(key) });
    coalescer.add('r', ['ns/a']);
    coalescer.flush();
    expect(woken).toEqual(['ns/a']);
  });
});

describe('DeliveryLog', () => {
  it('recognizes a replay per provider, forgets after the TTL and stays bounded', () => {
    let now = 0;
    const log = new DeliveryLog({ maxEntries: 3, ttlMs: 1_000, now: () => now });
    expect(log.firstSighting('github', 'a')).toBe(true);
    expect(log.firstSighting('github', 'a')).toBe(false);
    expect(log.firstSighting('gitea', 'a')).toBe(true);
    now = 1_000;
    expect(log.firstSighting('github', 'a')).toBe(true);
    for (const id of ['b', 'c', 'd', 'e']) expect(log.firstSighting('github', id)).toBe(true);
    // the oldest fell out of the bounded log
    expect(log.firstSighting('github', 'b')).toBe(true);
    expect(log.firstSighting('github', 'e')).toBe(false);
  });
});

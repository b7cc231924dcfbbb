// Ref lookups per repository stay within two per refresh interval (the operator passes half
// of it as maxAgeMs), whatever the arrival pattern of the resyncs, and no caller gets refs older than it accepts.
// A simulated clock drives SharedListings; listings complete when the simulation says so.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SharedListings } from './ref-listings.ts';

interface Call {
  at: number;
  maxAgeMs: number;
}

interface Started {
  at: number;
  forced: boolean;
  endedAt: number;
}

/**
 * Runs `calls` (sorted by `at`) against one key; the n-th listing takes `latency(n)` ms. Returns the listings
 * started and, per call, the start time of the listing that answered it and whether it was in flight then.
 */
async function simulate(calls: readonly Call[], latency: (n: number) => number) {
  let now = 0;
  const listings = new SharedListings<number>({ now: () => now });
  const started: Started[] = [];
  const completions: Array<{ at: number; finish: () => void }> = [];
  const answers: Array<Promise<{ call: Call; startedAt: number; inFlightAtCall: boolean }>> = [];
  const flush = async (): Promise<void> => {
    for (let i = 0; i < 4; i++) await Promise.resolve();
  };
  const completeUntil = async (t: number): Promise<void> => {
    completions.sort((a, b) => a.at - b.at);
    while (completions.length > 0 && (completions[0]?.at ?? Infinity) <= t) {
      const next = completions.shift();
      now = next?.at ?? now;
      next?.finish();
      await flush();
    }
  };
  for (const call of calls) {
    await completeUntil(call.at);
    now = call.at;
    const listingsBefore = started.length;
    const result = listings.get('repo', { maxAgeMs: call.maxAgeMs }, () => {
      const n = started.length;
      const listing = { at: now, forced: call.maxAgeMs === 0, endedAt: now + latency(n) };
      started.push(listing);
      return new Promise<number>((resolve) => completions.push({ at: listing.endedAt, finish: () => resolve(n) }));
    });
    const fresh = started.length > listingsBefore;
    answers.push(
      result.then((n) => {
        const listing = started[n];
        return { call, startedAt: listing?.at ?? Number.NaN, inFlightAtCall: fresh || (listing?.endedAt ?? Infinity) > call.at };
      }),
    );
  }
  await completeUntil(Infinity);
  return { started, answers: await Promise.all(answers) };
}

/** The most listing starts any closed span of `spanMs` holds. */
function mostInAnySpan(starts: readonly number[], spanMs: number): number {
  let most = 0;
  for (let i = 0, j = 0; j < starts.length; j++) {
    while ((starts[j] ?? 0) - (starts[i] ?? 0) > spanMs) i++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}

describe('SharedListings', () => {
  it('for any arrival pattern and any listing latency: at most two listings for resyncs in any refresh interval, none older than accepted', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 600_000 }),
        fc.array(fc.record({ gap: fc.integer({ min: 0, max: 1000 }).map((g) => g / 1000), forced: fc.integer({ min: 1, max: 10 }).map((x) => x === 7) }), {
          minLength: 30,
          maxLength: 300,
        }),
        fc.array(
          fc.integer({ min: 0, max: 1000 }).map((l) => l / 1000),
          { minLength: 1, maxLength: 50 },
        ),
        async (interval, arrivals, latencies) => {
          // given: resyncs accept half the refresh interval; some callers force a fresh listing (webhooks)
          const half = Math.floor(interval / 2);
          let at = 0;
          const calls = arrivals.map((a) => ({ at: (at += Math.round(a.gap ** 3 * interval)), maxAgeMs: a.forced ? 0 : half }));

          // when
          const { started, answers } = await simulate(calls, (n) => Math.round((latencies[n % latencies.length] ?? 0) ** 4 * 2 * interval));

          // then: the resyncs' own listings, in any closed span of one interval
          expect(
            mostInAnySpan(
              started.filter((s) => !s.forced).map((s) => s.at),
              2 * half,
            ),
          ).toBeLessThanOrEqual(2);
          for (const answer of answers) {
            // a resync gets a listing started at most maxAgeMs before it came, or one still in flight then
            if (answer.call.maxAgeMs > 0) expect(answer.inFlightAtCall || answer.call.at - answer.startedAt <= answer.call.maxAgeMs).toBe(true);
            else expect(answer.inFlightAtCall).toBe(true);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("the operator's bench shape: 200 syncs, refresh 30 s jittered ±10%, 100 intervals: ≤ 2 lookups in every interval, ≤ 201 in all", async () => {
    // given: a seeded generator for phases, jitter and latencies
    let seed = 7;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
      return seed / 0x80000000;
    };
    const interval = 30_000;
    const calls: Call[] = [];
    for (let sync = 0; sync < 200; sync++) {
      for (let at = random() * interval; at < 100 * interval; at += Math.round(interval * (0.9 + random() * 0.2)))
        calls.push({ at: Math.round(at), maxAgeMs: interval / 2 });
    }
    calls.sort((a, b) => a.at - b.at);

    // when
    const { started, answers } = await simulate(calls, () => 10 + Math.round(random() * 300));

    // then
    expect(
      mostInAnySpan(
        started.map((s) => s.at),
        interval,
      ),
    ).toBe(2);
    expect(started.length).toBeLessThanOrEqual(201);
    expect(answers.every((a) => a.inFlightAtCall || a.call.at - a.startedAt <= interval / 2)).toBe(true);
  });

  it('a forced caller lists again even right after a listing; a failed listing is not reused', async () => {
    // given
    let now = 1_000;
    const listings = new SharedListings<string>({ now: () => now });
    let calls = 0;
    const list = (outcome: 'ok' | 'fail') => () => {
      calls++;
      return outcome === 'ok' ? Promise.resolve(`listing ${calls}`) : Promise.reject(new Error(`listing ${calls} failed`));
    };

    // when / then
    expect(await listings.get('repo', { maxAgeMs: 15_000 }, list('ok'))).toBe('listing 1');
    now += 15_000;
    expect(await listings.get('repo', { maxAgeMs: 15_000 }, list('ok'))).toBe('listing 1');
    expect(await listings.get('repo', { maxAgeMs: 0 }, list('ok'))).toBe('listing 2');
    now += 15_001;
    await expect(listings.get('repo', { maxAgeMs: 15_000 }, list('fail'))).rejects.toThrow('listing 3 failed');
    expect(await listings.get('repo', { maxAgeMs: 15_000 }, list('ok'))).toBe('listing 4');
    expect(await listings.get('other', { maxAgeMs: 15_000 }, list('ok'))).toBe('listing 5');
  });
});

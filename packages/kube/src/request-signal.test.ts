// A request's signal says what aborted it (the caller, the write fence or the deadline), and lets go of all
// three once the request settled.
import { describe, expect, it } from 'vitest';
import { requestSignal } from './request-signal.ts';

describe('requestSignal', () => {
  it('names the caller, the fence or the deadline as the cause', async () => {
    const caller = new AbortController();
    const byCaller = requestSignal({ timeoutMs: 60_000, signal: caller.signal });
    caller.abort();
    expect([byCaller.signal.aborted, byCaller.cause()]).toEqual([true, 'caller']);

    const fence = new AbortController();
    const byFence = requestSignal({ timeoutMs: 60_000, fence: fence.signal });
    fence.abort(new Error('lost leadership'));
    expect([byFence.signal.aborted, byFence.cause()]).toEqual([true, 'fence']);

    const byDeadline = requestSignal({ timeoutMs: 5 });
    await new Promise((resolve) => byDeadline.signal.addEventListener('abort', resolve, { once: true }));
    expect(byDeadline.cause()).toBe('deadline');
    byCaller.done();
    byFence.done();
    byDeadline.done();
  });

  it('starts aborted when the fence already is, and ignores everything once done', () => {
    const fence = new AbortController();
    fence.abort();
    expect(requestSignal({ timeoutMs: 60_000, fence: fence.signal }).cause()).toBe('fence');

    const later = new AbortController();
    const settled = requestSignal({ timeoutMs: 60_000, fence: later.signal });
    settled.done();
    later.abort();
    expect([settled.signal.aborted, settled.cause()]).toEqual([false, undefined]);
  });
});

// A request's signal says what aborted it (the caller, the write fence or the deadline), and lets go of all
// three once the request settled.
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { requestSignal, watchersOfSignal } from './request-signal.ts';

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

describe('requestSignal on a signal many requests share', () => {
  it('adds one listener to the fence whatever the requests in flight, aborts them all, and forgets each settled one', () => {
    const fence = new AbortController();
    const caller = new AbortController();
    const requests = Array.from({ length: 100 }, () => requestSignal({ timeoutMs: 60_000, signal: caller.signal, fence: fence.signal }));
    expect([getEventListeners(fence.signal, 'abort').length, getEventListeners(caller.signal, 'abort').length]).toEqual([1, 1]);
    expect(watchersOfSignal(fence.signal)).toBe(100);

    const settled = requests.slice(0, 40);
    for (const request of settled) request.done();
    expect([watchersOfSignal(fence.signal), watchersOfSignal(caller.signal)]).toEqual([60, 60]);

    fence.abort(new Error('lost leadership'));
    expect(requests.slice(40).map((request) => [request.signal.aborted, request.cause()])).toEqual(Array.from({ length: 60 }, () => [true, 'fence']));
    expect(settled.every((request) => !request.signal.aborted && request.cause() === undefined)).toBe(true);
    expect(watchersOfSignal(fence.signal)).toBe(0);
    // the caller's later abort reaches none of them: each was aborted once, by the fence
    caller.abort();
    expect(requests.slice(40).every((request) => request.cause() === 'fence')).toBe(true);
    for (const request of requests.slice(40)) request.done();
    expect(watchersOfSignal(caller.signal)).toBe(0);
  });

  it('still aborts the others when one request abort handler throws', async () => {
    const fence = new AbortController();
    const first = requestSignal({ timeoutMs: 60_000, fence: fence.signal });
    const second = requestSignal({ timeoutMs: 60_000, fence: fence.signal });
    first.signal.addEventListener('abort', () => {
      throw new Error('a handler that fails');
    });
    const reported = new Promise<unknown>((resolve) => process.once('uncaughtException', resolve));
    fence.abort();
    expect([first.cause(), second.cause(), second.signal.aborted]).toEqual(['fence', 'fence', true]);
    expect(await reported).toBeInstanceOf(Error);
    first.done();
    second.done();
  });
});

describe('requestSignal as an Abortable', () => {
  it('runs each listener once on abort, none that left, and none added after it aborted', () => {
    const fence = new AbortController();
    const request = requestSignal({ timeoutMs: 60_000, fence: fence.signal });
    const heard: string[] = [];
    request.listen(() => heard.push('first'));
    const leave = request.listen(() => heard.push('left'));
    request.listen(() => heard.push('third'));
    leave();
    expect(request.aborted).toBe(false);
    fence.abort(new Error('lost leadership'));
    expect([request.aborted, (request.reason as Error).message, heard]).toEqual([true, 'lost leadership', ['first', 'third']]);
    request.listen(() => heard.push('late'));
    fence.abort();
    expect(heard).toEqual(['first', 'third']);
    request.done();
  });

  it('makes its AbortSignal only when asked, aborted with the same reason', () => {
    const caller = new AbortController();
    const early = requestSignal({ timeoutMs: 60_000, signal: caller.signal });
    const { signal } = early;
    caller.abort(new Error('cancelled'));
    expect([signal.aborted, (signal.reason as Error).message, early.cause()]).toEqual([true, 'cancelled', 'caller']);
    // asked for after the abort: made aborted already
    const other = new AbortController();
    other.abort(new Error('gone'));
    const late = requestSignal({ timeoutMs: 60_000, signal: other.signal });
    expect([late.signal.aborted, (late.signal.reason as Error).message]).toEqual([true, 'gone']);
    early.done();
    late.done();
  });
});

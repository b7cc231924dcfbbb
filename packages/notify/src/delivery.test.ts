// The dispatcher against a real local HTTP receiver: what counts as delivered, what is retried, what is not.
import { startHttpReceiver } from '@syncline/test-support';
import { nodeHttpTransport } from '@syncline/source-git';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { TokenBucket, createDispatcher, type Delivery, type DeliveryResult } from './delivery.ts';

const settings = { messages: 100, intervalMs: 60_000, timeoutMs: 2_000 };

async function deliverOnce(respond: Parameters<typeof startHttpReceiver>[0], delivery: Partial<Delivery> & { okField?: boolean } = {}) {
  await using receiver = await startHttpReceiver(respond);
  const counted: DeliveryResult[] = [];
  const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: (_type, result) => counted.push(result), attempts: 3, initialBackoffMs: 20 });
  const outcome = await new Promise<{ result: DeliveryResult; error?: string }>((resolve) =>
    dispatcher.deliver({
      provider: 'ns/p',
      providerType: 'slack',
      dedupKey: 'k',
      settings,
      prepare: () =>
        Promise.resolve({
          url: `${receiver.url}/api/chat.postMessage`,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
          okField: delivery.okField ?? false,
        }),
      done: (result, error) => resolve({ result, ...(error === undefined ? {} : { error }) }),
    }),
  );
  dispatcher.stop();
  return { ...outcome, attempts: receiver.requests.length, counted };
}

describe('delivery', () => {
  it("Slack's Web API: 200 with ok false is a failure, not retried, and says Slack's error code", async () => {
    const outcome = await deliverOnce({ respond: () => ({ status: 200, body: { ok: false, error: 'channel_not_found' } }) }, { okField: true });
    expect(outcome).toMatchObject({ result: 'failed', error: 'the receiver refused the message (channel_not_found)', attempts: 1, counted: ['failed'] });
  });

  it('200 with ok true is delivered', async () => {
    expect(await deliverOnce({ respond: () => ({ status: 200, body: { ok: true } }) }, { okField: true })).toMatchObject({ result: 'sent', attempts: 1 });
  });

  it('a 4xx is not retried; a 429 or 5xx is, then fails', async () => {
    expect(await deliverOnce({ respond: () => ({ status: 404, body: 'no_such_hook' }) })).toMatchObject({
      result: 'failed',
      error: 'the receiver answered HTTP 404',
      attempts: 1,
    });
    expect(await deliverOnce({ respond: () => ({ status: 429, body: 'slow down' }) })).toMatchObject({
      result: 'failed',
      error: 'the receiver answered HTTP 429',
      attempts: 3,
    });
  });

  it('a 503 that recovers is delivered on a retry', async () => {
    let calls = 0;
    expect(await deliverOnce({ respond: () => ({ status: ++calls < 2 ? 503 : 200, body: 'ok' }) })).toMatchObject({ result: 'sent', attempts: 2 });
  });

  it('an unreachable receiver: the error names no host or port', async () => {
    const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: () => undefined, attempts: 2, initialBackoffMs: 10 });
    const outcome = await new Promise<{ result: DeliveryResult; error?: string }>((resolve) =>
      dispatcher.deliver({
        provider: 'ns/p',
        providerType: 'webhook',
        dedupKey: 'k',
        settings,
        prepare: () => Promise.resolve({ url: 'http://127.0.0.1:1/secret-path', method: 'POST', headers: {}, body: '{}' }),
        done: (result, error) => resolve({ result, ...(error === undefined ? {} : { error }) }),
      }),
    );
    expect(outcome.result).toBe('failed');
    expect(outcome.error).toMatch(/could not be reached \(ECONNREFUSED\)/);
    expect(outcome.error).not.toMatch(/127\.0\.0\.1|secret-path/);
  });

  it('one request at a time per NotificationProvider, in order; past the queue a delivery is dropped and says so', async () => {
    await using receiver = await startHttpReceiver();
    const results: string[] = [];
    const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: () => undefined, queueSize: 2 });
    for (const name of ['a', 'b', 'c', 'd']) {
      dispatcher.deliver({
        provider: 'ns/p',
        providerType: 'webhook',
        dedupKey: name,
        settings,
        prepare: () => Promise.resolve({ url: `${receiver.url}/${name}`, method: 'POST', headers: {}, body: name }),
        done: (result, error) => results.push(`${name}:${result}${error === undefined ? '' : `:${error}`}`),
      });
    }
    await dispatcher.idle();
    dispatcher.stop();
    // a is in flight, b and c wait: d does not fit.
    expect(results).toEqual(['d:dropped:the queue of this NotificationProvider is full (2 waiting)', 'a:sent', 'b:sent', 'c:sent']);
    expect(receiver.requests.map((r) => r.body)).toEqual(['a', 'b', 'c']);
  });

  it('an attempt past its timeout is retried, then fails as timed out', async () => {
    // A receiver that never answers: the socket stays open, the request hangs.
    let received = 0;
    const hanging = createServer(() => {
      received++;
    });
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    try {
      const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: () => undefined, attempts: 2, initialBackoffMs: 10 });
      const outcome = await new Promise<{ result: DeliveryResult; error?: string }>((resolve) =>
        dispatcher.deliver({
          provider: 'ns/p',
          providerType: 'webhook',
          dedupKey: 'k',
          settings: { ...settings, timeoutMs: 200 },
          prepare: () => Promise.resolve({ url: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/`, method: 'POST', headers: {}, body: '{}' }),
          done: (result, error) => resolve({ result, ...(error === undefined ? {} : { error }) }),
        }),
      );
      expect(outcome).toEqual({ result: 'failed', error: 'the request timed out' });
      expect(received).toBe(2);
      dispatcher.stop();
    } finally {
      hanging.closeAllConnections();
      await new Promise((resolve) => hanging.close(resolve));
    }
  });

  it('stop(): what is in flight or queued is given up, unreported; idle() resolves', async () => {
    const hanging = createServer(() => undefined);
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    try {
      const reported: string[] = [];
      const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: (_type, result) => reported.push(result) });
      for (const name of ['a', 'b']) {
        dispatcher.deliver({
          provider: 'ns/p',
          providerType: 'webhook',
          dedupKey: name,
          settings,
          prepare: () => Promise.resolve({ url: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/`, method: 'POST', headers: {}, body: name }),
          done: (result) => reported.push(`${name}:${result}`),
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      dispatcher.stop();
      await dispatcher.idle();
      expect(reported).toEqual([]);
    } finally {
      hanging.closeAllConnections();
      await new Promise((resolve) => hanging.close(resolve));
    }
  });

  it('the token bucket: a burst of `messages`, then one per interval/messages', () => {
    let now = 0;
    const bucket = new TokenBucket(3, 3_000, () => now);
    expect([bucket.tryTake(), bucket.tryTake(), bucket.tryTake()]).toEqual([0, 0, 0]);
    expect(bucket.tryTake()).toBe(1_000);
    now = 1_000;
    expect(bucket.tryTake()).toBe(0);
  });
});

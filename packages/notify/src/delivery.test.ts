// The dispatcher against a real local HTTP receiver: what counts as delivered, what is retried, what is not.
import { startHttpReceiver } from '@syncline/test-support';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { TokenBucket, createDispatcher, type Delivery, type DeliveryBatch, type DeliveryResult } from './delivery.ts';
import type { Message } from './payloads.ts';
import { createReceiverTransport } from './transport.ts';

const settings = { messages: 100, intervalMs: 60_000, timeoutMs: 2_000 };
// What the operator sends with (the receivers' undici clients), for every guarantee below.
const nodeHttpTransport = createReceiverTransport();
afterAll(() => nodeHttpTransport.close());

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

  it('answers are read to their end (past 64 KiB too), so one kept-alive connection carries every delivery', async () => {
    let connections = 0;
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('x'.repeat(100 * 1024)));
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const results: string[] = [];
      const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: () => undefined });
      for (const name of ['a', 'b', 'c'])
        dispatcher.deliver({
          provider: 'ns/p',
          providerType: 'webhook',
          dedupKey: name,
          settings,
          prepare: () => Promise.resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, method: 'POST', headers: {}, body: name }),
          done: (result) => results.push(`${name}:${result}`),
        });
      await dispatcher.idle();
      dispatcher.stop();
      expect(results).toEqual(['a:sent', 'b:sent', 'c:sent']);
      expect(connections).toBe(1);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('an answer cut short (the connection closes before its body ends) is retried, then fails without naming the receiver', async () => {
    let received = 0;
    const server = createServer((req, res) => {
      received++;
      req.resume();
      res.writeHead(200, { 'content-length': '1000' });
      res.write('only a part');
      setTimeout(() => res.destroy(), 20);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: () => undefined, attempts: 2, initialBackoffMs: 10 });
      const port = (server.address() as AddressInfo).port;
      const outcome = await new Promise<{ result: DeliveryResult; error?: string }>((resolve) =>
        dispatcher.deliver({
          provider: 'ns/p',
          providerType: 'webhook',
          dedupKey: 'k',
          settings,
          prepare: () => Promise.resolve({ url: `http://127.0.0.1:${port}/`, method: 'POST', headers: {}, body: '{}' }),
          done: (result, error) => resolve({ result, ...(error === undefined ? {} : { error }) }),
        }),
      );
      expect(outcome.result).toBe('failed');
      expect(outcome.error).not.toContain(String(port));
      expect(received).toBe(2);
      dispatcher.stop();
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
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

describe('batches', () => {
  const messageOf = (name: string): Message => ({
    event: {
      kind: 'ConfigSync',
      namespace: 'ns',
      name,
      labels: {},
      severity: 'info',
      reason: 'Synced',
      category: 'Applied',
      message: name,
      recovered: false,
      timestamp: '2026-11-25T12:00:00.000Z',
    },
    alert: `ns/${name}`,
  });
  /** A batch whose requests carry `per` messages each, the body their names joined (as a receiver's format would). */
  const batchOf = (url: () => string, name: string, plan: { windowMs: number; maxEvents: number; per?: number }): DeliveryBatch => ({
    windowMs: plan.windowMs,
    maxEvents: plan.maxEvents,
    message: messageOf(name),
    prepare: (messages) => {
      const per = plan.per ?? messages.length;
      const requests = [];
      for (let at = 0; at < messages.length; at += per) {
        const run = messages.slice(at, at + per);
        requests.push({ request: { url: url(), method: 'POST' as const, headers: {}, body: run.map((m) => m.event.name).join(',') }, count: run.length });
      }
      return Promise.resolve(requests);
    },
  });
  const batched = (receiverUrl: string, name: string, plan: { windowMs: number; maxEvents: number; per?: number }, results: string[]): Delivery => ({
    provider: 'ns/p',
    providerType: 'webhook',
    dedupKey: name,
    settings,
    prepare: () => Promise.reject(new Error('a batched delivery is prepared with its batch')),
    done: (result, error) => results.push(`${name}:${result}${error === undefined ? '' : `:${error}`}`),
    batch: batchOf(() => `${receiverUrl}/batch`, name, plan),
  });

  it('the first delivery opens a window; its end sends the batch as one request, each delivery told', async () => {
    await using receiver = await startHttpReceiver();
    const results: string[] = [];
    const counted: DeliveryResult[] = [];
    const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: (_type, result) => counted.push(result) });
    const opened = Date.now();
    for (const name of ['a', 'b', 'c']) dispatcher.deliver(batched(receiver.url, name, { windowMs: 400, maxEvents: 10 }, results));
    await dispatcher.idle();
    dispatcher.stop();
    expect(receiver.requests.map((r) => r.body)).toEqual(['a,b,c']);
    // A timer never fires early: the request left when the window ended, not before.
    expect((receiver.requests[0]?.at ?? 0) - opened).toBeGreaterThanOrEqual(390);
    expect(results).toEqual(['a:sent', 'b:sent', 'c:sent']);
    expect(counted).toEqual(['sent', 'sent', 'sent']);
  });

  it('maxEvents sends a batch before its window ends; the next delivery opens a new one', async () => {
    await using receiver = await startHttpReceiver();
    const results: string[] = [];
    const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: () => undefined });
    for (const name of ['a', 'b', 'c', 'd']) dispatcher.deliver(batched(receiver.url, name, { windowMs: 600_000, maxEvents: 2 }, results));
    // Both batches filled: neither waits for its ten minutes.
    await dispatcher.idle();
    dispatcher.stop();
    expect(receiver.requests.map((r) => r.body)).toEqual(['a,b', 'c,d']);
    expect(results).toEqual(['a:sent', 'b:sent', 'c:sent', 'd:sent']);
  });

  it('a batch split into several requests: each is sent, rate-limited and reported for the deliveries it carries', async () => {
    // The second request (c,d) is refused for good; the first and third are delivered.
    await using receiver = await startHttpReceiver({ respond: (r) => (r.body === 'c,d' ? { status: 400, body: 'too big' } : { status: 200, body: 'ok' }) });
    const results: string[] = [];
    const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: () => undefined });
    for (const name of ['a', 'b', 'c', 'd', 'e']) dispatcher.deliver(batched(receiver.url, name, { windowMs: 100, maxEvents: 5, per: 2 }, results));
    await dispatcher.idle();
    dispatcher.stop();
    expect(receiver.requests.map((r) => r.body)).toEqual(['a,b', 'c,d', 'e']);
    expect(results).toEqual(['a:sent', 'b:sent', 'c:failed:the receiver answered HTTP 400', 'd:failed:the receiver answered HTTP 400', 'e:sent']);
  });

  it('a failed batch is retried as a batch, with backoff, and told once', async () => {
    let calls = 0;
    await using receiver = await startHttpReceiver({ respond: () => ({ status: ++calls < 3 ? 503 : 200, body: 'ok' }) });
    const results: string[] = [];
    const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: () => undefined, attempts: 4, initialBackoffMs: 20 });
    for (const name of ['a', 'b', 'c']) dispatcher.deliver(batched(receiver.url, name, { windowMs: 50, maxEvents: 10 }, results));
    await dispatcher.idle();
    dispatcher.stop();
    expect(receiver.requests.map((r) => r.body)).toEqual(['a,b,c', 'a,b,c', 'a,b,c']);
    expect(results).toEqual(['a:sent', 'b:sent', 'c:sent']);
  });

  it('the bound counts deliveries gathered in a batch; duplicates are sent once; a batch that cannot be built fails all it holds', async () => {
    await using receiver = await startHttpReceiver();
    const results: string[] = [];
    const counted: DeliveryResult[] = [];
    const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: (_type, result) => counted.push(result), queueSize: 2 });
    for (const name of ['a', 'a', 'b', 'c']) dispatcher.deliver(batched(receiver.url, name, { windowMs: 100, maxEvents: 10 }, results));
    await dispatcher.idle();
    expect(results).toEqual(['a:deduplicated', 'c:dropped:the queue of this NotificationProvider is full (2 waiting)', 'a:sent', 'b:sent']);
    expect(counted.sort()).toEqual(['deduplicated', 'dropped', 'sent', 'sent']);
    const broken: Delivery = {
      ...batched(receiver.url, 'd', { windowMs: 50, maxEvents: 10 }, results),
      batch: { windowMs: 50, maxEvents: 10, message: messageOf('d'), prepare: () => Promise.reject(new Error('msteams needs the Workflows webhook URL')) },
    };
    dispatcher.deliver(broken);
    await dispatcher.idle();
    dispatcher.stop();
    expect(results.at(-1)).toBe('d:failed:msteams needs the Workflows webhook URL');
    expect(receiver.requests).toHaveLength(1);
  });

  it('a delivery that is not batched sends what was gathered first, in order', async () => {
    await using receiver = await startHttpReceiver();
    const results: string[] = [];
    const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: () => undefined });
    for (const name of ['a', 'b']) dispatcher.deliver(batched(receiver.url, name, { windowMs: 600_000, maxEvents: 10 }, results));
    dispatcher.deliver({
      provider: 'ns/p',
      providerType: 'webhook',
      dedupKey: 'c',
      settings,
      prepare: () => Promise.resolve({ url: `${receiver.url}/one`, method: 'POST', headers: {}, body: 'c' }),
      done: (result) => results.push(`c:${result}`),
    });
    await dispatcher.idle();
    dispatcher.stop();
    expect(receiver.requests.map((r) => r.body)).toEqual(['a,b', 'c']);
    expect(results).toEqual(['a:sent', 'b:sent', 'c:sent']);
  });

  it('stop() gives up a batch in its window: nothing is sent or told, the count is returned, idle() resolves', async () => {
    await using receiver = await startHttpReceiver();
    const results: string[] = [];
    const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: (_type, result) => results.push(result) });
    for (const name of ['a', 'b', 'c']) dispatcher.deliver(batched(receiver.url, name, { windowMs: 300, maxEvents: 10 }, results));
    expect(dispatcher.stop()).toBe(3);
    await dispatcher.idle();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.requests).toHaveLength(0);
    expect(results).toEqual([]);
    // After stop, nothing is taken.
    dispatcher.deliver(batched(receiver.url, 'd', { windowMs: 10, maxEvents: 10 }, results));
    await dispatcher.idle();
    expect(results).toEqual([]);
  });
});

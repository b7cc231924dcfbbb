// The REST client's transport (undici's connection pools) against local HTTP servers: what reaches the server
// (headers, credentials asked per request, basic auth), how answers come back (JSON, text, discarded, error
// Statuses), watch streams cut anywhere, and the guarantees that hold while a request waits for a connection:
// its deadline counts the wait, a write fenced meanwhile is never sent, a write under way is cut.
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { KubeApiError, createKubeRest } from './rest.ts';
import type { KubeConnection } from './transport.ts';

type Seen = { method: string; url: string; headers: IncomingMessage['headers']; body: string };

/** A local API server: `answer` responds (or not); every request it got is in `seen`, every connection it closed in `closed`. */
async function localServer(answer: (req: Seen, res: ServerResponse) => void): Promise<{
  url: string;
  seen: Seen[];
  connections: () => number;
  closed: () => number;
  close(): Promise<void>;
}> {
  const seen: Seen[] = [];
  const open = new Set<ServerResponse>();
  let closed = 0;
  const server = createHttpServer((req, res) => {
    open.add(res);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const got = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      seen.push(got);
      answer(got, res);
    });
  });
  let connections = 0;
  server.on('connection', (socket) => {
    connections++;
    socket.on('close', () => closed++);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    connections: () => connections,
    closed: () => closed,
    close: async () => {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const connectionTo = (server: string, extra: Partial<KubeConnection> = {}): KubeConnection => ({
  server,
  tls: {},
  authHeaders: () => Promise.resolve({}),
  ...extra,
});

const until = async (condition: () => boolean, what: string): Promise<void> => {
  const deadline = Date.now() + 30_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

const json = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
};

describe('createKubeRest over undici: what is sent and what comes back', () => {
  it('sends the method, path, query, body and headers, asking for the credential headers on every request', async () => {
    const server = await localServer((_req, res) => json(res, 200, { kind: 'ConfigMap' }));
    try {
      let asked = 0;
      const rest = await createKubeRest(connectionTo(server.url, { authHeaders: () => Promise.resolve({ Authorization: `Bearer token-${++asked}` }) }), {
        userAgent: 'syncline-test',
      });
      expect(
        await rest.request({ method: 'GET', path: '/api/v1/namespaces/a/configmaps', query: { labelSelector: 'x=y', limit: 5, skip: undefined } }),
      ).toEqual({
        kind: 'ConfigMap',
      });
      await rest.request({
        method: 'PATCH',
        path: '/api/v1/namespaces/a/configmaps/b',
        query: { fieldManager: 'syncline', force: true },
        contentType: 'application/apply-patch+yaml',
        body: { data: { é: 'ü' } },
      });
      expect(server.seen.map((s) => [s.method, s.url, s.headers['authorization'], s.headers['user-agent'], s.headers['accept']])).toEqual([
        ['GET', '/api/v1/namespaces/a/configmaps?labelSelector=x%3Dy&limit=5', 'Bearer token-1', 'syncline-test', 'application/json'],
        ['PATCH', '/api/v1/namespaces/a/configmaps/b?fieldManager=syncline&force=true', 'Bearer token-2', 'syncline-test', 'application/json'],
      ]);
      expect(server.seen[1]?.headers['content-type']).toBe('application/apply-patch+yaml');
      expect(server.seen[1]?.headers['content-length']).toBe(String(Buffer.byteLength(JSON.stringify({ data: { é: 'ü' } }))));
      expect(server.seen[1]?.body).toBe(JSON.stringify({ data: { é: 'ü' } }));
    } finally {
      await server.close();
    }
  });

  it('encodes a query as URLSearchParams does, merged into a query the path carries, and sends no body headers with a read', async () => {
    const server = await localServer((_req, res) => json(res, 200, {}));
    try {
      // One credential object for every request (a connection's cache): the headers built for one are reused.
      const auth = { Authorization: 'Bearer t' };
      const rest = await createKubeRest(connectionTo(server.url, { authHeaders: () => Promise.resolve(auth) }));
      const queries = [
        { fieldManager: 'syncline', limit: 1000, force: true },
        { labelSelector: 'syncline.dev/owner in (a b),tier!=x', fieldSelector: 'metadata.name=é*~' },
        { continue: "eyJ2Ijoi+/=!'()" },
      ];
      for (const query of queries) await rest.request({ method: 'GET', path: '/api/v1/configmaps', query });
      await rest.request({ method: 'PATCH', path: '/api/v1/namespaces/a/configmaps/b', body: {}, contentType: 'application/merge-patch+json' });
      await rest.request({ method: 'GET', path: '/metrics?name=a&keep=1', query: { name: 'b c', added: 'd' } });
      await rest.request({ method: 'GET', path: '/api' });
      const expected = queries.map(
        (query) => `/api/v1/configmaps?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString()}`,
      );
      expect(server.seen.map((s) => s.url)).toEqual([...expected, '/api/v1/namespaces/a/configmaps/b', '/metrics?name=b+c&keep=1&added=d', '/api']);
      expect(server.seen.map((s) => [s.method, s.headers['content-type'], s.headers['authorization']])).toEqual([
        ['GET', undefined, 'Bearer t'],
        ['GET', undefined, 'Bearer t'],
        ['GET', undefined, 'Bearer t'],
        ['PATCH', 'application/merge-patch+json', 'Bearer t'],
        ['GET', undefined, 'Bearer t'],
        ['GET', undefined, 'Bearer t'],
      ]);
    } finally {
      await server.close();
    }
  });

  it("sends the kubeconfig's username and password as basic auth, unless a credential header is set", async () => {
    const server = await localServer((_req, res) => json(res, 200, {}));
    try {
      const basic = await createKubeRest(connectionTo(server.url, { basicAuth: 'admin:pä ss' }));
      await basic.request({ method: 'GET', path: '/api' });
      const both = await createKubeRest(
        connectionTo(server.url, { basicAuth: 'admin:secret', authHeaders: () => Promise.resolve({ Authorization: 'Bearer t' }) }),
      );
      await both.request({ method: 'GET', path: '/api' });
      expect(server.seen.map((s) => s.headers['authorization'])).toEqual([`Basic ${Buffer.from('admin:pä ss').toString('base64')}`, 'Bearer t']);
    } finally {
      await server.close();
    }
  });

  it('answers text, discards a body when asked, and turns an error Status into a KubeApiError with the server message', async () => {
    const server = await localServer((req, res) => {
      if (req.url === '/metrics') {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end('apiserver_request_total 1\n');
      } else if (req.url.startsWith('/missing')) json(res, 404, { kind: 'Status', reason: 'NotFound', message: 'configmaps "x" not found' });
      else if (req.url === '/broken') {
        res.writeHead(502);
        res.end('bad gateway');
      } else json(res, 200, { big: 'x'.repeat(100_000) });
    });
    try {
      const rest = await createKubeRest(connectionTo(server.url));
      expect(await rest.request({ method: 'GET', path: '/metrics', text: true })).toBe('apiserver_request_total 1\n');
      expect(await rest.request({ method: 'POST', path: '/write', body: {}, discardBody: true })).toBeUndefined();
      expect(await rest.request<{ big: string }>({ method: 'GET', path: '/large' })).toEqual({ big: 'x'.repeat(100_000) });
      const missing = await rest.request({ method: 'GET', path: '/missing', discardBody: true }).catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(KubeApiError);
      expect(missing).toMatchObject({
        status: 404,
        reason: 'NotFound',
        serverMessage: 'configmaps "x" not found',
        message: 'GET /missing: 404 configmaps "x" not found',
      });
      expect(await rest.request({ method: 'GET', path: '/broken' }).catch((e: unknown) => e)).toMatchObject({
        status: 502,
        reason: 'Unknown',
        serverMessage: undefined,
        message: 'GET /broken: 502 bad gateway',
      });
    } finally {
      await server.close();
    }
  });

  it('lets go of an answer once its request settled, while the connection that carried it stays open', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const server = await localServer((_req, res) => json(res, 200, { items: Array.from({ length: 1000 }, (_, i) => ({ name: `item-${i}` })) }));
    try {
      const rest = await createKubeRest(connectionTo(server.url));
      const answers: WeakRef<object>[] = [];
      for (let i = 0; i < 3; i++) answers.push(new WeakRef(await rest.request<object>({ method: 'GET', path: '/api/v1/configmaps' })));
      await new Promise((resolve) => setTimeout(resolve, 10));
      gc();
      expect(answers.map((a) => a.deref() === undefined)).toEqual([true, true, true]);
      expect(server.closed()).toBe(0);
    } finally {
      await server.close();
    }
  });
});

describe('createKubeRest over undici: waiting for a connection', () => {
  it('counts the wait for a connection in the deadline, and never sends a request that gave up waiting', async () => {
    const server = await localServer((req, res) => (req.url === '/answered' ? json(res, 200, { ok: true }) : undefined));
    try {
      const rest = await createKubeRest(connectionTo(server.url), { requestSockets: 1 });
      const caller = new AbortController();
      const first = rest.request({ method: 'GET', path: '/first', signal: caller.signal, timeoutMs: 60_000 }).catch((e: unknown) => e);
      await until(() => server.seen.length === 1, 'the first request');
      // the only connection is taken: the second waits for it, within its deadline
      const second = await rest.request({ method: 'GET', path: '/second', timeoutMs: 300 }).catch((e: unknown) => e);
      expect(second).toBeInstanceOf(KubeApiError);
      expect(second).toMatchObject({ status: 0, reason: 'Timeout', message: 'GET /second: no answer within 0.3s' });
      const aborted = new AbortController();
      const third = rest.request({ method: 'GET', path: '/third', signal: aborted.signal }).catch((e: unknown) => e);
      aborted.abort();
      expect(await third).toMatchObject({ name: 'AbortError' });

      // the caller gives up the first: its connection is cut, the next one carries only what still waits
      caller.abort();
      expect(await first).toMatchObject({ name: 'AbortError' });
      expect(await rest.request({ method: 'GET', path: '/answered' })).toEqual({ ok: true });
      expect(server.seen.map((s) => s.url)).toEqual(['/first', '/answered']);
    } finally {
      await server.close();
    }
  });

  it('takes a request that gave up waiting out of the queue: the connection it waited for goes on serving the others', async () => {
    const release = Promise.withResolvers<void>();
    const server = await localServer((req, res) => {
      if (req.url === '/slow') void release.promise.then(() => json(res, 200, { slow: true }));
      else json(res, 200, { url: req.url });
    });
    try {
      const rest = await createKubeRest(connectionTo(server.url), { requestSockets: 1 });
      const slow = rest.request({ method: 'GET', path: '/slow' });
      await until(() => server.seen.length === 1, 'the slow request');
      const gaveUp = await Promise.all(
        Array.from({ length: 5 }, (_, i) => rest.request({ method: 'PATCH', path: `/gave-up-${i}`, body: {}, timeoutMs: 200 }).catch((e: unknown) => e)),
      );
      expect(gaveUp.map((e) => (e as KubeApiError).reason)).toEqual(['Timeout', 'Timeout', 'Timeout', 'Timeout', 'Timeout']);
      release.resolve();
      expect(await slow).toEqual({ slow: true });
      expect(await rest.request({ method: 'GET', path: '/next' })).toEqual({ url: '/next' });
      expect(server.seen.map((s) => s.url)).toEqual(['/slow', '/next']);
      expect([server.connections(), server.closed()]).toEqual([1, 0]);
    } finally {
      await server.close();
    }
  });

  it('the write fence cuts a write under way, fails one waiting for a connection without sending it, and lets reads go on', async () => {
    const server = await localServer((req, res) => (req.method === 'GET' ? json(res, 200, { read: req.url }) : undefined));
    try {
      const fence = new AbortController();
      const rest = await createKubeRest(connectionTo(server.url), { requestSockets: 1, writeFence: fence.signal });
      const underWay = rest.request({ method: 'PATCH', path: '/under-way', body: {} }).catch((e: unknown) => e);
      await until(() => server.seen.length === 1, 'the first write');
      const waiting = rest.request({ method: 'POST', path: '/waiting', body: {} }).catch((e: unknown) => e);
      fence.abort(new Error('lost the Lease'));
      for (const [error, path] of [
        [await underWay, '/under-way'],
        [await waiting, '/waiting'],
      ] as const) {
        expect(error).toBeInstanceOf(KubeApiError);
        expect(error).toMatchObject({ status: 0, reason: 'Fenced' });
        expect((error as Error).message).toContain(path);
      }
      await until(() => server.closed() === 1, 'the cut connection');
      expect(await rest.request({ method: 'DELETE', path: '/later' }).catch((e: unknown) => e)).toMatchObject({ reason: 'Fenced' });
      expect(await rest.request({ method: 'GET', path: '/read' })).toEqual({ read: '/read' });
      expect(server.seen.map((s) => s.url)).toEqual(['/under-way', '/read']);
    } finally {
      await server.close();
    }
  });
});

describe('createKubeRest over undici: watches', () => {
  /** A watch server that writes `parts` as they are, with a pause between them, then ends the stream. */
  async function streaming(parts: readonly string[], status = 200): Promise<Awaited<ReturnType<typeof localServer>>> {
    return localServer((_req, res) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      void (async () => {
        for (const part of parts) {
          res.write(part);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        res.end();
      })();
    });
  }

  it('passes on one event per line, however the stream is cut, after onOpen; a last line without a newline counts', async () => {
    const events = [
      { type: 'ADDED', object: { metadata: { name: 'ä', resourceVersion: '1' } } },
      { type: 'BOOKMARK', object: { metadata: { resourceVersion: '2' } } },
      { type: 'DELETED', object: { metadata: { name: 'c' } } },
    ];
    const text = `${JSON.stringify(events[0])}\n\n${JSON.stringify(events[1])}\r\n${JSON.stringify(events[2])}`;
    const bytes = Buffer.from(text);
    // cut inside the multi-byte character, inside a line, and right after a newline
    const at = [bytes.indexOf(Buffer.from('ä')) + 1, 30, bytes.indexOf(10) + 1].sort((a, b) => a - b);
    const parts = [bytes.subarray(0, at[0]), bytes.subarray(at[0], at[1]), bytes.subarray(at[1], at[2]), bytes.subarray(at[2])].map((b) =>
      b.toString('latin1'),
    );
    const server = await localServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      void (async () => {
        for (const part of parts) {
          res.write(Buffer.from(part, 'latin1'));
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        res.end();
      })();
    });
    try {
      const rest = await createKubeRest(connectionTo(server.url));
      const seen: unknown[] = [];
      await rest.watch(
        '/api/v1/configmaps',
        { resourceVersion: '0' },
        (e) => seen.push(e),
        new AbortController().signal,
        () => seen.push('open'),
      );
      expect(seen).toEqual(['open', ...events]);
      expect(server.seen[0]?.url).toBe('/api/v1/configmaps?timeoutSeconds=300&resourceVersion=0&watch=true');
    } finally {
      await server.close();
    }
  });

  it('fails a watch the server refuses, and one whose stream is not JSON', async () => {
    const refused = await streaming(['{"kind":"Status"}'], 410);
    const garbled = await streaming(['{"type":"ADDED","object":{}}\n', 'not json\n', '{"type":"ADDED","object":{}}\n']);
    try {
      const signal = new AbortController().signal;
      const opened: string[] = [];
      await expect(
        (await createKubeRest(connectionTo(refused.url))).watch(
          '/w',
          {},
          () => undefined,
          signal,
          () => opened.push('refused'),
        ),
      ).rejects.toMatchObject({
        status: 410,
        reason: 'WatchFailed',
      });
      const seen: unknown[] = [];
      await expect(
        (await createKubeRest(connectionTo(garbled.url))).watch(
          '/w',
          {},
          (e) => seen.push(e),
          signal,
          () => opened.push('garbled'),
        ),
      ).rejects.toThrow(SyntaxError);
      expect(seen).toEqual([{ type: 'ADDED', object: {} }]);
      expect(opened).toEqual(['garbled']);
    } finally {
      await refused.close();
      await garbled.close();
    }
  });

  it('ends a watch quietly when its caller aborts it, whether it is streaming or still connecting', async () => {
    const server = await localServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"type":"ADDED","object":{}}\n');
    });
    try {
      const rest = await createKubeRest(connectionTo(server.url));
      const streamingAbort = new AbortController();
      const open = Promise.withResolvers<void>();
      const watching = rest.watch('/w', {}, () => open.resolve(), streamingAbort.signal);
      await open.promise;
      streamingAbort.abort();
      await expect(watching).resolves.toBeUndefined();
      const early = new AbortController();
      early.abort();
      await expect(rest.watch('/w', {}, () => undefined, early.signal)).resolves.toBeUndefined();
    } finally {
      await server.close();
    }
  });
});

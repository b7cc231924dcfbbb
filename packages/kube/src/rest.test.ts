// The REST client's deadlines: a server that accepts and never answers fails the request with an error that
// says so, instead of holding it (and the reconcile waiting on it) forever; a watch gone silent ends.
import { createServer as createHttpServer, type ServerResponse } from 'node:http';
import { createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { KubeApiError, createKubeRest } from './rest.ts';

/** A server that accepts connections and never answers. */
async function silentServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('createKubeRest: request deadlines', () => {
  it('fails a request the server never answers once its deadline passes', async () => {
    const silent = await silentServer();
    try {
      const rest = await createKubeRest({ server: silent.url, tls: {}, authHeaders: () => Promise.resolve({}) });
      const error = await rest.request({ method: 'GET', path: '/api', timeoutMs: 300 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(KubeApiError);
      expect(error).toMatchObject({ status: 0, reason: 'Timeout', message: 'GET /api: no answer within 0.3s' });
    } finally {
      await silent.close();
    }
  });

  it("keeps the caller's own abort an abort, not a timeout", async () => {
    const silent = await silentServer();
    try {
      const rest = await createKubeRest({ server: silent.url, tls: {}, authHeaders: () => Promise.resolve({}) });
      const abort = new AbortController();
      const pending = rest.request({ method: 'GET', path: '/api', signal: abort.signal, timeoutMs: 60_000 }).catch((e: unknown) => e);
      abort.abort();
      const error = await pending;
      expect(error).not.toBeInstanceOf(KubeApiError);
      expect((error as Error).name).toBe('AbortError');
    } finally {
      await silent.close();
    }
  });
});

describe('createKubeRest: hung watches', () => {
  /** A server that answers a watch with its headers and one event, then stays silent with the socket open. */
  async function frozenWatchServer(): Promise<{ url: string; close(): Promise<void> }> {
    const responses = new Set<ServerResponse>();
    const server = createHttpServer((_req, res) => {
      responses.add(res);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '7' } } })}\n`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    return {
      url: `http://127.0.0.1:${port}`,
      close: async () => {
        for (const res of responses) res.destroy();
        await new Promise((resolve) => server.close(resolve));
      },
    };
  }

  it('gives up a watch with bookmarks that stays silent past the idle limit, after passing on what it heard', async () => {
    const server = await frozenWatchServer();
    try {
      const rest = await createKubeRest({ server: server.url, tls: {}, authHeaders: () => Promise.resolve({}) }, { watchIdleMs: 300 });
      const events: unknown[] = [];
      const started = Date.now();
      await rest.watch('/api/v1/configmaps', { allowWatchBookmarks: true, timeoutSeconds: 300 }, (e) => events.push(e), new AbortController().signal);
      expect(events).toEqual([{ type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '7' } } }]);
      // ended by the idle limit, far before the server-side timeout and its grace
      expect(Date.now() - started).toBeLessThan(60_000);
    } finally {
      await server.close();
    }
  });

  it('keeps a watch with bookmarks that keeps being heard from, however long it runs past the idle limit', async () => {
    const responses = new Set<ServerResponse>();
    const server = createHttpServer((_req, res) => {
      responses.add(res);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      let n = 0;
      const beat = setInterval(() => {
        if (res.destroyed) clearInterval(beat);
        else res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: String(++n) } } })}\n`);
      }, 50);
      res.on('close', () => clearInterval(beat));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const rest = await createKubeRest({ server: url, tls: {}, authHeaders: () => Promise.resolve({}) }, { watchIdleMs: 400 });
      const abort = new AbortController();
      let events = 0;
      let ended = false;
      const watching = rest
        .watch('/api/v1/configmaps', { allowWatchBookmarks: true, timeoutSeconds: 300 }, () => events++, abort.signal)
        .then(() => (ended = true));
      // five idle limits: a bookmark every 50 ms keeps it open
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(ended).toBe(false);
      expect(events).toBeGreaterThan(5);
      abort.abort();
      await watching;
      expect(ended).toBe(true);
    } finally {
      for (const res of responses) res.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('leaves a watch without bookmarks to its timeoutSeconds (silence is normal there)', async () => {
    const server = await frozenWatchServer();
    try {
      const rest = await createKubeRest({ server: server.url, tls: {}, authHeaders: () => Promise.resolve({}) }, { watchIdleMs: 300 });
      const abort = new AbortController();
      let ended = false;
      const watching = rest.watch('/api/v1/configmaps', { timeoutSeconds: 300 }, () => undefined, abort.signal).then(() => (ended = true));
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(ended).toBe(false);
      abort.abort();
      await watching;
      expect(ended).toBe(true);
    } finally {
      await server.close();
    }
  });
});

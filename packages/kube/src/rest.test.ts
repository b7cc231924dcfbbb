// The REST client's deadline: a server that accepts and never answers fails the request with an error that
// says so, instead of holding it (and the reconcile waiting on it) forever.
import { createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { KubeApiError, createKubeRest } from './rest.ts';

describe('createKubeRest: request deadlines', () => {
  it('fails a request the server never answers once its deadline passes', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      const rest = await createKubeRest({ server: `http://127.0.0.1:${port}`, tls: {}, authHeaders: () => Promise.resolve({}) });
      const error = await rest.request({ method: 'GET', path: '/api', timeoutMs: 300 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(KubeApiError);
      expect(error).toMatchObject({ status: 0, reason: 'Timeout', message: 'GET /api: no answer within 0.3s' });
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it("keeps the caller's own abort an abort, not a timeout", async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      const rest = await createKubeRest({ server: `http://127.0.0.1:${port}`, tls: {}, authHeaders: () => Promise.resolve({}) });
      const abort = new AbortController();
      const pending = rest.request({ method: 'GET', path: '/api', signal: abort.signal, timeoutMs: 60_000 }).catch((e: unknown) => e);
      abort.abort();
      const error = await pending;
      expect(error).not.toBeInstanceOf(KubeApiError);
      expect((error as Error).name).toBe('AbortError');
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

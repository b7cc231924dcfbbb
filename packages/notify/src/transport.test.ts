// The receivers' transport against real local servers: what it sends, that one connection carries a receiver's
// messages, an abort, an unreachable receiver, a receiver's own CA over https, and a proxy (the Git transport's).
import { createTestCa, startConnectProxy } from '@syncline/test-support';
import type { HttpRequest, HttpTransport } from '@syncline/source-git';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createReceiverTransport } from './transport.ts';

type Seen = { method: string; path: string; headers: IncomingMessage['headers']; body: string };

async function listen(server: Server): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () =>
      new Promise((resolve) => {
        (server as Server & { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

function recording(seen: Seen[], answer: (res: ServerResponse) => void) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      answer(res);
    });
  };
}

const post = (url: string, body: string, extra: Partial<HttpRequest> = {}): HttpRequest => ({
  url,
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-syncline-signature': 'sha256=abc' },
  body: Buffer.from(body),
  signal: new AbortController().signal,
  ...extra,
});

async function text(body: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

describe('receiver transport', () => {
  it('sends the method, path, query, headers and body; one kept-alive connection carries every message of a receiver', async () => {
    const seen: Seen[] = [];
    const server = await listen(createServer(recording(seen, (res) => res.writeHead(201, { 'x-answer': 'yes' }).end('{"ok":true}'))));
    const transport = createReceiverTransport();
    try {
      for (const n of [1, 2, 3, 4, 5]) {
        const response = await transport.request(post(`http://127.0.0.1:${server.port}/hook/path?n=${n}`, `{"n":${n}}`));
        expect(response.statusCode).toBe(201);
        expect(response.headers['x-answer']).toBe('yes');
        expect(await text(response.body)).toBe('{"ok":true}');
      }
      expect(seen.map((s) => [s.method, s.path, s.body])).toEqual([1, 2, 3, 4, 5].map((n) => ['POST', `/hook/path?n=${n}`, `{"n":${n}}`]));
      expect(seen[0]?.headers).toMatchObject({ 'content-type': 'application/json', 'x-syncline-signature': 'sha256=abc', 'content-length': '7' });
      expect(server.connections()).toBe(1);
    } finally {
      await transport.close();
      await server.close();
    }
  });

  it('keeps the first 64 KiB of a long answer and reads the rest, so the connection is kept', async () => {
    const server = await listen(createServer(recording([], (res) => res.end('y'.repeat(200 * 1024)))));
    const transport = createReceiverTransport();
    try {
      for (const _ of [1, 2]) expect((await text((await transport.request(post(`http://127.0.0.1:${server.port}/`, '{}'))).body)).length).toBe(64 * 1024);
      expect(server.connections()).toBe(1);
    } finally {
      await transport.close();
      await server.close();
    }
  });

  it('an abort rejects at once, sent or not; the receiver is reachable again after it', async () => {
    const seen: Seen[] = [];
    let hang = true;
    const server = await listen(createServer(recording(seen, (res) => (hang ? undefined : res.end('ok')))));
    const transport = createReceiverTransport();
    try {
      const abort = new AbortController();
      const pending = transport.request(post(`http://127.0.0.1:${server.port}/`, 'a', { signal: abort.signal }));
      await expect.poll(() => seen.length).toBe(1);
      abort.abort();
      await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
      const before = new AbortController();
      before.abort();
      await expect(transport.request(post(`http://127.0.0.1:${server.port}/`, 'b', { signal: before.signal }))).rejects.toMatchObject({ name: 'AbortError' });
      hang = false;
      const response = await transport.request(post(`http://127.0.0.1:${server.port}/`, 'c'));
      expect(response.statusCode).toBe(200);
      expect(seen.map((s) => s.body)).toEqual(['a', 'c']);
    } finally {
      await transport.close();
      await server.close();
    }
  });

  it('an unreachable receiver fails with its error code (which the delivery words without the address)', async () => {
    const server = await listen(createServer());
    const { port } = server;
    await server.close();
    const transport = createReceiverTransport();
    try {
      const error = (await transport.request(post(`http://127.0.0.1:${port}/secret-token-path`, '{}')).catch((e: unknown) => e)) as Error & { code?: string };
      expect(error.code).toBe('ECONNREFUSED');
    } finally {
      await transport.close();
    }
  });

  it("https with the receiver's own CA (beside the system's roots); without it the certificate is refused", async () => {
    const ca = await createTestCa();
    const seen: Seen[] = [];
    const server = await listen(
      createHttpsServer(
        { key: ca.server.key, cert: ca.server.cert },
        recording(seen, (res) => res.end('ok')),
      ),
    );
    const transport = createReceiverTransport();
    try {
      const url = `https://127.0.0.1:${server.port}/hook`;
      expect((await transport.request(post(url, 'a', { ca: ca.caCert }))).statusCode).toBe(200);
      expect((await transport.request(post(url, 'b', { ca: ca.caCert }))).statusCode).toBe(200);
      await expect(transport.request(post(url, 'c'))).rejects.toThrow();
      expect(seen.map((s) => s.body)).toEqual(['a', 'b']);
    } finally {
      await transport.close();
      await server.close();
    }
  });

  it("through a proxy a message goes by the Git source's transport (a CONNECT tunnel)", async () => {
    const seen: Seen[] = [];
    const server = await listen(createServer(recording(seen, (res) => res.end('ok'))));
    await using proxy = await startConnectProxy();
    const calls: string[] = [];
    const viaProxy: HttpTransport = {
      request: async (req) => {
        calls.push(req.proxy?.url ?? '');
        const { nodeHttpTransport } = await import('@syncline/source-git');
        return nodeHttpTransport.request(req);
      },
    };
    const transport = createReceiverTransport(viaProxy);
    try {
      const response = await transport.request(post(`http://127.0.0.1:${server.port}/hook`, 'a', { proxy: { url: proxy.url } }));
      expect(response.statusCode).toBe(200);
      expect(calls).toEqual([proxy.url]);
      expect(proxy.tunnels()).toEqual([`127.0.0.1:${server.port}`]);
      expect(seen.map((s) => s.body)).toEqual(['a']);
    } finally {
      await transport.close();
      await server.close();
    }
  });
});

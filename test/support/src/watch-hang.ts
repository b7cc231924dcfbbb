// A hung watch socket (for the soak and the hung-watch tests): an HTTPS proxy in front of the API server that,
// on command, stops forwarding the bytes of every watch stream open at that moment without closing anything,
// the way a stateful firewall or a NAT that dropped its entry leaves a long-lived connection: the client sees
// neither an error nor an end, only silence. The client must notice by itself (a watch deadline) and watch
// again; until it gives up, the frozen stream stays frozen. Ordinary requests pass through untouched, and so
// do watches opened later.
//
// It terminates TLS with the control plane's own serving certificate (which names 127.0.0.1 whatever the
// port), so it can tell a watch from a request by its URL; the bearer token passes through unchanged.
import { Agent, createServer, request, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export type WatchHangProxy = {
  readonly port: number;
  /** Freezes every watch stream open now; returns how many. */
  hangOpenWatches(): number;
  /** Watch streams open now and not frozen. */
  openWatches(): number;
  /** Watches frozen so far, how many the client gave up on and how long each took (ms), and those still frozen. */
  tally(): { frozen: number; abandoned: readonly Abandoned[]; stillFrozen: number; stillFrozenPaths: string[] };
  /** Whether the client connection from this port (a TCP proxy's upstream side) carries a frozen stream. */
  carriesFrozen(clientPort: number): boolean;
  close(): Promise<void>;
};

/** A frozen stream the client closed: when (ms since epoch), and how long after it was frozen. */
export type Abandoned = { readonly at: number; readonly afterMs: number };

type Stream = { readonly path: string; readonly upstream: IncomingMessage; readonly client: ServerResponse; readonly clientPort: number; frozenAt?: number };

/** `dataDir`: the control plane's data directory (its pki/ holds the serving certificate, its key and the CA). */
export async function startWatchHangProxy(options: { dataDir: string; upstream: { host: string; port: number } }): Promise<WatchHangProxy> {
  const pki = join(options.dataDir, 'pki');
  const [cert, key, ca] = await Promise.all(['apiserver.crt', 'apiserver.key', 'ca.crt'].map((f) => readFile(join(pki, f))));
  const agent = new Agent({ keepAlive: true, ca, maxSockets: Infinity });
  const open = new Set<Stream>();
  const abandoned: Abandoned[] = [];
  let frozen = 0;
  const sockets = new Set<Socket>();

  const server: Server = createServer({ cert, key }, (req, res) => {
    const isWatch = /[?&]watch=(true|1)(&|$)/.test(req.url ?? '');
    const headers = { ...req.headers, host: `${options.upstream.host}:${options.upstream.port}` };
    const forward = request({ host: options.upstream.host, port: options.upstream.port, method: req.method, path: req.url, headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      if (!isWatch) {
        answer.on('error', () => res.destroy());
        answer.pipe(res);
        return;
      }
      const stream: Stream = { path: (req.url ?? '').split('?')[0] ?? '', upstream: answer, client: res, clientPort: req.socket.remotePort ?? 0 };
      open.add(stream);
      answer.pipe(res);
      // The API server ended the stream abruptly: so does the client's side, unless it is frozen (silent, open).
      answer.on('error', () => {
        if (stream.frozenAt === undefined) res.destroy();
      });
      res.once('close', () => {
        open.delete(stream);
        if (stream.frozenAt !== undefined) abandoned.push({ at: Date.now(), afterMs: Date.now() - stream.frozenAt });
        answer.destroy();
      });
    });
    forward.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    // The client went away mid-answer (a cut, a watch given up): the upstream request goes too.
    res.on('close', () => {
      if (!res.writableFinished) forward.destroy();
    });
    req.pipe(forward);
  });
  // Idle client connections stay open (as the API server's do): the operator's pooled sockets must not be
  // closed under it by the proxy, only by the faults.
  server.keepAliveTimeout = 0;
  server.on('secureConnection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('tlsClientError', () => undefined); // a connection the TCP proxy cut mid-handshake
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    hangOpenWatches() {
      let count = 0;
      for (const stream of open) {
        if (stream.frozenAt !== undefined) continue;
        // Not a byte more reaches the client, nor the end when the server closes the watch: silence.
        stream.upstream.unpipe(stream.client);
        stream.upstream.pause();
        stream.frozenAt = Date.now();
        count++;
      }
      frozen += count;
      return count;
    },
    openWatches() {
      let count = 0;
      for (const stream of open) if (stream.frozenAt === undefined) count++;
      return count;
    },
    carriesFrozen(clientPort) {
      for (const stream of open) if (stream.frozenAt !== undefined && stream.clientPort === clientPort) return true;
      return false;
    },
    tally() {
      const still = [...open].filter((s) => s.frozenAt !== undefined);
      return { frozen, abandoned, stillFrozen: still.length, stillFrozenPaths: still.map((s) => s.path) };
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      agent.destroy();
      await closed;
    },
  };
}

// The two proxies the soak puts between the operator and its peers, both on 127.0.0.1: a TCP proxy in front
// of the API server that can cut every connection and refuse new ones (an API-server outage, as a rolling
// control-plane upgrade or a network partition looks to the operator), and an HTTP proxy in front of the test
// Git server that can truncate upload-pack responses (faults the Git server's own `behavior` hook lacks).
import { request as httpRequest, createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import { createServer as createTcpServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export type ApiProxy = {
  readonly port: number;
  /**
   * Destroys every proxied connection (but those `spare` names) and stops accepting (new connections are
   * refused); returns how many were cut.
   */
  cut(): Promise<number>;
  /** Accepts again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
};

/**
 * `spare`: connections a cut leaves alone, by the local port of their upstream side (a hung watch socket
 * behind this proxy must stay hung through a cut, so that only the operator's own deadline ends it).
 */
export async function startApiProxy(target: { host: string; port: number; spare?: (upstreamLocalPort: number) => boolean }): Promise<ApiProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  const newServer = (): Server =>
    createTcpServer((client) => {
      const upstream = connect(target.port, target.host);
      const pair = { client, upstream };
      pairs.add(pair);
      const close = (): void => {
        pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.once('close', close);
      upstream.once('close', close);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
  const listen = (server: Server, port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as AddressInfo).port);
      });
    });

  let server: Server | undefined = newServer();
  const port = await listen(server, 0);
  const stopListening = async (options: { spareSome: boolean }): Promise<number> => {
    const current = server;
    server = undefined;
    const closed = current === undefined ? Promise.resolve() : new Promise<void>((resolve) => current.close(() => resolve()));
    let count = 0;
    for (const pair of [...pairs]) {
      if (options.spareSome && target.spare?.(pair.upstream.localPort ?? 0) === true) continue;
      pair.client.destroy();
      pair.upstream.destroy();
      count += 2;
    }
    // The listening socket is closed at once; the callback waits for the connections, spared ones included.
    if (!options.spareSome) await closed;
    return count;
  };
  return {
    port,
    cut: () => stopListening({ spareSome: true }),
    async restore() {
      if (server !== undefined) return;
      // The port was ours a moment ago; another process taking it in between is unlikely but retried for.
      for (let attempt = 0; ; attempt++) {
        const next = newServer();
        try {
          await listen(next, port);
          server = next;
          return;
        } catch (error) {
          if (attempt >= 50) throw error;
          await sleep(100);
        }
      }
    },
    async close() {
      await stopListening({ spareSome: false });
    },
  };
}

export type GitFaultMode = 'truncate' | 'reset';

export type GitProxy = {
  /** Base URL, e.g. http://127.0.0.1:1234 (no trailing slash): repository URLs on it name the same repos. */
  readonly url: string;
  /** Faults for upload-pack responses from now on; undefined passes everything through. */
  setFault(mode: GitFaultMode | undefined): void;
  /** Responses cut so far, by mode. */
  readonly cut: Record<GitFaultMode, number>;
  close(): Promise<void>;
};

/**
 * `truncate`: the pack is cut at a pkt-line boundary (the first pack-data packet is split in two valid
 * packets and only the first is sent) and the response ends cleanly, so only the pack's own framing shows
 * the loss. `reset`: the same cut mid-packet, then the connection is reset.
 */
export async function startGitProxy(upstreamUrl: string, random: () => number): Promise<GitProxy> {
  const upstream = new URL(upstreamUrl);
  const cut: Record<GitFaultMode, number> = { truncate: 0, reset: 0 };
  const sockets = new Set<Socket>();
  let fault: GitFaultMode | undefined;

  const server = createHttpServer((req, res) => {
    const mode = req.method === 'POST' && (req.url ?? '').endsWith('/git-upload-pack') ? fault : undefined;
    const headers: IncomingHttpHeaders = { ...req.headers, host: upstream.host };
    const forward = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
      const status = answer.statusCode ?? 502;
      if (mode === undefined || status !== 200) {
        res.writeHead(status, answer.headers);
        answer.pipe(res);
        return;
      }
      const { 'content-length': _length, ...rest } = answer.headers;
      res.writeHead(status, rest);
      const packets = new PktLineSplitter();
      answer.on('data', (chunk: Buffer) => {
        if (res.writableEnded || res.destroyed) return;
        for (const packet of packets.push(chunk)) {
          const payload = packet.subarray(4);
          if (!packets.broken && packet.length > 6 && payload[0] === 1) {
            // The first pack-data packet with at least two bytes of pack: keep a random prefix of it.
            const keep = 1 + Math.floor(random() * (payload.length - 2));
            cut[mode]++;
            answer.destroy();
            if (mode === 'truncate') {
              res.end(pktLine(payload.subarray(0, keep)));
            } else {
              res.write(packet.subarray(0, 4 + keep), () => res.destroy());
            }
            return;
          }
          res.write(packet);
        }
      });
      answer.on('end', () => {
        if (!res.writableEnded) res.end(packets.rest());
      });
      answer.on('error', () => res.destroy());
    });
    forward.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    res.on('close', () => forward.destroy());
    req.pipe(forward);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    setFault: (mode) => (fault = mode),
    cut,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

function pktLine(payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from((payload.length + 4).toString(16).padStart(4, '0')), payload]);
}

/** Splits a Git pkt-line stream into whole packets (flush, delimiter and response-end packets are 4 bytes). */
class PktLineSplitter {
  #buffer = Buffer.alloc(0);
  #broken = false;

  /** The stream was not pkt-line framed: what push returns from now on is raw bytes. */
  get broken(): boolean {
    return this.#broken;
  }

  push(chunk: Buffer): Buffer[] {
    this.#buffer = Buffer.concat([this.#buffer, chunk]);
    const packets: Buffer[] = [];
    while (!this.#broken && this.#buffer.length >= 4) {
      const header = this.#buffer.subarray(0, 4).toString('latin1');
      const length = /^[0-9a-f]{4}$/.test(header) ? Number.parseInt(header, 16) : NaN;
      // Not pkt-line framing (it never happens with upload-pack): pass the rest through untouched.
      if (Number.isNaN(length) || length === 3) this.#broken = true;
      else {
        const size = length < 4 ? 4 : length;
        if (this.#buffer.length < size) break;
        packets.push(this.#buffer.subarray(0, size));
        this.#buffer = this.#buffer.subarray(size);
      }
    }
    if (this.#broken && this.#buffer.length > 0) {
      packets.push(this.#buffer);
      this.#buffer = Buffer.alloc(0);
    }
    return packets;
  }

  rest(): Buffer {
    return this.#buffer;
  }
}

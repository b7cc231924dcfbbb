// A forward proxy for tests, as corporate networks run them: it answers HTTP CONNECT host:port with a TCP
// tunnel (and nothing else), optionally demanding basic credentials (407 without them), and counts tunnels.
import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';

export type ConnectProxy = AsyncDisposable & {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  /** Tunnels opened so far, by `host:port`. */
  tunnels(): readonly string[];
  /** CONNECTs refused for missing or wrong credentials. */
  refused(): number;
  close(): Promise<void>;
};

export async function startConnectProxy(options: { auth?: { username: string; password: string } } = {}): Promise<ConnectProxy> {
  const opened: string[] = [];
  const sockets = new Set<Socket>();
  let refusals = 0;
  const expected = options.auth === undefined ? undefined : `Basic ${Buffer.from(`${options.auth.username}:${options.auth.password}`).toString('base64')}`;
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = createServer((_req, res) => {
    // A plain request (not CONNECT): this proxy tunnels only.
    res.writeHead(405, { 'content-type': 'text/plain' }).end('CONNECT only\n');
  });
  server.on('connection', track);
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    if (expected !== undefined && req.headers['proxy-authorization'] !== expected) {
      refusals++;
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const authority = req.url ?? '';
    const at = authority.lastIndexOf(':');
    const host = authority.slice(0, at).replace(/^\[|\]$/g, '');
    const port = Number(authority.slice(at + 1));
    const upstream = connect(port, host, () => {
      opened.push(authority);
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    track(upstream);
    upstream.on('error', () => client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n'));
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const close = async (): Promise<void> => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return {
    url: `http://127.0.0.1:${port}`,
    tunnels: () => [...opened],
    refused: () => refusals,
    close,
    [Symbol.asyncDispose]: close,
  };
}

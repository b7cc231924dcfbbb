// A TCP proxy in front of a cluster's API server, for tests of a cluster that stops answering: it forwards,
// or hangs (accepts connections and never answers, the hard case for a client), and can cut every open
// connection so kept-alive ones feel the change too. Loopback only.
import { createServer, connect, type Server, type Socket } from 'node:net';

export type ClusterProxy = {
  readonly port: number;
  /** Hang (true) or forward (false); either way every open connection is cut. */
  setHang(hang: boolean): void;
  close(): Promise<void>;
};

export async function startClusterProxy(targetPort: number): Promise<ClusterProxy> {
  const sockets = new Set<Socket>();
  let hang = false;
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server: Server = createServer((client) => {
    track(client);
    if (hang) return;
    const upstream = connect(targetPort, '127.0.0.1');
    track(upstream);
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const cut = (): void => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    port: (server.address() as { port: number }).port,
    setHang(next) {
      hang = next;
      cut();
    },
    close: () => {
      cut();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

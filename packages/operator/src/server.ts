// /healthz (the process makes progress: see Manager.live), /readyz (caches synced and watches alive),
// /metrics (prom-client).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Liveness } from './manager.ts';
import type { Metrics } from './metrics.ts';

export type ProbeServer = { address: string; close(): Promise<void> };

export function parseAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  const raw = colon <= 0 ? '0.0.0.0' : address.slice(0, colon);
  // [::]:9292 and [fd00::1]:9292: an IPv6 host is written in brackets.
  const host = raw.startsWith('[') && raw.endsWith(']') ? raw.slice(1, -1) : raw;
  const port = Number(address.slice(colon + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`"${address}" is not HOST:PORT`);
  return { host, port };
}

export async function listen(server: Server, address: string): Promise<string> {
  const { host, port } = parseAddress(address);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  return `${bound.address}:${bound.port}`;
}

export async function startProbeServer(options: {
  address: string;
  metrics: Metrics;
  ready: () => boolean;
  live: () => Liveness;
  logger: Logger;
}): Promise<ProbeServer> {
  let failing: string | undefined;
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') {
      const live = options.live();
      const reason = live.ok ? undefined : live.reason;
      // Once per change, not per probe: the kubelet asks every few seconds.
      if (reason !== failing && reason !== undefined) options.logger.error({ reason }, 'liveness failing');
      failing = reason;
      res.writeHead(live.ok ? 200 : 500, { 'Content-Type': 'text/plain' }).end(live.ok ? 'ok' : live.reason);
    } else if (path === '/readyz') {
      const ready = options.ready();
      res.writeHead(ready ? 200 : 503, { 'Content-Type': 'text/plain' }).end(ready ? 'ok' : 'caches not synced or watches down');
    } else if (path === '/metrics') {
      options.metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': options.metrics.registry.contentType }).end(text),
        (error: unknown) => {
          options.logger.warn({ err: String(error) }, 'metrics failed');
          res.writeHead(500).end();
        },
      );
    } else {
      res.writeHead(404).end();
    }
  });
  const address = await listen(server, options.address);
  return {
    address,
    // Kept-alive probe and scrape connections must not hold the port past this process's end.
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

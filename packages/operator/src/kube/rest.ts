// A small Kubernetes REST client over node:https with keep-alive: the operator's watches, status
// patches, events and leases. Typed clients are not worth their per-call overhead on these hot paths.
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { request as httpRequest } from 'node:http';
import { createInterface } from 'node:readline';
import { ApiError as KubeApiError, agentFor, toKubeConnection, type KubeConfigLike, type KubeConnection } from '@syncline/apply';

/** The API server answered with an error status: the same class apply's client throws. */
export { ApiError as KubeApiError } from '@syncline/apply';

export type KubeRequest = {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly query?: Record<string, string | number | boolean | undefined>;
  readonly body?: unknown;
  readonly contentType?: string;
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
  /** Resolve with the response text instead of parsed JSON (e.g. /metrics). */
  readonly text?: boolean;
};

export type KubeRest = {
  readonly server: string;
  request<T>(req: KubeRequest): Promise<T>;
  /** Streams a watch: one parsed JSON event per line until the server closes or the signal aborts. */
  watch(path: string, query: Record<string, string | number | boolean | undefined>, onEvent: (event: unknown) => void, signal: AbortSignal): Promise<void>;
};

function url(server: string, path: string, query: KubeRequest['query']): URL {
  const u = new URL(path, server);
  for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined) u.searchParams.set(key, String(value));
  return u;
}

/** A REST client for a connection (or for a client-node KubeConfig's current context: tests and benches). */
export async function createKubeRest(target: KubeConnection | KubeConfigLike, options: { userAgent?: string } = {}): Promise<KubeRest> {
  const connection = await toKubeConnection(target);
  const server = connection.server;
  const agent = agentFor(connection, { maxSockets: 32 });
  // Watches apart from requests: each watch holds its socket for as long as it runs (HTTP/1.1), so watches
  // sharing the requests' bounded pool would, once there are enough of them (a Continuous NamespaceReplication
  // alone watches 15 kinds), leave every request queued for a socket that never frees.
  const watchAgent = agentFor(connection, { maxSockets: Infinity });
  const userAgent = options.userAgent ?? 'syncline';
  const isHttps = server.startsWith('https:');

  const send = (req: KubeRequest & { watch?: boolean }, onResponse: (status: number, body: NodeJS.ReadableStream) => void, reject: (error: Error) => void): void => {
    const target = url(server, req.path, req.query);
    const payload = req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    connection.authHeaders().then((auth) => {
      const opts: RequestOptions = {
        method: req.method,
        agent: isHttps ? (req.watch === true ? watchAgent : agent) : undefined,
        auth: connection.basicAuth,
        headers: {
          ...auth,
          'User-Agent': userAgent,
          Accept: 'application/json',
          ...(payload !== undefined ? { 'Content-Type': req.contentType ?? 'application/json', 'Content-Length': Buffer.byteLength(payload) } : {}),
        },
        signal: req.signal,
        timeout: req.timeoutMs,
      };
      const r = (isHttps ? httpsRequest : httpRequest)(target, opts, (res) => onResponse(res.statusCode ?? 0, res));
      r.on('error', reject);
      r.on('timeout', () => r.destroy(new Error(`${req.method} ${req.path}: timed out after ${req.timeoutMs}ms`)));
      r.end(payload);
    }, reject);
  };

  return {
    server,
    request<T>(req: KubeRequest): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        send(
          { timeoutMs: 30_000, ...req },
          (status, body) => {
            const chunks: Buffer[] = [];
            body.on('data', (c: Buffer) => chunks.push(c));
            body.on('error', reject);
            body.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              let parsed: unknown;
              try {
                parsed = text === '' ? undefined : JSON.parse(text);
              } catch {
                parsed = undefined;
              }
              if (status >= 200 && status < 300) {
                resolve((req.text === true ? text : parsed) as T);
                return;
              }
              const st = parsed as { reason?: string; message?: string } | undefined;
              reject(new KubeApiError({ status, reason: st?.reason ?? 'Unknown', message: `${req.method} ${req.path}: ${status} ${st?.message ?? text.slice(0, 200)}` }));
            });
          },
          reject,
        );
      });
    },
    watch(path, query, onEvent, signal) {
      return new Promise<void>((resolve, reject) => {
        send(
          { method: 'GET', path, query: { ...query, watch: true }, signal, watch: true },
          (status, body) => {
            if (status !== 200) {
              reject(new KubeApiError({ status, reason: 'WatchFailed', message: `watch ${path}: ${status}` }));
              return;
            }
            const lines = createInterface({ input: body });
            lines.on('line', (line) => {
              if (line.trim() === '') return;
              try {
                onEvent(JSON.parse(line));
              } catch (error) {
                (body as unknown as { destroy(): void }).destroy();
                reject(error instanceof Error ? error : new Error(String(error)));
              }
            });
            lines.on('close', () => resolve());
            lines.on('error', (error: Error) => (signal.aborted ? resolve() : reject(error)));
            body.on('error', (error: Error) => (signal.aborted ? resolve() : reject(error)));
          },
          (error) => (signal.aborted ? resolve() : reject(error)),
        );
      });
    },
  };
}

export function isStatus(error: unknown, status: number): boolean {
  return error instanceof KubeApiError && error.status === status;
}

// A small Kubernetes REST client over node:https with keep-alive: the operator's watches, status
// patches, events and leases. Typed clients are not worth their per-call overhead on these hot paths.
//
// Watches and requests never share a connection pool: a watch holds its socket for minutes, so with one
// capped pool enough watches leave no socket for a status write, an Event or a Lease renewal, which then
// wait forever (Node's `timeout` option counts socket idle time only, not the wait for a socket). Watches
// get a pool of their own without a cap (the watch budget bounds them, see watch-budget.ts);
// requests get a capped pool and an overall deadline that includes the wait for a socket.
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { request as httpRequest } from 'node:http';
import { createInterface } from 'node:readline';
import { requestSignal } from './request-signal.ts';
import { ApiError as KubeApiError, agentFor, toKubeConnection, type KubeConfigLike, type KubeConnection } from './transport.ts';

/** The API server answered with an error status: the same class apply's client throws. */
export { ApiError as KubeApiError } from './transport.ts';

/**
 * Sockets for ordinary requests to one API server; requests beyond it wait (within their deadline). Each costs
 * ~165 KB of memory while it is open (TLS and parser buffers), and a burst of status writes opens them all.
 */
const REQUEST_SOCKETS = 16;
/** A request's deadline when it names none: from the call, including the wait for a socket, to the last byte. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** How long after the server-side timeoutSeconds a silent watch is given up (a hung socket never ends on its own). */
const WATCH_GRACE_MS = 30_000;
const DEFAULT_WATCH_SECONDS = 300;
/**
 * How often the API server sends a bookmark to a watch that asked for them when nothing changes: its watch
 * cache schedules one a minute per watcher (scripts/bookmark-period.ts on the test control plane: 59.1–61.0 s
 * apart). It drops one that carries no newer resourceVersion than the watch has, so on a quiet cluster the
 * first after a watch opens may come a minute later; such a watch is restarted at the idle limit (one request,
 * no read), which counts as hearing from the server.
 */
export const BOOKMARK_PERIOD_MS = 60_000;
/**
 * How long a watch that asked for bookmarks may stay silent before it is given up as hung, and how long after it
 * was last heard from (an event, a bookmark, or the server opening the stream) a cache may still be trusted to
 * know of every change: the bookmark period and a margin for a loaded API server or process. Longer silence
 * means the stream is dead (a proxy or NAT that dropped it without a reset): the informer then continues from
 * its last resourceVersion on a new connection, and decisions that trust its cache read instead meanwhile.
 */
export const WATCH_FRESH_MS = BOOKMARK_PERIOD_MS + 15_000;
export const DEFAULT_WATCH_IDLE_MS = WATCH_FRESH_MS;

export type KubeRequest = {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly query?: Record<string, string | number | boolean | undefined>;
  readonly body?: unknown;
  readonly contentType?: string;
  readonly signal?: AbortSignal;
  /** Overall deadline, from this call to the whole response (default DEFAULT_REQUEST_TIMEOUT_MS). */
  readonly timeoutMs?: number;
  /** Resolve with the response text instead of parsed JSON (e.g. /metrics). */
  readonly text?: boolean;
  /** The Accept header (default application/json), e.g. aggregated discovery's. */
  readonly accept?: string;
  /** Resolve with undefined without parsing a successful response (a write whose result is not needed). */
  readonly discardBody?: boolean;
};

export type KubeRest = {
  readonly server: string;
  request<T>(req: KubeRequest): Promise<T>;
  /**
   * Streams a watch: one parsed JSON event per line until the server closes or the signal aborts. `onOpen` runs
   * when the server answered the watch (the stream is live from that moment).
   */
  watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (event: unknown) => void,
    signal: AbortSignal,
    onOpen?: () => void,
  ): Promise<void>;
};

function url(server: string, path: string, query: KubeRequest['query']): URL {
  const u = new URL(path, server);
  for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined) u.searchParams.set(key, String(value));
  return u;
}

/** A REST client for a connection (or for a client-node KubeConfig's current context: tests and benches). */
export type KubeRestOptions = {
  readonly userAgent?: string;
  /**
   * Once aborted, every write (anything but GET) fails at once and writes in flight are cut: a leader that
   * lost its Lease must not write another byte (fencing). Reads go on.
   */
  readonly writeFence?: AbortSignal;
  /** Sockets for ordinary requests (default REQUEST_SOCKETS); watches have their own pool. */
  readonly requestSockets?: number;
  /** Silence after which a watch with allowWatchBookmarks is given up (default DEFAULT_WATCH_IDLE_MS). */
  readonly watchIdleMs?: number;
};

export async function createKubeRest(target: KubeConnection | KubeConfigLike, options: KubeRestOptions = {}): Promise<KubeRest> {
  const connection = await toKubeConnection(target);
  const server = connection.server;
  const requestAgent = agentFor(connection, { maxSockets: options.requestSockets ?? REQUEST_SOCKETS });
  const watchAgent = agentFor(connection, { maxSockets: Infinity });
  const userAgent = options.userAgent ?? 'syncline';
  const isHttps = server.startsWith('https:');

  type Send = { req: KubeRequest; signal: AbortSignal; watch: boolean };
  const send = ({ req, signal, watch }: Send, onResponse: (status: number, body: NodeJS.ReadableStream) => void, reject: (error: Error) => void): void => {
    const target = url(server, req.path, req.query);
    const payload = req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    connection.authHeaders().then((auth) => {
      if (signal.aborted) {
        reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
        return;
      }
      const opts: RequestOptions = {
        method: req.method,
        agent: isHttps ? (watch ? watchAgent : requestAgent) : undefined,
        auth: connection.basicAuth,
        headers: {
          ...auth,
          'User-Agent': userAgent,
          Accept: req.accept ?? 'application/json',
          ...(payload !== undefined ? { 'Content-Type': req.contentType ?? 'application/json', 'Content-Length': Buffer.byteLength(payload) } : {}),
        },
        signal,
      };
      const r = (isHttps ? httpsRequest : httpRequest)(target, opts, (res) => onResponse(res.statusCode ?? 0, res));
      r.on('error', reject);
      r.end(payload);
    }, reject);
  };

  return {
    server,
    request<T>(req: KubeRequest): Promise<T> {
      const timeoutMs = req.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
      const fence = req.method === 'GET' ? undefined : options.writeFence;
      const fenced = (): KubeApiError =>
        new KubeApiError({
          status: 0,
          reason: 'Fenced',
          message: `${req.method} ${req.path}: refused, writes are fenced (${String(fence?.reason instanceof Error ? fence.reason.message : fence?.reason)})`,
        });
      if (fence?.aborted === true) return Promise.reject(fenced());
      const abort = requestSignal({ timeoutMs, signal: req.signal, fence });
      const signal = abort.signal;
      return new Promise<T>((resolveRaw, rejectRaw) => {
        // The listeners below can outlive the request: Node's agent keeps the request that opened a keep-alive
        // socket reachable from the socket, listeners and all. Through the promise they would keep its answer (a
        // LIST's parsed items) in memory as long as the socket; they let go of it once it settles.
        let pending: { resolve: (value: T) => void; reject: (error: Error) => void } | undefined = { resolve: resolveRaw, reject: rejectRaw };
        const settle = (): typeof pending => {
          abort.done();
          const settling = pending;
          pending = undefined;
          return settling;
        };
        const resolve = (value: T): void => settle()?.resolve(value);
        // The caller's own abort stays an AbortError; the deadline and the fence become API errors that say why.
        const reject = (error: Error): void => {
          const settling = settle();
          const cause = abort.cause();
          if (cause === 'fence') settling?.reject(fenced());
          else if (cause === 'deadline')
            settling?.reject(new KubeApiError({ status: 0, reason: 'Timeout', message: `${req.method} ${req.path}: no answer within ${timeoutMs / 1000}s` }));
          else settling?.reject(error);
        };
        send(
          { req, signal, watch: false },
          (status, body) => {
            const chunks: Buffer[] = [];
            const discard = req.discardBody === true && status >= 200 && status < 300;
            body.on('data', (c: Buffer) => {
              if (!discard) chunks.push(c);
            });
            body.on('error', reject);
            body.on('end', () => {
              if (discard) {
                resolve(undefined as T);
                return;
              }
              const text = Buffer.concat(chunks).toString('utf8');
              chunks.length = 0;
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
              reject(
                new KubeApiError({
                  status,
                  reason: st?.reason ?? 'Unknown',
                  message: `${req.method} ${req.path}: ${status} ${st?.message ?? text.slice(0, 200)}`,
                  serverMessage: st?.message,
                }),
              );
            });
          },
          reject,
        );
      });
    },
    watch(path, query, onEvent, callerSignal, onOpen) {
      // The server ends a watch after timeoutSeconds; one that stays silent well past that is a hung socket:
      // it ends here, and the informer continues from its last resourceVersion.
      const seconds = typeof query['timeoutSeconds'] === 'number' ? query['timeoutSeconds'] : DEFAULT_WATCH_SECONDS;
      // With bookmarks asked for, silence is itself a sign of a hung stream (see DEFAULT_WATCH_IDLE_MS).
      const idle = new AbortController();
      const idleMs = query['allowWatchBookmarks'] === true ? (options.watchIdleMs ?? DEFAULT_WATCH_IDLE_MS) : undefined;
      let idleTimer: NodeJS.Timeout | undefined;
      const heard = (): void => {
        if (idleMs === undefined) return;
        clearTimeout(idleTimer);
        idleTimer = setTimeout(() => idle.abort(new Error(`watch ${path}: silent for ${idleMs / 1000}s`)), idleMs);
        idleTimer.unref();
      };
      heard();
      const signal = AbortSignal.any([callerSignal, idle.signal, AbortSignal.timeout(seconds * 1000 + WATCH_GRACE_MS)]);
      const settled =
        <T>(fn: (value: T) => void) =>
        (value: T): void => {
          clearTimeout(idleTimer);
          fn(value);
        };
      return new Promise<void>((resolveRaw, rejectRaw) => {
        const resolve = settled<void>(resolveRaw);
        const reject = settled<unknown>(rejectRaw);
        send(
          { req: { method: 'GET', path, query: { timeoutSeconds: seconds, ...query, watch: true } }, signal, watch: true },
          (status, body) => {
            if (status !== 200) {
              reject(new KubeApiError({ status, reason: 'WatchFailed', message: `watch ${path}: ${status}` }));
              return;
            }
            body.on('data', heard);
            onOpen?.();
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

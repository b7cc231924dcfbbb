// A small Kubernetes REST client over undici's connection pools with keep-alive: the operator's watches,
// status patches, events and leases. Typed clients are not worth their per-call overhead on these hot paths,
// nor is Node's http client (its request and response streams): undici's dispatch hands the response to a
// handler as it arrives, which costs less CPU per request (`pnpm bench transport`).
//
// Watches and requests never share a connection pool: a watch holds its socket for minutes, so with one
// capped pool enough watches leave no socket for a status write, an Event or a Lease renewal, which then
// wait forever (a client's own timeouts count socket idle time only, not the wait for a socket). Watches
// get a pool of their own without a cap (the watch budget bounds them, see watch-budget.ts);
// requests get a capped pool and an overall deadline that includes the wait for a socket.
import type { Dispatcher } from 'undici';
import { abortable, requestSignal, type Abortable } from './request-signal.ts';
import {
  ApiError as KubeApiError,
  dispatcherFor,
  kQueuedAbort,
  secureContextFor,
  toKubeConnection,
  type KubeConfigLike,
  type KubeConnection,
} from './transport.ts';

/** The API server answered with an error status: the same class apply's client throws. */
export { ApiError as KubeApiError } from './transport.ts';

/**
 * Connections for ordinary requests to one API server (the default of `requestSockets`, `syncline run
 * --api-connections`); requests beyond it wait (within their deadline). Each holds memory while it is open (TLS
 * and parser buffers: ~165 KB with Node's client), and a burst of status writes opens them all.
 */
export const REQUEST_SOCKETS = 16;
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

/**
 * Names and values that URLSearchParams (application/x-www-form-urlencoded) leaves as they are: ASCII letters and
 * digits, `*`, `-`, `.` and `_`.
 */
const PLAIN_QUERY_TEXT = /^[\w*.-]*$/;

/**
 * The request target: the path (from the server's root, as `new URL(path, server)` resolves it) and its query,
 * encoded as URLSearchParams encodes it. A query of plain names and values (an apply's field manager, a LIST's
 * limit) is written out directly: most requests have one, and a URLSearchParams per request cost more than the rest
 * of the target.
 */
function requestTarget(path: string, query: KubeRequest['query']): string {
  let plain = '';
  for (const key in query) {
    const value = query[key];
    if (value === undefined) continue;
    const text = String(value);
    if (!PLAIN_QUERY_TEXT.test(key) || !PLAIN_QUERY_TEXT.test(text) || path.includes('?')) return encodedTarget(path, query);
    plain += `${plain === '' ? '' : '&'}${key}=${text}`;
  }
  return plain === '' ? path : `${path}?${plain}`;
}

function encodedTarget(path: string, query: KubeRequest['query']): string {
  let search: URLSearchParams | undefined;
  for (const key in query) {
    const value = query[key];
    if (value === undefined) continue;
    search ??= new URLSearchParams();
    search.set(key, String(value));
  }
  if (search === undefined) return path;
  const at = path.indexOf('?');
  if (at === -1) return `${path}?${search.toString()}`;
  // a query in the path itself: the named parameters replace its own of the same name
  const merged = new URLSearchParams(path.slice(at + 1));
  for (const [key, value] of search) merged.set(key, value);
  return `${path.slice(0, at)}?${merged.toString()}`;
}

/** A REST client for a connection (or for a client-node KubeConfig's current context: tests and benches). */
export type KubeRestOptions = {
  readonly userAgent?: string;
  /**
   * Once aborted, every write (anything but GET) fails at once and writes in flight are cut: a leader that
   * lost its Lease must not write another byte (fencing). Reads go on.
   */
  readonly writeFence?: AbortSignal;
  /** Connections for ordinary requests (default REQUEST_SOCKETS); watches have their own pool. */
  readonly requestSockets?: number;
  /** Silence after which a watch with allowWatchBookmarks is given up (default DEFAULT_WATCH_IDLE_MS). */
  readonly watchIdleMs?: number;
};

/** What an exchange hands its response to, until it settles. */
type Sink = {
  start(status: number): void;
  data(chunk: Buffer): void;
  end(): void;
  fail(error: Error): void;
};

/** The error a request its caller aborted fails with: an AbortError with the caller's reason as its cause, as Node's own clients raise. */
function abortError(reason: unknown): Error {
  const error = new Error('The operation was aborted', { cause: reason }) as Error & { code: string };
  error.name = 'AbortError';
  error.code = 'ABORT_ERR';
  return error;
}

/**
 * One request on a pool, handed to undici's dispatch: the response goes to the sink as it arrives, with no
 * stream in between. The signal settles it at once, waiting for a connection or not: one still waiting is
 * taken out of the pool's queue, never sent and costing no connection (undici's hook for a queued request,
 * `queued` below, as its own request API uses it); one under way has its connection cut (a fenced write does
 * not finish). Once settled it lets go of the sink: undici may keep the exchange reachable a while (a
 * connection's last request), and through the sink it would keep the answer and the caller's promise.
 */
class Exchange implements Dispatcher.DispatchHandler {
  #sink: Sink | undefined;
  #controller: Dispatcher.DispatchController | undefined;
  /** Takes the request out of the queue it waits in for a connection (undefined once it started). */
  #dequeue: ((reason: Error) => void) | undefined;
  readonly #signal: Abortable;
  #unlisten: (() => void) | undefined;

  constructor(signal: Abortable, sink: Sink) {
    this.#signal = signal;
    this.#sink = sink;
    if (signal.aborted) this.#onAbort();
    else this.#unlisten = signal.listen(this.#onAbort);
  }

  get open(): boolean {
    return this.#sink !== undefined;
  }

  /** Settles it with an error and cuts the exchange (a response it does not want, a line it cannot parse). */
  fail(error: Error): void {
    const sink = this.#settle();
    const dequeue = this.#dequeue;
    this.#dequeue = undefined;
    if (this.#controller !== undefined) this.#controller.abort(error);
    else dequeue?.(error);
    sink?.fail(error);
  }

  /** undici's hook while the request waits for a connection, in the pool's queue or a connection's. */
  readonly queued = (dequeue: (reason: Error) => void): void => {
    if (this.#sink === undefined) dequeue(abortError(this.#signal.reason));
    else this.#dequeue = dequeue;
  };

  /** Settles it, the response wanted no further: whatever still comes is read and dropped, the connection is kept. */
  release(): Sink | undefined {
    return this.#settle();
  }

  #settle(): Sink | undefined {
    const sink = this.#sink;
    this.#sink = undefined;
    this.#unlisten?.();
    this.#unlisten = undefined;
    return sink;
  }

  readonly #onAbort = (): void => {
    const reason: unknown = this.#signal.reason;
    this.fail(abortError(reason));
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#dequeue = undefined;
    // settled just as undici handed it to a connection: cut before a byte is written
    if (this.#sink === undefined) controller.abort(abortError(this.#signal.reason));
    else this.#controller = controller;
  }

  onResponseStart(_controller: Dispatcher.DispatchController, status: number): void {
    this.#sink?.start(status);
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#sink?.data(chunk);
  }

  onResponseEnd(): void {
    this.#controller = undefined;
    this.#settle()?.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#controller = undefined;
    this.#settle()?.fail(error);
  }
}

/** The text of a response's chunks. */
function textOf(chunks: readonly Buffer[]): string {
  if (chunks.length === 0) return '';
  return (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)).toString('utf8');
}

type Target = { method: KubeRequest['method']; path: string; query?: KubeRequest['query']; body?: unknown; contentType?: string; accept?: string };

export async function createKubeRest(target: KubeConnection | KubeConfigLike, options: KubeRestOptions = {}): Promise<KubeRest> {
  const connection = await toKubeConnection(target);
  const server = connection.server;
  const origin = new URL(server).origin;
  const secureContext = secureContextFor(connection);
  const requests = dispatcherFor(connection, { connections: options.requestSockets ?? REQUEST_SOCKETS, secureContext });
  const watches = dispatcherFor(connection, { connections: null, secureContext });
  const userAgent = options.userAgent ?? 'syncline';
  const basic = connection.basicAuth === undefined ? undefined : `Basic ${Buffer.from(connection.basicAuth).toString('base64')}`;
  /**
   * The headers of a request, by its Accept and Content-Type, for the credential headers the connection answered
   * last: a connection answers from its cache with the same object until the credentials change, so most requests
   * reuse the headers built for an earlier one (undici reads them, never changes them).
   */
  const headerSets = new Map<string, Readonly<Record<string, string>>>();
  let headersAuth: Readonly<Record<string, string>> | undefined;
  const headersFor = (auth: Readonly<Record<string, string>>, accept: string, contentType: string | undefined): Readonly<Record<string, string>> => {
    if (auth !== headersAuth) {
      headersAuth = auth;
      headerSets.clear();
    }
    const key = contentType === undefined ? accept : `${accept}\n${contentType}`;
    const known = headerSets.get(key);
    if (known !== undefined) return known;
    const headers: Record<string, string> = { ...auth, 'user-agent': userAgent, accept };
    // as Node's `auth` option did: a credential header of the kubeconfig's wins over its username and password
    if (basic !== undefined && auth['Authorization'] === undefined && auth['authorization'] === undefined) headers['authorization'] = basic;
    if (contentType !== undefined) headers['content-type'] = contentType;
    headerSets.set(key, headers);
    return headers;
  };

  /** Sends it once the credential headers are known, unless the exchange settled meanwhile. */
  const send = (dispatcher: Dispatcher, req: Target, exchange: Exchange): void => {
    const payload = req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    connection.authHeaders().then(
      (auth) => {
        if (!exchange.open) return;
        const headers = headersFor(auth, req.accept ?? 'application/json', payload === undefined ? undefined : (req.contentType ?? 'application/json'));
        try {
          const opts = {
            origin,
            path: requestTarget(req.path, req.query),
            method: req.method,
            headers,
            body: payload ?? null,
            [kQueuedAbort]: exchange.queued,
          };
          dispatcher.dispatch(opts, exchange);
        } catch (error) {
          exchange.fail(error instanceof Error ? error : new Error(String(error)));
        }
      },
      (error: unknown) => exchange.fail(error instanceof Error ? error : new Error(String(error))),
    );
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
      return new Promise<T>((resolve, rejectRaw) => {
        // The caller's own abort stays an AbortError; the deadline and the fence become API errors that say why.
        const reject = (error: Error): void => {
          abort.done();
          const cause = abort.cause();
          if (cause === 'fence') rejectRaw(fenced());
          else if (cause === 'deadline')
            rejectRaw(new KubeApiError({ status: 0, reason: 'Timeout', message: `${req.method} ${req.path}: no answer within ${timeoutMs / 1000}s` }));
          else rejectRaw(error);
        };
        let status = 0;
        let discard = false;
        const chunks: Buffer[] = [];
        const sink: Sink = {
          start(code) {
            status = code;
            discard = req.discardBody === true && status >= 200 && status < 300;
          },
          data(chunk) {
            if (!discard) chunks.push(chunk);
          },
          end() {
            abort.done();
            if (discard) {
              resolve(undefined as T);
              return;
            }
            const text = textOf(chunks);
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
          },
          fail: reject,
        };
        send(requests, req, new Exchange(abort, sink));
      });
    },
    watch(path, query, onEvent, callerSignal, onOpen) {
      // The server ends a watch after timeoutSeconds; one that stays silent well past that is a hung socket:
      // it ends here, and the informer continues from its last resourceVersion.
      const seconds = typeof query['timeoutSeconds'] === 'number' ? query['timeoutSeconds'] : DEFAULT_WATCH_SECONDS;
      // With bookmarks asked for, silence is itself a sign of a hung stream (see DEFAULT_WATCH_IDLE_MS).
      const idle = new AbortController();
      const idleMs = query['allowWatchBookmarks'] === true ? (options.watchIdleMs ?? DEFAULT_WATCH_IDLE_MS) : undefined;
      // One timer, not one per chunk: each chunk only notes the time, and the timer, when it fires, gives the
      // watch up or waits out the rest of the limit from the last chunk.
      let idleTimer: NodeJS.Timeout | undefined;
      let heardAt = performance.now();
      const heard = (): void => {
        heardAt = performance.now();
      };
      const armIdle = (ms: number): void => {
        idleTimer = setTimeout(() => {
          const silentMs = performance.now() - heardAt;
          if (idleMs === undefined) return;
          if (silentMs >= idleMs) idle.abort(new Error(`watch ${path}: silent for ${idleMs / 1000}s`));
          else armIdle(idleMs - silentMs);
        }, ms);
        idleTimer.unref();
      };
      if (idleMs !== undefined) armIdle(idleMs);
      const signal = AbortSignal.any([callerSignal, idle.signal, AbortSignal.timeout(seconds * 1000 + WATCH_GRACE_MS)]);
      return new Promise<void>((resolveRaw, rejectRaw) => {
        const resolve = (): void => {
          clearTimeout(idleTimer);
          resolveRaw();
        };
        const reject = (error: Error): void => {
          clearTimeout(idleTimer);
          rejectRaw(error);
        };
        // one JSON event per line; a line may span chunks
        let partial: Buffer[] = [];
        const line = (text: string, failed: (error: Error) => void): void => {
          if (text.trim() === '') return;
          try {
            onEvent(JSON.parse(text));
          } catch (error) {
            failed(error instanceof Error ? error : new Error(String(error)));
          }
        };
        const cut = (error: Error): void => exchange.fail(error);
        const sink: Sink = {
          start(status) {
            if (status !== 200) {
              // the rest of the answer is read and dropped: the connection stays usable
              exchange.release();
              reject(new KubeApiError({ status, reason: 'WatchFailed', message: `watch ${path}: ${status}` }));
              return;
            }
            onOpen?.();
          },
          data(chunk) {
            heard();
            let from = 0;
            for (let newline = chunk.indexOf(10); newline !== -1 && exchange.open; newline = chunk.indexOf(10, from)) {
              const piece = chunk.subarray(from, newline);
              from = newline + 1;
              if (partial.length === 0) line(piece.toString('utf8'), cut);
              else {
                partial.push(piece);
                const text = textOf(partial);
                partial = [];
                line(text, cut);
              }
            }
            if (from < chunk.length) partial.push(from === 0 ? chunk : chunk.subarray(from));
          },
          end() {
            const last = partial;
            partial = [];
            let failure: Error | undefined;
            if (last.length > 0) line(textOf(last), (error) => (failure = error));
            if (failure === undefined) resolve();
            else reject(failure);
          },
          // an error once the signal aborted is the watch ending as asked (or as given up): not a failure
          fail: (error) => (signal.aborted ? resolve() : reject(error)),
        };
        const exchange = new Exchange(abortable(signal), sink);
        send(watches, { method: 'GET', path, query: { timeoutSeconds: seconds, ...query, watch: true } }, exchange);
      });
    },
  };
}

export function isStatus(error: unknown, status: number): boolean {
  return error instanceof KubeApiError && error.status === status;
}

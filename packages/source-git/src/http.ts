// The HTTP edge: an injected transport (default: Node's http/https, never following redirects by itself) wrapped
// so that credentials go only to the origin they were given for, redirects are followed by us (at most 5,
// https only), every response body counts against a byte budget, a silent server times out, and an
// idempotent request that meets a transient failure (429/5xx, reset, timeout) is retried on its own with
// backoff: a server that fails one request in three must not fail every sync, so no request's
// fate may depend on the outcome of the others in its operation. A host that rate-limits (429 or 503 with
// Retry-After) limits the client, not one request: its gate (HostGates, one per GitSource) then holds every
// request to that scheme://host:port until the time it named, capped like any retry wait. A private CA and a
// forward proxy (HTTP CONNECT) are per request: they come from the ConfigSync, not the process.
import type * as NodeHttp from 'node:http';
import type * as NodeHttps from 'node:https';
import type { Duplex } from 'node:stream';
import { GitSourceError, GitSourceErrorCode } from './errors.ts';

export interface HttpRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: Uint8Array | undefined;
  signal: AbortSignal;
  /** PEM certificates trusted for https besides the system's roots (a private CA). */
  ca?: string | undefined;
  /** Go through this forward proxy: an HTTP CONNECT tunnel to the server, TLS inside it. */
  proxy?: HttpProxy | undefined;
}

/** A forward proxy: `http://host:port` (or https://), with its Proxy-Authorization value if it wants one. */
export interface HttpProxy {
  url: string;
  authorization?: string | undefined;
}

export interface HttpResponse {
  statusCode: number;
  statusMessage: string;
  headers: Record<string, string>;
  body: AsyncIterable<Uint8Array>;
}

/** Sends one request. Must NOT follow redirects: source-git follows them itself to control credentials. */
export interface HttpTransport {
  request(req: HttpRequest): Promise<HttpResponse>;
}

/** Node's built-in fetch (undici), for callers that want it; the default is nodeHttpTransport. */
export const fetchTransport: HttpTransport = {
  async request(req) {
    if (req.ca !== undefined || req.proxy !== undefined)
      throw new Error('the fetch transport supports neither a private CA nor a proxy; use the default transport');
    const res = await fetch(req.url, {
      method: req.method,
      headers: req.headers,
      redirect: 'manual',
      signal: req.signal,
      ...(req.body === undefined ? {} : { body: req.body }),
    });
    const headers: Record<string, string> = {};
    res.headers.forEach((value, key) => {
      headers[key] = value;
    });
    const stream = res.body;
    async function* body(): AsyncGenerator<Uint8Array> {
      if (stream === null) return;
      for await (const chunk of stream) yield chunk;
    }
    return { statusCode: res.status, statusMessage: res.statusText, headers, body: body() };
  },
};

/**
 * The default transport: Node's http/https modules. Their HTTP parser is native; fetch's (undici) is llhttp
 * compiled to WebAssembly, and V8's optimizing tier-up of it during a pack's download mallocs some 25 MB
 * that glibc keeps: a third of a 50 MB repo's fetch peak (bench source-git). No decompression is
 * asked for (Git responses are packs), and nothing is followed: redirects are ours to follow.
 */
export const nodeHttpTransport: HttpTransport = {
  async request(req) {
    const url = new URL(req.url);
    const https = url.protocol === 'https:';
    const { request } = https ? await nodeHttps() : await nodeHttp();
    // A private CA is trusted beside the system's roots (as Git and go-git do with a CA bundle), not instead.
    const ca = req.ca === undefined || !https ? undefined : [...(await import('node:tls')).rootCertificates, req.ca];
    const tunnel = req.proxy === undefined ? undefined : await openTunnel(req.proxy, url, req.signal);
    const connection = tunnel === undefined ? undefined : https ? await startTls(tunnel, url, ca) : tunnel;
    return new Promise<HttpResponse>((resolve, reject) => {
      const options = {
        method: req.method,
        headers: req.headers,
        signal: req.signal,
        ...(ca === undefined ? {} : { ca }),
        ...(connection === undefined ? {} : { createConnection: () => connection }),
      };
      const outgoing = request(url, options, (res) => {
        const headers: Record<string, string> = {};
        for (const [key, value] of Object.entries(res.headers)) {
          if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(', ') : value;
        }
        resolve({ statusCode: res.statusCode ?? 0, statusMessage: res.statusMessage ?? '', headers, body: res });
      });
      outgoing.on('error', reject);
      outgoing.end(req.body);
    });
  },
};

/**
 * Node's http and https modules, imported on first use (a process that never speaks http loads neither) and
 * kept: an import() per request goes through the module loader each time, a cost a notification pays per message.
 */
let httpModule: Promise<typeof NodeHttp> | undefined;
let httpsModule: Promise<typeof NodeHttps> | undefined;
const nodeHttp = (): Promise<typeof NodeHttp> => (httpModule ??= import('node:http'));
const nodeHttps = (): Promise<typeof NodeHttps> => (httpsModule ??= import('node:https'));

/** Asks the proxy for a tunnel to the server (HTTP CONNECT) and resolves with its socket once it answers 200. */
async function openTunnel(proxy: HttpProxy, target: URL, signal: AbortSignal): Promise<Duplex> {
  const proxyUrl = new URL(proxy.url);
  const { request } = proxyUrl.protocol === 'https:' ? await import('node:https') : await import('node:http');
  const authority = `${target.hostname}:${target.port !== '' ? target.port : target.protocol === 'https:' ? '443' : '80'}`;
  return new Promise<Duplex>((resolve, reject) => {
    const connect = request({
      host: proxyUrl.hostname.replace(/^\[|\]$/g, ''),
      port: proxyUrl.port !== '' ? Number(proxyUrl.port) : proxyUrl.protocol === 'https:' ? 443 : 80,
      method: 'CONNECT',
      path: authority,
      headers: { host: authority, ...(proxy.authorization === undefined ? {} : { 'proxy-authorization': proxy.authorization }) },
      agent: false,
      signal,
    });
    connect.once('connect', (res, socket) => {
      if (res.statusCode === 200) return resolve(socket);
      socket.destroy();
      reject(new ProxyRefusedError(res.statusCode ?? 0));
    });
    connect.once('error', reject);
    connect.end();
  });
}

/** TLS to the server inside a proxy's tunnel, verified as a direct connection would be (the name, the CA). */
async function startTls(socket: Duplex, target: URL, ca: string[] | undefined): Promise<Duplex> {
  const { connect } = await import('node:tls');
  const { isIP } = await import('node:net');
  const host = target.hostname.replace(/^\[|\]$/g, '');
  return new Promise<Duplex>((resolve, reject) => {
    const tls = connect({ socket, host, ...(isIP(host) === 0 ? { servername: host } : {}), ...(ca === undefined ? {} : { ca }), ALPNProtocols: ['http/1.1'] });
    tls.once('secureConnect', () => resolve(tls));
    tls.once('error', reject);
  });
}

/** The proxy answered the CONNECT with something else than 200 (407: it wants credentials). */
export class ProxyRefusedError extends Error {
  readonly statusCode: number;
  constructor(statusCode: number) {
    super(`the proxy refused the tunnel (HTTP ${statusCode}${statusCode === 407 ? ': proxy authentication required' : ''})`);
    this.name = 'ProxyRefusedError';
    this.statusCode = statusCode;
  }
}

/** How one request is retried. Every request source-git sends is idempotent (GET info/refs, POST upload-pack). */
export interface RetryPolicy {
  /** Tries per request, the first included. 1 disables retries. */
  attempts: number;
  /** Wait before the first retry; doubles per retry, with jitter (50–100% of the value). */
  baseDelayMs: number;
  /** Cap on one wait, a server's Retry-After included. */
  maxDelayMs: number;
}

export const defaultRetryPolicy: Readonly<RetryPolicy> = Object.freeze({ attempts: 4, baseDelayMs: 200, maxDelayMs: 30_000 });

/** Statuses that say "try again": rate limited, or a server or gateway in trouble. Never 401/403/404. */
const retryableStatuses: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

/** Statuses with which a host tells a client to slow down; with a Retry-After they close the host's gate. */
const rateLimitStatuses: ReadonlySet<number> = new Set([429, 503]);

/** A host's rate limit, as reported to `GitSourceOptions.onRateLimited`. Never carries credentials. */
export interface RateLimitEvent {
  /** scheme://host[:port] of the host that rate-limited us. */
  host: string;
  /** The status that said so: 429 or 503. */
  status: number;
  /** What the host asked for (its Retry-After), in ms. */
  askedMs: number;
  /** How long its gate is now closed for: the wait asked, capped by the retry policy's maxDelayMs. */
  waitMs: number;
}

/** Where a host's gate stands: closed for another `waitMs`, after `status` asking for `askedMs`. */
export interface ClosedGate {
  waitMs: number;
  status: number;
  askedMs: number;
}

/**
 * One gate per host (scheme://host:port), shared by every operation of a GitSource: closed by a 429 or 503
 * with Retry-After, it holds each request to that host (resolves, fetches, forced ones too: the limit is the
 * host's rule, not the request's) until the time the host named. Times are monotonic (performance.now).
 */
export class HostGates {
  readonly #gates = new Map<string, { until: number; status: number; askedMs: number }>();
  readonly #now: () => number;
  readonly #onClosed: (event: RateLimitEvent) => void;

  constructor(opts: { now?: () => number; onClosed?: ((event: RateLimitEvent) => void) | undefined } = {}) {
    this.#now = opts.now ?? (() => performance.now());
    this.#onClosed = opts.onClosed ?? (() => undefined);
  }

  /** The host asked for `askedMs` of quiet: its gate stays closed that long (at most `capMs`) from now. */
  close(host: string, limit: { status: number; askedMs: number; capMs: number }): void {
    const waitMs = Math.min(limit.askedMs, limit.capMs);
    const until = this.#now() + waitMs;
    const known = this.#gates.get(host);
    if (known === undefined || until > known.until) this.#gates.set(host, { until, status: limit.status, askedMs: limit.askedMs });
    if (this.#gates.size > 1_000) this.#forgetOpen();
    try {
      this.#onClosed({ host, status: limit.status, askedMs: limit.askedMs, waitMs });
    } catch {
      // A listener that fails (a log or metric) must not fail the request that met the limit.
    }
  }

  /** The host's gate if it is closed now, else undefined. */
  closed(host: string): ClosedGate | undefined {
    const gate = this.#gates.get(host);
    if (gate === undefined) return undefined;
    const waitMs = gate.until - this.#now();
    if (waitMs > 0) return { waitMs, status: gate.status, askedMs: gate.askedMs };
    this.#gates.delete(host);
    return undefined;
  }

  #forgetOpen(): void {
    for (const host of [...this.#gates.keys()]) this.closed(host);
  }
}

/** Network failures worth another try (undici reports them as `cause.code`, Node's net as `code`). */
const retryableNetworkCodes: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

/** A response status the caller has to turn into an error (after any retries). */
export class HttpStatusError extends Error {
  readonly statusCode: number;
  constructor(statusCode: number, message: string) {
    super(message);
    this.statusCode = statusCode;
  }
}

export interface SessionOptions extends TransportLimits {
  transport: HttpTransport;
  /** Origin (scheme://host:port) the credentials were given for. */
  origin: string;
  authorization: string | undefined;
  allowInsecureHttp: boolean;
  /** The GitSource's per-host rate-limit gates. */
  gates: HostGates;
  /** PEM certificates trusted besides the system's roots, for every request of the session. */
  ca?: string | undefined;
  /** The forward proxy every request of the session goes through. */
  proxy?: HttpProxy | undefined;
}

/** What every transport (smart HTTP, SSH) of one operation is bounded and told by. */
export interface TransportLimits {
  /** Byte budget shared by all responses of one operation (a retried response's bytes are given back). */
  maxResponseBytes: number;
  /** Deadline of the whole operation, in ms. */
  timeoutMs: number;
  /** No byte from the server for this long fails the attempt. */
  idleTimeoutMs: number;
  retry: RetryPolicy;
  /** Jitter source, [0, 1). */
  random: () => number;
  /** How the repo is named in messages (credentials removed). */
  shownRepo: string;
  /** Told about every limit or timeout failure we raise, which wins over whatever a consumer made of it. */
  onFailure: (err: GitSourceError) => void;
}

export interface SessionRequest {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: Uint8Array | undefined;
}

/** A response whose body is guarded (byte budget, idle timeout) and belongs to one attempt. */
export interface SessionResponse {
  /** The URL that answered, after redirects. */
  url: string;
  statusCode: number;
  statusMessage: string;
  headers: Record<string, string>;
  body: AsyncIterable<Uint8Array>;
}

export interface HttpSession {
  /**
   * Sends an idempotent request and hands the response to `consume`, retrying the whole exchange when the
   * status is transient (429/5xx: `consume` sees only the last such response), the connection fails, or the
   * body breaks off with a network error or an idle timeout. Errors `consume` raises itself are final.
   */
  exchange<T>(req: SessionRequest, consume: (res: SessionResponse) => Promise<T>): Promise<T>;
  /** Aborted when the operation's deadline passes. */
  readonly signal: AbortSignal;
}

const redirectStatuses = new Set([301, 302, 303, 307, 308]);

export function createHttpSession(opts: SessionOptions): HttpSession {
  const deadline = performance.now() + opts.timeoutMs;
  const signal = AbortSignal.timeout(opts.timeoutMs);
  let received = 0;
  const timeoutError = (what: string): GitSourceError => new GitSourceError(GitSourceErrorCode.Timeout, `${opts.shownRepo}: ${what}`);
  const report = (err: unknown): never => {
    if (err instanceof GitSourceError) opts.onFailure(err);
    throw err;
  };

  async function exchange<T>(req: SessionRequest, consume: (res: SessionResponse) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const tries = new Attempt(signal);
      try {
        const res = await send(req, tries);
        const limit = rateLimitOf(opts, res);
        if (retryableStatuses.has(res.statusCode) && attempt < opts.retry.attempts) {
          const wait = delayBefore(opts, attempt + 1, res.headers['retry-after']);
          if (performance.now() + wait < deadline) {
            await drain(res.body).catch(() => undefined);
            tries.end();
            received -= tries.bytes;
            await sleep(wait, signal).catch(() => report(timeoutError('the operation timed out')));
            continue;
          }
        }
        if (limit !== undefined) {
          await drain(res.body).catch(() => undefined);
          throw rateLimited(
            opts,
            limit,
            attempt < opts.retry.attempts
              ? "waiting that long would pass the operation's deadline"
              : `gave up after ${attempt} ${attempt === 1 ? 'try' : 'tries'}`,
          );
        }
        return await consume(res);
      } catch (err) {
        tries.end();
        if (signal.aborted && !(err instanceof GitSourceError && err.code !== GitSourceErrorCode.Timeout)) report(timeoutError('the operation timed out'));
        if (attempt >= opts.retry.attempts || !isTransient(err)) report(err);
        const wait = delayBefore(opts, attempt + 1, undefined);
        if (performance.now() + wait >= deadline) report(err);
        received -= tries.bytes;
        await sleep(wait, signal).catch(() => report(timeoutError('the operation timed out')));
      } finally {
        tries.end();
      }
    }
  }

  /** Holds a request while its host's gate is closed; fails it when the gate would outlast the operation. */
  async function passGate(host: string): Promise<void> {
    for (let gate = opts.gates.closed(host); gate !== undefined; gate = opts.gates.closed(host)) {
      if (performance.now() + gate.waitMs >= deadline) throw rateLimited(opts, { ...gate, host }, "waiting for it to lift would pass the operation's deadline");
      await sleep(gate.waitMs, signal).catch(() => report(timeoutError('the operation timed out')));
    }
  }

  async function send(req: SessionRequest, tries: Attempt): Promise<SessionResponse> {
    let url = req.url;
    for (let hop = 0; ; hop++) {
      const target = new URL(url);
      if (target.protocol !== 'https:' && !(opts.allowInsecureHttp && target.protocol === 'http:')) {
        throw new GitSourceError(GitSourceErrorCode.InvalidRepoUrl, `${opts.shownRepo}: refusing to follow a redirect to a non-https URL`);
      }
      target.username = '';
      target.password = '';
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(req.headers)) {
        if (key.toLowerCase() !== 'authorization') headers[key] = value;
      }
      // Credentials only ever go to the origin they were given for, never to a host a redirect names.
      if (opts.authorization !== undefined && target.origin === opts.origin) headers['Authorization'] = opts.authorization;
      await passGate(target.origin);
      const res = await withIdleTimeout(
        () => opts.transport.request({ url: target.href, method: req.method, headers, body: req.body, signal: tries.signal, ca: opts.ca, proxy: opts.proxy }),
        tries,
      );
      const location = res.headers['location'];
      if (redirectStatuses.has(res.statusCode) && location !== undefined) {
        await drain(res.body);
        if (hop >= 5) throw new GitSourceError(GitSourceErrorCode.ServerError, `${opts.shownRepo}: too many redirects`);
        url = new URL(location, target).href;
        continue;
      }
      return { url: target.href, statusCode: res.statusCode, statusMessage: res.statusMessage, headers: res.headers, body: limitBody(res.body, tries) };
    }
  }

  async function* limitBody(source: AsyncIterable<Uint8Array>, tries: Attempt): AsyncGenerator<Uint8Array> {
    const it = source[Symbol.asyncIterator]();
    let completed = false;
    try {
      for (;;) {
        const next = await withIdleTimeout(() => it.next(), tries);
        if (next.done === true) {
          completed = true;
          return;
        }
        received += next.value.byteLength;
        tries.bytes += next.value.byteLength;
        if (received > opts.maxResponseBytes) {
          throw new GitSourceError(
            GitSourceErrorCode.LimitExceeded,
            `${opts.shownRepo}: the server sent more than ${opts.maxResponseBytes} bytes; refusing the rest`,
          );
        }
        yield next.value;
      }
    } finally {
      // Ending early (limit, timeout, a consumer that stopped) must release the connection, not wait for a
      // server that never stops.
      if (!completed) {
        tries.end();
        await it.return?.().catch(() => undefined);
      }
    }
  }

  /** Runs `step`, failing with a Timeout when the server stays silent for the idle timeout or the deadline passes. */
  async function withIdleTimeout<T>(step: () => Promise<T>, tries: Attempt): Promise<T> {
    if (signal.aborted) throw timeoutError('the operation timed out');
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      return await Promise.race([
        step(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            reject(timeoutError(`no response from the server for ${opts.idleTimeoutMs} ms`));
            // Torn down rather than left open: the transport sees the attempt's signal abort.
            tries.end();
          }, opts.idleTimeoutMs);
          onAbort = () => reject(timeoutError('the operation timed out'));
          signal.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } finally {
      clearTimeout(timer);
      if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
    }
  }

  return { exchange, signal };
}

/** A 429 or 503 with a Retry-After closes the gate of the host that sent it (after redirects: the one that answered). */
function rateLimitOf(opts: SessionOptions, res: SessionResponse): (ClosedGate & { host: string }) | undefined {
  if (!rateLimitStatuses.has(res.statusCode)) return undefined;
  const askedMs = parseRetryAfter(res.headers['retry-after'], Date.now());
  if (askedMs === undefined) return undefined;
  const host = new URL(res.url).origin;
  const waitMs = Math.min(askedMs, opts.retry.maxDelayMs);
  if (askedMs > 0) opts.gates.close(host, { status: res.statusCode, askedMs, capMs: opts.retry.maxDelayMs });
  return { host, status: res.statusCode, askedMs, waitMs };
}

/** Says which host limited us, with what and for how long (a URL origin: no credentials), and why we stopped. */
function rateLimited(opts: SessionOptions, limit: ClosedGate & { host: string }, why: string): GitSourceError {
  const capped = limit.askedMs > opts.retry.maxDelayMs ? `, of which we wait at most ${seconds(opts.retry.maxDelayMs)}` : '';
  return new GitSourceError(
    GitSourceErrorCode.ServerError,
    `${opts.shownRepo}: the host ${limit.host} rate-limited us (HTTP ${limit.status}, Retry-After ${seconds(limit.askedMs)}${capped}); ${why}`,
  );
}

/** Backoff before try `attempt` (2, 3, …): exponential with jitter, at least what Retry-After asks, capped. */
function delayBefore(opts: SessionOptions, attempt: number, retryAfter: string | undefined): number {
  const exponential = Math.min(opts.retry.maxDelayMs, opts.retry.baseDelayMs * 2 ** (attempt - 2));
  const jittered = exponential * (0.5 + opts.random() / 2);
  const asked = parseRetryAfter(retryAfter, Date.now());
  return Math.min(opts.retry.maxDelayMs, Math.max(jittered, asked ?? 0));
}

/** One try of a request: its own abort (an idle timeout tears down this attempt only) and its bytes. */
class Attempt {
  readonly #controller = new AbortController();
  readonly signal: AbortSignal;
  bytes = 0;
  constructor(operation: AbortSignal) {
    this.signal = AbortSignal.any([operation, this.#controller.signal]);
  }
  end(): void {
    this.#controller.abort();
  }
}

/** Worth another try: a reset or refused connection, or an idle timeout (the deadline is checked apart). */
export function isTransient(err: unknown): boolean {
  if (err instanceof GitSourceError) return err.code === GitSourceErrorCode.Timeout;
  for (let e: unknown = err, depth = 0; typeof e === 'object' && e !== null && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (code.startsWith('E') || code.startsWith('UND_ERR'))) return retryableNetworkCodes.has(code);
    e = (e as { cause?: unknown }).cause;
  }
  // undici without a code: a body cut off by the peer is "TypeError: terminated".
  return err instanceof TypeError && /^(terminated|fetch failed)$/.test(err.message);
}

/** Retry-After as milliseconds from `now`: delta-seconds or an HTTP-date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number.parseInt(text, 10) * 1000;
  // An HTTP-date names a weekday and month; Date.parse alone would also take "-5" or "2026".
  const at = /[a-z]{3}/i.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function seconds(ms: number): string {
  return `${Math.ceil(ms / 1000)} s`;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new Error('aborted'));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

async function drain(body: AsyncIterable<Uint8Array>): Promise<void> {
  let n = 0;
  for await (const chunk of body) {
    n += chunk.byteLength;
    if (n > 64 * 1024) break;
  }
}

// The HTTP edge: an injected transport (default: Node's fetch, never following redirects by itself) wrapped
// so that credentials go only to the origin they were given for, redirects are followed by us (at most 5,
// https only), every response body counts against a byte budget, and a silent server times out.
import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git';
import { GitSourceError, GitSourceErrorCode } from './errors.ts';

export interface HttpRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: Uint8Array | undefined;
  signal: AbortSignal;
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

/** The default transport: Node's built-in fetch (undici). */
export const fetchTransport: HttpTransport = {
  async request(req) {
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

export interface GuardOptions {
  transport: HttpTransport;
  /** Origin (scheme://host:port) the credentials were given for. */
  origin: string;
  authorization: string | undefined;
  allowInsecureHttp: boolean;
  /** Byte budget shared by all responses of one operation. */
  maxResponseBytes: number;
  /** Deadline of the whole operation. */
  signal: AbortSignal;
  /** No byte from the server for this long fails the operation. */
  idleTimeoutMs: number;
  /** How the repo is named in messages (credentials removed). */
  shownRepo: string;
  /**
   * Told about every limit or timeout failure we raise: isomorphic-git does not always pass an error from the
   * body stream on (a cut-off pack can look like an empty one), so the caller checks this afterwards.
   */
  onFailure: (err: GitSourceError) => void;
}

const redirectStatuses = new Set([301, 302, 303, 307, 308]);

export function guardedHttpClient(opts: GuardOptions): HttpClient {
  let received = 0;
  // Aborted by an idle timeout too, so a hung connection is torn down rather than left open.
  const controller = new AbortController();
  const signal = AbortSignal.any([opts.signal, controller.signal]);
  const guard = { signal, idleTimeoutMs: opts.idleTimeoutMs, shownRepo: opts.shownRepo, onTimeout: () => controller.abort() };
  const limitError = (): GitSourceError =>
    new GitSourceError(GitSourceErrorCode.LimitExceeded, `${opts.shownRepo}: the server sent more than ${opts.maxResponseBytes} bytes; refusing the rest`);
  const report = (err: unknown): never => {
    if (err instanceof GitSourceError) opts.onFailure(err);
    throw err;
  };

  async function request(req: GitHttpRequest): Promise<GitHttpResponse> {
    return followRedirects(req).catch(report);
  }

  async function followRedirects(req: GitHttpRequest): Promise<GitHttpResponse> {
    let body: Uint8Array | undefined;
    if (req.body !== undefined) {
      const parts: Uint8Array[] = [];
      for await (const part of req.body) parts.push(part);
      body = Buffer.concat(parts);
    }
    let url = req.url;
    const method = req.method ?? 'GET';
    for (let hop = 0; ; hop++) {
      const target = new URL(url);
      if (target.protocol !== 'https:' && !(opts.allowInsecureHttp && target.protocol === 'http:')) {
        throw new GitSourceError(GitSourceErrorCode.InvalidRepoUrl, `${opts.shownRepo}: refusing to follow a redirect to a non-https URL`);
      }
      target.username = '';
      target.password = '';
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(req.headers ?? {})) {
        if (key.toLowerCase() !== 'authorization') headers[key] = value;
      }
      // Credentials only ever go to the origin they were given for, never to a host a redirect names.
      if (opts.authorization !== undefined && target.origin === opts.origin) headers['Authorization'] = opts.authorization;
      const res = await withIdleTimeout(
        () => opts.transport.request({ url: target.href, method, headers, body, signal }),
        guard,
      );
      const location = res.headers['location'];
      if (redirectStatuses.has(res.statusCode) && location !== undefined) {
        await drain(res.body);
        if (hop >= 5) throw new GitSourceError(GitSourceErrorCode.ServerError, `${opts.shownRepo}: too many redirects`);
        url = new URL(location, target).href;
        continue;
      }
      return {
        url: target.href,
        method,
        statusCode: res.statusCode,
        statusMessage: res.statusMessage,
        headers: res.headers,
        body: limitBody(res.body),
      };
    }
  }

  async function* limitBody(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    const it = source[Symbol.asyncIterator]();
    let completed = false;
    try {
      for (;;) {
        const next = await withIdleTimeout(() => it.next(), guard);
        if (next.done === true) {
          completed = true;
          return;
        }
        received += next.value.byteLength;
        if (received > opts.maxResponseBytes) throw limitError();
        yield next.value;
      }
    } catch (err) {
      report(err);
    } finally {
      // Ending early (limit, timeout) must release the connection, not wait for a server that never stops.
      if (!completed) {
        controller.abort();
        await it.return?.().catch(() => undefined);
      }
    }
  }

  return { request };
}

async function drain(body: AsyncIterable<Uint8Array>): Promise<void> {
  let n = 0;
  for await (const chunk of body) {
    n += chunk.byteLength;
    if (n > 64 * 1024) break;
  }
}

/** Runs `step`, failing with a Timeout when it takes longer than the idle timeout or the deadline passes. */
async function withIdleTimeout<T>(step: () => Promise<T>, opts: { signal: AbortSignal; idleTimeoutMs: number; shownRepo: string; onTimeout: () => void }): Promise<T> {
  const timeout = (what: string): GitSourceError => new GitSourceError(GitSourceErrorCode.Timeout, `${opts.shownRepo}: ${what}`);
  if (opts.signal.aborted) throw timeout('the operation timed out');
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race([
      step(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          reject(timeout(`no response from the server for ${opts.idleTimeoutMs} ms`));
          opts.onTimeout();
        }, opts.idleTimeoutMs);
        onAbort = () => reject(timeout('the operation timed out'));
        opts.signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) opts.signal.removeEventListener('abort', onAbort);
  }
}

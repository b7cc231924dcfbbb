// How notifications reach their receivers: undici's clients, one per receiver (its origin, path and CA: a
// NotificationProvider's, as a rule) and its one connection, kept alive from one message to the next (a provider
// sends one message at a time; providers that share an address take turns on its connection), the request handed to
// undici's dispatch and its answer read into a buffer (no request or response stream, no agent, no URL parsed per message: Node's http client costs most
// of what one notification costs the operator; `pnpm bench delivery` measures both). A receiver's own CA is parsed
// once per receiver, beside the system's roots (as the Git transport trusts it). Through a forward proxy a message goes
// by the Git source's transport (an HTTP CONNECT tunnel per request, as before): proxies are rare for receivers.
// Errors are the transport's own (their codes name no URL); the delivery words them.
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { nodeHttpTransport, type HttpRequest, type HttpResponse, type HttpTransport } from '@syncline/source-git';
import type { Dispatcher } from 'undici';
// By its own file, not the package's entry (which loads all of undici): @syncline/kube's transport does the same.
import Client from 'undici/lib/dispatcher/client.js';

/** A transport that can let go of its connections (the notifications stopping). */
export type ReceiverTransport = HttpTransport & { close(): Promise<void> };

/** At most this many of an answer's bytes are kept; the rest is read and dropped, so the connection can be kept. */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** Receiver addresses whose clients are kept (a NotificationProvider each, as a rule): past it the oldest client is closed. */
const MAX_CLIENTS = 64;

type Target = { readonly client: Dispatcher; readonly origin: string; readonly path: string };

export function createReceiverTransport(viaProxy: HttpTransport = nodeHttpTransport): ReceiverTransport {
  /** By address (and CA): its client, and its origin and path, worked out on its first message. */
  const clients = new Map<string, Dispatcher>();
  const targets = new Map<string, Target>();

  const targetOf = (url: string, ca: string | undefined): Target => {
    const address = ca === undefined ? url : `${url}\u0000${ca}`;
    const known = targets.get(address);
    if (known !== undefined) return known;
    const parsed = new URL(url);
    // A receiver is its origin and path (a webhook's URL names its channel in its path), with its CA.
    const key = `${parsed.origin}${parsed.pathname}${ca === undefined ? '' : `\u0000${ca}`}`;
    let client = clients.get(key);
    if (client === undefined) {
      const secureContext: SecureContext | undefined =
        ca === undefined || parsed.protocol !== 'https:' ? undefined : createSecureContext({ ca: [...rootCertificates, ca] });
      // One connection (a Client, not a Pool): an idle one writes the request within dispatch, not from a later tick.
      client = new Client(parsed.origin, { pipelining: 1, allowH2: false, ...(secureContext === undefined ? {} : { connect: { secureContext } }) });
      clients.set(key, client);
      for (const [oldKey, old] of clients) {
        if (clients.size <= MAX_CLIENTS) break;
        clients.delete(oldKey);
        void old.close();
        for (const [a, t] of targets) if (t.client === old) targets.delete(a);
      }
    }
    const target = { client, origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
    // Addresses that differ in their query only (rare) share a client; the remembered ones are bounded all the same.
    if (targets.size >= MAX_CLIENTS * 4) targets.clear();
    targets.set(address, target);
    return target;
  };

  return {
    request(req) {
      if (req.proxy !== undefined) return viaProxy.request(req);
      let target: Target;
      try {
        target = targetOf(req.url, req.ca);
      } catch (error) {
        return Promise.reject(error instanceof Error ? error : new Error(String(error)));
      }
      return new Promise<HttpResponse>((resolve, reject) => {
        const exchange = new Exchange(req.signal, resolve, reject);
        if (!exchange.open) return;
        try {
          target.client.dispatch({ origin: target.origin, path: target.path, method: req.method, headers: req.headers, body: bodyOf(req) }, exchange);
        } catch (error) {
          exchange.fail(error instanceof Error ? error : new Error(String(error)));
        }
      });
    },
    async close() {
      const all = [...clients.values()];
      clients.clear();
      targets.clear();
      await Promise.all(all.map((client) => client.close().catch(() => undefined)));
    },
  };
}

const bodyOf = (req: HttpRequest): Buffer | null => (req.body === undefined ? null : Buffer.from(req.body.buffer, req.body.byteOffset, req.body.byteLength));

/**
 * One request's exchange with undici: the answer's status and its first 64 KiB, resolved when it ends. An abort
 * (the attempt's deadline, the notifications stopping) rejects at once and cuts the request, sent or waiting for a
 * connection.
 */
class Exchange implements Dispatcher.DispatchHandler {
  #settle: ((response: HttpResponse | undefined, error?: Error) => void) | undefined;
  #controller: Dispatcher.DispatchController | undefined;
  readonly #signal: AbortSignal;
  #status = 0;
  #statusMessage = '';
  #headers: Record<string, string | string[] | undefined> = {};
  readonly #chunks: Buffer[] = [];
  #size = 0;

  constructor(signal: AbortSignal, resolve: (response: HttpResponse) => void, reject: (error: Error) => void) {
    this.#signal = signal;
    const onAbort = (): void => this.fail(abortError());
    this.#settle = (response, error) => {
      this.#settle = undefined;
      signal.removeEventListener('abort', onAbort);
      if (response !== undefined) resolve(response);
      else reject(error ?? new Error('the request failed'));
    };
    if (signal.aborted) this.fail(abortError());
    else signal.addEventListener('abort', onAbort, { once: true });
  }

  get open(): boolean {
    return this.#settle !== undefined;
  }

  fail(error: Error): void {
    const settle = this.#settle;
    if (settle === undefined) return;
    settle(undefined, error);
    this.#controller?.abort(error);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // Aborted while it waited for a connection: cut before a byte is written.
    if (this.#settle === undefined) controller.abort(abortError());
    else this.#controller = controller;
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void {
    this.#status = status;
    this.#headers = headers;
    this.#statusMessage = statusMessage ?? '';
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#size < MAX_RESPONSE_BYTES)
      this.#chunks.push(this.#size + chunk.length > MAX_RESPONSE_BYTES ? chunk.subarray(0, MAX_RESPONSE_BYTES - this.#size) : chunk);
    this.#size += chunk.length;
  }

  onResponseEnd(): void {
    this.#controller = undefined;
    const raw = this.#headers;
    this.#settle?.({
      statusCode: this.#status,
      statusMessage: this.#statusMessage,
      // Read by few callers (a receiver's answer is judged by its status): joined only when asked for.
      get headers() {
        const headers: Record<string, string> = {};
        for (const [key, value] of Object.entries(raw)) if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(', ') : value;
        return headers;
      },
      body: chunksOf(this.#chunks),
    });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#controller = undefined;
    this.#settle?.(undefined, this.#signal.aborted ? abortError() : error);
  }
}

/** The answer's kept chunks, as the transport's callers read a body. */
function chunksOf(chunks: readonly Buffer[]): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]: () => {
      let at = 0;
      return {
        next: (): Promise<IteratorResult<Uint8Array>> =>
          Promise.resolve(at < chunks.length ? { value: chunks[at++] as Buffer, done: false } : { value: undefined, done: true }),
      };
    },
  };
}

function abortError(): Error {
  const error = new Error('The operation was aborted') as Error & { code: string };
  error.name = 'AbortError';
  error.code = 'ABORT_ERR';
  return error;
}

// Where an API server is and how to reach it: a KubeConnection (server, TLS material, credential headers),
// built from a kubeconfig or a client-node KubeConfig, the keep-alive connection pools the REST client uses, and the
// error class for an API server's error answers. Importing client-node costs ~80 MB of RSS (its config
// module loads every generated model), so nothing here imports it: a client-node KubeConfig is still
// accepted, structurally (KubeConfigLike).
import type { RequestOptions } from 'node:https';
import { createSecureContext, type SecureContext } from 'node:tls';
import type { Dispatcher } from 'undici';
// By their own files, not the package's entry: that loads all of undici (fetch, WebSocket, caches, mocks), ~11 MB
// more resident memory in the operator than the pool and the proxy agent alone.
import Pool from 'undici/lib/dispatcher/pool.js';
import ProxyAgent from 'undici/lib/dispatcher/proxy-agent.js';
import undiciSymbols from 'undici/lib/core/symbols.js';

/**
 * The dispatch option undici's pools call while a request waits for a connection, with a function that takes
 * it out of their queue (its own request API passes it for a request with a signal). Without it a request
 * that gave up waiting stays queued until a connection frees, and starting it only to abort it then costs that
 * connection. An internal of undici: its version is pinned, and rest-transport.test.ts checks what it does.
 */
export const kQueuedAbort: symbol = undiciSymbols.kQueuedAbort;

/** An error answer of the API server (or a transport failure, status 0). */
export class ApiError extends Error {
  readonly status: number;
  readonly reason: string;
  /** The API server's own message (its Status), without the request that got it; undefined when it sent none. */
  readonly serverMessage: string | undefined;
  constructor(options: { status: number; reason: string; message: string; serverMessage?: string | undefined }) {
    super(options.message);
    this.name = 'ApiError';
    this.status = options.status;
    this.reason = options.reason;
    this.serverMessage = options.serverMessage;
  }
}

/** TLS material for the keep-alive agent (the fields of tls.connect that a kubeconfig can set). */
export type KubeTlsOptions = {
  readonly ca?: string | Buffer | undefined;
  readonly cert?: string | Buffer | undefined;
  readonly key?: string | Buffer | undefined;
  readonly rejectUnauthorized?: boolean | undefined;
  readonly servername?: string | undefined;
};

/** Where an API server is and how to talk to it: what the HTTP clients need of a kubeconfig, and no more. */
export type KubeConnection = {
  /** Base URL, e.g. `https://10.0.0.1:6443`. */
  readonly server: string;
  readonly tls: KubeTlsOptions;
  /** `user:password` for HTTP basic authentication. */
  readonly basicAuth?: string | undefined;
  /** An http(s) proxy that https requests tunnel through (kubeconfig proxy-url). */
  readonly proxyUrl?: string | undefined;
  /**
   * The credential headers to send now (Authorization). Asked before every request, so it must be cheap
   * (answer from a cache); it may change between calls (token files and exec plugins rotate).
   */
  authHeaders(): Promise<Readonly<Record<string, string>>>;
};

/** The part of @kubernetes/client-node's KubeConfig that connectionFromKubeConfig uses (structural: no import). */
export type KubeConfigLike = {
  getCurrentCluster(): { readonly server: string } | null;
  applyToHTTPSOptions(options: RequestOptions): Promise<void>;
};

/** How often a KubeConfigLike is asked for its credentials again (exec plugins, projected tokens rotate). */
const KUBECONFIG_AUTH_REFRESH_MS = 30_000;

/** A KubeConnection for the current context of a client-node KubeConfig (tests, benches and exec users). */
export async function connectionFromKubeConfig(kc: KubeConfigLike): Promise<KubeConnection> {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig has no current cluster');
  const base: RequestOptions = {};
  await kc.applyToHTTPSOptions(base);
  let headers: Record<string, string> = { ...(base.headers as Record<string, string> | undefined) };
  let headersAt = Date.now();
  let refreshing: Promise<Record<string, string>> | undefined;
  return {
    server: cluster.server,
    tls: {
      ca: base.ca as string | Buffer | undefined,
      cert: base.cert as string | Buffer | undefined,
      key: base.key as string | Buffer | undefined,
      rejectUnauthorized: base.rejectUnauthorized,
      servername: base.servername,
    },
    basicAuth: base.auth ?? undefined,
    authHeaders() {
      if (Date.now() - headersAt <= KUBECONFIG_AUTH_REFRESH_MS) return Promise.resolve(headers);
      refreshing ??= (async () => {
        try {
          const fresh: RequestOptions = {};
          await kc.applyToHTTPSOptions(fresh);
          headers = { ...(fresh.headers as Record<string, string> | undefined) };
          headersAt = Date.now();
          return headers;
        } finally {
          refreshing = undefined;
        }
      })();
      return refreshing;
    },
  };
}

/** A KubeConnection as it is; a client-node KubeConfig through connectionFromKubeConfig. */
export async function toKubeConnection(target: KubeConnection | KubeConfigLike): Promise<KubeConnection> {
  return 'getCurrentCluster' in target ? connectionFromKubeConfig(target) : target;
}

/** How long an idle keep-alive connection is kept: under the API server's own idle timeout (90 s), so it is never the one to close it first. */
const KEEP_ALIVE_MS = 60_000;

/**
 * A keep-alive connection pool (undici) to the connection's API server: at most `connections` connections
 * (null: no cap). The certificates are parsed once, into one secure context every connection of every pool
 * shares (`secureContext`): otherwise each new connection (and every watch has its own) parses them again.
 * With a proxy-url, connections tunnel through it (CONNECT). HTTP/1.1 only: HTTP/2 (undici's allowH2) cost
 * more CPU per request against the API server (`pnpm bench transport`: GET 407 vs 223 µs, apply 597 vs 342 µs),
 * and a watch on its own connection is what lets a hung stream end alone.
 * undici's own timers are off: the REST client sets every deadline itself, from the call, the wait for a
 * connection included (its requests' and watches' limits, see rest.ts).
 */
export function dispatcherFor(connection: KubeConnection, options: { connections: number | null; secureContext?: SecureContext }): Dispatcher {
  const { tls } = connection;
  const secureContext = options.secureContext ?? secureContextFor(connection);
  const connect = {
    secureContext,
    rejectUnauthorized: tls.rejectUnauthorized,
    ...(tls.servername === undefined ? {} : { servername: tls.servername }),
  };
  const common = {
    connections: options.connections,
    pipelining: 1,
    allowH2: false,
    keepAliveTimeout: KEEP_ALIVE_MS,
    keepAliveMaxTimeout: KEEP_ALIVE_MS,
    headersTimeout: 0,
    bodyTimeout: 0,
    connectTimeout: 0,
  };
  if (connection.proxyUrl !== undefined) return new ProxyAgent({ uri: connection.proxyUrl, requestTls: connect, ...common });
  return new Pool(new URL(connection.server).origin, { connect, ...common });
}

/** The connection's certificates, parsed once for every pool of a client. */
export function secureContextFor(connection: KubeConnection): SecureContext {
  const { tls } = connection;
  return createSecureContext({ ca: tls.ca, cert: tls.cert, key: tls.key });
}

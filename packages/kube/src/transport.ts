// Where an API server is and how to reach it: a KubeConnection (server, TLS material, credential headers),
// built from a kubeconfig or a client-node KubeConfig, the keep-alive agents the HTTP clients use, and the
// error class for an API server's error answers. Importing client-node costs ~80 MB of RSS (its config
// module loads every generated model), so nothing here imports it: a client-node KubeConfig is still
// accepted, structurally (KubeConfigLike).
import { Agent, type RequestOptions } from 'node:https';
import { createSecureContext } from 'node:tls';

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

/**
 * One keep-alive agent with the connection's TLS material. The certificates are parsed once, into one secure
 * context every socket shares: otherwise each new connection (and every watch has its own) parses them again.
 */
export function agentFor(connection: KubeConnection, options: { maxSockets: number }): Agent {
  const { tls } = connection;
  return new Agent({
    keepAlive: true,
    maxSockets: options.maxSockets,
    // Not also as ca/cert/key: the agent would turn them into its pool's key on every request.
    secureContext: createSecureContext({ ca: tls.ca, cert: tls.cert, key: tls.key }),
    rejectUnauthorized: tls.rejectUnauthorized,
    servername: tls.servername,
    ...(connection.proxyUrl === undefined ? {} : { proxyEnv: { HTTPS_PROXY: connection.proxyUrl } }),
  });
}

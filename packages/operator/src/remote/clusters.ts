// Clients for RemoteClusters: resolved from the RemoteCluster and its Secret(s), checked (credentials.ts),
// and cached per cluster and credentials version, so a rotated token takes effect at the next use without a
// restart and an unchanged one costs no request. Each client has keep-alive connections and a request
// timeout of its own, so one slow cluster fails only its own targets.
import { type KubeConnection, KubeApiError, createKubeRest, type KubeRest } from '@syncline/kube';
import { createApplyClient, type ApplyClient } from '@syncline/apply';
import type { RemoteCluster, RemoteClusterSpec } from '@syncline/api';
import { InvalidCredentialsError, credentialsFromParts, parseKubeconfig, type CredentialOptions, type RemoteCredentials } from './credentials.ts';

export const RemoteClusterReason = {
  Connected: 'Connected',
  NotFound: 'RemoteClusterNotFound',
  SecretNotFound: 'SecretNotFound',
  InvalidKubeconfig: 'InvalidKubeconfig',
  Unreachable: 'Unreachable',
  Unauthorized: 'Unauthorized',
} as const;
export type RemoteClusterReason = (typeof RemoteClusterReason)[keyof typeof RemoteClusterReason];

/** Why a remote cluster cannot be used; the message names the RemoteCluster and never a credential. */
export class RemoteClusterError extends Error {
  override readonly name = 'RemoteClusterError';
  readonly reason: RemoteClusterReason;
  constructor(reason: RemoteClusterReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

export type RemoteClients = {
  /** `namespace/name@credentials-version`: changes when the RemoteCluster or its Secrets change. */
  readonly key: string;
  readonly cluster: string;
  readonly server: string;
  readonly rest: KubeRest;
  readonly apply: ApplyClient;
};

export type RemoteClusters = {
  /** The clients of RemoteCluster `name` in `namespace` (a sync can only name one in its own namespace). */
  clients(namespace: string, name: string): Promise<RemoteClients>;
  /** The Secrets a RemoteCluster reads, for the watch that re-probes it when they change. */
  secretsOf(spec: RemoteClusterSpec): string[];
};

export type RemoteClustersOptions = CredentialOptions & {
  /** The local cluster's REST client: RemoteClusters and their Secrets live here. */
  readonly rest: KubeRest;
  /** The informer caches: the RemoteCluster, and a Secret's resourceVersion (metadata only). */
  readonly getRemoteCluster: (key: string) => RemoteCluster | undefined;
  readonly secretVersion: (namespace: string, name: string) => string | undefined;
  readonly requestTimeoutMs?: number;
  /** Cuts every remote write once aborted (a leader that lost its Lease), as for the local cluster. */
  readonly writeFence?: AbortSignal;
};

const DEFAULT_REQUEST_TIMEOUT_MS = 15_000;

export function createRemoteClusters(options: RemoteClustersOptions): RemoteClusters {
  const cache = new Map<string, { key: string; clients: Promise<RemoteClients> }>();

  const readSecretKey = async (namespace: string, ref: { name: string; key: string }, cluster: string): Promise<string> => {
    let secret: { data?: Record<string, string> };
    try {
      secret = await options.rest.request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${namespace}/secrets/${ref.name}` });
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404)
        throw new RemoteClusterError(RemoteClusterReason.SecretNotFound, `RemoteCluster ${cluster}: the Secret ${namespace}/${ref.name} does not exist`);
      throw error;
    }
    const value = secret.data?.[ref.key];
    if (value === undefined)
      throw new RemoteClusterError(RemoteClusterReason.SecretNotFound, `RemoteCluster ${cluster}: the Secret ${namespace}/${ref.name} has no key ${ref.key}`);
    return Buffer.from(value, 'base64').toString('utf8');
  };

  const credentialsOf = async (namespace: string, name: string, spec: RemoteClusterSpec): Promise<RemoteCredentials> => {
    const cluster = `${namespace}/${name}`;
    try {
      if (spec.kubeconfigSecretRef !== undefined) return parseKubeconfig(await readSecretKey(namespace, spec.kubeconfigSecretRef, cluster), options);
      if (spec.server === undefined || spec.tokenSecretRef === undefined)
        throw new InvalidCredentialsError('give either kubeconfigSecretRef or server + tokenSecretRef');
      const token = await readSecretKey(namespace, spec.tokenSecretRef, cluster);
      const caPem = spec.caSecretRef === undefined ? undefined : await readSecretKey(namespace, spec.caSecretRef, cluster);
      return credentialsFromParts({ server: spec.server, token, ...(caPem === undefined ? {} : { caPem }) }, options);
    } catch (error) {
      if (error instanceof InvalidCredentialsError)
        throw new RemoteClusterError(RemoteClusterReason.InvalidKubeconfig, `RemoteCluster ${cluster}: ${error.message}`);
      throw error;
    }
  };

  const build = async (namespace: string, name: string, key: string, spec: RemoteClusterSpec): Promise<RemoteClients> => {
    const credentials = await credentialsOf(namespace, name, spec);
    const connection = toKubeConnection(credentials);
    const timeout = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const fence = options.writeFence === undefined ? {} : { writeFence: options.writeFence };
    const [rest, apply] = await Promise.all([
      createKubeRest(connection, { userAgent: 'syncline-operator', ...fence }),
      createApplyClient(connection, { requestTimeoutMs: timeout, ...fence }),
    ]);
    return { key, cluster: `${namespace}/${name}`, server: credentials.server, rest, apply };
  };

  const secretsOf = (spec: RemoteClusterSpec): string[] =>
    [spec.kubeconfigSecretRef?.name, spec.caSecretRef?.name, spec.tokenSecretRef?.name].filter((n): n is string => n !== undefined);

  return {
    secretsOf,
    async clients(namespace, name) {
      const id = `${namespace}/${name}`;
      const object = options.getRemoteCluster(id);
      if (object === undefined)
        throw new RemoteClusterError(
          RemoteClusterReason.NotFound,
          `RemoteCluster ${id} does not exist (a target can name only a RemoteCluster in its own namespace)`,
        );
      const versions = secretsOf(object.spec).map((secret) => `${secret}=${options.secretVersion(namespace, secret) ?? '?'}`);
      const key = `${id}@${object.metadata.generation ?? 0}:${versions.join(',')}`;
      const cached = cache.get(id);
      if (cached !== undefined && cached.key === key) return cached.clients;
      const clients = build(namespace, name, key, object.spec);
      cache.set(id, { key, clients });
      // A failure is not cached: the next use tries again (the Secret may have been fixed in between).
      clients.catch(() => {
        if (cache.get(id)?.key === key) cache.delete(id);
      });
      return clients;
    },
  };
}

/** The connection of checked credentials: everything in memory; nothing in it can run or read a file. */
export function toKubeConnection(credentials: RemoteCredentials): KubeConnection {
  const { auth } = credentials;
  const headers: Readonly<Record<string, string>> = Object.freeze<Record<string, string>>(
    auth.kind === 'token' ? { Authorization: `Bearer ${auth.token}` } : {},
  );
  return {
    server: credentials.server,
    tls: {
      ...(credentials.caData === undefined ? {} : { ca: credentials.caData }),
      ...(credentials.insecureSkipTLSVerify === true ? { rejectUnauthorized: false } : {}),
      ...(credentials.tlsServerName === undefined ? {} : { servername: credentials.tlsServerName }),
      ...(auth.kind === 'clientCertificate' ? { cert: auth.certData, key: auth.keyData } : {}),
    },
    ...(auth.kind === 'basic' ? { basicAuth: `${auth.username}:${auth.password}` } : {}),
    authHeaders: () => Promise.resolve(headers),
  };
}

/** Probe: who answers, with which version; a 401/403 is Unauthorized, no answer is Unreachable. */
export async function probeCluster(clients: RemoteClients, timeoutMs: number): Promise<{ version: string }> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    // /api needs an authenticated identity (unlike /version, which anonymous users may read).
    await clients.rest.request({ method: 'GET', path: '/api', signal });
    const version = await clients.rest.request<{ gitVersion?: string }>({ method: 'GET', path: '/version', signal });
    return { version: version.gitVersion ?? 'unknown' };
  } catch (error) {
    if (error instanceof KubeApiError && (error.status === 401 || error.status === 403)) {
      throw new RemoteClusterError(
        RemoteClusterReason.Unauthorized,
        `RemoteCluster ${clients.cluster}: ${clients.server} refused the credentials (HTTP ${error.status})`,
      );
    }
    const why = signal.aborted ? `no answer within ${timeoutMs / 1000}s` : error instanceof Error ? error.message : String(error);
    throw new RemoteClusterError(RemoteClusterReason.Unreachable, `RemoteCluster ${clients.cluster}: ${clients.server} is unreachable: ${why}`);
  }
}

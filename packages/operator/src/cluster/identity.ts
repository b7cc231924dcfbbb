// Apply clients: the operator's own, and one per tenant ServiceAccount (spec.serviceAccountName) that
// carries a short-lived token from the TokenRequest API, so a tenant's sync can do exactly what its
// account may and nothing more. Works with every authenticator, unlike impersonation headers.
import { type KubeConnection, KubeApiError, type KubeRest } from '@syncline/kube';
import { createApplyClient, type ApplyClient } from '@syncline/apply';
import { ServiceAccountError } from './errors.ts';

/** Whose rights an apply uses: a tenant's ServiceAccount, or the operator's own (undefined). */
export type ApplyIdentity = { readonly namespace: string; readonly serviceAccountName: string } | undefined;

const TOKEN_SECONDS = 3600;

export function createApplyClients(options: {
  connection: KubeConnection;
  rest: KubeRest;
  clock: { now(): Date };
  writeFence?: AbortSignal;
  /** Connections for each client's requests (default: apply's own). */
  requestSockets?: number;
}): (identity: ApplyIdentity) => Promise<ApplyClient> {
  const clientOptions = {
    ...(options.writeFence === undefined ? {} : { writeFence: options.writeFence }),
    ...(options.requestSockets === undefined ? {} : { requestSockets: options.requestSockets }),
  };
  const own = createApplyClient(options.connection, clientOptions);
  const tenants = new Map<string, { client: Promise<ApplyClient>; renewAt: number }>();
  return async (identity) => {
    if (identity === undefined) return own;
    const key = `${identity.namespace}/${identity.serviceAccountName}`;
    const cached = tenants.get(key);
    if (cached !== undefined && cached.renewAt > options.clock.now().getTime()) return cached.client;
    const client = (async () => {
      let token: string;
      try {
        const response = await options.rest.request<{ status: { token: string } }>({
          method: 'POST',
          path: `/api/v1/namespaces/${identity.namespace}/serviceaccounts/${identity.serviceAccountName}/token`,
          body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: TOKEN_SECONDS } },
        });
        token = response.status.token;
      } catch (error) {
        if (error instanceof KubeApiError && error.status === 404)
          throw new ServiceAccountError(`the ServiceAccount ${key} named in spec.serviceAccountName does not exist`);
        throw error;
      }
      // The cluster's TLS settings, the tenant's token: never the operator's own client certificate or password.
      const { server, tls, proxyUrl } = options.connection;
      const headers = Object.freeze({ Authorization: `Bearer ${token}` });
      return createApplyClient(
        {
          server,
          proxyUrl,
          tls: { ca: tls.ca, rejectUnauthorized: tls.rejectUnauthorized, servername: tls.servername },
          authHeaders: () => Promise.resolve(headers),
        },
        clientOptions,
      );
    })();
    tenants.set(key, { client, renewAt: options.clock.now().getTime() + (TOKEN_SECONDS * 1000) / 2 });
    client.catch(() => tenants.delete(key));
    return client;
  };
}

// Apply clients: the operator's own, and one per tenant ServiceAccount (spec.serviceAccountName) that
// carries a short-lived token from the TokenRequest API, so a tenant's sync can do exactly what its
// account may and nothing more. Works with every authenticator, unlike impersonation headers.
import { createApplyClient, type ApplyClient } from '@syncline/apply';
import { KubeConfig } from '@kubernetes/client-node';
import type { ApplyIdentity } from '../reconcile/configsync.ts';
import { ServiceAccountError } from './errors.ts';
import { KubeApiError, type KubeRest } from './rest.ts';

const TOKEN_SECONDS = 3600;


export function createApplyClients(options: { kubeConfig: KubeConfig; rest: KubeRest; clock: { now(): Date } }): (identity: ApplyIdentity) => Promise<ApplyClient> {
  const own = createApplyClient(options.kubeConfig);
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
        if (error instanceof KubeApiError && error.status === 404) throw new ServiceAccountError(`the ServiceAccount ${key} named in spec.serviceAccountName does not exist`);
        throw error;
      }
      const cluster = options.kubeConfig.getCurrentCluster();
      if (cluster === null) throw new Error('the kubeconfig has no current cluster');
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [cluster],
        users: [{ name: key, token }],
        contexts: [{ name: key, cluster: cluster.name, user: key }],
        currentContext: key,
      });
      return createApplyClient(kc);
    })();
    tenants.set(key, { client, renewAt: options.clock.now().getTime() + (TOKEN_SECONDS * 1000) / 2 });
    client.catch(() => tenants.delete(key));
    return client;
  };
}

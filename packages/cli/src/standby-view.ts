// What `syncline get nsrepl` adds to the CRD's columns: the standby's own view, read from the standby itself
// (through the RemoteCluster the replication names, with the caller's rights to read its Secret): the last
// heartbeat of the primary as the standby stored it, and whether the standby namespace was promoted there.
// Read live rather than from status, so it holds when the primary's operator is gone (and costs the operator
// no status write per heartbeat). A standby that does not answer within a few seconds says so.
import { KubeApiError, type KubeRest } from '@syncline/kube';
import type { KubeObject } from '@syncline/apply';
import { NamespaceReplicationSpec, type NamespaceReplication, type RemoteCluster } from '@syncline/api';
import { promotionOf } from '@syncline/operator/client';
import { Reason } from '@syncline/operator/client';
import { heartbeatLeaseName, readHeartbeat, standbyNamespaceOf } from '@syncline/operator/client';
import { RemoteClusterError, createRemoteClusters } from '@syncline/operator/client';

const STANDBY_TIMEOUT_MS = 5_000;

/** Per replication: `state` is standby, promoted, not allowed (refused by the tenancy or standby rule), or why the standby could not be read. */
export type StandbyView = { readonly state: string; readonly lastHeartbeat?: string; readonly promotedAt?: string; readonly promotedBy?: string };

/** Reads every replication's standby view (one client per RemoteCluster, all in parallel). */
export async function standbyViews(rest: KubeRest, items: readonly NamespaceReplication[]): Promise<Map<string, StandbyView>> {
  const remoteClusters = new Map<string, RemoteCluster | undefined>();
  const remote = createRemoteClusters({
    rest,
    getRemoteCluster: (key) => remoteClusters.get(key),
    secretVersion: () => undefined,
    requestTimeoutMs: STANDBY_TIMEOUT_MS,
  });
  const views = new Map<string, StandbyView>();
  await Promise.all(
    items.map(async (nr) => {
      const key = `${nr.metadata.namespace ?? 'default'}/${nr.metadata.name}`;
      const parsed = NamespaceReplicationSpec.safeParse(nr.spec);
      if (!parsed.success) return;
      // A standby the replication may not write (tenancy.ts) is no standby of it: not read, said so.
      const refused = nr.status?.conditions?.find(
        (c) => c.type === 'Stalled' && c.status === 'True' && (c.reason === Reason.NamespaceNotAllowed || c.reason === Reason.SourceNotAllowed),
      );
      views.set(key, refused === undefined ? await standbyView({ rest, nr, spec: parsed.data, remoteClusters, remote }) : { state: 'not allowed' });
    }),
  );
  return views;
}

async function standbyView(input: {
  rest: KubeRest;
  nr: NamespaceReplication;
  spec: NamespaceReplicationSpec;
  remoteClusters: Map<string, RemoteCluster | undefined>;
  remote: ReturnType<typeof createRemoteClusters>;
}): Promise<StandbyView> {
  const { nr, spec } = input;
  const namespace = nr.metadata.namespace ?? 'default';
  const cluster = spec.destination.cluster?.name;
  let standby: KubeRest = input.rest;
  try {
    if (cluster !== undefined) {
      const rcKey = `${namespace}/${cluster}`;
      if (!input.remoteClusters.has(rcKey))
        input.remoteClusters.set(
          rcKey,
          await input.rest.request<RemoteCluster>({
            method: 'GET',
            path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/remoteclusters/${cluster}`,
            timeoutMs: STANDBY_TIMEOUT_MS,
          }),
        );
      standby = (await input.remote.clients(namespace, cluster)).rest;
    }
    const standbyNamespace = standbyNamespaceOf(nr, spec);
    const [ns, lease] = await Promise.all([
      standby.request<KubeObject>({ method: 'GET', path: `/api/v1/namespaces/${standbyNamespace}`, timeoutMs: STANDBY_TIMEOUT_MS }).catch(absent),
      standby
        .request<KubeObject>({
          method: 'GET',
          path: `/apis/coordination.k8s.io/v1/namespaces/${standbyNamespace}/leases/${heartbeatLeaseName(nr.metadata.name)}`,
          timeoutMs: STANDBY_TIMEOUT_MS,
        })
        .catch(absent),
    ]);
    const renewedAt = lease === undefined ? undefined : readHeartbeat(lease).renewedAt;
    const promotion = promotionOf(ns);
    return {
      state: ns === undefined ? 'not created' : promotion === undefined ? 'standby' : 'promoted',
      ...(renewedAt === undefined ? {} : { lastHeartbeat: new Date(renewedAt).toISOString() }),
      ...(promotion === undefined ? {} : { promotedAt: promotion.at, promotedBy: promotion.by }),
    };
  } catch (error) {
    return { state: unreachable(error) };
  }
}

/** A 404 is an answer (nothing there); anything else is not. */
function absent(error: unknown): undefined {
  if (error instanceof KubeApiError && error.status === 404) return undefined;
  throw error;
}

function unreachable(error: unknown): string {
  if (error instanceof RemoteClusterError) return error.reason;
  if (error instanceof KubeApiError && (error.status === 401 || error.status === 403)) return 'no access';
  if (error instanceof KubeApiError && error.status === 404) return 'no RemoteCluster';
  return 'unreachable';
}

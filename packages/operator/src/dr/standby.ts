// Disaster recovery from the standby side, for the day the primary cluster is gone: promotion (workloads to
// their recorded counts, CronJobs resumed) and its reset, both done with nothing but the standby's own API. A
// promotion is recorded on the standby Namespace itself (promoted-at, promoted-by) *before* anything is scaled:
// a primary whose operator comes back reads that record before every replication pass and stops (see
// fence.ts), so it never replicates over a standby that has taken over.
//
// Only what a NamespaceReplication replicated is touched, and ownership is proven, never taken from marks: the
// Namespace and each workload must carry the replication's exact owner label and annotation AND record a
// server-side apply by our field manager (a copy made with `kubectl get -o yaml` carries the marks, not that).
import {
  DEFAULT_FIELD_MANAGER,
  OWNED_BY_ANNOTATION,
  OWNER_LABEL,
  appliedBy,
  objectId,
  ownerHash,
  ownershipOf,
  type ApplyClient,
  type KubeObject,
  type Owner,
} from '@syncline/apply';
import type { KubeRest } from '@syncline/kube';
import { sanitizeCopy, type MirrorKeys } from '../mirror/index.ts';
import { PROMOTED_KINDS } from './transform.ts';
import { applyTarget } from '../reconcile/target.ts';
import { PROMOTED_AT_ANNOTATION, PROMOTED_BY_ANNOTATION, promotionOf, type Promotion } from './fence.ts';
import { HEARTBEAT_FIELD_MANAGER, HEARTBEAT_LABEL } from './heartbeat.ts';
import { SYSTEM_NAMESPACES } from '../tenancy.ts';
import { ORIGINAL_REPLICAS_ANNOTATION, ORIGINAL_SUSPEND_ANNOTATION, promoted } from './transform.ts';

type Json = Record<string, unknown>;

/** A standby namespace as `syncline failover --standby` and `dr status` see it. */
export type StandbyNamespace = {
  readonly name: string;
  /** The NamespaceReplication (in the primary cluster) that keeps it: `namespace/name`. */
  readonly replication: string;
  readonly owner: Owner;
  readonly promotion: Promotion | undefined;
  readonly object: KubeObject;
};

/**
 * The replication that owns `namespace`, when that is proven: the owned-by annotation names a
 * NamespaceReplication's standby target, the owner label matches it, and our field manager applied the Namespace.
 */
export function replicationOwnerOf(namespace: KubeObject): Owner | undefined {
  const mark = namespace.metadata.annotations?.[OWNED_BY_ANNOTATION];
  const parts = mark?.split('/');
  if (parts?.length !== 3) return undefined;
  const [ns = '', name = '', target = ''] = parts;
  if (!name.startsWith('NamespaceReplication:') || target !== 'standby') return undefined;
  const owner = { namespace: ns, name, target };
  return ownershipOf(namespace, owner).kind === 'ours' && appliedBy(namespace, DEFAULT_FIELD_MANAGER) ? owner : undefined;
}

function standbyNamespace(object: KubeObject): StandbyNamespace | undefined {
  const owner = replicationOwnerOf(object);
  if (owner === undefined) return undefined;
  return {
    name: object.metadata.name,
    replication: `${owner.namespace}/${owner.name.slice('NamespaceReplication:'.length)}`,
    owner,
    promotion: promotionOf(object),
    object,
  };
}

/**
 * The namespaces of this cluster that a NamespaceReplication keeps as standbys (all of them, or the ones named;
 * a named one that is not a proven standby is an error naming it). "All" never includes a system namespace
 * (tenancy.ts's SYSTEM_NAMESPACES), whatever marks it carries: an admin who opted one in as a standby names it
 * to act on it; `skipped` hears of each one left out.
 */
export async function listStandbyNamespaces(
  client: ApplyClient,
  names: readonly string[] = [],
  options: { readonly skipped?: (name: string) => void } = {},
): Promise<StandbyNamespace[]> {
  if (names.length > 0) {
    return Promise.all(
      names.map(async (name) => {
        const object = await client.get(`/Namespace//${name}`);
        if (object === undefined) throw new Error(`namespace ${name} not found in the standby cluster`);
        const standby = standbyNamespace(object);
        if (standby === undefined)
          throw new Error(`namespace ${name} is not a standby a NamespaceReplication keeps (no proof of Syncline's replication on it): nothing done`);
        return standby;
      }),
    );
  }
  const marked = await client.list({ group: '', kind: 'Namespace', namespace: '', labelSelector: OWNER_LABEL });
  const standbys = marked.map(standbyNamespace).filter((s): s is StandbyNamespace => s !== undefined);
  for (const system of standbys.filter((s) => SYSTEM_NAMESPACES.has(s.name))) options.skipped?.(system.name);
  return standbys.filter((s) => !SYSTEM_NAMESPACES.has(s.name)).sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** The replication's workloads in the standby namespace: listed by its owner label, kept only on proof. */
async function provenWorkloads(client: ApplyClient, standby: StandbyNamespace): Promise<KubeObject[]> {
  const labelSelector = `${OWNER_LABEL}=${ownerHash(standby.owner)}`;
  const lists = await Promise.all(PROMOTED_KINDS.map((k) => client.list({ ...k, namespace: standby.name, labelSelector })));
  return lists.flat().filter((o) => ownershipOf(o, standby.owner).kind === 'ours' && appliedBy(o, DEFAULT_FIELD_MANAGER));
}

/** The standby's object put back to rest: workloads at zero, CronJobs suspended (their records kept). */
export function demoted(live: KubeObject, keys: MirrorKeys): KubeObject | undefined {
  const annotations = live.metadata.annotations ?? {};
  const group = live.apiVersion.includes('/') ? live.apiVersion.slice(0, live.apiVersion.indexOf('/')) : '';
  const key = `${group}/${live.kind}`;
  if ((key === 'apps/Deployment' || key === 'apps/StatefulSet') && annotations[ORIGINAL_REPLICAS_ANNOTATION] !== undefined) {
    const copy = sanitizeCopy(live, { keys }) as KubeObject & Json;
    copy['spec'] = { ...(copy['spec'] as Json), replicas: 0 };
    return copy;
  }
  if (key === 'batch/CronJob' && annotations[ORIGINAL_SUSPEND_ANNOTATION] !== undefined) {
    const copy = sanitizeCopy(live, { keys }) as KubeObject & Json;
    copy['spec'] = { ...(copy['spec'] as Json), suspend: true };
    return copy;
  }
  return undefined;
}

/** Applies the scaled objects as the replication (same owner, our field manager): nothing else is planned. */
async function applyScaled(client: ApplyClient, standby: StandbyNamespace, desired: readonly KubeObject[], now: string): Promise<number> {
  const outcome = await applyTarget({
    client,
    target: { name: 'standby' },
    desired,
    inventory: desired.map((d) => objectId(d)),
    owner: standby.owner,
    policy: 'Sync',
    prune: false,
    now,
    syncKey: standby.replication,
  });
  const failures = [...outcome.failures, ...outcome.conflicts];
  if (failures.length > 0) throw new Error(`namespace ${standby.name}: ${failures.length} workload(s) not scaled: ${failures.join('; ')}`);
  return desired.length;
}

export type PromoteOptions = { readonly client: ApplyClient; readonly rest: KubeRest; readonly keys: MirrorKeys; readonly by: string; readonly now: Date };

/**
 * Promotes one standby namespace: the promotion is recorded first (the fence), then the replication's proven
 * workloads go to their recorded counts and its CronJobs resume. Running it again changes nothing but what
 * drifted; the first promotion's time and author stay.
 */
export async function promoteStandby(standby: StandbyNamespace, options: PromoteOptions): Promise<{ workloads: number; promotion: Promotion }> {
  let promotion = standby.promotion;
  if (promotion === undefined) {
    promotion = { at: options.now.toISOString(), by: options.by };
    await options.rest.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${standby.name}`,
      query: { fieldManager: 'syncline-failover' },
      contentType: 'application/merge-patch+json',
      body: { metadata: { annotations: { [PROMOTED_AT_ANNOTATION]: promotion.at, [PROMOTED_BY_ANNOTATION]: promotion.by } } },
    });
  }
  const desired = (await provenWorkloads(options.client, standby)).map((o) => promoted(o, options.keys)).filter((o): o is KubeObject => o !== undefined);
  return { workloads: await applyScaled(options.client, standby, desired, options.now.toISOString()), promotion };
}

/**
 * Failback by reset: the standby goes back to being a standby. Workloads to zero and CronJobs suspended first,
 * the heartbeat Leases the primary wrote are removed (so an automatic failover does not promote again before
 * the primary renews them), the promotion record last: from then on the primary's operator replicates over
 * the namespace again, and what changed in the standby while it was promoted is overwritten.
 */
export async function resetStandby(standby: StandbyNamespace, options: Omit<PromoteOptions, 'by'>): Promise<{ workloads: number }> {
  const desired = (await provenWorkloads(options.client, standby)).map((o) => demoted(o, options.keys)).filter((o): o is KubeObject => o !== undefined);
  const workloads = await applyScaled(options.client, standby, desired, options.now.toISOString());
  const leases = await options.client.list({ group: 'coordination.k8s.io', kind: 'Lease', namespace: standby.name, labelSelector: HEARTBEAT_LABEL });
  for (const lease of leases)
    if (appliedBy(lease, HEARTBEAT_FIELD_MANAGER))
      await options.client.delete(objectId(lease), { apiVersion: lease.apiVersion, ...(lease.metadata.uid === undefined ? {} : { uid: lease.metadata.uid }) });
  await options.rest.request({
    method: 'PATCH',
    path: `/api/v1/namespaces/${standby.name}`,
    query: { fieldManager: 'syncline-failover' },
    contentType: 'application/merge-patch+json',
    body: { metadata: { annotations: { [PROMOTED_AT_ANNOTATION]: null, [PROMOTED_BY_ANNOTATION]: null } } },
  });
  return { workloads };
}

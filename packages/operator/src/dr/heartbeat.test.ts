import type { ApplyClient, KubeObject } from '@syncline/apply';
import type { KubeRest } from '@syncline/kube';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { NamespaceReplication } from '@syncline/api';
import type { RemoteClusters } from '../remote/clusters.ts';
import { PROMOTED_AT_ANNOTATION, PROMOTED_BY_ANNOTATION } from './fence.ts';
import { HEARTBEAT_FIELD_MANAGER, renewHeartbeats, type HeartbeatDeps } from './heartbeat.ts';

/** Standby clusters holding Leases by id, as server-side apply leaves them (our field manager on them). */
function standbys() {
  const leases = new Map<string, KubeObject>();
  const unreachable = new Set<string>();
  const client = (cluster: string): ApplyClient =>
    ({
      apply: (object: KubeObject) => {
        if (unreachable.has(cluster)) return Promise.reject(new Error(`cluster ${cluster} unreachable`));
        leases.set(`${cluster}:${object.metadata.namespace ?? ''}/${object.metadata.name}`, {
          ...object,
          metadata: { ...object.metadata, uid: 'u', managedFields: [{ manager: HEARTBEAT_FIELD_MANAGER, operation: 'Apply' }] },
        });
        return Promise.resolve(undefined);
      },
      get: (id: string) => {
        if (unreachable.has(cluster)) return Promise.reject(new Error(`cluster ${cluster} unreachable`));
        const [, , namespace, name] = id.split('/');
        return Promise.resolve(leases.get(`${cluster}:${namespace ?? ''}/${name ?? ''}`));
      },
      delete: (id: string) => {
        const [, , namespace, name] = id.split('/');
        leases.delete(`${cluster}:${namespace ?? ''}/${name ?? ''}`);
        return Promise.resolve('deleted' as const);
      },
    }) as unknown as ApplyClient;
  return { leases, unreachable, client };
}

const replication = (destination: { namespace: string; cluster?: string }): NamespaceReplication =>
  ({
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'NamespaceReplication',
    metadata: { name: 'shop', namespace: 'shop' },
    spec: { destination: { namespace: destination.namespace, ...(destination.cluster === undefined ? {} : { cluster: { name: destination.cluster } }) } },
  }) as unknown as NamespaceReplication;

function heartbeatDeps(clusters: ReturnType<typeof standbys>, current: () => NamespaceReplication): HeartbeatDeps {
  return {
    rest: { request: () => Promise.resolve({}) } as unknown as KubeRest,
    applyClient: () => Promise.resolve(clusters.client('local')),
    remote: { clients: (_namespace: string, cluster: string) => Promise.resolve({ apply: clusters.client(cluster) }) } as unknown as RemoteClusters,
    replications: () => [current()],
    isLeader: () => true,
    clock: { now: () => new Date('2026-01-01T00:00:00Z') },
    logger: pino({ level: 'silent' }),
    intervalMs: 10_000,
    identity: 'test',
    standby: { trusted: new Set(), rules: { allowedSystem: new Set() } },
    failing: new Set(),
    renewedAt: new Map(),
    retiring: new Map(),
    fenced: new Set(),
  };
}

describe('renewHeartbeats', () => {
  it('a new destination: the heartbeat moves there and the old standby loses its Lease (not left to expire into a failover)', async () => {
    const clusters = standbys();
    let nr = replication({ namespace: 'shop', cluster: 'dr-1' });
    const deps = heartbeatDeps(clusters, () => nr);
    await renewHeartbeats(deps);
    expect([...clusters.leases.keys()]).toEqual(['dr-1:shop/syncline-heartbeat-shop']);
    // another namespace in the same cluster
    nr = replication({ namespace: 'shop-2', cluster: 'dr-1' });
    await renewHeartbeats(deps);
    expect([...clusters.leases.keys()]).toEqual(['dr-1:shop-2/syncline-heartbeat-shop']);
    // another cluster, the old one unreachable for a while: the new place heartbeats at once, the old Lease
    // goes as soon as its cluster answers again
    clusters.unreachable.add('dr-1');
    nr = replication({ namespace: 'shop-2', cluster: 'dr-2' });
    await renewHeartbeats(deps);
    expect([...clusters.leases.keys()].sort()).toEqual(['dr-1:shop-2/syncline-heartbeat-shop', 'dr-2:shop-2/syncline-heartbeat-shop']);
    await renewHeartbeats(deps);
    expect(clusters.leases.has('dr-1:shop-2/syncline-heartbeat-shop')).toBe(true);
    clusters.unreachable.delete('dr-1');
    await renewHeartbeats(deps);
    expect([...clusters.leases.keys()]).toEqual(['dr-2:shop-2/syncline-heartbeat-shop']);
    // and a move back to a place still waiting to be cleaned keeps the Lease there: it is the current one again
    clusters.unreachable.add('dr-2');
    nr = replication({ namespace: 'shop-2', cluster: 'dr-1' });
    await renewHeartbeats(deps);
    nr = replication({ namespace: 'shop-2', cluster: 'dr-2' });
    clusters.unreachable.delete('dr-2');
    await renewHeartbeats(deps);
    expect([...clusters.leases.keys()]).toEqual(['dr-2:shop-2/syncline-heartbeat-shop']);
  });

  it('writes nothing at all to a promoted standby: no renewal, no removal; renews again once the promotion is cleared', async () => {
    const clusters = standbys();
    let nr = replication({ namespace: 'shop', cluster: 'dr-1' });
    const deps = heartbeatDeps(clusters, () => nr);
    await renewHeartbeats(deps);
    const renewed = clusters.leases.get('dr-1:shop/syncline-heartbeat-shop');
    expect(renewed).toBeDefined();
    // the standby promoted (the record on its Namespace, as `syncline failover --standby` writes it)
    const promoted = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'shop', annotations: { [PROMOTED_AT_ANNOTATION]: '2026-01-01T00:00:00Z', [PROMOTED_BY_ANNOTATION]: 'alice' } },
    };
    clusters.leases.set('dr-1:/shop', promoted);
    const later = { ...deps, clock: { now: () => new Date('2026-01-01T00:05:00Z') } };
    await renewHeartbeats(later);
    expect(clusters.leases.get('dr-1:shop/syncline-heartbeat-shop')).toBe(renewed);
    expect(later.fenced?.has('shop/shop')).toBe(true);
    // moved elsewhere: the Lease left in the promoted standby stays exactly as it was
    nr = replication({ namespace: 'shop', cluster: 'dr-2' });
    await renewHeartbeats(later);
    expect(clusters.leases.get('dr-1:shop/syncline-heartbeat-shop')).toBe(renewed);
    expect(clusters.leases.has('dr-2:shop/syncline-heartbeat-shop')).toBe(true);
    // back, and the promotion cleared by a reset: renewed again
    nr = replication({ namespace: 'shop', cluster: 'dr-1' });
    clusters.leases.delete('dr-1:/shop');
    await renewHeartbeats(later);
    expect(clusters.leases.get('dr-1:shop/syncline-heartbeat-shop')).not.toBe(renewed);
    expect(later.fenced?.has('shop/shop')).toBe(false);
  });

  it('renews nothing in a standby the replication may not write: a system namespace, or one another replication had first', async () => {
    const clusters = standbys();
    const deps = heartbeatDeps(clusters, () => replication({ namespace: 'kube-system', cluster: 'dr-1' }));
    await renewHeartbeats(deps);
    const first = {
      ...replication({ namespace: 'shop-dr', cluster: 'dr-1' }),
      metadata: { name: 'first', namespace: 'shop', creationTimestamp: '2026-01-01T00:00:00Z' },
    } as NamespaceReplication;
    const later = {
      ...replication({ namespace: 'shop-dr', cluster: 'dr-1' }),
      metadata: { name: 'later', namespace: 'shop', creationTimestamp: '2026-01-02T00:00:00Z' },
    } as NamespaceReplication;
    await renewHeartbeats({ ...deps, replications: () => [first, later] });
    expect([...clusters.leases.keys()]).toEqual(['dr-1:shop-dr/syncline-heartbeat-first']);
  });
});

import { DEFAULT_FIELD_MANAGER, OWNED_BY_ANNOTATION, OWNER_LABEL, ownedBy, ownerHash, type ApplyClient, type KubeObject } from '@syncline/apply';
import { describe, expect, it } from 'vitest';
import { mirrorKeys } from '../mirror/index.ts';
import { decideAutoFailover } from './auto-failover.ts';
import { fencedMessage, promotionOf, PROMOTED_AT_ANNOTATION, PROMOTED_BY_ANNOTATION } from './fence.ts';
import { HOLD_ANNOTATION, heartbeatLease, heartbeatLeaseName, readHeartbeat } from './heartbeat.ts';
import { demoted, listStandbyNamespaces, replicationOwnerOf, type StandbyNamespace } from './standby.ts';
import { ORIGINAL_REPLICAS_ANNOTATION, ORIGINAL_SUSPEND_ANNOTATION } from './transform.ts';
import type { NamespaceReplication } from '@syncline/api';

const owner = { namespace: 'apps', name: 'NamespaceReplication:shop', target: 'standby' };
const applied = [{ manager: DEFAULT_FIELD_MANAGER, operation: 'Apply' }];
const namespace = (extra: Partial<KubeObject['metadata']> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: {
    name: 'shop',
    labels: { [OWNER_LABEL]: ownerHash(owner) },
    annotations: { [OWNED_BY_ANNOTATION]: ownedBy(owner) },
    managedFields: applied,
    ...extra,
  },
});

describe('replicationOwnerOf', () => {
  it("proves a standby namespace by the replication's exact marks and our own apply", () => {
    expect(replicationOwnerOf(namespace())).toEqual(owner);
  });

  it('refuses a copy carrying every mark but not our apply, wrong marks, and other owners', () => {
    // given a `kubectl get -o yaml` copy: the marks, another manager's create
    expect(replicationOwnerOf(namespace({ managedFields: [{ manager: 'kubectl-create', operation: 'Update' }] }))).toBeUndefined();
    expect(replicationOwnerOf(namespace({ labels: { [OWNER_LABEL]: 'someone-else' } }))).toBeUndefined();
    const configSync = { namespace: 'apps', name: 'web', target: 'prod' };
    expect(
      replicationOwnerOf(namespace({ labels: { [OWNER_LABEL]: ownerHash(configSync) }, annotations: { [OWNED_BY_ANNOTATION]: ownedBy(configSync) } })),
    ).toBeUndefined();
    expect(replicationOwnerOf(namespace({ labels: {}, annotations: {} }))).toBeUndefined();
  });
});

describe('listStandbyNamespaces', () => {
  it('never lists a system namespace among all standbys, whatever marks it carries (it says so); a named one is looked at', async () => {
    const marked = ['kube-system', 'shop', 'default'].map((name) => namespace({ name }));
    const client = {
      list: () => Promise.resolve(marked),
      get: (id: string) => Promise.resolve(marked.find((n) => id === `/Namespace//${n.metadata.name}`)),
    } as unknown as ApplyClient;
    const skipped: string[] = [];
    expect((await listStandbyNamespaces(client, [], { skipped: (name) => skipped.push(name) })).map((s) => s.name)).toEqual(['shop']);
    expect(skipped).toEqual(['kube-system', 'default']);
    expect((await listStandbyNamespaces(client, ['default'])).map((s) => s.name)).toEqual(['default']);
  });
});

describe('promotion record (the fence)', () => {
  it('reads promoted-at and promoted-by; absent or empty means not promoted', () => {
    expect(promotionOf(namespace({ annotations: { [PROMOTED_AT_ANNOTATION]: '2026-11-25T10:00:00Z', [PROMOTED_BY_ANNOTATION]: 'alice' } }))).toEqual({
      at: '2026-11-25T10:00:00Z',
      by: 'alice',
    });
    expect(promotionOf(namespace({ annotations: { [PROMOTED_AT_ANNOTATION]: '2026-11-25T10:00:00Z' } }))).toEqual({
      at: '2026-11-25T10:00:00Z',
      by: 'unknown',
    });
    expect(promotionOf(namespace({ annotations: { [PROMOTED_AT_ANNOTATION]: '' } }))).toBeUndefined();
    expect(promotionOf(undefined)).toBeUndefined();
  });

  it('says who promoted and both ways back', () => {
    const message = fencedMessage({ namespace: 'shop', cluster: 'dr', promotion: { at: 'T', by: 'alice' } });
    expect(message).toContain('dr/shop was promoted at T by alice');
    expect(message).toContain('syncline failback --standby --reset-standby shop');
    expect(message).toContain('replicate the standby back');
  });
});

describe('demoted', () => {
  const keys = mirrorKeys();
  it('puts workloads at zero and CronJobs suspended, keeping their records', () => {
    const web: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'shop', uid: 'u', annotations: { [ORIGINAL_REPLICAS_ANNOTATION]: '3' } },
      spec: { replicas: 3 },
      status: { readyReplicas: 3 },
    };
    expect(demoted(web, keys)).toMatchObject({ metadata: { annotations: { [ORIGINAL_REPLICAS_ANNOTATION]: '3' } }, spec: { replicas: 0 } });
    expect(demoted(web, keys)?.['status']).toBeUndefined();
    const cron: KubeObject = {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'r', namespace: 'shop', annotations: { [ORIGINAL_SUSPEND_ANNOTATION]: 'false' } },
      spec: { suspend: false },
    };
    expect(demoted(cron, keys)).toMatchObject({ spec: { suspend: true } });
  });

  it('leaves what has no record alone', () => {
    expect(demoted({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'mine', namespace: 'shop' }, spec: { replicas: 2 } }, keys)).toBeUndefined();
    expect(
      demoted({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'shop', annotations: { [ORIGINAL_REPLICAS_ANNOTATION]: '3' } } }, keys),
    ).toBeUndefined();
  });
});

describe('heartbeat', () => {
  const nr = {
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'NamespaceReplication',
    metadata: { name: 'shop', namespace: 'apps' },
    spec: { destination: { cluster: { name: 'dr' } } },
    status: {
      lastSyncedTime: '2026-11-25T09:59:00Z',
      conditions: [{ type: 'Ready', status: 'True', reason: 'Replicated', message: '', lastTransitionTime: '2026-11-25T09:00:00Z' }],
    },
  } as unknown as NamespaceReplication;

  it('is a Lease renewed now that carries the last replicated change, and reads back', () => {
    const now = new Date('2026-11-25T10:00:00.000Z');
    const lease = heartbeatLease({ nr, namespace: 'shop', now, intervalMs: 10_000, identity: 'op-1' });
    expect(lease).toMatchObject({
      kind: 'Lease',
      metadata: { name: 'syncline-heartbeat-shop', namespace: 'shop' },
      spec: { holderIdentity: 'op-1', leaseDurationSeconds: 30, renewTime: '2026-11-25T10:00:00.000000Z' },
    });
    expect(readHeartbeat(lease)).toEqual({
      namespace: 'shop',
      name: 'syncline-heartbeat-shop',
      replication: 'apps/shop',
      renewedAt: now.getTime(),
      lastChange: '2026-11-25T09:59:00Z',
      ready: 'True',
      held: false,
    });
  });

  it('keeps a long name a valid object name', () => {
    expect(heartbeatLeaseName('a'.repeat(253)).length).toBeLessThanOrEqual(253);
  });
});

describe('decideAutoFailover', () => {
  const standby = (extra: Partial<StandbyNamespace> = {}): StandbyNamespace => ({
    name: 'shop',
    replication: 'apps/shop',
    owner,
    promotion: undefined,
    object: namespace(),
    ...extra,
  });
  const heartbeat = {
    namespace: 'shop',
    name: 'syncline-heartbeat-shop',
    replication: 'apps/shop',
    renewedAt: 1_000_000,
    lastChange: undefined,
    ready: 'True',
    held: false,
  };
  const graceMs = 60_000;

  it('promotes only after the grace period', () => {
    expect(decideAutoFailover({ heartbeat, standby: standby(), nowMs: 1_000_000 + graceMs, graceMs })).toBe('fresh');
    expect(decideAutoFailover({ heartbeat, standby: standby(), nowMs: 1_000_001 + graceMs, graceMs })).toBe('promote');
    expect(decideAutoFailover({ heartbeat: { ...heartbeat, renewedAt: undefined }, standby: standby(), nowMs: 0, graceMs })).toBe('promote');
  });

  it('never while held (on the Lease or the Namespace), nor twice', () => {
    const late = 1_000_000 + 10 * graceMs;
    expect(decideAutoFailover({ heartbeat: { ...heartbeat, held: true }, standby: standby(), nowMs: late, graceMs })).toBe('held');
    expect(
      decideAutoFailover({ heartbeat, standby: standby({ object: namespace({ annotations: { [HOLD_ANNOTATION]: 'maintenance' } }) }), nowMs: late, graceMs }),
    ).toBe('held');
    expect(
      decideAutoFailover({ heartbeat, standby: standby({ object: namespace({ annotations: { [HOLD_ANNOTATION]: 'false' } }) }), nowMs: late, graceMs }),
    ).toBe('promote');
    expect(decideAutoFailover({ heartbeat, standby: standby({ promotion: { at: 'T', by: 'alice' } }), nowMs: late, graceMs })).toBe('promoted');
    // a stale Lease labelled alike that is not the owning replication's heartbeat counts for nothing
    expect(decideAutoFailover({ heartbeat: { ...heartbeat, replication: 'tenant/fake' }, standby: standby(), nowMs: late, graceMs })).toBe('fresh');
  });
});

import { describe, expect, it } from 'vitest';
import { NamespaceReplicationPolicySpec, type NamespaceReplication, type NamespaceReplicationPolicy } from '@syncline/api';
import { POLICY_FIELD_MANAGER, ownedByPolicy, planPolicy, replicationName, standbyNamespaceName, summarise } from './policy.ts';

const spec = NamespaceReplicationPolicySpec.parse({
  namespaceSelector: { matchLabels: { dr: 'gold' } },
  namespaceMapping: { suffix: '-dr' },
  template: { destination: { cluster: { name: 'dr' } }, interval: '1m' },
});
const policy = (inventory: { replication: string; uid: string; namespace: string }[] = []): NamespaceReplicationPolicy => ({
  apiVersion: 'syncline.dev/v1alpha1',
  kind: 'NamespaceReplicationPolicy',
  metadata: { name: 'gold', namespace: 'syncline-system', uid: 'policy-uid', generation: 1 },
  spec,
  status: { inventory },
});
const ownerRef = { apiVersion: 'syncline.dev/v1alpha1', kind: 'NamespaceReplicationPolicy', name: 'gold', uid: 'policy-uid', controller: true };
const replication = (name: string, source: string, extra: Record<string, unknown> = {}): NamespaceReplication =>
  ({
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'NamespaceReplication',
    metadata: { name, namespace: 'syncline-system', uid: `${name}-uid`, ...extra },
    spec: { sourceNamespace: source, destination: { cluster: { name: 'dr' }, namespace: `${source}-dr` } },
  }) as unknown as NamespaceReplication;
const gold = { dr: 'gold' };

describe('standbyNamespaceName', () => {
  it('maps by explicit name first, then prefix and suffix; a name that is no DNS label is an error naming it', () => {
    expect(standbyNamespaceName('shop', undefined)).toEqual({ name: 'shop' });
    expect(standbyNamespaceName('shop', { prefix: 'dr-', suffix: '-x' })).toEqual({ name: 'dr-shop-x' });
    expect(standbyNamespaceName('shop', { prefix: 'dr-', names: { shop: 'store' } })).toEqual({ name: 'store' });
    expect(standbyNamespaceName('a'.repeat(62), { suffix: '-dr' })).toEqual({ error: expect.stringContaining('not a namespace name') as string });
  });
});

describe('replicationName', () => {
  it('is <policy>-<namespace>, shortened with a stable hash when longer than 63', () => {
    expect(replicationName('gold', 'shop')).toBe('gold-shop');
    const long = replicationName('gold', 'n'.repeat(63));
    expect(long.length).toBeLessThanOrEqual(63);
    expect(long).toBe(replicationName('gold', 'n'.repeat(63)));
    expect(long).not.toBe(replicationName('gold', `${'n'.repeat(62)}m`));
  });
});

describe('ownedByPolicy', () => {
  it('proves ownership by the inventory (name and uid), or by our own apply together with our controller ownerReference', () => {
    expect(ownedByPolicy(replication('gold-shop', 'shop'), policy([{ replication: 'gold-shop', uid: 'gold-shop-uid', namespace: 'shop' }]))).toBe(true);
    // a replication of the same name recreated by someone else (another uid) is not ours
    expect(ownedByPolicy(replication('gold-shop', 'shop'), policy([{ replication: 'gold-shop', uid: 'old-uid', namespace: 'shop' }]))).toBe(false);
    const applied = [{ manager: POLICY_FIELD_MANAGER, operation: 'Apply' }];
    expect(ownedByPolicy(replication('gold-shop', 'shop', { ownerReferences: [ownerRef], managedFields: applied }), policy())).toBe(true);
    // marks alone (an ownerReference copied with kubectl) prove nothing
    expect(
      ownedByPolicy(
        replication('gold-shop', 'shop', { ownerReferences: [ownerRef], managedFields: [{ manager: 'kubectl-create', operation: 'Update' }] }),
        policy(),
      ),
    ).toBe(false);
  });
});

describe('planPolicy', () => {
  it('creates one replication per matching namespace, with the template, the mapped standby name and an ownerReference', () => {
    const plan = planPolicy({
      policy: policy(),
      spec,
      namespaces: [{ name: 'shop', labels: gold }, { name: 'blog' }, { name: 'pay', labels: gold }],
      replications: [],
      labels: { 'syncline.dev/shard': 'a' },
    });
    expect(plan.apply.map((a) => a.object.metadata.name)).toEqual(['gold-pay', 'gold-shop']);
    expect(plan.apply[1]?.object).toMatchObject({
      metadata: { namespace: 'syncline-system', labels: { 'syncline.dev/policy': 'gold', 'syncline.dev/shard': 'a' }, ownerReferences: [ownerRef] },
      spec: { sourceNamespace: 'shop', destination: { cluster: { name: 'dr' }, namespace: 'shop-dr' }, interval: '1m', mode: 'Continuous' },
    });
    expect(plan.apply[1]?.object['spec']).not.toHaveProperty('failover');
    expect(plan.remove).toEqual([]);
    expect(plan.rows.map((r) => [r.namespace, r.ready])).toEqual([
      ['pay', 'Unknown'],
      ['shop', 'Unknown'],
    ]);
  });

  it('writes nothing for a replication already as the template says, and puts back an edited one', () => {
    const first = planPolicy({ policy: policy(), spec, namespaces: [{ name: 'shop', labels: gold }], replications: [] });
    const live = {
      ...(first.apply[0]?.object as unknown as NamespaceReplication),
      metadata: { ...first.apply[0]?.object.metadata, name: 'gold-shop', uid: 'gold-shop-uid' },
    } as NamespaceReplication;
    const owned = policy([{ replication: 'gold-shop', uid: 'gold-shop-uid', namespace: 'shop' }]);
    expect(planPolicy({ policy: owned, spec, namespaces: [{ name: 'shop', labels: gold }], replications: [live] }).apply).toEqual([]);
    // spec.failover set by `syncline failover` on the replication is not the policy's: still nothing to write
    const failedOver = { ...live, spec: { ...live.spec, failover: true } } as NamespaceReplication;
    expect(planPolicy({ policy: owned, spec, namespaces: [{ name: 'shop', labels: gold }], replications: [failedOver] }).apply).toEqual([]);
    const edited = { ...live, spec: { ...live.spec, interval: '9m' } } as NamespaceReplication;
    expect(planPolicy({ policy: owned, spec, namespaces: [{ name: 'shop', labels: gold }], replications: [edited] }).apply.map((a) => a.exists)).toEqual([
      true,
    ]);
  });

  it('removes only its own replications of namespaces that stopped matching; never one it cannot prove', () => {
    const owned = policy([{ replication: 'gold-shop', uid: 'gold-shop-uid', namespace: 'shop' }]);
    const foreign = replication('gold-blog', 'blog', { ownerReferences: [ownerRef], labels: { 'syncline.dev/policy': 'gold' } });
    const plan = planPolicy({
      policy: owned,
      spec,
      namespaces: [{ name: 'shop' }, { name: 'blog' }],
      replications: [replication('gold-shop', 'shop'), foreign],
    });
    expect(plan.remove).toEqual([{ name: 'gold-shop', uid: 'gold-shop-uid', namespace: 'shop' }]);
    expect(plan.inventory).toEqual([{ replication: 'gold-shop', uid: 'gold-shop-uid', namespace: 'shop' }]);
  });

  it('leaves a namespace to a replication it did not create, by name or by source, and says so', () => {
    const plan = planPolicy({
      policy: policy(),
      spec,
      namespaces: [
        { name: 'shop', labels: gold },
        { name: 'pay', labels: gold },
      ],
      replications: [replication('gold-shop', 'shop'), replication('pay-by-hand', 'pay')],
    });
    expect(plan.apply).toEqual([]);
    expect(plan.rows.map((r) => [r.namespace, r.message])).toEqual([
      ['pay', expect.stringContaining('already replicated by NamespaceReplication syncline-system/pay-by-hand')],
      ['shop', expect.stringContaining('this policy did not create')],
    ]);
  });

  it('refuses a standby that would be the source itself (no cluster, no renaming)', () => {
    const local = NamespaceReplicationPolicySpec.parse({ namespaceSelector: { matchLabels: gold } });
    const plan = planPolicy({ policy: policy(), spec: local, namespaces: [{ name: 'shop', labels: gold }], replications: [] });
    expect(plan.apply).toEqual([]);
    expect(plan.rows[0]?.message).toContain('the standby would be the namespace itself');
  });
});

describe('planPolicy and the standby rule', () => {
  const onto = (names: Record<string, string>): NamespaceReplicationPolicySpec =>
    NamespaceReplicationPolicySpec.parse({ ...spec, namespaceMapping: { names } });
  const rules = { operatorNamespace: 'syncline-system', allowedSystem: new Set<string>() };

  it('refuses a mapping onto a system namespace or the operator namespace, per namespace with the rule named, and creates the rest', () => {
    const mapping = onto({ a: 'kube-system', b: 'kube-public', c: 'kube-node-lease', d: 'default', e: 'syncline-system', f: 'f-dr' });
    const namespaces = ['a', 'b', 'c', 'd', 'e', 'f'].map((name) => ({ name, labels: gold }));
    const plan = planPolicy({ policy: policy(), spec: mapping, namespaces, replications: [], rules, claims: [] });
    expect(plan.apply.map((a) => a.namespace)).toEqual(['f']);
    expect(plan.rows.filter((r) => r.replication === undefined).map((r) => [r.namespace, r.standbyNamespace])).toEqual([
      ['a', 'kube-system'],
      ['b', 'kube-public'],
      ['c', 'kube-node-lease'],
      ['d', 'default'],
      ['e', 'syncline-system'],
    ]);
    expect(plan.rows[0]?.message).toMatch(/^NamespaceNotAllowed: standby namespace kube-system: a system namespace/);
    expect(plan.rows[4]?.message).toContain("the operator's own namespace is never a DR standby");
    // opted in by an admin
    const opted = planPolicy({
      policy: policy(),
      spec: mapping,
      namespaces,
      replications: [],
      rules: { ...rules, allowedSystem: new Set(['default']) },
      claims: [],
    });
    expect(opted.apply.map((a) => a.namespace)).toEqual(['d', 'f']);
  });

  it('removes a replication it made whose mapping became refused (its standby stays as it is)', () => {
    const owned = policy([{ replication: 'gold-shop', uid: 'gold-shop-uid', namespace: 'shop' }]);
    const plan = planPolicy({
      policy: owned,
      spec: onto({ shop: 'kube-system' }),
      namespaces: [{ name: 'shop', labels: gold }],
      replications: [replication('gold-shop', 'shop')],
      rules,
      claims: [],
    });
    expect(plan.remove).toEqual([{ name: 'gold-shop', uid: 'gold-shop-uid', namespace: 'shop' }]);
  });

  it('leaves a standby namespace to the replication that has it (any namespace), and two of its own mapped alike to the first by name', () => {
    const elsewhere = {
      replication: 'team/by-hand',
      createdAt: '2026-01-01T00:00:00Z',
      sourceNamespace: 'blog',
      cluster: 'syncline-system/dr',
      standbyNamespace: 'shop-dr',
    };
    const plan = planPolicy({ policy: policy(), spec, namespaces: [{ name: 'shop', labels: gold }], replications: [], rules, claims: [elsewhere] });
    expect(plan.apply).toEqual([]);
    expect(plan.rows[0]?.message).toContain('already the standby namespace of NamespaceReplication team/by-hand, created first');
    const twice = planPolicy({
      policy: policy(),
      spec: onto({ a: 'same', b: 'same' }),
      namespaces: [
        { name: 'a', labels: gold },
        { name: 'b', labels: gold },
      ],
      replications: [],
      rules,
      claims: [],
    });
    expect(twice.apply.map((a) => a.namespace)).toEqual(['a']);
    expect(twice.rows[1]?.message).toContain('NamespaceReplication syncline-system/gold-a');
  });
});

describe('summarise', () => {
  it('counts matched, ready and promoted namespaces, and gives the oldest last change (the worst recovery point)', () => {
    expect(
      summarise([
        { namespace: 'a', ready: 'True', lastChange: '2026-11-25T10:00:05Z' },
        { namespace: 'b', ready: 'False', lastChange: '2026-11-25T10:00:01Z', promotedAt: '2026-11-25T11:00:00Z' },
        { namespace: 'c', message: 'refused' },
      ]),
    ).toEqual({ matched: 3, ready: 1, promoted: 1, oldestChange: '2026-11-25T10:00:01Z' });
  });
});

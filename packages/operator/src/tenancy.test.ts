import { describe, expect, it } from 'vitest';
import {
  NAMESPACE_NOT_ALLOWED,
  SYSTEM_NAMESPACES,
  allowedStandby,
  allowedWrite,
  claimedFirst,
  describeRefusal,
  refusedObjects,
  standbyNamespaceRefusal,
  standbyRules,
  trustedNamespaces,
  type StandbyClaim,
} from './tenancy.ts';

const trusted = trustedNamespaces({ operatorNamespace: 'syncline-system', list: 'platform, ops' });
const tenant = { objectNamespace: 'team-a', serviceAccount: undefined, trusted };

describe('allowedWrite', () => {
  it('lets an object without a ServiceAccount write only into its own namespace', () => {
    expect(allowedWrite({ ...tenant, targetNamespace: 'team-a' })).toEqual({ allowed: true, by: 'own-namespace' });
    for (const elsewhere of ['kube-system', 'default', 'syncline-system', 'team-b']) {
      const verdict = allowedWrite({ ...tenant, targetNamespace: elsewhere });
      expect(verdict).toMatchObject({ allowed: false, reason: NAMESPACE_NOT_ALLOWED });
      expect(verdict.allowed ? '' : verdict.message).toContain(`namespace ${elsewhere}`);
    }
  });

  it('refuses cluster-scoped objects to an untrusted object without a ServiceAccount, even when its own namespace is the target', () => {
    const verdict = allowedWrite({ ...tenant, clusterScoped: true });
    expect(verdict).toMatchObject({ allowed: false, reason: NAMESPACE_NOT_ALLOWED });
    expect(verdict.allowed ? '' : verdict.message).toMatch(/cluster-scoped objects: an object in namespace team-a that names no serviceAccountName/);
  });

  it('lets trusted namespaces (the operator namespace and the list) write anywhere, cluster-scoped too', () => {
    for (const objectNamespace of ['syncline-system', 'platform', 'ops']) {
      expect(allowedWrite({ ...tenant, objectNamespace, targetNamespace: 'kube-system' })).toEqual({ allowed: true, by: 'trusted-namespace' });
      expect(allowedWrite({ ...tenant, objectNamespace, clusterScoped: true })).toEqual({ allowed: true, by: 'trusted-namespace' });
    }
  });

  it("leaves the decision to the API server when a ServiceAccount writes (its RBAC) or another cluster's credentials do", () => {
    expect(allowedWrite({ ...tenant, serviceAccount: 'deployer', targetNamespace: 'team-b' })).toEqual({ allowed: true, by: 'service-account' });
    expect(allowedWrite({ ...tenant, serviceAccount: 'deployer', clusterScoped: true })).toEqual({ allowed: true, by: 'service-account' });
    expect(allowedWrite({ ...tenant, cluster: 'east', targetNamespace: 'kube-system' })).toEqual({ allowed: true, by: 'remote-cluster' });
  });

  it('trusts no namespace by default', () => {
    const none = trustedNamespaces({});
    expect(none.size).toBe(0);
    expect(allowedWrite({ objectNamespace: 'default', serviceAccount: undefined, trusted: none, targetNamespace: 'kube-system' }).allowed).toBe(false);
  });
});

describe('trustedNamespaces', () => {
  it('reads a comma-separated list and adds the operator namespace', () => {
    expect([...trustedNamespaces({ operatorNamespace: 'sys', list: ' a,b ,,a' })].sort()).toEqual(['a', 'b', 'sys']);
    expect([...trustedNamespaces({ list: ['x', 'y'] })].sort()).toEqual(['x', 'y']);
  });

  it('refuses globs and names that are not namespace names', () => {
    expect(() => trustedNamespaces({ list: 'team-*' })).toThrow(/--trusted-namespaces: "team-\*" is not a namespace name/);
    expect(() => trustedNamespaces({ list: 'Team' })).toThrow(/not a namespace name/);
  });
});

describe('refusedObjects', () => {
  const objects = [
    { kind: 'ConfigMap', metadata: { name: 'mine', namespace: 'team-a' } },
    { kind: 'ConfigMap', metadata: { name: 'planted', namespace: 'kube-system' } },
    { kind: 'ClusterRole', metadata: { name: 'escalate' } },
    { kind: 'Namespace', metadata: { name: 'new', namespace: '' } },
  ];

  it('names every object outside the actor’s reach, and nothing when all are inside', () => {
    expect(refusedObjects(tenant, objects).map((r) => r.object)).toEqual(['ConfigMap/kube-system/planted', 'ClusterRole/escalate', 'Namespace/new']);
    expect(refusedObjects(tenant, objects.slice(0, 1))).toEqual([]);
    expect(refusedObjects({ ...tenant, objectNamespace: 'platform' }, objects)).toEqual([]);
    expect(refusedObjects({ ...tenant, serviceAccount: 'deployer' }, objects)).toEqual([]);
  });

  it('describes a refusal once, with the objects and the rule', () => {
    const message = describeRefusal(refusedObjects(tenant, objects));
    expect(message).toMatch(
      /^NamespaceNotAllowed: nothing written; refused ConfigMap\/kube-system\/planted, ClusterRole\/escalate, Namespace\/new: an object in namespace team-a that names no serviceAccountName writes only into its own namespace/,
    );
    expect(describeRefusal([])).toBe('');
  });
});

describe('allowedStandby', () => {
  const rules = standbyRules({ operatorNamespace: 'syncline-system' });
  const claim = (replication: string, standbyNamespace: string, extra: Partial<StandbyClaim> = {}): StandbyClaim => ({
    replication,
    createdAt: '2026-01-01T00:00:00Z',
    sourceNamespace: 'shop',
    cluster: 'ops/dr',
    standbyNamespace,
    ...extra,
  });

  it('refuses every system namespace and the operator namespace as a standby, in this cluster and any other', () => {
    for (const namespace of [...SYSTEM_NAMESPACES, 'syncline-system']) {
      for (const cluster of [undefined, 'ops/dr']) {
        const verdict = allowedStandby({ claim: claim('ops/a', namespace, { cluster }), rules, others: [] });
        expect(verdict).toMatchObject({ allowed: false, reason: NAMESPACE_NOT_ALLOWED });
        expect(verdict.allowed ? '' : verdict.message).toContain(`standby namespace ${namespace}:`);
      }
    }
    expect(allowedStandby({ claim: claim('ops/a', 'shop-dr'), rules, others: [] })).toEqual({ allowed: true });
  });

  it('lets an admin opt a system namespace in, never the operator namespace; anything else given to the flag is an error naming it', () => {
    const opted = standbyRules({ operatorNamespace: 'syncline-system', allow: 'default, kube-public' });
    expect(allowedStandby({ claim: claim('ops/a', 'default'), rules: opted, others: [] })).toEqual({ allowed: true });
    expect(allowedStandby({ claim: claim('ops/a', 'kube-system'), rules: opted, others: [] })).toMatchObject({ allowed: false });
    expect(() => standbyRules({ allow: 'syncline-system' })).toThrow(/--dr-allow-standby-namespaces: "syncline-system" is not one of kube-system/);
    expect(standbyNamespaceRefusal('syncline-system', opted)).toContain("the operator's own namespace");
  });

  it('the replication created first keeps a standby namespace; a later one sharing it, or writing into its source, is refused', () => {
    const first = claim('ops/first', 'shop-dr', { createdAt: '2026-01-01T00:00:00Z' });
    const later = claim('team/later', 'shop-dr', { createdAt: '2026-01-02T00:00:00Z', sourceNamespace: 'blog' });
    expect(allowedStandby({ claim: first, rules, others: [first, later] })).toEqual({ allowed: true });
    const refused = allowedStandby({ claim: later, rules, others: [first, later] });
    expect(refused.allowed ? '' : refused.message).toMatch(
      /standby namespace shop-dr \(RemoteCluster ops\/dr\) is already the standby namespace of NamespaceReplication ops\/first, created first/,
    );
    // another cluster is another namespace
    expect(allowedStandby({ claim: { ...later, cluster: 'ops/dr-2' }, rules, others: [first] })).toEqual({ allowed: true });
    // the same second: the name decides, and a replication not created yet comes after every existing one
    expect(allowedStandby({ claim: { ...later, createdAt: first.createdAt }, rules, others: [first] })).toMatchObject({ allowed: false });
    expect(allowedStandby({ claim: { ...first, createdAt: undefined }, rules, others: [later] })).toMatchObject({ allowed: false });
    // a standby in this cluster on another replication's source
    const local = claim('ops/into-source', 'shop', { cluster: undefined, sourceNamespace: 'blog', createdAt: '2026-01-03T00:00:00Z' });
    const verdict = allowedStandby({ claim: local, rules, others: [first] });
    expect(verdict.allowed ? '' : verdict.message).toContain('is already the source namespace of NamespaceReplication ops/first');
    // while a remote standby of that name is another namespace
    expect(allowedStandby({ claim: { ...local, cluster: 'ops/dr-2' }, rules, others: [first] })).toEqual({ allowed: true });
    expect(claimedFirst(first, later)).toBe(true);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { objectId, parseObjectId } from './identity.ts';
import { decodeInventory, diffInventory, encodeInventory, type Inventory } from './inventory.ts';

describe('objectId', () => {
  it('names group, kind, namespace and name; the core group and cluster scope are empty', () => {
    expect(objectId({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'prod' } })).toBe('apps/Deployment/prod/web');
    expect(objectId({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns' } })).toBe('/ConfigMap/ns/c');
    expect(objectId({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns' } })).toBe('/Namespace//ns');
    expect(parseObjectId('rbac.authorization.k8s.io/ClusterRole//system:x')).toEqual({
      group: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      namespace: '',
      name: 'system:x',
    });
    expect(() => parseObjectId('nonsense')).toThrow(/not an object id/);
  });
});

describe('inventory encoding', () => {
  it('groups names per (group, Kind, namespace) and marks Namespaces we created', () => {
    // given an inventory with two deployments in one namespace and a created namespace
    const inventory: Inventory = [
      { id: '/Namespace//prod', created: true },
      { id: '/Namespace//shared' },
      { id: 'apps/Deployment/prod/a' },
      { id: 'apps/Deployment/prod/b' },
      { id: '/ConfigMap/prod/c' },
    ];
    // when encoded, then one string per scope
    const encoded = encodeInventory(inventory);
    expect(encoded).toEqual(['/Namespace//+prod,shared', 'apps/Deployment/prod/a,b', '/ConfigMap/prod/c']);
    // and decoding gives the same entries back
    expect(decodeInventory(encoded)).toEqual(inventory);
  });

  it('a status array decoded again (a no-op resync) gives the same frozen inventory, which encodes back to equal copies', () => {
    // given the inventory of a status, decoded once
    const status = ['/Namespace//+prod', 'apps/Deployment/prod/a,b'];
    const inventory = decodeInventory(status);
    // when decoded again, then it is the same inventory, and no caller can change it
    expect(decodeInventory(status)).toBe(inventory);
    expect(Object.isFrozen(inventory) && inventory.every((e) => Object.isFrozen(e))).toBe(true);
    // and encoding it (twice) gives what status holds, each time an array of the caller's own
    const first = encodeInventory(inventory);
    const second = encodeInventory(inventory);
    expect(first).toEqual(status);
    expect(second).toEqual(status);
    first.push('changed');
    expect(encodeInventory(inventory)).toEqual(status);
    // and an inventory a caller built (and may change) is encoded as it is now
    const built = [{ id: '/ConfigMap/prod/c' }];
    expect(encodeInventory(built)).toEqual(['/ConfigMap/prod/c']);
    built.push({ id: '/ConfigMap/prod/d' });
    expect(encodeInventory(built)).toEqual(['/ConfigMap/prod/c,d']);
  });

  it('round-trips any names, including separators, and stays compact for thousands of objects', () => {
    const name = fc.stringMatching(/^[a-z0-9:,+%.-]{1,20}$/);
    fc.assert(
      fc.property(fc.uniqueArray(name, { maxLength: 30 }), (names) => {
        const inventory = names.map((n) => ({ id: `rbac.authorization.k8s.io/ClusterRole//${n}` }));
        expect(decodeInventory(encodeInventory(inventory))).toEqual(inventory);
      }),
    );
    const big = Array.from({ length: 5000 }, (_, i) => ({ id: `/ConfigMap/ns-${i % 10}/config-${i}` }));
    const bytes = JSON.stringify(encodeInventory(big)).length;
    expect(bytes).toBeLessThan(5000 * 14);
  });

  it('diffInventory returns the stale ids, in reverse order', () => {
    const previous: Inventory = [{ id: '/Namespace//a' }, { id: '/ConfigMap/a/x' }, { id: '/ConfigMap/a/y' }];
    expect(diffInventory(previous, [{ id: '/ConfigMap/a/x' }])).toEqual(['/ConfigMap/a/y', '/Namespace//a']);
    expect(diffInventory(previous, ['/Namespace//a', '/ConfigMap/a/x', '/ConfigMap/a/y'])).toEqual([]);
  });
});

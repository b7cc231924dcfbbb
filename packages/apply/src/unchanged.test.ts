import { describe, expect, it } from 'vitest';
import type { ChangeSet } from './execute.ts';
import type { KubeObject } from './identity.ts';
import { applyFingerprint, recordNoop, stillUnchanged, unchangedChangeSet } from './unchanged.ts';

const cm = (name: string, data = 'v'): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns' }, data: { k: data } });
const live = (versions: Record<string, string | undefined>) => ({
  objects: new Map(Object.entries(versions).map(([name, rv]) => [`/ConfigMap/ns/${name}`, { ...cm(name), metadata: { name, namespace: 'ns', ...(rv === undefined ? {} : { resourceVersion: rv }) } }])),
});
const owner = { namespace: 'ns', name: 'sync', target: 't' };
const desired = [cm('a'), cm('b')];
const inventory = [{ id: '/ConfigMap/ns/a' }, { id: '/ConfigMap/ns/b' }];
const noop: ChangeSet = unchangedChangeSet(desired, inventory);

describe('applyFingerprint', () => {
  it('changes with the desired objects, the inventory, the owner and the options', () => {
    const base = { desired, inventory: ['/ConfigMap/ns/a,b'], owner, options: { policy: 'Sync' } };
    const f = applyFingerprint(base);
    expect(applyFingerprint({ ...base, desired: [cm('a'), cm('b')] })).toBe(f);
    expect(applyFingerprint(structuredClone(base))).toBe(f);
    expect(applyFingerprint({ ...base, desired: [cm('a', 'x'), cm('b')] })).not.toBe(f);
    expect(applyFingerprint({ ...base, inventory: [] })).not.toBe(f);
    expect(applyFingerprint({ ...base, owner: { ...owner, target: 'u' } })).not.toBe(f);
    expect(applyFingerprint({ ...base, options: { policy: 'Adopt' } })).not.toBe(f);
  });
});

describe('recordNoop', () => {
  it('records the versions of a clean no-op', () => {
    const record = recordNoop('f', { desired, inventory, live: live({ a: '1', b: '2' }), changes: noop });
    expect(record?.versions).toEqual(new Map([['/ConfigMap/ns/a', '1'], ['/ConfigMap/ns/b', '2']]));
  });

  it('records nothing when something was written, skipped, blocked or unreadable, the inventory moved, or a version is missing', () => {
    const versions = live({ a: '1', b: '2' });
    const with_ = (changes: Partial<ChangeSet>) => recordNoop('f', { desired, inventory, live: versions, changes: { ...noop, ...changes } });
    expect(with_({ entries: [{ id: '/ConfigMap/ns/a', action: 'configured' }, { id: '/ConfigMap/ns/b', action: 'unchanged' }] })).toBeUndefined();
    expect(with_({ entries: [{ id: '/ConfigMap/ns/a', action: 'skipped', drift: ['data.k'] }, { id: '/ConfigMap/ns/b', action: 'unchanged' }] })).toBeUndefined();
    expect(with_({ entries: [...noop.entries, { id: '/ConfigMap/ns/c', action: 'deleted' }] })).toBeUndefined();
    expect(with_({ blocked: 'refused' })).toBeUndefined();
    expect(with_({ inventory: [inventory[0] ?? { id: '' }] })).toBeUndefined();
    expect(recordNoop('f', { desired, inventory, live: { ...versions, unknownScopes: new Set(['/ConfigMap/ns']) }, changes: noop })).toBeUndefined();
    expect(recordNoop('f', { desired, inventory, live: live({ a: '1', b: undefined }), changes: noop })).toBeUndefined();
  });
});

describe('stillUnchanged', () => {
  const record = { fingerprint: 'f', versions: new Map([['/ConfigMap/ns/a', '1'], ['/ConfigMap/ns/b', '2']]) };
  const watch = (versions: Record<string, string | null | undefined>) => (id: string) => versions[id.split('/').at(-1) ?? ''];

  it('holds only for the same fingerprint and exactly the recorded versions', () => {
    expect(stillUnchanged(record, 'f', watch({ a: '1', b: '2' }))).toBe(true);
    expect(stillUnchanged(record, 'g', watch({ a: '1', b: '2' }))).toBe(false);
    expect(stillUnchanged(undefined, 'f', watch({ a: '1', b: '2' }))).toBe(false);
    expect(stillUnchanged(record, 'f', watch({ a: '1', b: '3' }))).toBe(false); // edited
    expect(stillUnchanged(record, 'f', watch({ a: '1', b: null }))).toBe(false); // deleted or label removed
    expect(stillUnchanged(record, 'f', watch({ a: '1', b: undefined }))).toBe(false); // no usable watch
  });
});

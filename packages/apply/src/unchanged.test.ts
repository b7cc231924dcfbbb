import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ChangeSet } from './execute.ts';
import type { KubeObject } from './identity.ts';
import { proofOf } from './execute.ts';
import { APPLIED_DIGEST_ANNOTATION, ownerHash } from './identity.ts';
import { withOwnership } from './plan.ts';
import { FingerprintMemo, applyFingerprint, provenObjects, recordNoop, stillUnchanged, unchangedChangeSet } from './unchanged.ts';

const cm = (name: string, data = 'v'): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns' }, data: { k: data } });
const digestOf = (name: string): string => `sha256:${name}`;
const live = (versions: Record<string, string | undefined>) => ({
  objects: new Map(
    Object.entries(versions).map(([name, rv]) => [
      `/ConfigMap/ns/${name}`,
      {
        ...cm(name),
        metadata: { name, namespace: 'ns', annotations: { [APPLIED_DIGEST_ANNOTATION]: digestOf(name) }, ...(rv === undefined ? {} : { resourceVersion: rv }) },
      },
    ]),
  ),
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

describe('FingerprintMemo', () => {
  it('hands back the remembered fingerprint only for the very same list and the same inventory, owner and options', () => {
    // given a fingerprint remembered for one render's list
    const memo = new FingerprintMemo();
    const list = [cm('a'), cm('b')];
    const base = { desired: list, inventory: ['/ConfigMap/ns/a,b'], owner, options: { policy: 'Sync', prune: true } };
    const f = memo.fingerprint(base);
    expect(f).toBe(applyFingerprint(base));
    // when a resync brings the same list with equal inputs (new arrays and records of the same values), then it is the same
    expect(memo.fingerprint({ ...base, inventory: ['/ConfigMap/ns/a,b'], owner: { ...owner }, options: { prune: true, policy: 'Sync' } })).toBe(f);
    // and any input that changed gives the fingerprint of what it is now
    const changed = [
      { ...base, desired: [cm('a', 'x'), cm('b')] },
      { ...base, desired: [list[0]!] },
      { ...base, inventory: ['/ConfigMap/ns/a'] },
      { ...base, inventory: undefined },
      { ...base, owner: { ...owner, name: 'other' } },
      { ...base, options: { policy: 'Adopt', prune: true } },
      { ...base, options: { policy: 'Sync' } },
      { ...base, options: { policy: 'Sync', prune: true, drift: 'Report' } },
    ];
    for (const input of changed) expect(memo.fingerprint(input)).toBe(applyFingerprint(input));
    expect(memo.fingerprint(base)).toBe(f);
  });

  it('always answers what applyFingerprint answers, whatever resyncs and changes come (lists shared as the render memo shares them)', () => {
    const name = fc.constantFrom('a', 'b', 'c');
    const object = fc.record({ name, data: fc.constantFrom('v', 'w') }).map(({ name: n, data }) => cm(n, data));
    const step = fc.record({
      // a kept list again (a resync) or a new render
      list: fc.oneof(
        fc.nat({ max: 3 }).map((kept) => ({ kept })),
        fc.array(object, { maxLength: 3 }).map((fresh) => ({ fresh })),
      ),
      inventory: fc.option(fc.array(fc.constantFrom('/ConfigMap/ns/a', '/ConfigMap/ns/a,b', '/Secret/ns/s'), { maxLength: 2 }), { nil: undefined }),
      target: fc.constantFrom('t', 'u'),
      options: fc.record({ policy: fc.constantFrom('Sync', 'Adopt'), prune: fc.option(fc.boolean(), { nil: undefined }) }),
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 25 }), (steps) => {
        const memo = new FingerprintMemo();
        const kept: KubeObject[][] = [[cm('a')]];
        for (const s of steps) {
          let desired: KubeObject[];
          if ('fresh' in s.list) kept.push((desired = s.list.fresh));
          else desired = kept[s.list.kept % kept.length]!;
          const input = { desired, inventory: s.inventory, owner: { ...owner, target: s.target }, options: s.options };
          if (memo.fingerprint(input) !== applyFingerprint(input)) return false;
        }
        return true;
      }),
    );
  });
});

describe('recordNoop', () => {
  it('records the versions of a clean no-op', () => {
    const record = recordNoop('f', { desired, inventory, live: live({ a: '1', b: '2' }), changes: noop, owner });
    expect(record?.versions).toEqual(
      new Map([
        ['/ConfigMap/ns/a', '1'],
        ['/ConfigMap/ns/b', '2'],
      ]),
    );
    expect(record?.digests).toEqual(
      new Map([
        ['/ConfigMap/ns/a', digestOf('a')],
        ['/ConfigMap/ns/b', digestOf('b')],
      ]),
    );
    expect(record?.owner).toBe(ownerHash(owner));
  });

  it('records objects that were not read because a watch proved them, with what was proven', () => {
    const proven = new Map([['/ConfigMap/ns/b', { version: '7', digest: 'sha256:proven' }]]);
    const record = recordNoop('f', { desired, inventory, live: { ...live({ a: '1' }), proven }, changes: noop, owner });
    expect(record?.versions).toEqual(
      new Map([
        ['/ConfigMap/ns/a', '1'],
        ['/ConfigMap/ns/b', '7'],
      ]),
    );
    expect(record?.digests.get('/ConfigMap/ns/b')).toBe('sha256:proven');
  });

  it('records what a write proved (the response read back), with the fingerprint when every object is proven', () => {
    const configured: Partial<ChangeSet> = {
      entries: [
        { id: '/ConfigMap/ns/a', action: 'configured' },
        { id: '/ConfigMap/ns/b', action: 'unchanged' },
      ],
    };
    const written = new Map([['/ConfigMap/ns/a', { version: '9', digest: 'sha256:new' }]]);
    const record = recordNoop('f', { desired, inventory, live: live({ a: '1', b: '2' }), changes: { ...noop, ...configured, written }, owner });
    expect(record?.fingerprint).toBe('f');
    expect(record?.versions).toEqual(
      new Map([
        ['/ConfigMap/ns/a', '9'],
        ['/ConfigMap/ns/b', '2'],
      ]),
    );
    // a write whose response proved nothing (a webhook changed a field, or the response was not read)
    const unproven = recordNoop('f', { desired, inventory, live: live({ a: '1', b: '2' }), changes: { ...noop, ...configured }, owner });
    expect(unproven?.fingerprint).toBeUndefined();
    expect(unproven?.versions).toEqual(new Map([['/ConfigMap/ns/b', '2']]));
  });

  it('keeps no fingerprint when something failed, was skipped, pruned, blocked or unreadable, the inventory moved, or a version is missing', () => {
    const versions = live({ a: '1', b: '2' });
    const with_ = (changes: Partial<ChangeSet>) => recordNoop('f', { desired, inventory, live: versions, changes: { ...noop, ...changes }, owner });
    const unclean = [
      with_({
        entries: [
          { id: '/ConfigMap/ns/a', action: 'failed', cause: 'ServerError' },
          { id: '/ConfigMap/ns/b', action: 'unchanged' },
        ],
      }),
      with_({
        entries: [
          { id: '/ConfigMap/ns/a', action: 'skipped', cause: 'Drifted', drift: ['data.k'] },
          { id: '/ConfigMap/ns/b', action: 'unchanged' },
        ],
      }),
      with_({ entries: [...noop.entries, { id: '/ConfigMap/ns/c', action: 'deleted' }] }),
      with_({ blocked: 'refused' }),
      with_({ inventory: [inventory[0] ?? { id: '' }] }),
      recordNoop('f', { desired, inventory, live: { ...versions, unknownScopes: new Set(['/ConfigMap/ns']) }, changes: noop, owner }),
      recordNoop('f', { desired, inventory, live: live({ a: '1', b: undefined }), changes: noop, owner }),
    ];
    for (const record of unclean) expect(record?.fingerprint).toBeUndefined();
    // what was proven stays proven
    expect(unclean[0]?.versions).toEqual(new Map([['/ConfigMap/ns/b', '2']]));
    expect(unclean.at(-1)?.versions).toEqual(new Map([['/ConfigMap/ns/a', '1']]));
    // an object without its applied digest proves nothing about what it holds
    const undigested = new Map<string, KubeObject>(versions.objects);
    undigested.set('/ConfigMap/ns/b', { ...cm('b'), metadata: { name: 'b', namespace: 'ns', resourceVersion: '2' } });
    expect(recordNoop('f', { desired, inventory, live: { objects: undigested }, changes: noop, owner })?.versions.has('/ConfigMap/ns/b')).toBe(false);
    // nothing proven, nothing recorded
    expect(recordNoop('f', { desired, inventory, live: { objects: new Map() }, changes: noop, owner })).toBeUndefined();
  });
});

describe('stillUnchanged', () => {
  const record = {
    fingerprint: 'f',
    versions: new Map([
      ['/ConfigMap/ns/a', '1'],
      ['/ConfigMap/ns/b', '2'],
    ]),
    digests: new Map([
      ['/ConfigMap/ns/a', digestOf('a')],
      ['/ConfigMap/ns/b', digestOf('b')],
    ]),
    owner: ownerHash(owner),
  };
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

describe('provenObjects', () => {
  const record = {
    fingerprint: 'f',
    versions: new Map([
      ['/ConfigMap/ns/a', '1'],
      ['/ConfigMap/ns/b', '2'],
      ['/ConfigMap/ns/c', '3'],
    ]),
    digests: new Map([
      ['/ConfigMap/ns/a', digestOf('a')],
      ['/ConfigMap/ns/b', digestOf('b')],
      ['/ConfigMap/ns/c', digestOf('c')],
    ]),
    owner: ownerHash(owner),
  };
  const watch = (versions: Record<string, string | null | undefined>) => (id: string) => versions[id.split('/').at(-1) ?? ''];

  it('proves exactly the objects whose watched version is the recorded one, whatever the fingerprint', () => {
    const proven = provenObjects(record, owner, watch({ a: '1', b: '5', c: null }));
    expect(proven).toEqual(new Map([['/ConfigMap/ns/a', { version: '1', digest: digestOf('a') }]]));
    expect(provenObjects(record, owner, watch({ a: undefined, b: undefined, c: undefined })).size).toBe(0); // no usable watch
    expect(provenObjects(undefined, owner, watch({ a: '1' })).size).toBe(0);
  });

  it('proves nothing for another owner', () => {
    expect(provenObjects(record, { ...owner, target: 'other' }, watch({ a: '1', b: '2', c: '3' })).size).toBe(0);
  });
});

describe('proofOf (an apply response read back)', () => {
  const applied = withOwnership(cm('a'), owner);
  const stored = (change: (o: KubeObject) => void = () => undefined): KubeObject => {
    const o = structuredClone(applied);
    o.metadata.resourceVersion = '42';
    o.metadata.uid = 'u';
    o.metadata.managedFields = [{ manager: 'syncline' }];
    change(o);
    return o;
  };

  it('proves a stored object that is ours, carries the digest and holds what was applied', () => {
    expect(proofOf(applied, stored(), owner)).toEqual({ version: '42', digest: applied.metadata.annotations?.[APPLIED_DIGEST_ANNOTATION] });
  });

  it('proves nothing when a webhook changed an applied field, the mark or digest is not ours, or there is no version', () => {
    expect(
      proofOf(
        applied,
        stored((o) => (o['data'] = { k: 'mutated' })),
        owner,
      ),
    ).toBeUndefined();
    expect(proofOf(applied, stored(), { ...owner, name: 'other' })).toBeUndefined();
    expect(
      proofOf(
        applied,
        stored((o) => (o.metadata.annotations = { ...o.metadata.annotations, [APPLIED_DIGEST_ANNOTATION]: 'sha256:x' })),
        owner,
      ),
    ).toBeUndefined();
    expect(
      proofOf(
        applied,
        stored((o) => delete o.metadata.resourceVersion),
        owner,
      ),
    ).toBeUndefined();
  });
});

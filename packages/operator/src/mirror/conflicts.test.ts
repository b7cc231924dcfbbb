import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyExisting, claimOf, compareClaims, decideReplicaWrite, decideTargetOwner, type SourceClaim } from './conflicts.ts';
import { makeReplica } from './copy.ts';
import { keys, replicaOf, secret, source } from './test-support.ts';

const dev = { namespace: 'dev', name: 'db' };

describe('classifyExisting', () => {
  it('tells absent, ours, another source’s replica and foreign objects apart', () => {
    expect(classifyExisting({ existing: undefined, source: dev, keys })).toEqual({ kind: 'absent' });
    expect(classifyExisting({ existing: replicaOf({ namespace: 'prod' }), source: dev, keys })).toEqual({ kind: 'ours' });
    expect(classifyExisting({ existing: replicaOf({ namespace: 'prod', source: 'ops/db' }), source: dev, keys })).toEqual({
      kind: 'other-replica',
      source: 'ops/db',
    });
    expect(classifyExisting({ existing: secret({ namespace: 'prod' }), source: dev, keys })).toEqual({ kind: 'foreign' });
  });

  it('recognises what makeReplica writes', () => {
    const replica = makeReplica({ source: source({ [keys.targets]: '*' }), targetNamespace: 'prod', keys, strategy: 'override' });
    expect(classifyExisting({ existing: replica, source: dev, keys })).toEqual({ kind: 'ours' });
  });

  it('when in doubt, foreign: a replica label without a readable source, or an object that is a source itself', () => {
    const noRef = secret({ namespace: 'prod', labels: { [keys.syncReplica]: 'true' } });
    const badRef = secret({ namespace: 'prod', labels: { [keys.syncReplica]: 'true' }, annotations: { [keys.source]: 'db' } });
    const isSource = replicaOf({ namespace: 'prod', labels: { [keys.syncSource]: 'true' } });
    for (const existing of [noRef, badRef, isSource]) expect(classifyExisting({ existing, source: dev, keys })).toEqual({ kind: 'foreign' });
  });

  it('identifies by the annotation; the hash label is only an index', () => {
    const edited = replicaOf({ namespace: 'prod', labels: { [keys.sourceHash]: 'not-the-hash' } });
    expect(classifyExisting({ existing: edited, source: dev, keys })).toEqual({ kind: 'ours' });
  });
});

describe('compareClaims', () => {
  it('orders by creation time, then uid, then namespace/name; undated claims last', () => {
    const a: SourceClaim = { namespace: 'b', name: 'db', uid: 'z', creationTimestamp: '2026-01-01T00:00:00Z' };
    const b: SourceClaim = { namespace: 'a', name: 'db', uid: 'a', creationTimestamp: '2026-01-02T00:00:00Z' };
    const c: SourceClaim = { namespace: 'a', name: 'db', uid: 'b', creationTimestamp: '2026-01-02T00:00:00Z' };
    const d: SourceClaim = { namespace: 'a', name: 'db' };
    expect([d, c, b, a].sort(compareClaims)).toEqual([a, b, c, d]);
  });

  it('reads claims from objects', () => {
    const object = secret({ metadata: { uid: 'u', creationTimestamp: '2026-01-01T00:00:00Z' } });
    expect(claimOf(object)).toEqual({ namespace: 'dev', name: 'db', uid: 'u', creationTimestamp: '2026-01-01T00:00:00Z' });
  });
});

const older: SourceClaim = { namespace: 'ops', name: 'db', uid: 'u-ops', creationTimestamp: '2026-01-01T00:00:00Z' };
const newer: SourceClaim = { namespace: 'dev', name: 'db', uid: 'u-dev', creationTimestamp: '2026-03-01T00:00:00Z' };

describe('decideTargetOwner', () => {
  it('gives a free target to the first claimant and lists the others as losers', () => {
    const decision = decideTargetOwner({ claimants: [newer, older], existing: undefined, keys });
    expect(decision).toEqual({ kind: 'owner', owner: older, incumbent: false, losers: [newer] });
  });

  it('keeps an existing replica with its source even when an older source claims it later (no takeover)', () => {
    // given dev/db's replica exists in prod, and ops/db (an older object) is labelled later to target prod too
    const existing = replicaOf({ namespace: 'prod', source: 'dev/db' });
    // then dev/db keeps it
    expect(decideTargetOwner({ claimants: [older, newer], existing, keys })).toEqual({ kind: 'owner', owner: newer, incumbent: true, losers: [older] });
  });

  it('hands over a replica whose source no longer claims it to the first claimant', () => {
    const existing = replicaOf({ namespace: 'prod', source: 'gone/db' });
    expect(decideTargetOwner({ claimants: [newer], existing, keys })).toEqual({ kind: 'owner', owner: newer, incumbent: false, losers: [] });
  });

  it('lets nobody write over a foreign object', () => {
    expect(decideTargetOwner({ claimants: [newer, older], existing: secret({ namespace: 'prod' }), keys })).toEqual({
      kind: 'foreign',
      blocked: [older, newer],
    });
  });

  it('has no owner without claimants, and counts a repeated claim once', () => {
    expect(decideTargetOwner({ claimants: [], existing: undefined, keys })).toEqual({ kind: 'none' });
    expect(decideTargetOwner({ claimants: [newer, newer], existing: undefined, keys })).toEqual({ kind: 'owner', owner: newer, incumbent: false, losers: [] });
  });

  it('decides the same whatever order the claims arrive in (no flip-flop)', () => {
    const claim = fc.record({
      namespace: fc.constantFrom('a', 'b', 'c', 'd'),
      name: fc.constant('db'),
      uid: fc.option(fc.constantFrom('u1', 'u2', 'u3'), { nil: undefined }),
      creationTimestamp: fc.option(fc.constantFrom('2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z', '2026-02-01T00:00:00Z', 'garbage'), { nil: undefined }),
    });
    const existing = fc.constantFrom<(undefined | string)[]>(undefined, 'a/db', 'c/db', 'z/db', 'foreign');
    fc.assert(
      fc.property(
        fc
          .array(claim, { minLength: 1, maxLength: 6 })
          .chain((claims) => fc.tuple(fc.constant(claims), fc.shuffledSubarray(claims, { minLength: claims.length }), existing)),
        ([claims, shuffled, holder]) => {
          const object =
            holder === undefined ? undefined : holder === 'foreign' ? secret({ namespace: 'prod' }) : replicaOf({ namespace: 'prod', source: holder });
          const first = decideTargetOwner({ claimants: claims, existing: object, keys });
          const second = decideTargetOwner({ claimants: shuffled, existing: object, keys });
          const id = (d: typeof first) => (d.kind === 'owner' ? `${d.owner.namespace}/${d.owner.name}` : d.kind);
          expect(id(second)).toBe(id(first));
          // and once the winner's replica exists, it stays the winner
          if (first.kind === 'owner') {
            const after = decideTargetOwner({ claimants: shuffled, existing: replicaOf({ namespace: 'prod', source: id(first) }), keys });
            expect(id(after)).toBe(id(first));
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('decideReplicaWrite', () => {
  it('creates a free target, updates its own replica', () => {
    expect(decideReplicaWrite({ source: newer, claimants: [], existing: undefined, keys })).toEqual({ action: 'create' });
    expect(decideReplicaWrite({ source: newer, claimants: [older], existing: replicaOf({ namespace: 'prod' }), keys })).toEqual({
      action: 'update',
      takeover: false,
    });
  });

  it('skips a target held by another source or a foreign object', () => {
    expect(decideReplicaWrite({ source: newer, claimants: [older], existing: undefined, keys })).toEqual({
      action: 'skip',
      reason: 'HeldByOtherSource',
      holder: 'ops/db',
    });
    expect(decideReplicaWrite({ source: newer, claimants: [], existing: secret({ namespace: 'prod' }), keys })).toEqual({ action: 'skip', reason: 'Foreign' });
  });

  it('takes over a replica of a source that no longer claims it', () => {
    expect(decideReplicaWrite({ source: newer, claimants: [newer], existing: replicaOf({ namespace: 'prod', source: 'gone/db' }), keys })).toEqual({
      action: 'update',
      takeover: true,
    });
  });
});

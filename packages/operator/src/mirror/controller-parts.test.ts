// The pure parts of the mirror controller: queue keys, the replica owner, the echo fingerprint and the
// status rows.
import { withOwnership } from '@syncline/apply';
import { describe, expect, it } from 'vitest';
import { queueKeyOfOwner } from '../manager.ts';
import { contentFingerprint, projectMirrorObject } from './cache.ts';
import { makeReplica } from './copy.ts';
import { mirrorOwner, mirrorQueueKey, parseMirrorQueueKey } from './reconciler.ts';
import { isOwnEcho } from './controller.ts';
import { MirrorState, mirrorStatusRows } from './status.ts';
import { keys, secret } from './test-support.ts';

const source = secret({
  namespace: 'dev',
  name: 'db',
  labels: { [keys.syncSource]: 'true' },
  annotations: { [keys.targets]: 'a,b' },
  data: { k: 'dg==' },
  type: 'Opaque',
  metadata: { uid: 'u1', creationTimestamp: '2026-01-01T00:00:00Z' },
});

describe('mirror queue keys and owners', () => {
  it('round-trips a source key, with and without a target namespace', () => {
    expect(parseMirrorQueueKey(mirrorQueueKey('Secret', { namespace: 'dev', name: 'db' }))).toEqual({
      kind: 'Secret',
      source: { namespace: 'dev', name: 'db' },
    });
    expect(parseMirrorQueueKey(mirrorQueueKey('ConfigMap', { namespace: 'dev', name: 'db' }, 'prod'))).toEqual({
      kind: 'ConfigMap',
      source: { namespace: 'dev', name: 'db' },
      only: 'prod',
    });
    expect(parseMirrorQueueKey('Pod/dev/db')).toBeUndefined();
  });

  it('names an owner the manager does not map to a sync (the mirror controller watches its replicas itself)', () => {
    const owner = mirrorOwner('Secret', { namespace: 'dev', name: 'db' }, 'prod');
    expect(owner).toEqual({ namespace: 'dev', name: 'Mirror:Secret:db', target: 'prod' });
    expect(queueKeyOfOwner(`${owner.namespace}/${owner.name}/${owner.target}`)).toBeUndefined();
  });
});

describe('contentFingerprint', () => {
  it('given the replica we apply, when the API server stores it, then its watch event carries the fingerprint we expect', () => {
    const owner = mirrorOwner('Secret', { namespace: 'dev', name: 'db' }, 'prod');
    const sent = withOwnership(makeReplica({ source, targetNamespace: 'prod', keys, strategy: 'override' }), owner);
    const stored = { ...sent, metadata: { ...sent.metadata, uid: 'x', resourceVersion: '7', creationTimestamp: '2026-01-01T00:00:00Z', managedFields: [] } };
    expect(projectMirrorObject(stored, keys).fingerprint).toBe(contentFingerprint(sent));
    const edited = { ...stored, data: { k: 'dg==', extra: 'eA==' } };
    expect(projectMirrorObject(edited, keys).fingerprint).not.toBe(contentFingerprint(sent));
  });

  it('keeps no data value in the cache', () => {
    expect(JSON.stringify(projectMirrorObject(source, keys))).not.toContain('dg==');
  });
});

describe('isOwnEcho', () => {
  it('drops the event of our own write, unless a run of its source started after the write was planned', () => {
    const ours = { fingerprint: 'f1', at: 7 };
    // the run that planned the write (the 7th to start) is still the source's latest: an echo
    expect(isOwnEcho(ours, 'f1', 7)).toBe(true);
    // another run of the source started meanwhile: it read a cache without this replica, so the event wakes it
    expect(isOwnEcho(ours, 'f1', 8)).toBe(false);
    // someone else's content, or no write of ours
    expect(isOwnEcho(ours, 'f2', 7)).toBe(false);
    expect(isOwnEcho(undefined, 'f1', 7)).toBe(false);
  });
});

describe('mirrorStatusRows', () => {
  it('lists synced replicas, a foreign object as a conflict and a target not written yet as missing', () => {
    const replica = makeReplica({ source, targetNamespace: 'a', keys, strategy: 'override' });
    const foreign = secret({ namespace: 'b', name: 'db' });
    const rows = mirrorStatusRows({
      sources: [source],
      replicas: [replica],
      namespaces: [{ name: 'a' }, { name: 'b' }, { name: 'dev' }],
      occupied: new Map([['Secret/b/db', foreign]]),
      keys,
      sourceNamespaces: [],
      trusted: new Set(['dev']),
    });
    expect(rows.map((r) => [r.namespace, r.state])).toEqual([
      ['a', MirrorState.Synced],
      ['b', MirrorState.Conflict],
    ]);
    const missing = mirrorStatusRows({
      sources: [source],
      replicas: [],
      namespaces: [{ name: 'a' }, { name: 'dev' }],
      occupied: new Map(),
      keys,
      sourceNamespaces: [],
      trusted: new Set(['dev']),
    });
    expect(missing.map((r) => r.state)).toEqual([MirrorState.Missing]);
  });
});

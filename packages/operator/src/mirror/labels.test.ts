import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MirrorError } from './errors.ts';
import {
  formatSourceRef,
  isMirrorDisabled,
  isMirrorReplica,
  isMirrorSource,
  mirrorKeys,
  parseSourceRef,
  replicaSelector,
  sourceRefHash,
  sourceSelector,
} from './labels.ts';

describe('mirrorKeys', () => {
  it('puts every key under the default prefix syncline.dev', () => {
    const keys = mirrorKeys();
    expect(keys).toMatchObject({
      syncSource: 'syncline.dev/sync-source',
      targets: 'syncline.dev/targets',
      exclude: 'syncline.dev/exclude',
      strategy: 'syncline.dev/strategy',
      syncReplica: 'syncline.dev/sync-replica',
      source: 'syncline.dev/source',
      sourceHash: 'syncline.dev/source-hash',
      stale: 'syncline.dev/stale',
      staleSince: 'syncline.dev/stale-since',
      namespaceMirror: 'syncline.dev/mirror',
    });
  });

  it('takes another prefix, so a cluster labelled for Mirrorverse switches without relabelling', () => {
    expect(mirrorKeys('mirrorverse.dev').syncSource).toBe('mirrorverse.dev/sync-source');
  });

  it('refuses a prefix that is not a DNS subdomain', () => {
    for (const bad of ['', 'Syncline.dev', 'a/b', '-x.dev', 'x..dev', `${'a'.repeat(254)}`]) {
      expect(() => mirrorKeys(bad), bad).toThrow(MirrorError);
    }
  });
});

describe('source references', () => {
  it('round-trip namespace/name and refuse anything else', () => {
    expect(parseSourceRef(formatSourceRef({ namespace: 'dev', name: 'db.v1' }))).toEqual({ namespace: 'dev', name: 'db.v1' });
    for (const bad of [undefined, '', 'db', '/db', 'dev/', 'a/b/c']) expect(parseSourceRef(bad), String(bad)).toBeUndefined();
  });

  it('hash to a 40-hex label value anyone can compute, even for a 253-character name', () => {
    // given a name far longer than a label value may be
    const name = 'n'.repeat(253);
    // when it is hashed
    const hash = sourceRefHash({ namespace: 'dev', name });
    // then the value is a valid label value and equals sha256("dev/<name>")
    expect(hash).toMatch(/^[0-9a-f]{40}$/);
    expect(hash).toBe(createHash('sha256').update(`dev/${name}`).digest('hex').slice(0, 40));
    expect(sourceRefHash({ namespace: 'dev', name: 'a' })).not.toBe(sourceRefHash({ namespace: 'de', name: 'va' }));
  });

  it('give selectors for all replicas, the replicas of one source, and the sources', () => {
    const keys = mirrorKeys();
    expect(replicaSelector(keys)).toBe('syncline.dev/sync-replica=true');
    expect(replicaSelector(keys, { namespace: 'dev', name: 'db' })).toBe(
      `syncline.dev/sync-replica=true,syncline.dev/source-hash=${sourceRefHash({ namespace: 'dev', name: 'db' })}`,
    );
    expect(sourceSelector(keys)).toBe('syncline.dev/sync-source=true');
  });
});

describe('predicates', () => {
  const keys = mirrorKeys();
  it('read the source, replica and namespace opt-out labels exactly', () => {
    expect(isMirrorSource({ metadata: { labels: { [keys.syncSource]: 'true' } } }, keys)).toBe(true);
    expect(isMirrorSource({ metadata: { labels: { [keys.syncSource]: 'True' } } }, keys)).toBe(false);
    expect(isMirrorSource({ metadata: {} }, keys)).toBe(false);
    expect(isMirrorReplica({ metadata: { labels: { [keys.syncReplica]: 'true' } } }, keys)).toBe(true);
    expect(isMirrorDisabled({ labels: { [keys.namespaceMirror]: 'disabled' } }, keys)).toBe(true);
    expect(isMirrorDisabled({ labels: { [keys.namespaceMirror]: 'enabled' } }, keys)).toBe(false);
  });
});

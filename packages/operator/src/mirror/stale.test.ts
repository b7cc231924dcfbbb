import { describe, expect, it } from 'vitest';
import { planReplicaCleanup, type SourceState } from './stale.ts';
import type { TargetResolution } from './targets.ts';
import { keys, replicaOf } from './test-support.ts';

const now = new Date('2026-11-21T12:00:00.000Z');
const hour = 3_600_000;

function active(namespaces: string[], skipped: TargetResolution['skipped'] = []): SourceState {
  return { kind: 'active', resolution: { sourceAllowed: true, namespaces, skipped, missing: [], ambiguities: [] } };
}

const replica = (namespace: string, extra: { stale?: string; uid?: string } = {}) =>
  replicaOf({
    namespace,
    uid: `uid-${namespace}`,
    resourceVersion: '7',
    ...(extra.stale === undefined ? {} : { labels: { [keys.stale]: 'true' }, annotations: { [keys.staleSince]: extra.stale } }),
  });

describe('planReplicaCleanup', () => {
  it('does nothing for replicas of an active source in targeted namespaces', () => {
    const plan = planReplicaCleanup({
      replicas: [replica('prod'), replica('qa')],
      sources: new Map([['dev/db', active(['prod', 'qa'])]]),
      now,
      policy: 'Delete',
      keys,
    });
    expect(plan).toEqual({ actions: [], ignored: [] });
  });

  it('deletes replicas of a gone source by default, with uid and resourceVersion preconditions', () => {
    const plan = planReplicaCleanup({ replicas: [replica('qa'), replica('prod')], sources: new Map(), now, policy: 'Delete', keys });
    expect(plan.actions).toEqual([
      { type: 'delete', namespace: 'prod', name: 'db', source: 'dev/db', reason: 'SourceGone', preconditions: { uid: 'uid-prod', resourceVersion: '7' } },
      { type: 'delete', namespace: 'qa', name: 'db', source: 'dev/db', reason: 'SourceGone', preconditions: { uid: 'uid-qa', resourceVersion: '7' } },
    ]);
  });

  it('treats a source whose namespace may no longer be a source as gone', () => {
    const disallowed: SourceState = { kind: 'active', resolution: { sourceAllowed: false, namespaces: [], skipped: [], missing: [], ambiguities: [] } };
    const plan = planReplicaCleanup({ replicas: [replica('prod')], sources: new Map([['dev/db', disallowed]]), now, policy: 'Delete', keys });
    expect(plan.actions.map((a) => [a.type, 'reason' in a ? a.reason : ''])).toEqual([['delete', 'SourceGone']]);
  });

  it('marks replicas stale with the time now (RFC 3339) under policy Mark, and requeues for the TTL', () => {
    const plan = planReplicaCleanup({ replicas: [replica('prod')], sources: new Map(), now, policy: 'Mark', staleTtlMs: 24 * hour, keys });
    expect(plan.actions).toEqual([
      {
        type: 'mark-stale',
        namespace: 'prod',
        name: 'db',
        source: 'dev/db',
        patch: { metadata: { labels: { [keys.stale]: 'true' }, annotations: { [keys.staleSince]: '2026-11-21T12:00:00Z' } } },
      },
    ]);
    expect(plan.requeueAfterMs).toBe(24 * hour);
  });

  it('leaves stale replicas alone without a TTL, and writes nothing on a second pass', () => {
    const plan = planReplicaCleanup({ replicas: [replica('prod', { stale: '2026-01-01T00:00:00Z' })], sources: new Map(), now, policy: 'Mark', keys });
    expect(plan).toEqual({ actions: [], ignored: [] });
  });

  it('deletes stale replicas once the TTL ran out, and requeues for the next one', () => {
    const plan = planReplicaCleanup({
      replicas: [replica('old', { stale: '2026-11-20T11:00:00Z' }), replica('young', { stale: '2026-11-21T10:00:00Z' })],
      sources: new Map(),
      now,
      policy: 'Mark',
      staleTtlMs: 24 * hour,
      keys,
    });
    expect(plan.actions).toEqual([
      { type: 'delete', namespace: 'old', name: 'db', source: 'dev/db', reason: 'StaleExpired', preconditions: { uid: 'uid-old', resourceVersion: '7' } },
    ]);
    expect(plan.requeueAfterMs).toBe(22 * hour);
  });

  it('stamps a stale replica without a readable stale-since again rather than deleting it', () => {
    const plan = planReplicaCleanup({ replicas: [replica('prod', { stale: 'yesterday' })], sources: new Map(), now, policy: 'Mark', staleTtlMs: 1, keys });
    expect(plan.actions.map((a) => a.type)).toEqual(['mark-stale']);
  });

  it('deletes stale replicas when the policy is switched to Delete', () => {
    const plan = planReplicaCleanup({ replicas: [replica('prod', { stale: '2026-11-21T11:00:00Z' })], sources: new Map(), now, policy: 'Delete', keys });
    expect(plan.actions.map((a) => a.type)).toEqual(['delete']);
  });

  it('unmarks stale replicas when their source is back and targets them', () => {
    const plan = planReplicaCleanup({
      replicas: [replica('prod', { stale: '2026-11-21T11:00:00Z' })],
      sources: new Map([['dev/db', active(['prod'])]]),
      now,
      policy: 'Mark',
      keys,
    });
    expect(plan.actions).toEqual([
      {
        type: 'unmark-stale',
        namespace: 'prod',
        name: 'db',
        source: 'dev/db',
        patch: { metadata: { labels: { [keys.stale]: null }, annotations: { [keys.staleSince]: null } } },
      },
    ]);
  });

  it('deletes a replica in a namespace that stopped matching, whatever the stale policy; not in a terminating one', () => {
    const sources = new Map([
      [
        'dev/db',
        active(
          ['prod'],
          [
            { namespace: 'off', reason: 'MirrorDisabled' },
            { namespace: 'going', reason: 'Terminating' },
          ],
        ),
      ],
    ]);
    const plan = planReplicaCleanup({ replicas: [replica('prod'), replica('qa'), replica('off'), replica('going')], sources, now, policy: 'Mark', keys });
    expect(plan.actions.map((a) => [a.type, a.namespace, 'reason' in a ? a.reason : ''])).toEqual([
      ['delete', 'off', 'MirrorDisabled'],
      ['delete', 'qa', 'NoLongerTargeted'],
    ]);
  });

  it('leaves a replica in a namespace that does not accept an untrusted source as it is (no write, no delete)', () => {
    const sources = new Map([['dev/db', active(['prod'], [{ namespace: 'team-b', reason: 'NotAccepted' }])]]);
    const plan = planReplicaCleanup({ replicas: [replica('prod'), replica('team-b')], sources, now, policy: 'Delete', keys });
    expect(plan.actions).toEqual([]);
  });

  it('leaves every replica of a source with an invalid spec alone (a typo must not wipe replicas)', () => {
    const plan = planReplicaCleanup({
      replicas: [replica('prod'), replica('qa')],
      sources: new Map<string, SourceState>([['dev/db', { kind: 'invalid' }]]),
      now,
      policy: 'Delete',
      keys,
    });
    expect(plan.actions).toEqual([]);
  });

  it('ignores, and reports, labelled objects without a readable source or named unlike their source', () => {
    const noRef = replicaOf({ namespace: 'prod', annotations: { [keys.source]: 'nonsense' } });
    const renamed = replicaOf({ namespace: 'qa', name: 'db-copy' });
    const plan = planReplicaCleanup({ replicas: [noRef, renamed], sources: new Map(), now, policy: 'Delete', keys });
    expect(plan).toEqual({
      actions: [],
      ignored: [
        { namespace: 'prod', name: 'db', reason: 'UnreadableSource' },
        { namespace: 'qa', name: 'db-copy', reason: 'NameMismatch' },
      ],
    });
  });
});

import { describe, expect, it } from 'vitest';
import { createSessions } from './auth.ts';
import { UiState, healthText, stateOf, summarize, withoutCredentials } from './summary.ts';

const ready = { type: 'Ready', status: 'True', reason: 'Synced', message: 'Applied revision abc' };

describe('summarize (what the web UI sends a browser)', () => {
  it('keeps status and metadata, and never values, valuesFrom contents, credentials or a URL password', () => {
    // given a ConfigSync with secret-looking values and a repo URL with a password
    const object = {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'ConfigSync',
      metadata: { name: 'app', namespace: 'team', generation: 2, annotations: { note: 'hunter2-annotation' } },
      spec: {
        source: { git: { repo: 'https://user:hunter2@git.example/app.git', revision: 'main', path: 'app', secretRef: { name: 'git-creds' } } },
        values: { password: 'hunter2' },
        valuesFrom: [{ kind: 'Secret', name: 'db' }],
        targets: [{ name: 'dev', namespace: 'team' }],
      },
      status: {
        observedGeneration: 2,
        sourceRevision: 'a'.repeat(40),
        conditions: [ready],
        targets: [{ name: 'dev', phase: 'Synced', objects: 3 }],
        history: [{ revision: 'a'.repeat(40), appliedAt: '2026-01-01T00:00:00Z', objects: 3, digest: 'sha256:x' }],
        inventory: [{ target: 'dev', entries: ['/ConfigMap/team/secret-name'] }],
      },
    };
    // when it is summarized
    const summary = summarize('ConfigSync', object);
    // then what the page needs is there, and nothing of values, annotations or credentials
    expect(summary).toMatchObject({
      key: 'ConfigSync/team/app',
      state: UiState.Ready,
      source: { repo: 'https://git.example/app.git', ref: 'main', path: 'app' },
    });
    expect(summary.targets).toEqual([{ name: 'dev', namespace: 'team', phase: 'Synced', objects: 3 }]);
    expect(summary.history).toHaveLength(1);
    const json = JSON.stringify(summary);
    expect(json).not.toContain('hunter2');
    expect(json).not.toContain('git-creds');
    expect(json).not.toContain('secret-name');
  });

  it('counts suspended, failed, progressing and ready as the overview does', () => {
    const meta = { name: 'x', namespace: 'n', generation: 1 };
    expect(stateOf({ metadata: meta, spec: { suspend: true } }, [ready])).toBe(UiState.Suspended);
    expect(stateOf({ metadata: meta, status: { observedGeneration: 1 } }, [ready])).toBe(UiState.Ready);
    expect(stateOf({ metadata: { ...meta, generation: 2 }, status: { observedGeneration: 1 } }, [ready])).toBe(UiState.Progressing);
    expect(stateOf({ metadata: meta }, [{ ...ready, status: 'False' }])).toBe(UiState.Failed);
    expect(
      stateOf({ metadata: meta }, [
        { ...ready, status: 'False' },
        { type: 'Reconciling', status: 'True', reason: 'Progressing', message: '' },
      ]),
    ).toBe(UiState.Progressing);
    expect(stateOf({ metadata: meta }, [])).toBe(UiState.Progressing);
  });

  it('drops user:password from URLs and leaves others alone', () => {
    expect(withoutCredentials('https://u:p@host/x')).toBe('https://host/x');
    expect(withoutCredentials('ssh://git@host/x')).toBe('ssh://host/x');
    expect(withoutCredentials('https://host/x@y')).toBe('https://host/x@y');
  });
});

describe('sessions', () => {
  it('expire, and each has its own id and CSRF token', () => {
    let now = 0;
    const sessions = createSessions({ ttlMs: 1000, now: () => now });
    const a = sessions.create({ username: 'a', groups: [] });
    const b = sessions.create({ username: 'b', groups: [] });
    expect(a.id).not.toBe(b.id);
    expect(a.csrf).not.toBe(a.id);
    expect(sessions.get(a.id)?.viewer.username).toBe('a');
    now = 1000;
    expect(sessions.get(a.id)).toBeUndefined();
  });

  it('keep at most `limit`, the oldest going first', () => {
    const sessions = createSessions({ limit: 2 });
    const [a, b, c] = ['a', 'b', 'c'].map((username) => sessions.create({ username, groups: [] }));
    expect(sessions.get(a?.id)).toBeUndefined();
    expect(sessions.get(b?.id)?.viewer.username).toBe('b');
    expect(sessions.get(c?.id)?.viewer.username).toBe('c');
  });
});

describe('what needs attention', () => {
  const base = {
    apiVersion: 'syncline.dev/v1alpha1',
    metadata: { name: 'x', namespace: 'n', generation: 1, labels: { team: 'a' }, annotations: { secret: 'hunter2' } },
  };

  it('counts a drift left alone (drift: Report) as drifted, and says so', () => {
    const object = {
      ...base,
      kind: 'ConfigSync',
      spec: { source: { git: { repo: 'https://h/r', revision: 'main', path: '' } }, targets: [] },
      status: { observedGeneration: 1, conditions: [ready, { type: 'Synced', status: 'False', reason: 'DriftDetected', message: 'drifted: ConfigMap n/a' }] },
    };
    const summary = summarize('ConfigSync', object);
    expect(summary).toMatchObject({ state: UiState.Ready, drifted: true, attention: 'drifted: ConfigMap n/a', labels: { team: 'a' } });
    expect(JSON.stringify(summary)).not.toContain('hunter2');
  });

  it('names a copy that failed (a conflict names the holder), an unreachable cluster and a held deletion', () => {
    const copy = summarize('ManifestSync', {
      ...base,
      kind: 'ManifestSync',
      spec: { sourceRef: { kind: 'Secret', name: 's' } },
      status: {
        conditions: [ready],
        targets: [{ namespace: 'b', phase: 'Failed', objects: 0, message: 'Secret b/s exists and is not ours (held by kubectl)' }],
      },
    });
    expect(copy.attention).toBe('copy b: Secret b/s exists and is not ours (held by kubectl)');
    expect(copy.targets[0]).toMatchObject({ name: 'b', namespace: 'b', phase: 'Failed' });
    const cluster = summarize('RemoteCluster', {
      ...base,
      kind: 'RemoteCluster',
      spec: {},
      status: {
        serverVersion: 'v1.34.0',
        lastProbeTime: '2026-01-01T00:00:00Z',
        conditions: [{ type: 'Ready', status: 'False', reason: 'Unreachable', message: 'connect ECONNREFUSED' }],
      },
    });
    expect(cluster).toMatchObject({
      state: UiState.Failed,
      attention: 'unreachable: connect ECONNREFUSED',
      facts: { reachable: 'no (Unreachable)', serverVersion: 'v1.34.0', lastProbeTime: '2026-01-01T00:00:00Z' },
    });
    const replication = summarize('NamespaceReplication', {
      ...base,
      kind: 'NamespaceReplication',
      spec: { destination: { cluster: { name: 'dr' }, namespace: 'shop' }, mode: 'Continuous' },
      status: {
        conditions: [ready, { type: 'PruneHeld', status: 'True', reason: 'MassDeletion', message: '40 deletions held' }],
        kinds: [{ kind: 'Deployment.apps', objects: 3 }],
        pruneHold: { token: 't', since: '2026-01-01T00:00:00Z', objects: 40, reason: 'MassDeletion' },
      },
    });
    expect(replication).toMatchObject({
      attention: 'deletion held: 40 deletions held',
      targets: [{ name: 'Deployment.apps', objects: 3 }],
      facts: { destination: 'dr/shop', pruneHold: '40 deletion(s) held since 2026-01-01T00:00:00Z (MassDeletion)' },
    });
  });

  it('asks nothing of a suspended object', () => {
    const object = {
      ...base,
      kind: 'ConfigSync',
      spec: { suspend: true, source: { git: { repo: 'https://h/r', revision: 'main', path: '' } }, targets: [] },
      status: { conditions: [{ ...ready, status: 'False' }] },
    };
    expect(summarize('ConfigSync', object).attention).toBeUndefined();
  });
});

describe("a target's HEALTH cell", () => {
  it('says the worst state of its applied objects in Argo CD words, with counts; nothing without health', () => {
    expect(healthText({})).toBeUndefined();
    expect(healthText({ healthy: 3, progressing: 0, failed: 0, unknown: 0 })).toBe('Healthy (3 of 3)');
    expect(healthText({ healthy: 1, progressing: 2, failed: 0, unknown: 0 })).toBe('Progressing (2 of 3)');
    expect(healthText({ healthy: 1, progressing: 1, failed: 1, unknown: 0 })).toBe('Degraded (1 of 3 failed)');
    expect(healthText({ healthy: 0, progressing: 0, failed: 0, unknown: 2 })).toBe('Unknown (2 of 2 not read)');
    const summary = summarize('ConfigSync', {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'ConfigSync',
      metadata: { name: 'web', namespace: 'apps' },
      spec: { targets: [{ name: 'main' }] },
      status: { targets: [{ name: 'main', phase: 'Synced', objects: 2, health: { healthy: 2, progressing: 0, failed: 0, unknown: 0 } }] },
    });
    expect(summary.targets[0]?.health).toBe('Healthy (2 of 2)');
  });
});

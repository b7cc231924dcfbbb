import { describe, expect, it } from 'vitest';
import { ApplyCause, applyFingerprint, encodeInventory, type ApplyClient, type ChangeSet, type KubeObject } from '@syncline/apply';
import { FindingCause } from './findings.ts';
import { applyTarget, combineTargets, provenByWatches, type TargetNoop, describeChanges, onlyRefused, partitionInventory, summarizeChanges } from './target.ts';
import { trustedNamespaces } from '../tenancy.ts';

const input = { target: { name: 'prod', namespace: 'shop' }, now: '2026-11-22T10:00:00Z', syncKey: 'ops/web' };
const changes = (entries: ChangeSet['entries'], extra: Partial<ChangeSet> = {}): ChangeSet => ({
  entries,
  inventory: entries.filter((e) => e.action !== 'deleted').map((e) => ({ id: e.id })),
  pruned: true,
  ...extra,
});

describe('summarizeChanges', () => {
  it('given only unchanged objects, when summarized, then the target is Synced, unchanged and keeps its last sync time', () => {
    const outcome = summarizeChanges(
      { ...input, previous: { name: 'prod', phase: 'Synced', objects: 1, lastSyncedTime: 'earlier' } },
      changes([{ id: '/ConfigMap/shop/a', action: 'unchanged' }]),
    );
    expect(outcome.status).toEqual({ name: 'prod', namespace: 'shop', phase: 'Synced', objects: 1, lastSyncedTime: 'earlier' });
    expect(outcome.changed).toBe(false);
  });

  it.each([
    ['another sync owns it', ApplyCause.Conflict, 'Conflict: the object is owned by ops/api/prod'],
    [
      'nobody we may take it from owns it',
      ApplyCause.NotOwned,
      'Conflict: the object exists and is not managed by Syncline (field managers: kubectl); policy Sync leaves it (Adopt or Overwrite take it over)',
    ],
  ] as const)('given a skipped object because %s, then it is a conflict naming the owner, not a silent success', (_why, cause, reason) => {
    const outcome = summarizeChanges(
      input,
      changes([
        { id: '/ConfigMap/shop/a', action: 'skipped', cause, reason },
        { id: '/ConfigMap/shop/b', action: 'created' },
      ]),
    );
    expect(outcome.conflicts).toEqual([`/ConfigMap/shop/a: ${reason}`]);
    expect(outcome.findings).toEqual([{ cause, subject: '/ConfigMap/shop/a', reason }]);
    expect(outcome.status.phase).toBe('Failed');
    expect(outcome.status.message).toContain(reason);
    expect(outcome.failures).toEqual([]);
    expect(outcome.counts.created).toBe(1);
  });

  it('given a skip that is a policy choice (Keep), then it is neither a conflict nor a failure', () => {
    const outcome = summarizeChanges(
      input,
      changes([{ id: '/ConfigMap/shop/a', action: 'skipped', cause: ApplyCause.Kept, reason: 'the object exists; policy Keep never modifies it' }]),
    );
    expect(outcome.conflicts).toEqual([]);
    expect(outcome.findings).toEqual([]);
    expect(outcome.status.phase).toBe('Synced');
  });

  it('given an orphaned Namespace, then it is reported without failing the target', () => {
    const outcome = summarizeChanges(
      input,
      changes([
        {
          id: '/Namespace//team',
          action: 'skipped',
          cause: ApplyCause.Orphaned,
          reason: "not pruned: it holds objects that are not this sync's (/ConfigMap/team/x); the Namespace is left in place",
        },
      ]),
    );
    expect(outcome.orphaned).toEqual([
      "/Namespace//team: not pruned: it holds objects that are not this sync's (/ConfigMap/team/x); the Namespace is left in place",
    ]);
    expect(outcome.status.phase).toBe('Synced');
  });

  it('given a refused plan and a failed object, then both are failures and the counts say so', () => {
    const outcome = summarizeChanges(
      input,
      changes([{ id: '/ConfigMap/shop/a', action: 'failed', cause: ApplyCause.Forbidden, reason: 'Forbidden: no' }], { blocked: 'refusing to prune' }),
    );
    expect(outcome.failures).toEqual(['refusing to prune', '/ConfigMap/shop/a: Forbidden: no']);
    expect(outcome.findings.map((f) => f.cause)).toEqual([FindingCause.EmptyRender, FindingCause.Forbidden]);
    expect(outcome.counts.failed).toBe(1);
  });
});

describe('combineTargets', () => {
  it('prefixes each finding with its target once and adds the counts up', () => {
    const a = summarizeChanges(
      input,
      changes([
        { id: '/ConfigMap/shop/a', action: 'created' },
        { id: '/ConfigMap/shop/x', action: 'skipped', cause: ApplyCause.Conflict, reason: 'Conflict: the object is owned by ops/api/prod' },
      ]),
    );
    const b = summarizeChanges({ ...input, target: { name: 'dev', namespace: 'dev' } }, changes([{ id: '/ConfigMap/dev/a', action: 'configured' }]));
    const combined = combineTargets([a, b]);
    expect(combined.counts).toMatchObject({ created: 1, configured: 1 });
    expect(combined.conflicts).toEqual(['prod: /ConfigMap/shop/x: Conflict: the object is owned by ops/api/prod']);
    expect(combined.findings).toEqual([
      { cause: ApplyCause.Conflict, subject: 'prod', reason: '/ConfigMap/shop/x: Conflict: the object is owned by ops/api/prod' },
    ]);
    expect(combined.changed).toBe(true);
  });
});

describe('what changed, for the Event', () => {
  it('given created, configured, deleted and unchanged objects, then the written ones are named like Flux names them', () => {
    const outcome = summarizeChanges(
      input,
      changes([
        { id: 'apps/Deployment/shop/web', action: 'configured' },
        { id: '/ConfigMap/shop/a', action: 'unchanged' },
        { id: '/ConfigMap/shop/b', action: 'created' },
        { id: 'rbac.authorization.k8s.io/ClusterRole//reader', action: 'deleted' },
        { id: '/Secret/shop/s', action: 'skipped', cause: ApplyCause.Kept, reason: 'the object exists; policy Keep never modifies it' },
      ]),
    );
    expect(outcome.changes).toEqual(['Deployment/shop/web configured', 'ConfigMap/shop/b created', 'ClusterRole/reader deleted']);
  });

  it('given a no-op, then nothing changed and there is nothing to name', () => {
    const outcome = summarizeChanges(input, changes([{ id: '/ConfigMap/shop/a', action: 'unchanged' }]));
    expect([outcome.changed, outcome.changes]).toEqual([false, []]);
  });

  it('names the first ten and counts the rest; a target in another cluster says which', () => {
    const many = Array.from({ length: 22 }, (_, i) => `ConfigMap/shop/c${i} created`);
    expect(describeChanges(many)).toBe(`${many.slice(0, 10).join(', ')} and 12 more`);
    expect(describeChanges(many.slice(0, 10))).toBe(many.slice(0, 10).join(', '));
    const east = summarizeChanges(
      { ...input, target: { name: 'east', namespace: 'shop', cluster: 'east' } },
      changes([{ id: '/ConfigMap/shop/a', action: 'created' }]),
    );
    const here = summarizeChanges(input, changes([{ id: '/ConfigMap/shop/a', action: 'created' }]));
    expect(combineTargets([here, { ...east, inventory: { ...east.inventory, cluster: 'east' } }]).changes).toEqual([
      'ConfigMap/shop/a created',
      'ConfigMap/shop/a created in cluster east',
    ]);
  });
});

describe('applyTarget under the tenancy rule', () => {
  // Any request fails the test: a refused target reads and writes nothing.
  const untouchable = new Proxy({}, { get: (_target, method) => () => Promise.reject(new Error(`unexpected ${String(method)}`)) }) as ApplyClient;
  const tenant = { objectNamespace: 'team-a', serviceAccount: undefined, trusted: trustedNamespaces({ list: 'platform' }) };
  const cm = (name: string, namespace?: string) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, ...(namespace === undefined ? {} : { namespace }) },
  });
  const base = {
    client: untouchable,
    target: { name: 'main', namespace: 'team-a' },
    owner: { namespace: 'team-a', name: 'app', target: 'main' },
    now: '2026-11-25T10:00:00Z',
    syncKey: 'team-a/app',
  };

  it('refuses the whole target, before any request, when a desired object lies in another namespace or outside every namespace', async () => {
    for (const stray of [cm('planted', 'kube-system'), { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'escalate' } }]) {
      const outcome = await applyTarget({ ...base, desired: [cm('own', 'team-a'), stray], inventory: undefined, tenancy: tenant });
      expect(outcome.status).toMatchObject({ phase: 'Failed', reason: 'NamespaceNotAllowed', objects: 0 });
      expect(outcome.status.message).toMatch(/^NamespaceNotAllowed: nothing written; refused (ConfigMap\/kube-system\/planted|ClusterRole\/escalate): /);
      expect(outcome.changed).toBe(false);
      expect(onlyRefused([outcome])).toBe(true);
      expect(outcome.findings.map((f) => f.cause)).toEqual([FindingCause.NotAllowed]);
    }
  });

  it('refuses a target whose inventory reaches elsewhere (it would prune there), and keeps that inventory', async () => {
    const inventory = encodeInventory([{ id: '/ConfigMap/team-b/old' }]);
    const outcome = await applyTarget({ ...base, desired: [], inventory, allowEmpty: true, prune: true, tenancy: tenant });
    expect(outcome.status).toMatchObject({ phase: 'Failed', reason: 'NamespaceNotAllowed', objects: 1 });
    expect(outcome.inventory.entries).toEqual(inventory);
  });

  it('splits a deleted sync’s inventory into what it may prune and what it must leave', () => {
    const inventory = encodeInventory([
      { id: '/ConfigMap/team-a/mine' },
      { id: '/ConfigMap/team-b/theirs' },
      { id: 'rbac.authorization.k8s.io/ClusterRole//wide' },
    ]);
    expect(partitionInventory(tenant, inventory)).toEqual({
      allowed: encodeInventory([{ id: '/ConfigMap/team-a/mine' }]),
      refused: ['/ConfigMap/team-b/theirs', 'rbac.authorization.k8s.io/ClusterRole//wide'],
    });
    expect(partitionInventory({ ...tenant, objectNamespace: 'platform' }, inventory).refused).toEqual([]);
  });
});

describe('applyTarget on a no-op resync', () => {
  // Any request fails the apply: a no-op resync reads and writes nothing, and one that is not a no-op shows up as Failed.
  const untouchable = new Proxy({}, { get: (_target, method) => () => Promise.reject(new Error(`unexpected ${String(method)}`)) }) as ApplyClient;
  const cm = (name: string, value = 'v'): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'shop' }, data: { value } });
  const owner = { namespace: 'ops', name: 'web', target: 'prod' };
  const desired = [cm('a'), cm('b')];
  const inventory = encodeInventory([{ id: '/ConfigMap/shop/a' }, { id: '/ConfigMap/shop/b' }]);
  const versions = new Map([
    ['/ConfigMap/shop/a', '10'],
    ['/ConfigMap/shop/b', '11'],
  ]);
  const proof = (): TargetNoop => ({
    record: {
      fingerprint: applyFingerprint({ desired, inventory, owner, options: {} }),
      versions,
      digests: new Map([...versions.keys()].map((id) => [id, 'sha256:x'])),
      owner: 'unused',
    },
  });
  const synced = { name: 'prod', namespace: 'shop', phase: 'Synced' as const, objects: 2, lastSyncedTime: '2026-11-22T09:00:00Z' };
  const run = (
    records: Map<string, TargetNoop>,
    change: Partial<Parameters<typeof applyTarget>[0]> = {},
    watched: (id: string) => string | null | undefined = (id) => versions.get(id),
  ) => applyTarget({ ...input, client: untouchable, desired, inventory, owner, previous: synced, noop: { records, key: 'ops/web/prod@', watched }, ...change });

  it('given the proof still holds, then the outcome of the last no-op is handed back, unchanged and without a request', async () => {
    const records = new Map([['ops/web/prod@', proof()]]);
    const first = await run(records);
    expect(first.status).toEqual(synced);
    expect(first.changed).toBe(false);
    expect(await run(records)).toBe(first);
    expect(provenByWatches(first)).toBe(true);
    // (a status line that is not Synced takes this run's time: that one is summarized each time)
    const pending = { ...synced, phase: 'Pending' as const };
    expect((await run(records, { previous: pending })).status.lastSyncedTime).toBe(input.now);
    expect((await run(records, { previous: pending, now: '2026-11-22T11:00:00Z' })).status.lastSyncedTime).toBe('2026-11-22T11:00:00Z');
  });

  it('given a drifted object, a new render, another inventory or new options, then it is never the kept answer but a full apply', async () => {
    const changes: [string, Partial<Parameters<typeof applyTarget>[0]>, ((id: string) => string | null | undefined)?][] = [
      ['an object edited (another version in the watch)', {}, (id) => (id === '/ConfigMap/shop/b' ? '12' : versions.get(id))],
      ['an object deleted', {}, (id) => (id === '/ConfigMap/shop/b' ? null : versions.get(id))],
      ['no watch vouching', {}, () => undefined],
      ['a new commit (another object)', { desired: [cm('a'), cm('b', 'w')] }],
      ['another inventory', { inventory: encodeInventory([{ id: '/ConfigMap/shop/a' }]) }],
      ['another option', { prune: true }],
      ['another owner', { owner: { ...owner, name: 'api' } }],
    ];
    for (const [why, change, watched] of changes) {
      const records = new Map([['ops/web/prod@', proof()]]);
      expect((await run(records)).status.phase, why).toBe('Synced');
      const outcome = await run(records, change, watched);
      expect(outcome.status.phase, why).toBe('Failed');
      expect(outcome.status.message, why).toContain('unexpected');
      expect(provenByWatches(outcome), why).toBe(false);
    }
  });
});

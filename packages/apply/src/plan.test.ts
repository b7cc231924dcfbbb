import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { APPLIED_DIGEST_ANNOTATION, OWNED_BY_ANNOTATION, OWNER_LABEL, PRUNE_ANNOTATION, objectId, ownerHash, type KubeObject, type Owner } from './identity.ts';
import type { Inventory } from './inventory.ts';
import { planApply, planStale, waveOf, withOwnership, type LiveState, type PlanInput, type PlanStep, type Policy } from './plan.ts';

const owner: Owner = { namespace: 'team', name: 'web', target: 'prod' };
const other: Owner = { namespace: 'team', name: 'api', target: 'prod' };
const cm = (name: string, data: Record<string, string> = { k: 'v' }, namespace = 'app'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data,
});
const ns = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });

/** The managedFields entry the API server records for our server-side apply. */
const ourApply = { manager: 'syncline', operation: 'Apply', fieldsV1: {} };
/** What the API server would hold after we applied `obj` (plus server fields, our apply among managedFields). */
const stored = (obj: KubeObject, by: Owner = owner): KubeObject => {
  const marked = withOwnership(obj, by);
  return { ...marked, metadata: { ...marked.metadata, uid: `uid-${obj.metadata.name}`, resourceVersion: '1', managedFields: [ourApply] } };
};
/** An object someone else made from one of ours: every label and annotation copied, renamed, their managedFields. */
const copyOf = (obj: KubeObject, name: string, managedFields: NonNullable<KubeObject['metadata']['managedFields']>): KubeObject => {
  const source = stored(obj);
  return { ...source, metadata: { ...source.metadata, name, uid: `uid-${name}`, managedFields } };
};
const liveOf = (...objects: KubeObject[]): LiveState => ({ objects: new Map(objects.map((o) => [objectId(o), o])) });
const plan = (input: Partial<PlanInput> & Pick<PlanInput, 'desired'>) => planApply({ inventory: [], live: liveOf(), owner, ...input });
const summary = (steps: readonly PlanStep[]) => steps.map((s) => `${s.type} ${s.id}${s.type === 'apply' ? (s.force ? ' force' : '') : ''}`);

describe('planApply', () => {
  it('creates missing objects in tier order: Namespaces, CRDs, cluster-scoped, namespaced', () => {
    const crd: KubeObject = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.x.dev' } };
    const role: KubeObject = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'r' } };
    const p = plan({ desired: [cm('a'), role, crd, ns('app')] });
    expect(summary(p.apply)).toEqual([
      'apply /Namespace//app',
      'apply apiextensions.k8s.io/CustomResourceDefinition//widgets.x.dev',
      'apply rbac.authorization.k8s.io/ClusterRole//r',
      'apply /ConfigMap/app/a',
    ]);
    const first = p.apply[0];
    expect(first?.type === 'apply' && first.object.metadata.labels?.[OWNER_LABEL]).toMatch(/^[0-9a-f]{40}$/);
    expect(first?.type === 'apply' && first.object.metadata.annotations?.[OWNED_BY_ANNOTATION]).toBe('team/web/prod');
  });

  it('plans nothing to write when the live objects hold what we applied', () => {
    const p = plan({ desired: [cm('a')], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(stored(cm('a'))) });
    expect(summary(p.apply)).toEqual(['unchanged /ConfigMap/app/a']);
    expect(p.prune).toEqual([]);
  });

  it('re-applies a changed render, forced, since the object is ours', () => {
    const p = plan({ desired: [cm('a', { k: 'new' })], live: liveOf(stored(cm('a'))) });
    expect(summary(p.apply)).toEqual(['apply /ConfigMap/app/a force']);
  });

  it('sees a removed field as a change (the digest differs) although the live object still holds the rest', () => {
    const p = plan({ desired: [cm('a', { k: 'v' })], live: liveOf(stored(cm('a', { k: 'v', extra: 'x' }))) });
    expect(summary(p.apply)).toEqual(['apply /ConfigMap/app/a force']);
  });

  it('corrects drift or reports it, per drift mode', () => {
    const drifted = stored(cm('a'));
    drifted['data'] = { k: 'edited' };
    const corrected = plan({ desired: [cm('a')], live: liveOf(drifted), drift: 'Correct' }).apply[0];
    expect(corrected).toMatchObject({ type: 'apply', force: true, reason: 'drift corrected: data.k' });
    const reported = plan({ desired: [cm('a')], live: liveOf(drifted), drift: 'Report' }).apply[0];
    expect(reported).toMatchObject({ type: 'skip', keep: true, drift: ['data.k'] });
  });

  it.each<[Policy, string]>([
    ['Sync', 'skip'],
    ['Keep', 'skip'],
    ['Adopt', 'apply'],
    ['Overwrite', 'apply force'],
  ])('policy %s on an existing object that is not ours: %s', (policy, expected) => {
    const foreign: KubeObject = { ...cm('a', { k: 'theirs' }), metadata: { name: 'a', namespace: 'app', managedFields: [{ manager: 'kubectl' }] } };
    const step = plan({ desired: [cm('a')], live: liveOf(foreign), policy }).apply[0];
    expect(step === undefined ? '' : `${step.type}${step.type === 'apply' && step.force ? ' force' : ''}`).toBe(expected);
    if (policy === 'Sync') expect(step).toMatchObject({ reason: expect.stringContaining('kubectl') as unknown });
  });

  it('takes over the objects of a handed-over owner (a renamed target) only with our own apply on them', () => {
    const renamed: Owner = { ...owner, target: 'old' };
    const handoff = new Set(['team/web/old']);
    expect(plan({ desired: [cm('a')], live: liveOf(stored(cm('a'), renamed)), handoff }).apply[0]).toMatchObject({
      type: 'apply',
      force: true,
      reason: 'handed over from team/web/old',
    });
    // another owner stays a conflict, and so does a copy marked by the old target without our apply
    expect(plan({ desired: [cm('a')], live: liveOf(stored(cm('a'), other)), handoff }).apply[0]).toMatchObject({
      type: 'skip',
      cause: 'Conflict',
      reason: 'Conflict: the object is owned by team/api/prod',
    });
    const copy = {
      ...stored(cm('a'), renamed),
      metadata: { ...stored(cm('a'), renamed).metadata, managedFields: [{ manager: 'kubectl-create', operation: 'Update' }] },
    };
    expect(plan({ desired: [cm('a')], live: liveOf(copy), handoff }).apply[0]).toMatchObject({
      type: 'skip',
      reason: 'Conflict: the object is owned by team/web/old',
    });
  });

  it('namespacePolicy takes over an existing Namespace while the objects in it stay under policy', () => {
    const theirs = (o: KubeObject): KubeObject => ({ ...o, metadata: { ...o.metadata, managedFields: [{ manager: 'kubectl-create', operation: 'Update' }] } });
    const steps = plan({ desired: [ns('app'), cm('a')], live: liveOf(theirs(ns('app')), theirs(cm('a'))), policy: 'Sync', namespacePolicy: 'Adopt' }).apply;
    expect(steps[0]).toMatchObject({ type: 'apply', id: '/Namespace//app', force: false, reason: 'adopted' });
    expect(steps[1]).toMatchObject({ type: 'skip', id: '/ConfigMap/app/a', keep: false, reason: expect.stringContaining('Conflict') as unknown });
    // adopted, not created: the Namespace is never pruned
    const adopted = stored(ns('app'));
    adopted.metadata.managedFields = [ourApply];
    expect(plan({ desired: [cm('b')], inventory: [{ id: '/Namespace//app' }], live: liveOf(adopted), namespacePolicy: 'Adopt' }).prune[0]).toMatchObject({
      type: 'forget',
      gone: false,
    });
  });

  it('never touches an object another sync owns, whatever the policy', () => {
    for (const policy of ['Sync', 'Adopt', 'Overwrite', 'Keep'] as const) {
      const step = plan({ desired: [cm('a')], live: liveOf(stored(cm('a'), other)), policy }).apply[0];
      expect(step).toMatchObject({ type: 'skip', keep: false, reason: 'Conflict: the object is owned by team/api/prod' });
    }
  });

  it('Keep creates a missing object but leaves a changed one of ours alone', () => {
    expect(summary(plan({ desired: [cm('a')], policy: 'Keep' }).apply)).toEqual(['apply /ConfigMap/app/a']);
    expect(plan({ desired: [cm('a', { k: 'new' })], live: liveOf(stored(cm('a'))), policy: 'Keep' }).apply[0]).toMatchObject({
      type: 'skip',
      keep: true,
      cause: 'Kept',
    });
  });

  it('prunes only stale objects that carry our mark, in reverse tier order', () => {
    const disabled = stored(cm('kept'));
    disabled.metadata.annotations = { ...disabled.metadata.annotations, [PRUNE_ANNOTATION]: 'disabled' };
    const inventory: Inventory = [
      { id: '/Namespace//app', created: true },
      { id: '/Namespace//adopted' },
      { id: '/ConfigMap/app/stale' },
      { id: '/ConfigMap/app/kept' },
      { id: '/ConfigMap/app/taken' },
      { id: '/ConfigMap/app/gone' },
      { id: '/ConfigMap/locked/hidden' },
    ];
    const p = plan({
      desired: [cm('other', {}, 'elsewhere')],
      inventory,
      live: {
        objects: liveOf(stored(ns('app')), stored(ns('adopted')), stored(cm('stale')), disabled, stored(cm('taken'), other)).objects,
        unknownScopes: new Set(['/ConfigMap/locked']),
      },
    });
    expect(p.prune.map((s) => [s.type, s.id, 'reason' in s ? s.reason : ''])).toEqual([
      ['resolveStale', '/ConfigMap/locked/hidden', ''],
      ['forget', '/ConfigMap/app/gone', 'already absent'],
      ['forget', '/ConfigMap/app/taken', 'not pruned: now owned by team/api/prod'],
      ['forget', '/ConfigMap/app/kept', 'not pruned: syncline.dev/prune is disabled'],
      ['delete', '/ConfigMap/app/stale', ''],
      ['forget', '/Namespace//adopted', 'not pruned: a Namespace this sync did not create'],
      ['delete', '/Namespace//app', ''],
    ]);
    const del = p.prune[4];
    expect(del?.type === 'delete' && del.uid).toBe('uid-stale');
  });

  it('prunes an object with our exact mark that never reached the inventory (a lost status write), and nothing else unrecorded', () => {
    // given: the render no longer has `lost`; it carries our mark but the inventory never recorded it
    const lost = stored(cm('lost'));
    const theirs = stored(cm('theirs'), other);
    const otherTarget = stored(cm('sibling'), { ...owner, target: 'staging' });
    const unmarked: KubeObject = { ...cm('hand-made'), metadata: { ...cm('hand-made').metadata, uid: 'u' } };
    const p = plan({ desired: [cm('a')], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(stored(cm('a')), lost, theirs, otherTarget, unmarked) });
    expect(summary(p.prune)).toEqual(['delete /ConfigMap/app/lost']);
    // and with prune off, it is only forgotten
    const kept = plan({ desired: [cm('a')], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(stored(cm('a')), lost), prune: false });
    expect(summary(kept.prune)).toEqual(['forget /ConfigMap/app/lost']);
  });

  describe('an object carrying every one of our marks that we never applied (a copy)', () => {
    // given copies of one of our objects, renamed, with every label and annotation (owner hash, readable owner
    // labels, owned-by, applied digest), made by someone else: no managedFields (as a dry object is), or the
    // copier's own entry (kubectl's client-side apply, an Update, another tool's server-side apply)
    const copies: [string, NonNullable<KubeObject['metadata']['managedFields']>][] = [
      ['no managedFields', []],
      ['kubectl apply (client-side)', [{ manager: 'kubectl-client-side-apply', operation: 'Update' }]],
      ['kubectl create', [{ manager: 'kubectl-create', operation: 'Update' }]],
      ['another server-side apply', [{ manager: 'kubectl', operation: 'Apply' }]],
      ['our manager, but an Update', [{ manager: 'syncline', operation: 'Update' }]],
      ['our manager, on the status subresource', [{ manager: 'syncline', operation: 'Apply', subresource: 'status' }]],
    ];

    it.each(copies)('is never pruned, nor deleted with prune on or off (%s)', (_, managedFields) => {
      const copy = copyOf(cm('a'), 'copy', managedFields);
      expect(copy.metadata.labels).toEqual(stored(cm('a')).metadata.labels);
      expect(copy.metadata.annotations).toEqual(stored(cm('a')).metadata.annotations);
      // when the sync resyncs, adds an object, and prunes one it recorded
      for (const desired of [[cm('a')], [cm('a'), cm('b')], [cm('b')]]) {
        const p = plan({ desired, inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(stored(cm('a')), copy) });
        // then the copy is in no step at all
        expect([...p.apply, ...p.prune].map((s) => s.id)).not.toContain('/ConfigMap/app/copy');
      }
      // and a sync being deleted (an empty render) does not delete it either
      expect(summary(plan({ desired: [], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(stored(cm('a')), copy), allowEmpty: true }).prune)).toEqual([
        'delete /ConfigMap/app/a',
      ]);
    });

    it.each(copies)(
      'is not overwritten when the render adds an object of its name: a conflict under Sync, as for any object not ours (%s)',
      (_, managedFields) => {
        const copy = copyOf(cm('a'), 'b', managedFields);
        const p = plan({ desired: [cm('a'), cm('b', { k: 'ours' })], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(stored(cm('a')), copy) });
        expect(p.apply[1]).toMatchObject({
          type: 'skip',
          id: '/ConfigMap/app/b',
          keep: false,
          cause: 'NotOwned',
          reason: expect.stringMatching(/^Conflict: .*carries this sync's ownership marks.*not in the inventory.*field manager "syncline"/) as unknown,
        });
        expect(plan({ desired: [cm('b')], live: liveOf(copy), policy: 'Keep' }).apply[0]).toMatchObject({ type: 'skip', keep: false });
        // Adopt and Overwrite take it over as they take any object that is not ours
        expect(plan({ desired: [cm('b')], live: liveOf(copy), policy: 'Adopt' }).apply[0]).toMatchObject({ type: 'apply', force: false, reason: 'adopted' });
        expect(plan({ desired: [cm('b')], live: liveOf(copy), policy: 'Overwrite' }).apply[0]).toMatchObject({
          type: 'apply',
          force: true,
          reason: 'overwritten',
        });
      },
    );

    it("is pruned when it does record our server-side apply (an apply whose status write was lost), beside the copier's entries", () => {
      const lost = copyOf(cm('a'), 'lost', [{ manager: 'kubectl-edit', operation: 'Update' }, ourApply]);
      const p = plan({ desired: [cm('a')], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(stored(cm('a')), lost) });
      expect(summary(p.prune)).toEqual(['delete /ConfigMap/app/lost']);
      // and with another field manager configured, our default manager's entry proves nothing
      const elsewhere = plan({ desired: [cm('a')], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(stored(cm('a')), lost), fieldManager: 'syncline-b' });
      expect(elsewhere.prune).toEqual([]);
    });

    it('is not ours on the inventory alone, for applying either: a re-created or taken-over object is a conflict under Sync', () => {
      // A recorded name whose object no longer shows our apply: re-created by someone (marks copied along), or every
      // field taken by another apply manager. Overwriting it would put our apply on it, and a later prune would
      // delete an object someone else made.
      for (const managedFields of [[], [{ manager: 'kubectl-create', operation: 'Update' }], [{ manager: 'helm', operation: 'Apply' }]]) {
        const taken = copyOf(cm('a'), 'a', managedFields);
        expect(plan({ desired: [cm('a', { k: 'new' })], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(taken) }).apply[0]).toMatchObject({
          type: 'skip',
          keep: false,
          reason: expect.stringMatching(/^Conflict: .*it is in the inventory, but has no server-side apply by field manager "syncline"/) as unknown,
        });
        // Adopt and Overwrite take it over as they take any object that is not ours
        expect(
          plan({ desired: [cm('a', { k: 'new' })], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(taken), policy: 'Adopt' }).apply[0],
        ).toMatchObject({ type: 'apply', reason: 'adopted' });
      }
      // our own object at that name is applied as before
      expect(summary(plan({ desired: [cm('a', { k: 'new' })], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(stored(cm('a'))) }).apply)).toEqual([
        'apply /ConfigMap/app/a force',
      ]);
    });

    it('is not deleted on the inventory alone: an object re-created at a recorded name, marks copied, is kept', () => {
      // given: the inventory lists `a`; someone deleted it and created their own `a` from a copy of ours
      for (const managedFields of [[], [{ manager: 'kubectl-client-side-apply', operation: 'Update' }], [{ manager: 'helm', operation: 'Apply' }]]) {
        const recreated = copyOf(cm('a'), 'a', managedFields);
        // when the render drops it
        const p = plan({ desired: [], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(recreated), allowEmpty: true });
        // then it is forgotten, not deleted, and the reason says why
        expect(p.prune).toEqual([
          {
            type: 'forget',
            id: '/ConfigMap/app/a',
            tier: 3,
            gone: false,
            reason: expect.stringMatching(/in the inventory, but has no server-side apply by field manager "syncline"/) as unknown,
          },
        ]);
      }
      // and our own object at that name is still deleted
      expect(summary(plan({ desired: [], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(stored(cm('a'))), allowEmpty: true }).prune)).toEqual([
        'delete /ConfigMap/app/a',
      ]);
    });

    it('is not pruned when the executor resolves it as a stale id it did not record', () => {
      const copy = copyOf(cm('a'), 'copy', []);
      const context = plan({ desired: [cm('a')], inventory: [{ id: '/ConfigMap/app/a' }] }).context;
      expect(planStale('/ConfigMap/app/copy', copy, context)).toMatchObject({
        type: 'forget',
        gone: false,
        reason: expect.stringContaining('not pruned: the object carries our ownership marks') as unknown,
      });
    });
  });

  it('refuses an empty render for a non-empty inventory unless allowed', () => {
    const inventory: Inventory = [{ id: '/ConfigMap/app/a' }];
    const refused = plan({ desired: [], inventory, live: liveOf(stored(cm('a'))) });
    expect(refused.blocked).toMatch(/no objects/);
    expect(refused.prune).toEqual([]);
    const allowed = plan({ desired: [], inventory, live: liveOf(stored(cm('a'))), allowEmpty: true });
    expect(allowed.blocked).toBeUndefined();
    expect(summary(allowed.prune)).toEqual(['delete /ConfigMap/app/a']);
  });

  it('defers objects whose scope could not be listed to the executor, and reports duplicates', () => {
    const p = plan({ desired: [cm('a'), cm('a')], live: { objects: new Map(), unknownScopes: new Set(['/ConfigMap/app']) } });
    expect(p.apply.map((s) => s.type)).toEqual(['resolve', 'skip']);
  });

  it('defers ids the owner-selected LIST could not show to the executor: a desired one is resolved, a stale one resolved before pruning', () => {
    const live = { objects: liveOf(stored(cm('listed'))).objects, unresolved: new Set(['/ConfigMap/app/missing', '/ConfigMap/app/gone']) };
    const p = plan({
      desired: [cm('listed'), cm('missing'), cm('new', { k: 'v' }, 'other')],
      inventory: [{ id: '/ConfigMap/app/listed' }, { id: '/ConfigMap/app/gone' }],
      live,
    });
    expect(p.apply.map((s) => `${s.type} ${s.id}`)).toEqual([
      'unchanged /ConfigMap/app/listed',
      'resolve /ConfigMap/app/missing',
      'apply /ConfigMap/other/new',
    ]);
    expect(summary(p.prune)).toEqual(['resolveStale /ConfigMap/app/gone']);
  });

  it('plans proven objects (a watch vouches for what a clean no-op read) exactly as it plans them read, for every policy', () => {
    const before = [cm('same'), cm('changed'), cm('kept', { k: 'old' })];
    const after = [cm('same'), cm('changed', { k: 'new' }), cm('kept', { k: 'new' }), cm('fresh')];
    const read = liveOf(...before.map((o) => stored(o)));
    const proven: LiveState = {
      objects: new Map(),
      proven: new Map(
        before.map((o) => [objectId(o), { version: '1', digest: withOwnership(o, owner).metadata.annotations?.[APPLIED_DIGEST_ANNOTATION] ?? '' }]),
      ),
    };
    const inventory = before.map((o) => ({ id: objectId(o) }));
    for (const policy of ['Sync', 'Adopt', 'Overwrite', 'Keep'] as Policy[]) {
      for (const drift of ['Correct', 'Report'] as const) {
        const fromRead = plan({ desired: after, inventory, live: read, policy, drift });
        const fromProof = plan({ desired: after, inventory, live: proven, policy, drift });
        expect(fromProof.apply, `${policy}/${drift}`).toEqual(fromRead.apply);
      }
    }
    expect(summary(plan({ desired: after, inventory, live: proven }).apply)).toEqual([
      'unchanged /ConfigMap/app/same',
      'apply /ConfigMap/app/changed force',
      'apply /ConfigMap/app/kept force',
      'apply /ConfigMap/app/fresh',
    ]);
  });

  it('writes a digest of the marked object that ignores a stale digest in the input', () => {
    const once = withOwnership(cm('a'), owner);
    const twice = withOwnership(once, owner);
    expect(twice.metadata.annotations?.[APPLIED_DIGEST_ANNOTATION]).toBe(once.metadata.annotations?.[APPLIED_DIGEST_ANNOTATION]);
    expect(withOwnership({ ...cm('a'), metadata: { ...cm('a').metadata, uid: 'x', managedFields: [] } }, owner)).toEqual(once);
  });

  it('keeps the digest format: sha256 over the JSON of the marked object, in its key order (a new format would rewrite every object once)', () => {
    // given an object with server fields, a stale owner label and a stale digest, as a copied object has them
    const input: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'a',
        namespace: 'app',
        uid: 'u',
        resourceVersion: '7',
        labels: { app: 'a', [OWNER_LABEL]: 'stale' },
        annotations: { [APPLIED_DIGEST_ANNOTATION]: 'sha256:stale', note: 'n' },
      },
      data: { k: 'v' },
    };
    // when it is marked
    const marked = withOwnership(input, owner);
    // then the digest is that of the marked object without it, serialised in the order the keys came in
    const { [APPLIED_DIGEST_ANNOTATION]: digest, ...annotations } = marked.metadata.annotations ?? {};
    const expected = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'a',
        namespace: 'app',
        labels: { app: 'a', 'syncline.dev/name': 'web', 'syncline.dev/namespace': 'team', 'syncline.dev/kind': 'ConfigSync', [OWNER_LABEL]: ownerHash(owner) },
        annotations: { note: 'n', [OWNED_BY_ANNOTATION]: 'team/web/prod' },
      },
      data: { k: 'v' },
    };
    expect({ ...marked, metadata: { ...marked.metadata, annotations } }).toEqual(expected);
    expect(digest).toBe(`sha256:${createHash('sha256').update(JSON.stringify(expected)).digest('base64url')}`);
  });

  it('labels applied objects with the readable owner (name, namespace, kind) beside the hash', () => {
    // given objects of a ConfigSync, a ManifestSync, and a copy that carries its source's marks
    const configSync = withOwnership(cm('a'), owner);
    const manifestSync = withOwnership(cm('b'), { namespace: 'team', name: 'ManifestSync:db', target: 'prod' });
    const copied = withOwnership(manifestSync, { namespace: 'dr', name: 'NamespaceReplication:standby', target: 'standby' });

    // then each carries its own owner's labels, and the hash stays
    expect(configSync.metadata.labels).toEqual({
      [OWNER_LABEL]: ownerHash(owner),
      'syncline.dev/name': 'web',
      'syncline.dev/namespace': 'team',
      'syncline.dev/kind': 'ConfigSync',
    });
    expect(manifestSync.metadata.labels).toMatchObject({ 'syncline.dev/name': 'db', 'syncline.dev/namespace': 'team', 'syncline.dev/kind': 'ManifestSync' });
    expect(copied.metadata.labels).toMatchObject({
      'syncline.dev/name': 'standby',
      'syncline.dev/namespace': 'dr',
      'syncline.dev/kind': 'NamespaceReplication',
    });
    expect(withOwnership(cm('c'), { namespace: 'team', name: 'Mirror:Secret:db', target: 'prod' }).metadata.labels).toMatchObject({
      'syncline.dev/name': 'db',
      'syncline.dev/kind': 'Mirror',
    });
  });

  it('leaves the readable name out when it is longer than a label value may be (the hash still marks it)', () => {
    const long = 'a'.repeat(64);
    const labels = withOwnership(
      { ...cm('a'), metadata: { name: 'a', namespace: 'app', labels: { 'syncline.dev/name': 'someone-else' } } },
      { namespace: 'team', name: long, target: 'prod' },
    ).metadata.labels;
    expect(labels).not.toHaveProperty('syncline.dev/name');
    expect(labels).toMatchObject({ 'syncline.dev/namespace': 'team', [OWNER_LABEL]: ownerHash({ namespace: 'team', name: long, target: 'prod' }) });
    expect(withOwnership(cm('a'), { namespace: 'team', name: 'a'.repeat(63), target: 'prod' }).metadata.labels).toHaveProperty(
      'syncline.dev/name',
      'a'.repeat(63),
    );
  });

  it('an object applied before the readable labels existed is re-applied once (its digest differs), then unchanged', () => {
    const before = stored(cm('a'));
    const old: KubeObject = {
      ...before,
      metadata: {
        ...before.metadata,
        labels: { [OWNER_LABEL]: before.metadata.labels?.[OWNER_LABEL] ?? '' },
        annotations: { ...before.metadata.annotations, [APPLIED_DIGEST_ANNOTATION]: 'sha256:old' },
      },
    };
    expect(summary(plan({ desired: [cm('a')], inventory: [{ id: objectId(cm('a')) }], live: liveOf(old) }).apply)).toEqual(['apply /ConfigMap/app/a force']);
    expect(summary(plan({ desired: [cm('a')], inventory: [{ id: objectId(cm('a')) }], live: liveOf(stored(cm('a'))) }).apply)).toEqual([
      'unchanged /ConfigMap/app/a',
    ]);
  });
});

describe('kubectl edits of an object of ours', () => {
  const managed = (manager: string, operation: string, fieldsV1: Record<string, unknown>, subresource?: string) => ({
    manager,
    operation,
    apiVersion: 'v1',
    time: '2026-01-01T00:00:00Z',
    fieldsType: 'FieldsV1',
    fieldsV1,
    ...(subresource === undefined ? {} : { subresource }),
  });
  const ourEntry = managed('syncline', 'Apply', { 'f:data': { 'f:k': {} } });
  /** Ours as applied, plus an extra key someone's manager owns (a path comparison of Git's fields shows nothing). */
  const editedBy = (manager: string, operation = 'Update', subresource?: string): KubeObject => {
    const object = stored(cm('a'));
    object['data'] = { k: 'v', extra: 'x' };
    object.metadata.managedFields = [ourEntry, managed(manager, operation, { 'f:data': { 'f:extra': {} } }, subresource)];
    return object;
  };

  it('corrects an object whose fields all equal Git when kubectl added one of its own, taking it over first', () => {
    const step = plan({ desired: [cm('a')], live: liveOf(editedBy('kubectl-patch')) }).apply[0];
    expect(step).toMatchObject({ type: 'apply', force: true, create: false, reason: 'drift corrected: fields edited by kubectl-patch' });
    expect(step?.type === 'apply' && step.takeover?.managers).toEqual(['kubectl-patch']);
    expect(step?.type === 'apply' && step.takeover?.patch?.[0]).toEqual({ op: 'test', path: '/metadata/resourceVersion', value: '1' });
  });

  it('leaves the takeover to the forced apply when the edits own only fields Git sets (one write)', () => {
    const drifted = stored(cm('a'));
    drifted['data'] = { k: 'edited' };
    drifted.metadata.managedFields = [managed('syncline', 'Apply', { 'f:metadata': {} }), managed('kubectl-patch', 'Update', { 'f:data': { 'f:k': {} } })];
    expect(plan({ desired: [cm('a')], live: liveOf(drifted) }).apply[0]).toMatchObject({
      type: 'apply',
      force: true,
      reason: 'drift corrected: data.k, fields edited by kubectl-patch',
      takeover: { managers: ['kubectl-patch'] },
    });
    const step = plan({ desired: [cm('a')], live: liveOf(drifted) }).apply[0];
    expect(step?.type === 'apply' && step.takeover?.patch).toBeUndefined();
  });

  it('names the edits beside the drifted paths, and takes over on a changed render (a rollback) too', () => {
    const drifted = editedBy('kubectl-edit');
    drifted['data'] = { k: 'edited', extra: 'x' };
    expect(plan({ desired: [cm('a')], live: liveOf(drifted) }).apply[0]).toMatchObject({ reason: 'drift corrected: data.k, fields edited by kubectl-edit' });
    const changed = plan({ desired: [cm('a', { k: 'older' })], live: liveOf(editedBy('kubectl-client-side-apply')) }).apply[0];
    expect(changed).toMatchObject({ type: 'apply', force: true, reason: 'taken over: fields edited by kubectl-client-side-apply' });
    expect(changed?.type === 'apply' && changed.takeover?.managers).toEqual(['kubectl-client-side-apply']);
  });

  it('reports the edits under drift Report and leaves them under policy Keep', () => {
    expect(plan({ desired: [cm('a')], live: liveOf(editedBy('kubectl-set')), drift: 'Report' }).apply[0]).toMatchObject({
      type: 'skip',
      keep: true,
      cause: 'Drifted',
      reason: 'drifted: fields edited by kubectl-set',
      drift: ['fields edited by kubectl-set'],
    });
    expect(plan({ desired: [cm('a')], live: liveOf(editedBy('kubectl-set')), policy: 'Keep' }).apply[0]).toMatchObject({ type: 'unchanged' });
  });

  it('leaves what other appliers, controllers and subresource writers own: the object stays unchanged', () => {
    for (const live of [
      editedBy('platform-tool', 'Apply'),
      editedBy('kubectl', 'Apply'),
      editedBy('kube-controller-manager'),
      editedBy('kubectl-scale', 'Update', 'scale'),
      editedBy('kubectl-rollout'),
    ]) {
      expect(summary(plan({ desired: [cm('a')], live: liveOf(live) }).apply)).toEqual(['unchanged /ConfigMap/app/a']);
    }
  });

  it("takes over for the plan's field manager, and never for an object that is not ours", () => {
    const live = editedBy('deployer', 'Update');
    // The ownership proof (our own Apply entry) is for the plan's manager too: syncline's Apply proves nothing to
    // a plan applied as 'deployer', and deployer's Apply does.
    expect(plan({ desired: [cm('a')], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(live), fieldManager: 'deployer' }).apply[0]).toMatchObject({
      type: 'skip',
      reason: expect.stringContaining('Conflict') as unknown,
    });
    live.metadata.managedFields = [...(live.metadata.managedFields ?? []), managed('deployer', 'Apply', { 'f:metadata': {} })];
    expect(plan({ desired: [cm('a')], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(live), fieldManager: 'deployer' }).apply[0]).toMatchObject({
      type: 'apply',
      reason: 'drift corrected: fields edited by deployer',
    });
    const unmarked: KubeObject = {
      ...cm('a'),
      metadata: { ...cm('a').metadata, resourceVersion: '3', managedFields: [managed('kubectl-edit', 'Update', { 'f:data': {} })] },
    };
    for (const policy of ['Adopt', 'Overwrite'] as const) {
      const step = plan({ desired: [cm('a')], live: liveOf(unmarked), policy }).apply[0];
      expect(step?.type === 'apply' && step.takeover).toBeUndefined();
    }
  });
});

describe('apply waves', () => {
  const waved = (object: KubeObject, wave: string): KubeObject => ({
    ...object,
    metadata: { ...object.metadata, annotations: { 'syncline.dev/apply-wave': wave } },
  });
  const crd: KubeObject = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.x.dev' } };

  it('orders by wave (default 0, negative first), then by tier within a wave', () => {
    const p = plan({ desired: [waved(cm('late'), '2'), cm('a'), waved(crd, '1'), waved(cm('early'), '-1'), ns('app'), waved(cm('b'), '1')] });
    expect(p.apply.map((s) => `${s.wave ?? 0} ${s.id}`)).toEqual([
      '-1 /ConfigMap/app/early',
      '0 /Namespace//app',
      '0 /ConfigMap/app/a',
      '1 apiextensions.k8s.io/CustomResourceDefinition//widgets.x.dev',
      '1 /ConfigMap/app/b',
      '2 /ConfigMap/app/late',
    ]);
  });

  it('keeps the wave on objects that are already applied', () => {
    const desired = waved(cm('a'), '3');
    const p = plan({ desired: [desired], inventory: [{ id: '/ConfigMap/app/a' }], live: liveOf(stored(desired)) });
    expect(p.apply).toEqual([{ type: 'unchanged', id: '/ConfigMap/app/a', tier: 3, wave: 3 }]);
  });

  it('refuses a wave that is not an integer, naming the object', () => {
    for (const bad of ['one', '1.5', '', '99999999999']) {
      const p = plan({ desired: [waved(cm('a'), bad)] });
      expect(p.apply[0]).toMatchObject({ type: 'invalid', id: '/ConfigMap/app/a' });
      expect(p.apply[0]?.type === 'invalid' && p.apply[0].reason).toContain('ConfigMap/a: annotation syncline.dev/apply-wave must be an integer');
    }
    expect(waveOf(waved(cm('a'), ' -2 '))).toEqual({ wave: -2 });
  });
});

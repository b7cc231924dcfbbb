// planApply + executePlan against the real control plane: policies, drift, CRDs, prune safety, rollback, RBAC.
import { CoreV1Api, RbacAuthorizationV1Api, ApiextensionsV1Api } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { RESTRICTED_USER, isNotFound, testKubeConfig, testNamespace } from '@syncline/test-support/kube';
import {
  ApiError,
  PRUNE_ANNOTATION,
  createApplyClient,
  digestRendered,
  executePlan,
  planApply,
  readHealth,
  readLive,
  recordHistory,
  rollbackTarget,
  type ApplyClient,
  type ChangeSet,
  type DriftMode,
  type HistoryEntry,
  type Inventory,
  type KubeObject,
  type Owner,
  type Policy,
  ownerHash,
  DEFAULT_FIELD_MANAGER,
  OWNER_LABEL,
} from './index.ts';

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const admin = await createApplyClient(kc);

const cm = (namespace: string, name: string, data: Record<string, string> = { k: 'v' }): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data,
});
const secret = (namespace: string, name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace },
  stringData: { password: 'hunter2' },
});
const deployment = (namespace: string, name: string, image = 'nginx:1.27'): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: { containers: [{ name: 'web', image, resources: { limits: { cpu: 0.5, memory: '1024Mi' } }, ports: [{ containerPort: 80 }] }] },
    },
  },
});

/** Counts the writes a client makes, and can fail deletes on demand. */
function instrumented(inner: ApplyClient, options: { failDeletes?: boolean } = {}): ApplyClient & { writes: number } {
  const counted = {
    ...inner,
    writes: 0,
    apply: (...args: Parameters<ApplyClient['apply']>) => {
      counted.writes++;
      return inner.apply(...args);
    },
    jsonPatch: (...args: Parameters<ApplyClient['jsonPatch']>) => {
      counted.writes++;
      return inner.jsonPatch(...args);
    },
    delete: (...args: Parameters<ApplyClient['delete']>) => {
      counted.writes++;
      if (options.failDeletes === true) return Promise.reject(new ApiError({ status: 500, reason: 'InternalError', message: 'injected delete failure' }));
      return inner.delete(...args);
    },
  };
  return counted;
}

type SyncOptions = { owner: Owner; inventory?: Inventory; policy?: Policy; drift?: DriftMode; client?: ApplyClient; allowEmpty?: boolean };

async function sync(desired: KubeObject[], options: SyncOptions): Promise<ChangeSet> {
  const client = options.client ?? admin;
  const inventory = options.inventory ?? [];
  // Reads as the operator does: the owner's objects by label, the rest one by one.
  const live = await readLive({ client, desired, inventory, owner: options.owner });
  const plan = planApply({
    desired,
    inventory,
    live,
    owner: options.owner,
    ...(options.policy ? { policy: options.policy } : {}),
    ...(options.drift ? { drift: options.drift } : {}),
    ...(options.allowEmpty ? { allowEmpty: true } : {}),
  });
  return executePlan(plan, { client });
}

const parseId = (id: string): { kind: string; name: string } => {
  const [, kind = '', , name = ''] = id.split('/');
  return { kind, name };
};
const actions = (changes: ChangeSet): Record<string, string> => Object.fromEntries(changes.entries.map((e) => [e.id, e.action]));
const ownerIn = (namespace: string, target = 'prod'): Owner => ({ namespace, name: 'web', target });
const exists = async (namespace: string, name: string): Promise<boolean> =>
  core.readNamespacedConfigMap({ name, namespace }).then(
    () => true,
    (error: unknown) => {
      if (isNotFound(error)) return false;
      throw error;
    },
  );

/** Counts a client's reads: LISTs (with or without a label selector) and GETs. */
function readCounting(inner: ApplyClient): ApplyClient & { lists: { selector: string | undefined }[]; gets: number } {
  const counted = {
    ...inner,
    lists: [] as { selector: string | undefined }[],
    gets: 0,
    list: (...args: Parameters<ApplyClient['list']>) => {
      counted.lists.push({ selector: args[0].labelSelector });
      return inner.list(...args);
    },
    get: (...args: Parameters<ApplyClient['get']>) => {
      counted.gets++;
      return inner.get(...args);
    },
  };
  return counted;
}

describe('readLive with an owner: its own objects by label, never the whole namespace', () => {
  it('lists by owner label, reads missing and foreign objects one by one, lists the scope when many are missing, and still finds unrecorded objects', async () => {
    await using ns = await testNamespace();
    const owner = ownerIn(ns.name);
    // given a namespace shared with 30 objects of other owners and one unmarked object the render names
    await Promise.all(Array.from({ length: 30 }, (_, i) => admin.apply(cm(ns.name, `other-${i}`), { fieldManager: 'someone', force: true })));
    await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'unmarked' }, data: { k: 'theirs' } } });
    const first = await sync([cm(ns.name, 'a'), cm(ns.name, 'b'), cm(ns.name, 'unmarked')], { owner });
    expect(actions(first)).toEqual({
      [`/ConfigMap/${ns.name}/a`]: 'created',
      [`/ConfigMap/${ns.name}/b`]: 'created',
      [`/ConfigMap/${ns.name}/unmarked`]: 'skipped',
    });

    // when the owner's objects are read again, then one selected LIST returns exactly them; the unmarked one is read by GET
    const counting = readCounting(admin);
    const desired = [cm(ns.name, 'a'), cm(ns.name, 'b'), cm(ns.name, 'unmarked')];
    const live = await readLive({ client: counting, desired, inventory: first.inventory, owner });
    expect(counting.lists).toEqual([{ selector: `syncline.dev/owner=${ownerHash(owner)}` }]);
    expect([...live.objects.keys()].sort()).toEqual([`/ConfigMap/${ns.name}/a`, `/ConfigMap/${ns.name}/b`]);
    expect([...(live.unresolved ?? [])]).toEqual([`/ConfigMap/${ns.name}/unmarked`]);
    const again = await executePlan(planApply({ desired, inventory: first.inventory, live, owner }), { client: counting });
    expect(actions(again)).toEqual({
      [`/ConfigMap/${ns.name}/a`]: 'unchanged',
      [`/ConfigMap/${ns.name}/b`]: 'unchanged',
      [`/ConfigMap/${ns.name}/unmarked`]: 'skipped',
    });
    expect(again.entries.find((e) => e.id.endsWith('/unmarked'))?.reason).toMatch(/^Conflict: the object exists and is not managed by Syncline/);
    expect(counting.gets).toBe(1);

    // when an object of ours never reached the inventory (a lost status write), then it is still found and pruned
    const lost = await sync([cm(ns.name, 'a'), cm(ns.name, 'b'), cm(ns.name, 'lost')], { owner, inventory: first.inventory });
    expect(actions(lost)[`/ConfigMap/${ns.name}/lost`]).toBe('created');
    const pruned = await sync([cm(ns.name, 'a'), cm(ns.name, 'b')], { owner, inventory: first.inventory });
    expect(actions(pruned)[`/ConfigMap/${ns.name}/lost`]).toBe('deleted');
    expect(await exists(ns.name, 'lost')).toBe(false);
    expect(await exists(ns.name, 'other-0')).toBe(true);

    // when more objects are missing than are worth reading one by one, then the scope is listed once instead
    const many = Array.from({ length: 20 }, (_, i) => cm(ns.name, `new-${i}`));
    const wide = readCounting(admin);
    const fresh = await readLive({ client: wide, desired: many, inventory: [], owner });
    expect(wide.lists.map((l) => l.selector)).toEqual([`syncline.dev/owner=${ownerHash(owner)}`, undefined]);
    expect(fresh.unresolved?.size ?? 0).toBe(0);
    expect(fresh.objects.has(`/ConfigMap/${ns.name}/other-0`)).toBe(true);
  });
});

describe('objects the read could not see: created where the name is free, in one request that proves it', () => {
  it('creates missing objects without reading them, and leaves alone an object someone created after the read', async () => {
    await using ns = await testNamespace();
    const owner = ownerIn(ns.name);
    const desired = [cm(ns.name, 'a'), cm(ns.name, 'b'), cm(ns.name, 'raced')];
    // given the owner's read, which finds nothing: every object is unresolved
    const counting = readCounting(admin);
    const live = await readLive({ client: counting, desired, inventory: [], owner });
    expect([...(live.unresolved ?? [])].sort()).toEqual(desired.map((o) => `/ConfigMap/${ns.name}/${o.metadata.name}`).sort());
    // when someone creates one of the names between that read and the apply (with Syncline's marks copied on it)
    await core.createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name: 'raced', labels: { ...cm(ns.name, 'raced').metadata.labels, [OWNER_LABEL]: ownerHash(owner) } }, data: { k: 'theirs' } },
    });
    const result = await executePlan(planApply({ desired, inventory: [], live, owner }), { client: counting });
    // then the free names are created with no read at all, and the taken one is read, found not ours, and not written
    expect(actions(result)).toEqual({
      [`/ConfigMap/${ns.name}/a`]: 'created',
      [`/ConfigMap/${ns.name}/b`]: 'created',
      [`/ConfigMap/${ns.name}/raced`]: 'skipped',
    });
    expect(counting.gets).toBe(1);
    const raced = await core.readNamespacedConfigMap({ namespace: ns.name, name: 'raced' });
    expect(raced.data).toEqual({ k: 'theirs' });
    expect(raced.metadata?.managedFields?.map((m) => m.manager)).not.toContain(DEFAULT_FIELD_MANAGER);
    expect(result.inventory.map((e) => e.id).sort()).toEqual([`/ConfigMap/${ns.name}/a`, `/ConfigMap/${ns.name}/b`]);
  });
});

describe('executePlan against the real API server', () => {
  it('creates, then finds everything unchanged without a write, then configures what changed', async () => {
    await using ns = await testNamespace();
    const owner = ownerIn(ns.name);
    const desired = [cm(ns.name, 'a'), secret(ns.name, 's'), deployment(ns.name, 'web')];
    // given a first apply
    const first = await sync(desired, { owner });
    expect(actions(first)).toEqual({
      [`/ConfigMap/${ns.name}/a`]: 'created',
      [`/Secret/${ns.name}/s`]: 'created',
      [`apps/Deployment/${ns.name}/web`]: 'created',
    });
    const before = await core.readNamespacedConfigMap({ name: 'a', namespace: ns.name });

    // when the same set is applied again, then nothing is written
    const counting = instrumented(admin);
    const again = await sync(desired, { owner, inventory: first.inventory, client: counting });
    expect(new Set(again.entries.map((e) => e.action))).toEqual(new Set(['unchanged']));
    expect(counting.writes).toBe(0);
    expect((await core.readNamespacedConfigMap({ name: 'a', namespace: ns.name })).metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);

    // when one object changes, then only it is configured
    const changed = await sync([cm(ns.name, 'a', { k: 'new' }), desired[1] as KubeObject, desired[2] as KubeObject], { owner, inventory: again.inventory });
    expect(actions(changed)[`/ConfigMap/${ns.name}/a`]).toBe('configured');
    expect(changed.entries.filter((e) => e.action === 'unchanged')).toHaveLength(2);
    expect((await core.readNamespacedConfigMap({ name: 'a', namespace: ns.name })).data).toEqual({ k: 'new' });
  });

  it('applies each policy to an object that exists and is not ours; Adopt reports the conflicting field manager', async () => {
    await using ns = await testNamespace();
    const owner = ownerIn(ns.name);
    // given objects someone else applied with their own field manager
    for (const name of ['sync', 'keep', 'adopt', 'adopt-same', 'overwrite']) {
      await admin.apply({ ...cm(ns.name, name, { k: name === 'adopt-same' ? 'v' : 'theirs' }) }, { fieldManager: 'someone', force: false });
    }
    const results: Record<string, ChangeSet> = {};
    for (const [name, policy] of [
      ['sync', 'Sync'],
      ['keep', 'Keep'],
      ['adopt', 'Adopt'],
      ['adopt-same', 'Adopt'],
      ['overwrite', 'Overwrite'],
    ] as const) {
      results[name] = await sync([cm(ns.name, name)], { owner, policy });
    }
    const entry = (name: string) => results[name]?.entries[0];
    expect(entry('sync')).toMatchObject({ action: 'skipped', cause: 'NotOwned', reason: expect.stringContaining('someone') as unknown });
    expect(entry('keep')).toMatchObject({ action: 'skipped', cause: 'Kept' });
    // a field conflict with another manager is the API server's 409, not an ownership conflict
    expect(entry('adopt')).toMatchObject({ action: 'failed', cause: 'FieldConflict', reason: expect.stringMatching(/Conflict.*someone/) as unknown });
    expect(entry('adopt-same')).toMatchObject({ action: 'configured', reason: 'adopted' });
    expect(entry('overwrite')).toMatchObject({ action: 'configured', reason: 'overwritten' });
    // then only the taken-over objects are ours, and the others are untouched
    expect(results['adopt-same']?.inventory.map((e) => e.id)).toEqual([`/ConfigMap/${ns.name}/adopt-same`]);
    expect(results['sync']?.inventory).toEqual([]);
    expect((await core.readNamespacedConfigMap({ name: 'sync', namespace: ns.name })).data).toEqual({ k: 'theirs' });
    expect((await core.readNamespacedConfigMap({ name: 'keep', namespace: ns.name })).data).toEqual({ k: 'theirs' });
    expect((await core.readNamespacedConfigMap({ name: 'overwrite', namespace: ns.name })).data).toEqual({ k: 'v' });
    // and a second sync of another owner never takes ours over
    const rival = await sync([cm(ns.name, 'overwrite')], { owner: ownerIn(ns.name, 'staging'), policy: 'Overwrite' });
    expect(rival.entries[0]).toMatchObject({ action: 'skipped', cause: 'Conflict', reason: `Conflict: the object is owned by ${ns.name}/web/prod` });
  });

  it('reports drift under Report and corrects it with one write under Correct', async () => {
    await using ns = await testNamespace();
    const owner = ownerIn(ns.name);
    const desired = [deployment(ns.name, 'web'), cm(ns.name, 'a')];
    const first = await sync(desired, { owner });
    // given someone edits a field we manage (an update, as kubectl edit does)
    const live = await core.readNamespacedConfigMap({ name: 'a', namespace: ns.name });
    await core.replaceNamespacedConfigMap({ name: 'a', namespace: ns.name, body: { ...live, data: { k: 'edited' } }, fieldManager: 'kubectl-edit' });

    // when drift is Report, then it is listed and left
    const reported = await sync(desired, { owner, inventory: first.inventory, drift: 'Report' });
    expect(reported.entries.find((e) => e.id.endsWith('/a'))).toMatchObject({ action: 'skipped', drift: ['data.k', 'fields edited by kubectl-edit'] });
    expect(reported.inventory).toHaveLength(2);
    expect((await core.readNamespacedConfigMap({ name: 'a', namespace: ns.name })).data).toEqual({ k: 'edited' });

    // when drift is Correct, then exactly one write restores it
    const counting = instrumented(admin);
    const corrected = await sync(desired, { owner, inventory: reported.inventory, drift: 'Correct', client: counting });
    expect(counting.writes).toBe(1);
    expect(corrected.entries.find((e) => e.id.endsWith('/a'))).toMatchObject({
      action: 'configured',
      reason: 'drift corrected: data.k, fields edited by kubectl-edit',
    });
    expect((await core.readNamespacedConfigMap({ name: 'a', namespace: ns.name })).data).toEqual({ k: 'v' });
  });

  it('applies a CRD and its custom resource in one apply, and prunes them in reverse order', async () => {
    await using ns = await testNamespace();
    const owner = ownerIn(ns.name);
    const group = `apply${randomBytes(3).toString('hex')}.syncline.dev`;
    const crd: KubeObject = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `gadgets.${group}` },
      spec: {
        group,
        scope: 'Namespaced',
        names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } } } },
          },
        ],
      },
    };
    const gadget: KubeObject = { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name: 'g', namespace: ns.name }, spec: { size: 3 } };
    try {
      // when the custom resource comes first in the render, then the CRD is still applied and established first
      const first = await sync([gadget, crd], { owner });
      expect(first.entries.map((e) => [e.id, e.action])).toEqual([
        [`apiextensions.k8s.io/CustomResourceDefinition//gadgets.${group}`, 'created'],
        [`${group}/Gadget/${ns.name}/g`, 'created'],
      ]);
      const again = await sync([gadget, crd], { owner, inventory: first.inventory });
      expect(again.entries.map((e) => e.action)).toEqual(['unchanged', 'unchanged']);
      const pruned = await sync([cm(ns.name, 'only')], { owner, inventory: again.inventory });
      expect(pruned.entries.map((e) => [e.id, e.action])).toEqual([
        [`/ConfigMap/${ns.name}/only`, 'created'],
        [`${group}/Gadget/${ns.name}/g`, 'deleted'],
        [`apiextensions.k8s.io/CustomResourceDefinition//gadgets.${group}`, 'deleted'],
      ]);
    } finally {
      await kc
        .makeApiClient(ApiextensionsV1Api)
        .deleteCustomResourceDefinition({ name: `gadgets.${group}` })
        .catch(() => undefined);
    }
  });

  it('prunes what left the render, but never an object marked prune-disabled or now owned by someone else', async () => {
    await using ns = await testNamespace();
    const owner = ownerIn(ns.name);
    const first = await sync([cm(ns.name, 'keep'), cm(ns.name, 'removed'), cm(ns.name, 'disabled'), cm(ns.name, 'taken')], { owner });
    // given one object opted out of pruning and one now marked by another owner
    await core.patchNamespacedConfigMap({
      name: 'disabled',
      namespace: ns.name,
      body: [{ op: 'add', path: `/metadata/annotations/${PRUNE_ANNOTATION.replace('/', '~1')}`, value: 'disabled' }],
    });
    const taken = await core.readNamespacedConfigMap({ name: 'taken', namespace: ns.name });
    await core.replaceNamespacedConfigMap({
      name: 'taken',
      namespace: ns.name,
      body: { ...taken, metadata: { ...taken.metadata, labels: { 'syncline.dev/owner': 'someone-else' }, annotations: { 'syncline.dev/owned-by': 'x/y/z' } } },
    });

    // when the render keeps only one object
    const second = await sync([cm(ns.name, 'keep')], { owner, inventory: first.inventory });
    expect(actions(second)).toEqual({
      [`/ConfigMap/${ns.name}/keep`]: 'unchanged',
      [`/ConfigMap/${ns.name}/removed`]: 'deleted',
      [`/ConfigMap/${ns.name}/disabled`]: 'skipped',
      [`/ConfigMap/${ns.name}/taken`]: 'skipped',
    });
    expect(second.entries.find((e) => e.id.endsWith('/taken'))?.reason).toBe('not pruned: now owned by x/y/z');
    // then only the removed one is gone, and the inventory holds what is ours
    expect(await exists(ns.name, 'removed')).toBe(false);
    expect(await exists(ns.name, 'disabled')).toBe(true);
    expect(await exists(ns.name, 'taken')).toBe(true);
    expect(second.inventory.map((e) => e.id)).toEqual([`/ConfigMap/${ns.name}/keep`]);
  });

  it('keeps an inventory entry whose delete failed, refuses an empty render, and deletes only Namespaces it created', async () => {
    await using ns = await testNamespace();
    const owner = ownerIn(ns.name);
    const created = `apply-ns-${randomBytes(3).toString('hex')}`;
    const first = await sync([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: created } }, cm(ns.name, 'a'), cm(ns.name, 'b')], { owner });
    expect(first.inventory).toContainEqual({ id: `/Namespace//${created}`, created: true });

    // when the delete of a stale object fails, then it stays in the inventory and the object remains
    const failing = await sync([cm(ns.name, 'a')], { owner, inventory: first.inventory, client: instrumented(admin, { failDeletes: true }) });
    expect(failing.entries.find((e) => e.id.endsWith('/b'))).toMatchObject({
      action: 'failed',
      cause: 'ServerError',
      reason: 'InternalError: injected delete failure',
    });
    expect(failing.inventory.map((e) => e.id)).toContain(`/ConfigMap/${ns.name}/b`);
    expect(await exists(ns.name, 'b')).toBe(true);

    // when the render is suddenly empty, then nothing happens unless allowed
    const refused = await sync([], { owner, inventory: failing.inventory });
    expect(refused.blocked).toMatch(/refusing/);
    expect(refused.inventory).toEqual(failing.inventory);
    expect(await exists(ns.name, 'a')).toBe(true);

    // when allowed, then everything goes, including the Namespace we created
    const emptied = await sync([], { owner, inventory: failing.inventory, allowEmpty: true });
    expect(new Set(emptied.entries.map((e) => e.action))).toEqual(new Set(['deleted']));
    expect(emptied.inventory).toEqual([]);
    const ours = await core.readNamespace({ name: created }).catch((error: unknown) => (isNotFound(error) ? undefined : Promise.reject(error as Error)));
    expect(ours === undefined || ours.metadata?.deletionTimestamp !== undefined).toBe(true);

    // and an adopted Namespace (not created by us) is never deleted
    const adopted = await sync([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns.name } }], { owner, policy: 'Adopt' });
    expect(adopted.inventory).toEqual([{ id: `/Namespace//${ns.name}` }]);
    const dropped = await sync([cm(ns.name, 'z')], { owner, inventory: adopted.inventory });
    expect(dropped.entries.find((e) => e.id === `/Namespace//${ns.name}`)).toMatchObject({
      action: 'skipped',
      reason: 'not pruned: a Namespace this sync did not create',
    });
    expect((await core.readNamespace({ name: ns.name })).metadata?.deletionTimestamp).toBeUndefined();
  });

  describe('a Namespace this sync created is deleted only when nothing but its own stale objects is in it', () => {
    const namespaceObject = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    const alive = async (name: string): Promise<boolean> => {
      const found = await core.readNamespace({ name }).catch((error: unknown) => (isNotFound(error) ? undefined : Promise.reject(error as Error)));
      return found !== undefined && found.metadata?.deletionTimestamp === undefined;
    };

    // Each variant: a sync creates a Namespace with one ConfigMap of its own, then something else appears in
    // it, then the sync drops the Namespace from its render (or is deleted: allowEmpty).
    const variants: { name: string; intrude: (namespace: string, home: string) => Promise<string | undefined>; keepConfigMap?: boolean; empty?: boolean }[] = [
      { name: 'nothing else: deleted', intrude: () => Promise.resolve(undefined) },
      { name: 'nothing else, and the sync is emptied (deletion): deleted', intrude: () => Promise.resolve(undefined), empty: true },
      {
        name: "someone's hand-made ConfigMap: kept",
        intrude: async (namespace) => {
          await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'hand-made' }, data: { keep: 'me' } } });
          return `/ConfigMap/${namespace}/hand-made`;
        },
      },
      {
        name: "someone's Secret while the sync is emptied (deletion): kept",
        intrude: async (namespace) => {
          await core.createNamespacedSecret({ namespace, body: { metadata: { name: 'hand-made' }, stringData: { keep: 'me' } } });
          return `/Secret/${namespace}/hand-made`;
        },
        empty: true,
      },
      {
        name: "another sync's object: kept",
        intrude: async (namespace, home) => {
          await sync([cm(namespace, 'theirs')], { owner: { namespace: home, name: 'other', target: 'prod' } });
          return `/ConfigMap/${namespace}/theirs`;
        },
      },
      {
        name: 'another target of the same sync: kept',
        intrude: async (namespace, home) => {
          await sync([cm(namespace, 'sibling')], { owner: { namespace: home, name: 'web', target: 'staging' } });
          return `/ConfigMap/${namespace}/sibling`;
        },
      },
      {
        name: 'a copy of its own ConfigMap carrying every one of its marks (not applied by the sync): kept',
        intrude: async (namespace) => {
          const mine = await core.readNamespacedConfigMap({ name: 'mine', namespace });
          await core.createNamespacedConfigMap({
            namespace,
            body: { metadata: { name: 'copy', labels: mine.metadata?.labels, annotations: mine.metadata?.annotations }, data: mine.data },
          });
          return `/ConfigMap/${namespace}/copy`;
        },
        empty: true,
      },
      { name: 'its own object it still renders: kept', intrude: () => Promise.resolve(undefined), keepConfigMap: true },
    ];

    it.each(variants)('$name', async ({ intrude, keepConfigMap, empty }) => {
      await using home = await testNamespace();
      const owner = ownerIn(home.name);
      const created = `apply-ns-${randomBytes(3).toString('hex')}`;
      const first = await sync([namespaceObject(created), cm(created, 'mine')], { owner });
      expect(first.inventory).toContainEqual({ id: `/Namespace//${created}`, created: true });
      try {
        const foreign = await intrude(created, home.name);

        const next = empty === true ? [] : keepConfigMap === true ? [cm(created, 'mine')] : [cm(home.name, 'elsewhere')];
        const changes = await sync(next, { owner, inventory: first.inventory, allowEmpty: empty === true });
        const entry = changes.entries.find((e) => e.id === `/Namespace//${created}`);
        const expectKept = foreign !== undefined || keepConfigMap === true;
        if (expectKept) {
          expect(entry).toMatchObject({ action: 'skipped', cause: 'Orphaned' });
          expect(entry?.reason).toMatch(/^not pruned: it holds objects that are not this sync's/);
          if (foreign !== undefined) expect(entry?.reason).toContain(foreign);
          expect(await alive(created)).toBe(true);
          // orphaned: it leaves the inventory, so a later sync never deletes it behind anyone's back
          expect(changes.inventory.map((e) => e.id)).not.toContain(`/Namespace//${created}`);
          if (foreign !== undefined) {
            const { group, kind, name } = { group: '', ...parseId(foreign) };
            expect(await admin.get(`${group}/${kind}/${created}/${name}`)).toBeDefined();
          }
        } else {
          expect(entry).toMatchObject({ action: 'deleted' });
          expect(await alive(created)).toBe(false);
        }
      } finally {
        await core.deleteNamespace({ name: created }).catch(() => undefined);
      }
    });
  });

  it('rolls back to an older revision by applying its render and pruning the newer objects', async () => {
    await using ns = await testNamespace();
    const owner = ownerIn(ns.name);
    const renders: Record<string, KubeObject[]> = {
      r1: [cm(ns.name, 'base', { v: '1' })],
      r2: [cm(ns.name, 'base', { v: '2' }), cm(ns.name, 'feature')],
    };
    let history: HistoryEntry[] = [];
    let inventory: Inventory = [];
    for (const revision of ['r1', 'r2']) {
      const desired = renders[revision] ?? [];
      inventory = (await sync(desired, { owner, inventory })).inventory;
      history = recordHistory(history, { revision, appliedAt: new Date().toISOString(), objects: desired.length, digest: digestRendered(desired) }, 10);
    }
    // when rolling back one step
    const target = rollbackTarget(history, { steps: 1 });
    expect(target?.revision).toBe('r1');
    const rolledBack = await sync(renders[target?.revision ?? ''] ?? [], { owner, inventory });
    // then the older content is back and the newer object is pruned
    expect(actions(rolledBack)).toEqual({ [`/ConfigMap/${ns.name}/base`]: 'configured', [`/ConfigMap/${ns.name}/feature`]: 'deleted' });
    expect((await core.readNamespacedConfigMap({ name: 'base', namespace: ns.name })).data).toEqual({ v: '1' });
    expect(await exists(ns.name, 'feature')).toBe(false);
    expect(digestRendered(renders['r1'] ?? [])).toBe(target?.digest);
  });

  it('gives a restricted identity a per-object Forbidden result while the rest applies, and holds back the prune', async () => {
    await using ns = await testNamespace();
    const owner = ownerIn(ns.name);
    // given the restricted user may manage ConfigMaps, and nothing else, in this namespace
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns.name,
      body: { metadata: { name: 'configmaps' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'patch', 'delete'] }] },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns.name,
      body: {
        metadata: { name: 'configmaps' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmaps' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: RESTRICTED_USER }],
      },
    });
    const restricted = await createApplyClient(testKubeConfig('restricted'));
    const stale = await sync([cm(ns.name, 'old')], { owner });
    // RBAC takes effect asynchronously: wait until a LIST is allowed
    for (let i = 0; i < 100; i++) {
      if (
        await restricted.list({ group: '', kind: 'ConfigMap', namespace: ns.name }).then(
          () => true,
          () => false,
        )
      )
        break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    // when it applies a ConfigMap and a Secret
    const changes = await sync([cm(ns.name, 'a'), secret(ns.name, 's')], { owner, inventory: stale.inventory, client: restricted });
    // then the ConfigMap is created and the Secret fails alone, naming the reason
    expect(actions(changes)[`/ConfigMap/${ns.name}/a`]).toBe('created');
    expect(changes.entries.find((e) => e.id === `/Secret/${ns.name}/s`)).toMatchObject({
      action: 'failed',
      cause: 'Forbidden',
      reason: expect.stringMatching(/^Forbidden: .*secrets/) as unknown,
    });
    // and nothing is pruned while an apply failed
    expect(changes.pruned).toBe(false);
    expect(await exists(ns.name, 'old')).toBe(true);
    expect(changes.inventory.map((e) => e.id).sort()).toEqual([`/ConfigMap/${ns.name}/a`, `/ConfigMap/${ns.name}/old`]);
  });

  it('judges health after an apply: written objects read back (a LIST for several of a kind), unchanged ones from the live state, waves gated', async () => {
    await using ns = await testNamespace();
    const owner = ownerIn(ns.name);
    const later = { ...cm(ns.name, 'later'), metadata: { name: 'later', namespace: ns.name, annotations: { 'syncline.dev/apply-wave': '1' } } };
    const desired = [cm(ns.name, 'a'), deployment(ns.name, 'd1'), deployment(ns.name, 'd2'), deployment(ns.name, 'd3'), later];
    // given a gate that holds wave 1 back while wave 0 is not healthy
    let live = await readLive({ client: admin, desired, inventory: [] });
    const gated = await executePlan(planApply({ desired, inventory: [], live, owner }), {
      client: admin,
      waveGate: async ({ wave, entries }) => {
        const health = await readHealth({ client: admin, entries, desired, live });
        return [...health.values()].every((h) => h.status === 'Current') ? undefined : `wave ${wave} is not healthy`;
      },
    });
    // then wave 0 is applied, wave 1 is not, and nothing is pruned
    expect(gated.heldBack).toBe('wave 0 is not healthy');
    expect(gated.entries.find((e) => e.id === `/ConfigMap/${ns.name}/later`)).toMatchObject({
      action: 'skipped',
      cause: 'HeldBack',
      reason: 'not applied yet: wave 0 is not healthy',
    });
    expect(await exists(ns.name, 'later')).toBe(false);
    expect(gated.pruned).toBe(false);
    expect(gated.inventory.map((e) => e.id)).not.toContain(`/ConfigMap/${ns.name}/later`);

    // when health is read for what was written: the Deployments (no controller here) are in progress, the ConfigMap is healthy as applied
    const readBack: string[] = [];
    const observing: ApplyClient = {
      ...admin,
      get: (id, signal) => (readBack.push(id), admin.get(id, signal)),
      list: (scope, signal) => (readBack.push(`${scope.kind} list`), admin.list(scope, signal)),
    };
    const written = await readHealth({ client: observing, entries: gated.entries, desired, live });
    expect(readBack).toEqual(['Deployment list']);
    expect(written.get(`/ConfigMap/${ns.name}/a`)).toMatchObject({ status: 'Current' });
    for (const name of ['d1', 'd2', 'd3']) expect(written.get(`apps/Deployment/${ns.name}/${name}`)).toMatchObject({ status: 'InProgress' });
    expect(written.has(`/ConfigMap/${ns.name}/later`)).toBe(false);

    // when applied again without a gate, everything unchanged is judged from the LIST the plan read
    live = await readLive({ client: admin, desired, inventory: gated.inventory });
    const full = await executePlan(planApply({ desired, inventory: gated.inventory, live, owner }), { client: admin });
    expect(actions(full)[`/ConfigMap/${ns.name}/later`]).toBe('created');
    const counting = instrumented(admin);
    const reads: string[] = [];
    const watched: ApplyClient = {
      ...counting,
      get: (id, signal) => (reads.push(id), counting.get(id, signal)),
      list: (scope, signal) => (reads.push(JSON.stringify(scope)), counting.list(scope, signal)),
    };
    const unchanged = full.entries.filter((e) => e.action === 'unchanged');
    await readHealth({ client: watched, entries: unchanged, desired, live });
    expect(reads).toEqual([]);
  });
});

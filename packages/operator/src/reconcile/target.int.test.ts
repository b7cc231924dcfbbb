// applyTarget's no-op shortcut against the real control plane: a resync that would change nothing makes no
// request once a clean no-op was recorded and the drift watch holds the versions it read; any edit, delete
// or watch outage brings the full apply (and its correction) back.
import { Informer, WatchBudget, objectKey, createKubeRest } from '@syncline/kube';
import { CoreV1Api } from '@kubernetes/client-node';
import { OWNER_LABEL, createApplyClient, objectId, ownerHash, type ApplyClient, type KubeObject, type Owner } from '@syncline/apply';
import { testKubeConfig, testNamespace } from '@syncline/test-support/kube';
import { describe, expect, it } from 'vitest';
import { createDriftWatches } from '../controller/drift-watches.ts';
import { applyTarget, type FirstApply, type TargetApplyInput, type TargetNoop } from './target.ts';

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const rest = await createKubeRest(kc);
const admin = await createApplyClient(kc);

/** Every call the apply engine makes, in all and by method. */
function counting(inner: ApplyClient): ApplyClient & { calls: () => number; reads: () => number; lists: (string | undefined)[] } {
  const lists: (string | undefined)[] = [];
  let calls = 0;
  let reads = 0;
  return {
    ...inner,
    list: (...args) => (calls++, reads++, lists.push(args[0].labelSelector), inner.list(...args)),
    get: (...args) => (calls++, reads++, inner.get(...args)),
    apply: (...args) => (calls++, inner.apply(...args)),
    delete: (...args) => (calls++, inner.delete(...args)),
    calls: () => calls,
    reads: () => reads,
    lists,
  };
}

async function eventually<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('applyTarget skips a no-op resync without requests', () => {
  it('skips while the watch holds the recorded versions, and applies again after an edit, a delete or a watch outage', async () => {
    await using ns = await testNamespace({ prefix: 'noop' });
    const namespace = ns.name;
    const desired: KubeObject[] = ['a', 'b'].map((name) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { k: name } }));
    const watch = new Informer({ rest, path: `/api/v1/namespaces/${namespace}/configmaps`, labelSelector: OWNER_LABEL, onEvent: () => undefined });
    watch.start();
    let watchUsable = true;
    try {
      expect(await watch.waitSynced(60_000)).toBe(true);
      const records = new Map<string, TargetNoop>();
      const client = counting(admin);
      let inventory: readonly string[] | undefined;
      const sync = async (): Promise<ReturnType<typeof applyTarget>> => {
        const input: TargetApplyInput = {
          client,
          target: { name: 'main', namespace },
          desired,
          inventory,
          owner: { namespace, name: 'noop', target: 'main' },
          now: new Date().toISOString(),
          syncKey: `${namespace}/noop`,
          health: { wait: false },
          noop: {
            records,
            key: `${namespace}/noop/main@`,
            watched: (id) => {
              if (!watchUsable || !watch.synced) return undefined;
              const [, , objectNamespace = '', name = ''] = id.split('/');
              return watch.get(`${objectNamespace}/${name}`)?.metadata.resourceVersion ?? null;
            },
          },
        };
        const outcome = await applyTarget(input);
        inventory = outcome.inventory.entries;
        return outcome;
      };
      const versionsSeen = (): boolean => desired.every((o) => watch.get(objectKey(o)) !== undefined);

      // First apply creates; the second (a full no-op: it lists) records the versions; the third is free.
      expect((await sync()).counts.created).toBe(2);
      await eventually(() => (versionsSeen() ? true : undefined), 'the watch to see both ConfigMaps');
      await sync();
      expect(records.size).toBe(1);
      const before = client.calls();
      const skipped = await sync();
      expect(client.calls()).toBe(before);
      expect(skipped.status.phase).toBe('Synced');
      expect(skipped.changed).toBe(false);
      expect(skipped.status.objects).toBe(2);
      // The health judged at the recorded no-op stands: the same versions are the same objects.
      expect(skipped.status.health).toEqual((await sync()).status.health);
      expect(skipped.health?.counts).toBeDefined();

      // Someone edits `a`: once the watch has the new version, the next resync applies and corrects it.
      const edited = await core.patchNamespacedConfigMap({ name: 'a', namespace, body: [{ op: 'replace', path: '/data/k', value: 'edited' }] });
      await eventually(
        () => (watch.get(`${namespace}/a`)?.metadata.resourceVersion === edited.metadata?.resourceVersion ? true : undefined),
        'the watch to see the edit',
      );
      const corrected = await sync();
      expect(client.calls()).toBeGreaterThan(before);
      expect(corrected.counts.configured).toBe(1);
      expect((await core.readNamespacedConfigMap({ name: 'a', namespace })).data).toEqual({ k: 'a' });

      // Someone deletes `b`: recreated by the next full apply.
      await eventually(async () => {
        await sync();
        return records.size === 1 ? true : undefined;
      }, 'a clean no-op to be recorded again');
      await core.deleteNamespacedConfigMap({ name: 'b', namespace });
      await eventually(() => (watch.get(`${namespace}/b`) === undefined ? true : undefined), 'the watch to see the delete');
      expect((await sync()).counts.created).toBe(1);
      await core.readNamespacedConfigMap({ name: 'b', namespace });

      // A watch that cannot vouch (down or not synced) means a full apply, never a skip.
      await eventually(() => (versionsSeen() ? true : undefined), 'the watch to see b again');
      await sync();
      watchUsable = false;
      const beforeOutage = client.calls();
      await sync();
      expect(client.calls()).toBeGreaterThan(beforeOutage);
      watchUsable = true;

      // Other inputs (here the desired data) never reuse a record made for different inputs.
      await eventually(async () => {
        await sync();
        return records.size === 1 ? true : undefined;
      }, 'a clean no-op to be recorded again');
      desired[0] = { ...desired[0], data: { k: 'changed' } } as KubeObject;
      expect((await sync()).counts.configured).toBe(1);
      expect((await core.readNamespacedConfigMap({ name: 'a', namespace })).data).toEqual({ k: 'changed' });
    } finally {
      await watch.stop();
    }
  });

  it('applies new inputs without reading what the watch proves unchanged, and reads whatever it cannot prove', async () => {
    await using ns = await testNamespace({ prefix: 'proven' });
    const namespace = ns.name;
    await using other = await testNamespace({ prefix: 'proven-b' });
    const cmIn = (name: string, value: string, where = namespace): KubeObject => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: where },
      data: { k: value },
    });
    const watch = new Informer({ rest, path: '/api/v1/configmaps', labelSelector: OWNER_LABEL, onEvent: () => undefined });
    watch.start();
    try {
      expect(await watch.waitSynced(60_000)).toBe(true);
      const records = new Map<string, TargetNoop>();
      const client = counting(admin);
      let inventory: readonly string[] | undefined;
      const sync = async (desired: KubeObject[]): Promise<Awaited<ReturnType<typeof applyTarget>>> => {
        const outcome = await applyTarget({
          client,
          target: { name: 'main' },
          desired,
          inventory,
          owner: { namespace, name: 'proven', target: 'main' },
          now: new Date().toISOString(),
          syncKey: `${namespace}/proven`,
          noop: {
            records,
            key: `${namespace}/proven/main@`,
            watched: (id) => {
              if (!watch.synced) return undefined;
              const [, , objectNamespace = '', name = ''] = id.split('/');
              return watch.get(`${objectNamespace}/${name}`)?.metadata.resourceVersion ?? null;
            },
          },
        });
        inventory = outcome.inventory.entries;
        return outcome;
      };
      const seen = (objects: KubeObject[]): Promise<true> =>
        eventually(() => (objects.every((o) => watch.get(objectKey(o)) !== undefined) ? true : undefined), 'the watch to see the objects');
      const recorded = async (desired: KubeObject[]): Promise<void> => {
        await seen(desired);
        await eventually(async () => ((await sync(desired)).changed === false && records.size === 1 ? true : undefined), 'a clean no-op to be recorded');
      };
      const one = [cmIn('a', '1'), cmIn('b', '1'), cmIn('c', '1', other.name)];
      expect((await sync(one)).counts.created).toBe(3);
      // What the apply wrote, its responses prove: the next run reads nothing (once the watch has those versions).
      await seen(one);
      let reads = client.reads();
      expect((await sync(one)).changed).toBe(false);
      expect(client.reads() - reads).toBe(0);

      // A new commit changes a and c: two applies, not one read.
      const two = [cmIn('a', '2'), cmIn('b', '1'), cmIn('c', '2', other.name)];
      const versionOf = (o: KubeObject): string | undefined => watch.get(objectKey(o))?.metadata.resourceVersion;
      const before = two.map(versionOf);
      reads = client.reads();
      const applied = await sync(two);
      expect(client.reads() - reads).toBe(0);
      expect(applied.counts).toMatchObject({ configured: 2, failed: 0 });
      expect((await core.readNamespacedConfigMap({ name: 'c', namespace: other.name })).data).toEqual({ k: '2' });
      // and the resync after it is skipped, without a request, once the watch has the written versions
      await eventually(
        () => (versionOf(two[0] as KubeObject) !== before[0] && versionOf(two[2] as KubeObject) !== before[2] ? true : undefined),
        'the watch to see the commit',
      );
      const calls = client.calls();
      expect((await sync(two)).changed).toBe(false);
      expect(client.calls()).toBe(calls);

      // An object edited by someone: its namespace is read (and the edit corrected with the new commit); the
      // other namespace, still proven, is not.
      await recorded(two);
      const edited = await core.patchNamespacedConfigMap({ name: 'b', namespace, body: [{ op: 'replace', path: '/data/k', value: 'edited' }] });
      await eventually(
        () => (watch.get(`${namespace}/b`)?.metadata.resourceVersion === edited.metadata?.resourceVersion ? true : undefined),
        'the watch to see the edit',
      );
      const three = [cmIn('a', '3'), cmIn('b', '1'), cmIn('c', '3', other.name)];
      reads = client.reads();
      const corrected = await sync(three);
      expect(client.reads() - reads).toBe(1); // the owner's LIST of the edited namespace
      expect(corrected.counts).toMatchObject({ configured: 3, failed: 0 });
      expect((await core.readNamespacedConfigMap({ name: 'b', namespace })).data).toEqual({ k: '1' });

      // An object dropped from the render is read before it is pruned (a proof of the others changes nothing).
      await recorded(three);
      reads = client.reads();
      const pruned = await sync([cmIn('a', '4'), cmIn('c', '4', other.name)]);
      expect(client.reads() - reads).toBe(1);
      expect(pruned.counts).toMatchObject({ configured: 2, deleted: 1, failed: 0 });
      await expect(core.readNamespacedConfigMap({ name: 'b', namespace })).rejects.toThrow();
    } finally {
      await watch.stop();
    }
  });
});

describe("a target's first apply in a process: the owner's LIST answered by the drift watch", () => {
  /** The drift watches of one namespace, as a namespace-scoped operator runs them, applying as the admin. */
  const driftWatchesIn = (namespace: string): ReturnType<typeof createDriftWatches> =>
    createDriftWatches({
      rest,
      budget: new WatchBudget(50),
      logger: { debug: () => undefined, warn: () => undefined } as never,
      watchNamespace: namespace,
      applyClient: () => Promise.resolve(admin),
      onDrift: () => undefined,
    });

  it("sends no LIST where the watch vouches the owner has nothing; lists where it holds the owner's objects (a lost status write is still pruned), and on every later apply", async () => {
    await using ns = await testNamespace({ prefix: 'first' });
    const namespace = ns.name;
    const cmIn = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { k: name } });
    const drift = driftWatchesIn(namespace);
    try {
      const client = counting(admin);
      const records = new Map<string, TargetNoop>();
      // A process: the targets it has applied (none yet) and the drift watches' answer.
      let firstApply: FirstApply = { applied: new Set(), ownerSeen: (scope, label) => drift.ownerSeen(scope, label) };
      const sync = async (
        name: string,
        desired: KubeObject[],
        inventory: readonly string[] | undefined,
        options: { noop?: boolean } = {},
      ): Promise<Awaited<ReturnType<typeof applyTarget>>> => {
        const owner: Owner = { namespace, name, target: 'main' };
        const key = `${namespace}/${name}/main@`;
        return applyTarget({
          client,
          target: { name: 'main', namespace },
          desired,
          inventory,
          owner,
          now: new Date().toISOString(),
          syncKey: `${namespace}/${name}`,
          ...(options.noop === false ? {} : { noop: { records, key, firstApply, watched: (id) => drift.version(id) } }),
        });
      };
      await drift.watch([objectId(cmIn('a'))]);

      // Given a new sync in a namespace the ConfigMap watch covers: its first apply creates without a single read.
      const created = await sync('fresh', [cmIn('a'), cmIn('b')], undefined);
      expect(created.counts).toMatchObject({ created: 2, failed: 0 });
      expect(client.reads()).toBe(0);
      // Its next apply in this process lists as before (its own writes may not have reached the watch yet).
      const more = await sync('fresh', [cmIn('a'), cmIn('b'), cmIn('c')], created.inventory.entries);
      expect(more.counts).toMatchObject({ created: 1, failed: 0 });
      expect(client.lists).toEqual([`${OWNER_LABEL}=${ownerHash({ namespace, name: 'fresh', target: 'main' })}`]);

      // Given another sync whose last status write was lost (an earlier process created `lost`, its inventory never recorded it) ...
      const recorded = (await sync('lossy', [cmIn('x')], undefined, { noop: false })).inventory.entries;
      expect((await sync('lossy', [cmIn('x'), cmIn('lost')], recorded, { noop: false })).counts.created).toBe(1);
      // ... when a new process applies it for the first time, the watch holds its objects: it lists, and prunes `lost`.
      firstApply = { applied: new Set(), ownerSeen: (scope, label) => drift.ownerSeen(scope, label) };
      await eventually(
        () =>
          drift.ownerSeen({ group: '', kind: 'ConfigMap', namespace }, ownerHash({ namespace, name: 'lossy', target: 'main' })) === true ? true : undefined,
        "the watch to see the lossy sync's objects",
      );
      client.lists.length = 0;
      const pruned = await sync('lossy', [cmIn('x')], recorded);
      expect(client.lists).toEqual([`${OWNER_LABEL}=${ownerHash({ namespace, name: 'lossy', target: 'main' })}`]);
      expect(pruned.counts).toMatchObject({ deleted: 1, failed: 0 });
      await expect(core.readNamespacedConfigMap({ name: 'lost', namespace })).rejects.toThrow();
      await core.readNamespacedConfigMap({ name: 'x', namespace });
    } finally {
      await drift.stop();
    }
  });

  it('starts the drift watch of its kinds before it reads: new targets applied at once wait for the one watch to list and send no LIST', async () => {
    await using ns = await testNamespace({ prefix: 'first-join' });
    const namespace = ns.name;
    const cmIn = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { k: name } });
    const drift = driftWatchesIn(namespace);
    try {
      const client = counting(admin);
      const records = new Map<string, TargetNoop>();
      // No watch of ConfigMaps yet: the first target starts it, the others join it while it lists.
      let started = 0;
      const firstApply: FirstApply = {
        applied: new Set(),
        ownerSeen: (scope, label) => drift.ownerSeen(scope, label),
        watch: (ids) => {
          started++;
          return drift.watch(ids).catch(() => undefined);
        },
      };
      const sync = (
        name: string,
        options: { inventory?: readonly string[]; process?: FirstApply; objects?: readonly string[] } = {},
      ): ReturnType<typeof applyTarget> => {
        const { inventory, process = firstApply, objects = ['a', 'b'] } = options;
        return applyTarget({
          client,
          target: { name: 'main', namespace },
          desired: objects.map((o) => cmIn(`${name}-${o}`)),
          inventory,
          owner: { namespace, name, target: 'main' },
          now: new Date().toISOString(),
          syncKey: `${namespace}/${name}`,
          noop: { records, key: `${namespace}/${name}/main@`, firstApply: process, watched: (id) => drift.version(id) },
        });
      };
      const outcomes = await Promise.all(['one', 'two', 'three'].map((name) => sync(name)));
      for (const outcome of outcomes) expect(outcome.counts).toMatchObject({ created: 2, failed: 0 });
      expect(started).toBe(3);
      expect(client.reads()).toBe(0);
      // A later apply of the same target in this process (a new object) lists as before (its own writes may not be in the watch yet).
      const again = await sync('one', { inventory: outcomes[0]?.inventory.entries, objects: ['a', 'b', 'c'] });
      expect(again.counts).toMatchObject({ created: 1, failed: 0 });
      const selectorOf = (name: string): string => `${OWNER_LABEL}=${ownerHash({ namespace, name, target: 'main' })}`;
      expect(client.lists).toEqual([selectorOf('one')]);
      // A restarted process (no records, nothing applied yet): a target whose inventory names the scope has objects
      // there, so it lists (their managedFields are the proof) without waiting for a watch first.
      client.lists.length = 0;
      records.clear();
      const restarted = await sync('two', { inventory: outcomes[1]?.inventory.entries, process: { ...firstApply, applied: new Set() } });
      expect(restarted.counts).toMatchObject({ failed: 0 });
      expect(started).toBe(3);
      expect(client.lists).toEqual([selectorOf('two')]);
    } finally {
      await drift.stop();
    }
  });
});

// The drift watches against the real control plane, through a proxy that freezes watch streams without closing
// them (a NAT or firewall that dropped the connection): a watch not heard from within WATCH_FRESH_MS vouches for
// nothing. `version` then answers "not covered" (the target reads instead), says why, and restarts the watch, whose
// new stream brings the change the frozen one hid.
import { readFile, writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { OWNED_BY_ANNOTATION, OWNER_LABEL, createApplyClient, encodeInventory, objectId } from '@syncline/apply';
import { WATCH_FRESH_MS, WatchBudget, createKubeRest } from '@syncline/kube';
import { startWatchHangProxy, type WatchHangProxy } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDriftWatches } from './drift-watches.ts';

/** A kubeconfig for the test control plane whose server is the hang proxy (its serving certificate names 127.0.0.1 on any port). */
async function proxiedKubeConfig(proxy: WatchHangProxy, dir: string): Promise<KubeConfig> {
  const text = await readFile(testKubeconfigPath(), 'utf8');
  const server = /server: (https:\/\/127\.0\.0\.1:\d+)/.exec(text)?.[1];
  if (server === undefined) throw new Error('the test kubeconfig names no loopback server');
  const path = join(dir, 'kubeconfig');
  await writeFile(path, text.replace(`server: ${server}`, `server: https://127.0.0.1:${proxy.port}`), { mode: 0o600 });
  const config = new KubeConfig();
  config.loadFromFile(path);
  return config;
}

const until = async (condition: () => boolean, timeoutMs: number): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
};

describe('drift watches: a silent watch vouches for nothing', () => {
  let proxy: WatchHangProxy;
  let dir: string;

  beforeAll(async () => {
    const server = /server: https:\/\/(127\.0\.0\.1):(\d+)/.exec(await readFile(testKubeconfigPath(), 'utf8'));
    proxy = await startWatchHangProxy({ dataDir: dirname(testKubeconfigPath()), upstream: { host: server?.[1] ?? '127.0.0.1', port: Number(server?.[2]) } });
    dir = await mkdtemp(join(tmpdir(), 'syncline-drift-'));
  });
  afterAll(async () => {
    await proxy.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers from a watch heard from; a frozen one past the window is read instead, restarted, and brings the hidden edit', async () => {
    await using ns = await testNamespace({ prefix: 'drift-fresh' });
    const config = await proxiedKubeConfig(proxy, dir);
    const rest = await createKubeRest(config);
    const client = await createApplyClient(config);
    // The clock the freshness is judged by: moved forward to be past the window without waiting it out.
    let skew = 0;
    const drifted: string[] = [];
    const warned: string[] = [];
    const drift = createDriftWatches({
      rest,
      budget: new WatchBudget(50),
      logger: { debug: () => undefined, warn: (_fields: unknown, message?: string) => void warned.push(String(message)) } as never,
      watchNamespace: ns.name,
      applyClient: () => Promise.resolve(client),
      onDrift: (owner) => drifted.push(owner),
      now: () => Date.now() + skew,
    });
    try {
      // Given: a managed ConfigMap, and its drift watch listed.
      const configMap = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'app', namespace: ns.name, labels: { [OWNER_LABEL]: 'x' }, annotations: { [OWNED_BY_ANNOTATION]: 'me' } },
        data: { a: '1' },
      };
      const path = `/api/v1/namespaces/${ns.name}/configmaps`;
      const created = await rest.request<{ metadata: { resourceVersion: string } }>({ method: 'POST', path, body: configMap });
      const id = objectId(configMap);
      await drift.watch([id]);
      expect(drift.version(id)).toBe(created.metadata.resourceVersion);

      // When: the watch stream (open once the list is in) freezes, and someone edits the object.
      expect(await until(() => proxy.openWatches() > 0, 30_000)).toBe(true);
      expect(proxy.hangOpenWatches()).toBe(1);
      // (as kubectl would: this client's own user agent is syncline's, and an edit whose managedFields entry is
      // syncline's, a second after its create, is the operator's own write, not drift)
      const edited = await rest.request<{ metadata: { resourceVersion: string } }>({
        method: 'PATCH',
        path: `${path}/app`,
        query: { fieldManager: 'kubectl-edit' },
        contentType: 'application/merge-patch+json',
        body: { data: { a: 'by hand' } },
      });
      await new Promise((resolve) => setTimeout(resolve, 1_500));

      // Then: within the window the watch still vouches for the old version (this is what the window allows) ...
      expect(drifted).toEqual([]);
      expect(drift.version(id)).toBe(created.metadata.resourceVersion);

      // ... past it, it vouches for nothing: the caller reads instead and is told why, and the watch restarts.
      skew = WATCH_FRESH_MS + 1_000;
      const why: string[] = [];
      expect(drift.version(id, undefined, (reason) => why.push(reason))).toBeUndefined();
      expect(why).toEqual([`the drift watch of ConfigMap was not heard from within ${WATCH_FRESH_MS / 1000}s (restarted); read instead`]);
      expect(warned).toEqual(['drift watch silent past the bookmark period; restarted, its targets read instead']);

      // The new stream brings the edit the frozen one hid: the owner is woken, and the cache knows the new version.
      expect(await until(() => drifted.includes('me'), 30_000)).toBe(true);
      skew = 0;
      expect(drift.version(id)).toBe(edited.metadata.resourceVersion);
    } finally {
      await drift.stop();
    }
  });
});

describe("drift watches: whether a scope holds an owner's objects", () => {
  it("answers from a listed, fresh watch of the scope's kind, and vouches for nothing it does not cover or has not heard from", async () => {
    await using ns = await testNamespace({ prefix: 'drift-owner' });
    const config = new KubeConfig();
    config.loadFromFile(testKubeconfigPath());
    const rest = await createKubeRest(config);
    const client = await createApplyClient(config);
    let skew = 0;
    const drift = createDriftWatches({
      rest,
      budget: new WatchBudget(50),
      logger: { debug: () => undefined, warn: () => undefined } as never,
      watchNamespace: ns.name,
      applyClient: () => Promise.resolve(client),
      onDrift: () => undefined,
      now: () => Date.now() + skew,
    });
    try {
      const scope = { group: '', kind: 'ConfigMap', namespace: ns.name };
      const configMap = (name: string, owner: string) => ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: ns.name, labels: { [OWNER_LABEL]: owner }, annotations: { [OWNED_BY_ANNOTATION]: owner } },
        data: { a: '1' },
      });
      // Given no watch of the kind yet: nothing is vouched for.
      expect(drift.ownerSeen(scope, 'mine')).toBeUndefined();
      // When the kind's watch is listed in an empty namespace: no owner has anything there.
      await drift.watch([objectId(configMap('app', 'mine'))]);
      expect(drift.ownerSeen(scope, 'mine')).toBe(false);
      // When another owner's object arrives, then that owner has something there and this one still nothing.
      await rest.request({ method: 'POST', path: `/api/v1/namespaces/${ns.name}/configmaps`, body: configMap('theirs', 'theirs') });
      expect(await until(() => drift.ownerSeen(scope, 'theirs') === true, 30_000)).toBe(true);
      expect(drift.ownerSeen(scope, 'mine')).toBe(false);
      // An object of the owner, its label alone (the mark an owner's LIST selects by), is seen.
      await rest.request({
        method: 'POST',
        path: `/api/v1/namespaces/${ns.name}/configmaps`,
        body: { ...configMap('app', 'mine'), metadata: { name: 'app', namespace: ns.name, labels: { [OWNER_LABEL]: 'mine' } } },
      });
      expect(await until(() => drift.ownerSeen(scope, 'mine') === true, 30_000)).toBe(true);
      // Its label removed, then the other owner's object deleted: neither has anything there any more.
      await rest.request({
        method: 'PATCH',
        path: `/api/v1/namespaces/${ns.name}/configmaps/app`,
        contentType: 'application/merge-patch+json',
        body: { metadata: { labels: { [OWNER_LABEL]: null } } },
      });
      await rest.request({ method: 'DELETE', path: `/api/v1/namespaces/${ns.name}/configmaps/theirs` });
      expect(await until(() => drift.ownerSeen(scope, 'mine') === false && drift.ownerSeen(scope, 'theirs') === false, 30_000)).toBe(true);
      // A kind with no watch, and a watch not heard from within the window, vouch for nothing.
      expect(drift.ownerSeen({ ...scope, kind: 'Secret' }, 'mine')).toBeUndefined();
      skew = WATCH_FRESH_MS + 1_000;
      expect(drift.ownerSeen(scope, 'theirs')).toBeUndefined();
    } finally {
      await drift.stop();
    }
  });
});

describe("drift watches: a sync's inventory watched after each reconcile", () => {
  it('does nothing again for the same inventory while its watches stay, and watches again once one stopped, the inventory changed or a kind was not watched', async () => {
    await using home = await testNamespace({ prefix: 'drift-inv' });
    await using other = await testNamespace({ prefix: 'drift-inv-app' });
    const config = new KubeConfig();
    config.loadFromFile(testKubeconfigPath());
    const rest = await createKubeRest(config);
    const client = await createApplyClient(config);
    // Each call that does the work asks for the apply client (its discovery) first.
    let asked = 0;
    const drift = createDriftWatches({
      rest,
      budget: new WatchBudget(50),
      logger: { debug: () => undefined, warn: () => undefined } as never,
      // a namespace-scoped operator: the application's namespace gets a watch of its own, which stops when no inventory needs it
      watchNamespace: home.name,
      applyClient: () => {
        asked++;
        return Promise.resolve(client);
      },
      onDrift: () => undefined,
    });
    try {
      const id = `/ConfigMap/${other.name}/app`;
      const inventory = [{ target: 'main', entries: encodeInventory([{ id }]) }];
      // Given the inventory watched once: its kind's watch in that namespace is listed.
      await drift.watchInventory('a/sync', inventory);
      expect(asked).toBe(1);
      expect(drift.version(id)).toBeNull();
      // When the same inventory comes after the next reconciles, then nothing is done.
      await drift.watchInventory('a/sync', inventory);
      await drift.watchInventory('a/sync', inventory);
      expect(asked).toBe(1);
      // An inventory read anew (a status write) is looked at once, even with the same entries.
      const again = [{ target: 'main', entries: encodeInventory([{ id }]) }];
      await drift.watchInventory('a/sync', again);
      await drift.watchInventory('a/sync', again);
      expect(asked).toBe(2);
      // When the watch stopped (its last user left), then the next call watches again, and for every user.
      await drift.watchInventory('b/sync', inventory);
      expect(asked).toBe(3);
      drift.settle('a/sync', again);
      drift.release('a/sync');
      expect(drift.version(id)).toBeUndefined();
      await drift.watchInventory('b/sync', inventory);
      expect(asked).toBe(4);
      expect(drift.version(id)).toBeNull();
      await drift.watchInventory('b/sync', inventory);
      expect(asked).toBe(4);
      // A kind discovery does not know yet is not watched: every call tries again.
      const unknown = [{ target: 'main', entries: encodeInventory([{ id: `example.com/Widget/${other.name}/w` }]) }];
      await drift.watchInventory('c/sync', unknown);
      await drift.watchInventory('c/sync', unknown);
      expect(asked).toBe(6);
    } finally {
      await drift.stop();
    }
  });
});

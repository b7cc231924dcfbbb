// The ManifestSync reconciler in process, against the real control plane, while the namespaces a selector picks
// are not known: the operator has just started (its Namespace cache has not listed yet), or it may not list
// Namespaces at all. Copies in namespaces the selector picked before are neither deleted nor forgotten; a named
// namespace is still written; the status says why the selector waits.
import { CoreV1Api } from '@kubernetes/client-node';
import { connectionFromKubeConfig, createKubeRest, type EventRecorder, type KubeRest } from '@syncline/kube';
import { testKubeConfig, testNamespace } from '@syncline/test-support/kube';
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ManifestSync } from '@syncline/api';
import { installCrds } from '@syncline/runtime';
import { createApplyClients } from '../cluster/identity.ts';
import { createMetrics } from '../metrics.ts';
import { mirrorKeys } from '../mirror/labels.ts';
import { mirrorNamespaces, namespaceProjection } from '../mirror/targets.ts';
import { DEFAULT_INTERVAL_BOUNDS } from './configsync.ts';
import { createManifestSyncReconciler } from './manifestsync.ts';

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
let rest: KubeRest;
beforeAll(async () => {
  rest = await createKubeRest(await connectionFromKubeConfig(kc));
  await installCrds(rest, { fieldManager: 'syncline-tests' });
}, 120_000);

const msPath = (namespace: string, name: string): string => `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/manifestsyncs/${name}`;
const secretUid = async (namespace: string): Promise<string | undefined> =>
  (await core.readNamespacedSecret({ name: 'db', namespace }).catch(() => undefined))?.metadata?.uid;

/**
 * The reconciler as the operator builds it, reading its ManifestSync fresh; `namespaces` is what the Namespace
 * cache holds. Writing outside its own namespace needs trust: `trusted` is the ManifestSync's namespace.
 */
async function reconcilerFor(trusted: string, namespaces: { list: () => ReturnType<typeof mirrorNamespaces> | undefined; listing: () => boolean }) {
  const connection = await connectionFromKubeConfig(kc);
  const clock = { now: () => new Date() };
  const recorder: EventRecorder = { record: () => Promise.resolve() };
  const cache = new Map<string, ManifestSync>();
  const reconcile = createManifestSyncReconciler({
    rest,
    applyClient: createApplyClients({ connection, rest, clock }),
    clock,
    logger: pino({ level: 'silent' }),
    metrics: createMetrics(),
    events: recorder,
    get: (key) => cache.get(key),
    namespaces: namespaces.list,
    namespacesListing: namespaces.listing,
    intervalBounds: DEFAULT_INTERVAL_BOUNDS,
    mirrorKeys: mirrorKeys(),
    trusted: new Set([trusted]),
  });
  return async (namespace: string, name: string) => {
    cache.set(`${namespace}/${name}`, await rest.request<ManifestSync>({ method: 'GET', path: msPath(namespace, name) }));
    const result = await reconcile(`${namespace}/${name}`);
    return { result, object: await rest.request<ManifestSync>({ method: 'GET', path: msPath(namespace, name) }) };
  };
}

describe('a ManifestSync while the namespaces its selector picks are unknown', () => {
  it('keeps the copies it made there (same uid) and its status lines, still writes a named namespace, and says why', async () => {
    await using home = await testNamespace({ prefix: 'ms-unknown' });
    await using named = await testNamespace({ prefix: 'ms-unknown-named' });
    await using picked = await testNamespace({ prefix: 'ms-unknown-sel', labels: { [`pick-${home.name}`]: 'yes' } });
    await core.createNamespacedSecret({ namespace: home.name, body: { metadata: { name: 'db' }, stringData: { password: 'first' } } });
    await rest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${home.name}/manifestsyncs`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'ManifestSync',
        metadata: { name: 'db' },
        spec: {
          sourceRef: { apiVersion: 'v1', kind: 'Secret', name: 'db' },
          targets: [{ namespace: named.name }, { namespaceSelector: { matchLabels: { [`pick-${home.name}`]: 'yes' } } }],
        },
      },
    });
    const known = mirrorNamespaces(
      (await rest.request<{ items: Parameters<typeof namespaceProjection>[0][] }>({ method: 'GET', path: '/api/v1/namespaces' })).items.map(
        namespaceProjection,
      ),
    );

    // The Namespace cache listed: both copies are written (the finalizer first, then the sync, in one run).
    const full = await reconcilerFor(home.name, { list: () => known, listing: () => false });
    const first = (await full(home.name, 'db')).object;
    expect(first.metadata.finalizers).toContain('syncline.dev/finalizer');
    expect(first.status?.targets?.map((t) => t.name).sort()).toEqual([named.name, picked.name].sort());
    const uid = await secretUid(picked.name);
    expect(uid).toBeDefined();

    // Just started: the cache is still listing. Nothing is written, and the sync comes back in a moment.
    const starting = await reconcilerFor(home.name, { list: () => undefined, listing: () => true });
    const waited = await starting(home.name, 'db');
    expect(waited.result).toEqual({ kind: 'wait', requeueAfterMs: 1000 });
    expect(waited.object.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
    expect(await secretUid(picked.name)).toBe(uid);

    // The operator may not list Namespaces: the selected copy stays (same object), its line and inventory too;
    // the named namespace is written as before (a source change reaches it); the status says why.
    await core.patchNamespacedSecret({
      name: 'db',
      namespace: home.name,
      body: [{ op: 'replace', path: '/data/password', value: Buffer.from('second').toString('base64') }],
    });
    const blind = await reconcilerFor(home.name, { list: () => undefined, listing: () => false });
    const after = (await blind(home.name, 'db')).object;
    expect(await secretUid(picked.name)).toBe(uid);
    expect(after.status?.targets?.map((t) => t.name).sort()).toEqual([named.name, picked.name].sort());
    expect(after.status?.inventory?.map((i) => i.target).sort()).toEqual([named.name, picked.name].sort());
    const copy = await core.readNamespacedSecret({ name: 'db', namespace: named.name });
    expect(Buffer.from(copy.data?.['password'] ?? '', 'base64').toString()).toBe('second');
    const ready = after.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready?.status).toBe('False');
    expect(ready?.message).toContain('cannot list namespaces');
  }, 120_000);
});

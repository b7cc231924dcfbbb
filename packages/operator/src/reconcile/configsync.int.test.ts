// The ConfigSync reconciler in process, against the real control plane and the real Git test server: what a run
// applies, and what it tells the work queue from the causes of its findings (never their words): an object that
// someone else holds, or a ServiceAccount without rights, waits for a person (the refresh interval); an API
// server that cannot be reached is retried with backoff.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { ApiError, decodeInventory, type ApplyClient } from '@syncline/apply';
import { connectionFromKubeConfig, createKubeRest, type EventRecorder, type KubeRest } from '@syncline/kube';
import { TemplateCache } from '@syncline/render';
import { createGitSource } from '@syncline/source-git';
import { startGitServer, type GitServer } from '@syncline/test-support';
import { testKubeConfig, testNamespace } from '@syncline/test-support/kube';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FINALIZER, RECONCILE_REQUESTED_ANNOTATION } from '@syncline/api';
import type { ConfigSync } from '@syncline/api';
import { installCrds } from '@syncline/runtime';
import { createApplyClients, type ApplyIdentity } from '../cluster/identity.ts';
import { createMetrics } from '../metrics.ts';
import { createConfigSyncReconciler } from './configsync.ts';
import type { ReconcileOutcome } from '@syncline/runtime';

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
let rest: KubeRest;
let git: GitServer;
let cacheDir: string;
beforeAll(async () => {
  rest = await createKubeRest(await connectionFromKubeConfig(kc));
  await installCrds(rest, { fieldManager: 'syncline-tests' });
  git = await startGitServer();
  cacheDir = await mkdtemp(join(tmpdir(), 'configsync-int-'));
}, 120_000);
afterAll(async () => {
  await git.close();
  await rm(cacheDir, { recursive: true, force: true });
});

const csPath = (namespace: string, name: string): string => `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs/${name}`;
const configMap = (name: string, value: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  v: "${value}"\n`;
const REFRESH_MS = 60_000;

/**
 * The reconciler as the operator builds it (no jitter), reading its ConfigSync fresh before each run.
 * `wrap` may put a fault in front of the apply client.
 */
async function reconcilerFor(wrap: (client: ApplyClient) => ApplyClient = (client) => client) {
  const connection = await connectionFromKubeConfig(kc);
  const clock = { now: () => new Date() };
  const recorder: EventRecorder = { record: () => Promise.resolve() };
  const clients = createApplyClients({ connection, rest, clock });
  const cache = new Map<string, ConfigSync>();
  const reconcile = createConfigSyncReconciler({
    rest,
    git: createGitSource({ cacheDir, allowInsecureHttp: true, retry: { attempts: 1 } }),
    applyClient: async (identity: ApplyIdentity) => wrap(await clients(identity)),
    templates: new TemplateCache(),
    clock,
    logger: pino({ level: 'silent' }),
    metrics: createMetrics(),
    events: recorder,
    get: (key) => cache.get(key),
    random: () => 0.5,
    intervalBounds: { minMs: 1000, maxMs: 24 * 3_600_000 },
  });
  return async (namespace: string, name: string): Promise<{ result: ReconcileOutcome; object: ConfigSync }> => {
    cache.set(`${namespace}/${name}`, await rest.request<ConfigSync>({ method: 'GET', path: csPath(namespace, name) }));
    const result = await reconcile(`${namespace}/${name}`);
    return { result, object: await rest.request<ConfigSync>({ method: 'GET', path: csPath(namespace, name) }) };
  };
}

async function createConfigSync(namespace: string, name: string, repo: string, extra: Record<string, unknown> = {}): Promise<void> {
  await rest.request({
    method: 'POST',
    path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs`,
    body: {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'ConfigSync',
      metadata: { name },
      spec: { source: { git: { repo, revision: 'main', path: 'app' } }, refreshInterval: '1m', targets: [{ name: 'main', namespace }], ...extra },
    },
  });
}

/** A new sync's first run: it stores the finalizer, then goes on with the sync in the same run. */
async function untilApplied(
  run: (namespace: string, name: string) => Promise<{ result: ReconcileOutcome; object: ConfigSync }>,
  namespace: string,
  name: string,
) {
  const first = await run(namespace, name);
  expect(first.object.metadata.finalizers).toContain(FINALIZER);
  return first;
}

/** What `syncline reconcile` does: the next run reads the branch as it is now, not a recent ref listing. */
async function requestReconcile(namespace: string, name: string): Promise<void> {
  await rest.request({
    method: 'PATCH',
    path: csPath(namespace, name),
    contentType: 'application/merge-patch+json',
    body: { metadata: { annotations: { [RECONCILE_REQUESTED_ANNOTATION]: new Date().toISOString() } } },
  });
}

const ready = (object: ConfigSync) => object.status?.conditions?.find((c) => c.type === 'Ready');

describe('the ConfigSync reconciler in process', () => {
  it('applies a commit, then waits for a person when an object is someone else’s, and resumes once it is handed over', async () => {
    await using ns = await testNamespace({ prefix: 'cs-inproc' });
    const repo = await git.createRepo(`inproc-${ns.name}`);
    const sha = await repo.commit({ 'app/a.yaml': configMap('a', '1') });
    await createConfigSync(ns.name, 'app', repo.url);
    const run = await reconcilerFor();

    // given a commit with one ConfigMap, when reconciled, then it is applied and the sync comes back at its refresh interval
    const first = await untilApplied(run, ns.name, 'app');
    expect(first.result).toEqual({ kind: 'done', requeueAfterMs: REFRESH_MS });
    expect(ready(first.object)).toMatchObject({ status: 'True', message: `Applied revision ${sha}` });
    expect((await core.readNamespacedConfigMap({ name: 'a', namespace: ns.name })).data).toEqual({ v: '1' });

    // given a second ConfigMap in Git that someone else created first, when reconciled, then it is a Conflict
    // that waits for the refresh interval (not a retry with backoff), and their object is untouched
    await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'theirs' }, data: { v: 'mine' } } });
    await repo.commit({ 'app/theirs.yaml': configMap('theirs', '2') });
    await requestReconcile(ns.name, 'app');
    const conflicted = await run(ns.name, 'app');
    expect(conflicted.result).toEqual({ kind: 'wait', requeueAfterMs: REFRESH_MS });
    expect(ready(conflicted.object)).toMatchObject({ status: 'False', reason: 'Conflict' });
    expect(ready(conflicted.object)?.message).toContain(`main: /ConfigMap/${ns.name}/theirs: Conflict: the object exists and is not managed by Syncline`);
    expect((await core.readNamespacedConfigMap({ name: 'theirs', namespace: ns.name })).data).toEqual({ v: 'mine' });

    // when its owner lets it go (deletes it), then the next run applies it and the sync is Ready again
    await core.deleteNamespacedConfigMap({ name: 'theirs', namespace: ns.name });
    const resumed = await run(ns.name, 'app');
    expect(resumed.result.kind).toBe('done');
    expect(ready(resumed.object)?.status).toBe('True');
    expect((await core.readNamespacedConfigMap({ name: 'theirs', namespace: ns.name })).data).toEqual({ v: '2' });
  }, 120_000);

  it("a new sync's one run stores the finalizer, applies and records what it applied: deleted then, it prunes it all and lets go", async () => {
    await using ns = await testNamespace({ prefix: 'cs-inproc-delete' });
    const repo = await git.createRepo(`inproc-delete-${ns.name}`);
    await repo.commit({ 'app/a.yaml': configMap('a', '1'), 'app/b.yaml': configMap('b', '1') });
    await createConfigSync(ns.name, 'app', repo.url, { deletionPolicy: 'Delete' });
    const run = await reconcilerFor();

    // One run: the finalizer first, then the apply, and the status write (conditioned on the version the
    // finalizer's patch left) records both objects in the inventory.
    const first = await untilApplied(run, ns.name, 'app');
    expect(ready(first.object)?.status).toBe('True');
    expect(decodeInventory(first.object.status?.inventory?.[0]?.entries).map((e) => e.id)).toEqual([`/ConfigMap/${ns.name}/a`, `/ConfigMap/${ns.name}/b`]);
    expect((await core.readNamespacedConfigMap({ name: 'a', namespace: ns.name })).data).toEqual({ v: '1' });

    // Deleted: the finalizer holds it until the next run has pruned what the first one applied.
    await rest.request({ method: 'DELETE', path: csPath(ns.name, 'app') });
    const finalized = await run(ns.name, 'app').catch((error: unknown) => error);
    expect(finalized).toBeInstanceOf(Error); // the object is gone once its finalizer is released: the read after the run finds nothing
    for (const name of ['a', 'b']) await expect(core.readNamespacedConfigMap({ name, namespace: ns.name })).rejects.toMatchObject({ code: 404 });
    await expect(rest.request({ method: 'GET', path: csPath(ns.name, 'app') })).rejects.toMatchObject({ status: 404 });
  }, 120_000);

  it('waits for a person when its ServiceAccount may not write (Forbidden), and retries with backoff when the API server cannot be reached', async () => {
    await using ns = await testNamespace({ prefix: 'cs-inproc-causes' });
    const repo = await git.createRepo(`inproc-causes-${ns.name}`);
    await repo.commit({ 'app/a.yaml': configMap('a', '1') });

    // given a ServiceAccount without any RBAC, when its sync is reconciled, then the API server's 403 waits for the refresh interval
    await core.createNamespacedServiceAccount({ namespace: ns.name, body: { metadata: { name: 'nobody' } } });
    await createConfigSync(ns.name, 'forbidden', repo.url, { serviceAccountName: 'nobody' });
    const forbidden = await untilApplied(await reconcilerFor(), ns.name, 'forbidden');
    expect(forbidden.result).toEqual({ kind: 'wait', requeueAfterMs: REFRESH_MS });
    expect(ready(forbidden.object)).toMatchObject({ status: 'False', reason: 'ApplyFailed' });
    expect(ready(forbidden.object)?.message).toMatch(/Forbidden/);

    // given an API server that cannot be reached for applies, when reconciled, then the run is retried with backoff
    const unreachable = (client: ApplyClient): ApplyClient => ({
      ...client,
      apply: () =>
        Promise.reject(new ApiError({ status: 0, reason: 'TransportError', message: 'PATCH /api/v1/namespaces/x/configmaps/a: connect ECONNREFUSED' })),
    });
    await createConfigSync(ns.name, 'unreachable', repo.url);
    const retried = await untilApplied(await reconcilerFor(unreachable), ns.name, 'unreachable');
    expect(retried.result).toEqual({ kind: 'retry' });
    expect(ready(retried.object)).toMatchObject({ status: 'False', reason: 'ApplyFailed' });
    expect(ready(retried.object)?.message).toContain('TransportError: PATCH /api/v1/namespaces/x/configmaps/a: connect ECONNREFUSED');
  }, 120_000);
});

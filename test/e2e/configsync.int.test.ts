// End to end: the real operator process, the real control plane and a real Git server.
import { startGitServer, startOperator, type GitServer, type OperatorProcess, type TestRepo } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { createHmac, randomUUID } from 'node:crypto';
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  configMapYaml,
  applyConfigSync,
  condition,
  configMapData,
  configSync,
  core,
  eventually,
  installCrds,
  kc,
  patchConfigSync,
  readConfigSync,
  rest,
  waitForReady,
} from './harness.ts';

const cm = configMapYaml;
const WEBHOOK_SECRET = 'configsync-e2e';

describe('ConfigSync end to end', () => {
  let git: GitServer;
  let repo: TestRepo;
  let ns: TestNamespace;
  let operator: OperatorProcess;

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    repo = await git.createRepo('configs');
    ns = await testNamespace({ prefix: 'e2e' });
    await core.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name: 'syncline-webhooks' }, stringData: { generic: WEBHOOK_SECRET } } });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name, '--webhook-secret', `${ns.name}/syncline-webhooks`] });
  });
  afterAll(async () => {
    await operator.stop();
    await ns[Symbol.asyncDispose]();
    await git.close();
  });

  it('applies, updates, creates, prunes, rolls back, and survives a broken template', async () => {
    // given a repo with a template and a plain manifest
    const first = await repo.commit({
      'app/settings.yaml.hbs': cm('settings', '  greeting: {{ values.greeting }}\n  env: {{ target.name }}'),
      'app/plain.yaml': cm('plain', '  alert: "{{ not a template }}"'),
    });
    await applyConfigSync(
      configSync(ns.name, 'app', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '1s',
        values: { greeting: 'hello' },
        targets: [{ name: 'dev', namespace: ns.name }],
      }),
    );

    // then both objects are applied and Ready names the commit
    let cs = await waitForReady(ns.name, 'app', (c) => c.status?.sourceRevision === first);
    expect(await configMapData(ns.name, 'settings')).toEqual({ greeting: 'hello', env: 'dev' });
    expect(await configMapData(ns.name, 'plain')).toEqual({ alert: '{{ not a template }}' });
    expect(cs.status?.targets).toMatchObject([{ name: 'dev', phase: 'Synced', objects: 2 }]);
    // the Ref and Revision columns read these
    expect(cs.status).toMatchObject({ followedRef: 'main', shortRevision: first.slice(0, 7) });
    // and the applied objects are selectable by their sync (kubectl get all -l syncline.dev/name=app,...)
    const selected = await core.listNamespacedConfigMap({
      namespace: ns.name,
      labelSelector: `syncline.dev/name=app,syncline.dev/namespace=${ns.name},syncline.dev/kind=ConfigSync`,
    });
    expect(selected.items.map((c) => c.metadata?.name).sort()).toEqual(['plain', 'settings']);
    const events = await eventually(async () => {
      const list = await core.listNamespacedEvent({ namespace: ns.name, fieldSelector: 'involvedObject.name=app' });
      return list.items.some((e) => e.reason === 'Synced') ? list.items : undefined;
    }, 'a Synced event');
    const synced = events.filter((e) => e.reason === 'Synced');
    // once, naming what changed
    expect(synced).toHaveLength(1);
    expect(synced[0]?.message).toContain('2 created');
    expect(synced[0]?.message).toContain(`ConfigMap/${ns.name}/settings created`);
    expect(synced[0]?.message).toContain(`ConfigMap/${ns.name}/plain created`);

    // when a file changes, then the object is updated
    const second = await repo.commit({ 'app/settings.yaml.hbs': cm('settings', '  greeting: {{ values.greeting }}!\n  env: {{ target.name }}') });
    await eventually(async () => ((await configMapData(ns.name, 'settings'))?.['greeting'] === 'hello!' ? true : undefined), 'the update');

    // when a file is added, then its object is created
    const third = await repo.commit({ 'app/extra.yaml': cm('extra', '  n: "3"') });
    await eventually(async () => ((await configMapData(ns.name, 'extra')) !== undefined ? true : undefined), 'the new object');
    cs = await waitForReady(ns.name, 'app', (c) => c.status?.sourceRevision === third);
    expect(cs.status?.history?.map((h) => h.revision).slice(0, 3)).toEqual([third, second, first]);

    // when a file is removed, then its object is pruned
    await repo.commit({ 'app/plain.yaml': null });
    await eventually(async () => ((await configMapData(ns.name, 'plain')) === undefined ? true : undefined), 'the prune');

    // when the revision is pinned to the first commit, then it rolls back and prunes what is newer
    await patchConfigSync(ns.name, 'app', { spec: { source: { git: { revision: first } } } });
    cs = await waitForReady(ns.name, 'app', (c) => c.status?.sourceRevision === first);
    expect(condition(cs, 'Ready')?.message).toContain(first);
    expect(cs.status).toMatchObject({ followedRef: 'pinned', shortRevision: first.slice(0, 7) });
    // and `kubectl get csync` (the server's Table) shows them in its columns
    expect(await printedRow(ns.name, 'app')).toMatchObject({ Ready: 'True', Ref: 'pinned', Revision: first.slice(0, 7), Suspended: false });
    expect(await configMapData(ns.name, 'extra')).toBeUndefined();
    expect(await configMapData(ns.name, 'plain')).toEqual({ alert: '{{ not a template }}' });
    expect(await configMapData(ns.name, 'settings')).toEqual({ greeting: 'hello', env: 'dev' });

    // when it follows main again and main gets a broken template, then InvalidSource and nothing is touched
    const broken = await repo.commit({ 'app/settings.yaml.hbs': cm('settings', '  greeting: {{#if values.greeting}}unclosed') });
    await patchConfigSync(ns.name, 'app', { spec: { source: { git: { revision: 'main' } } } });
    cs = await eventually(async () => {
      const c = await readConfigSync(ns.name, 'app');
      return condition(c, 'InvalidSource')?.status === 'True' && c.status?.lastAttemptedRevision === broken ? c : undefined;
    }, 'InvalidSource');
    expect(condition(cs, 'Ready')).toMatchObject({ status: 'False', reason: 'RenderFailed' });
    expect(condition(cs, 'Ready')?.message).toContain('settings.yaml.hbs');
    expect(await configMapData(ns.name, 'settings')).toEqual({ greeting: 'hello', env: 'dev' });
    // main no longer has plain.yaml, but a failed render prunes nothing
    expect(await configMapData(ns.name, 'plain')).toEqual({ alert: '{{ not a template }}' });
    expect(cs.status?.sourceRevision).toBe(first);

    // when the template is fixed, then Ready again
    const fixed = await repo.commit({ 'app/settings.yaml.hbs': cm('settings', '  greeting: fixed') });
    cs = await waitForReady(ns.name, 'app', (c) => c.status?.sourceRevision === fixed);
    expect(condition(cs, 'InvalidSource')).toBeUndefined();
    expect(await configMapData(ns.name, 'settings')).toEqual({ greeting: 'fixed' });
    expect(await configMapData(ns.name, 'extra')).toEqual({ n: '3' });
    expect(await configMapData(ns.name, 'plain')).toBeUndefined();

    // when nothing changes, then resyncs (every second here) write no status and record no event
    const before = await readConfigSync(ns.name, 'app');
    const eventsBefore = (await core.listNamespacedEvent({ namespace: ns.name, fieldSelector: 'involvedObject.name=app' })).items.length;
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect((await readConfigSync(ns.name, 'app')).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect((await core.listNamespacedEvent({ namespace: ns.name, fieldSelector: 'involvedObject.name=app' })).items).toHaveLength(eventsBefore);
  }, 120_000);

  const push = async (repoUrl: string): Promise<void> => {
    if (operator.webhookAddress === undefined) throw new Error('the operator started without a webhook receiver');
    const body = JSON.stringify({ repo: repoUrl, ref: 'refs/heads/main' });
    const signature = `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex')}`;
    const response = await fetch(`http://${operator.webhookAddress}/hooks/generic`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-syncline-signature': signature, 'x-syncline-delivery': randomUUID() },
      body,
    });
    expect(response.status).toBeLessThan(300);
  };
  const requestReconcile = (name: string): Promise<void> =>
    patchConfigSync(ns.name, name, { metadata: { annotations: { 'syncline.dev/reconcile-requested-at': new Date().toISOString() } } });

  // A push delivered while the sync waits for a dependency: the run it wakes applies nothing, so the push still
  // stands when the dependency is Ready, and that run lists the branch again instead of trusting an older listing.
  it('applies a push that arrives while the sync waits for a dependency, once the dependency is Ready', async () => {
    const base = await git.createRepo('push-wait-base');
    const app = await git.createRepo('push-wait-app');
    await base.commit({ 'base/cm.yaml.hbs': cm('pushed-base', '  v: "1"') });
    await app.commit({ 'app/cm.yaml': cm('pushed-app', '  v: "1"') });
    await applyConfigSync(
      configSync(ns.name, 'pushed-base', {
        source: { git: { repo: base.url, revision: 'main', path: 'base' } },
        refreshInterval: '1h',
        targets: [{ name: 'base', namespace: ns.name }],
      }),
    );
    await applyConfigSync(
      configSync(ns.name, 'pushed-app', {
        source: { git: { repo: app.url, revision: 'main', path: 'app' } },
        refreshInterval: '1h',
        dependsOn: [{ name: 'pushed-base' }],
        targets: [{ name: 'app', namespace: ns.name }],
      }),
    );
    await waitForReady(ns.name, 'pushed-app', undefined, 60_000);
    // given the dependency broken (a template that does not render), so app waits for it
    await base.commit({ 'base/cm.yaml.hbs': cm('pushed-base', '  v: {{ values.missing }}') }, { message: 'broken' });
    await requestReconcile('pushed-base');
    await eventually(
      async () => (condition(await readConfigSync(ns.name, 'pushed-base'), 'Ready')?.status === 'False' ? true : undefined),
      'the dependency not Ready',
      60_000,
    );
    // when a commit is pushed to app's repository and its webhook arrives while app waits
    const pushed = await app.commit({ 'app/cm.yaml': cm('pushed-app', '  v: "2"') }, { message: 'v2' });
    await push(app.url);
    await eventually(
      async () => (condition(await readConfigSync(ns.name, 'pushed-app'), 'Ready')?.reason === 'DependencyNotReady' ? true : undefined),
      'app waiting for its dependency',
      60_000,
    );
    // and the dependency is fixed
    await base.commit({ 'base/cm.yaml.hbs': cm('pushed-base', '  v: "2"') }, { message: 'fixed' });
    await requestReconcile('pushed-base');
    // then app applies the pushed commit (its refresh interval is an hour: only the push explains it)
    await waitForReady(ns.name, 'pushed-app', (cs) => cs.status?.sourceRevision === pushed, 60_000);
    expect(await configMapData(ns.name, 'pushed-app')).toEqual({ v: '2' });
  }, 180_000);

  // Every run's own status write comes back through the watch; the cache keeps the spec it held for it (same
  // object, same generation) and the write sends only the fields that changed. Someone else's change after it is
  // still what the next run starts from.
  it('acts on a spec change and starts from a status someone edited, after its own status write came back', async () => {
    const echoRepo = await git.createRepo('own-write-echo');
    const sha = await echoRepo.commit({ 'echo/greeting.yaml.hbs': cm('echo-greeting', '  greeting: {{ values.greeting }}') });
    await applyConfigSync(
      configSync(ns.name, 'echo', {
        source: { git: { repo: echoRepo.url, revision: 'main', path: 'echo' } },
        refreshInterval: '1h',
        values: { greeting: 'one' },
        targets: [{ name: 'dev', namespace: ns.name }],
      }),
    );
    const ready = await waitForReady(ns.name, 'echo', (c) => c.status?.sourceRevision === sha, 60_000);
    expect(await configMapData(ns.name, 'echo-greeting')).toEqual({ greeting: 'one' });

    // when someone edits the status the operator wrote (fields its next write would leave as they were)
    await rest.request({
      method: 'PATCH',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${ns.name}/configsyncs/echo/status`,
      contentType: 'application/merge-patch+json',
      body: { status: { followedRef: 'edited', drifted: 7, inventory: [{ target: 'dev', entries: [] }] } },
    });
    // and the spec changes (a new generation; nothing else asks for a run: the refresh interval is an hour)
    await patchConfigSync(ns.name, 'echo', { spec: { values: { greeting: 'two' } } });

    // then the new spec is applied, and the status is the operator's again, the edited fields included
    const after = await waitForReady(ns.name, 'echo', (c) => c.status?.observedGeneration === (ready.metadata.generation ?? 1) + 1, 60_000);
    expect(await configMapData(ns.name, 'echo-greeting')).toEqual({ greeting: 'two' });
    expect(after.status).toMatchObject({ followedRef: 'main', drifted: 0, sourceRevision: sha });
    expect(after.status?.inventory).toEqual(ready.status?.inventory);
  }, 120_000);
});

/** One ConfigSync as `kubectl get` prints it: the API server's Table, column name → cell. */
async function printedRow(namespace: string, name: string): Promise<Record<string, unknown>> {
  const server = kc.getCurrentCluster()?.server ?? '';
  const options: Parameters<typeof request>[1] = { method: 'GET', headers: { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } };
  await kc.applyToHTTPSOptions(options);
  const body = await new Promise<string>((resolve, reject) => {
    const req = request(new URL(`/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs/${name}`, server), options, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end();
  });
  const table = JSON.parse(body) as { columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] };
  return Object.fromEntries(table.columnDefinitions.map((c, i) => [c.name, table.rows[0]?.cells[i]]));
}

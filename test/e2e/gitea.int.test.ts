// A real forge end to end: Gitea (built from its Go module by test support) holds a private repository
// that a ConfigSync reads over HTTP with a token Secret; a push makes Gitea deliver its signed webhook to
// the operator's receiver, which applies the change long before the 1 h refresh interval. The commit-status
// API a forge notifier writes to is exercised with the same token and read back through Gitea's API, and a
// Gitea NotificationProvider with a NotificationAlert has the operator itself write each pushed commit's status there.
import { startGitea, startOperator, type Gitea, type GiteaRepo, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyConfigSync,
  condition,
  configMapData,
  configMapYaml,
  configSync,
  core,
  eventually,
  installCrds,
  readConfigSync,
  rest,
  waitForReady,
} from './harness.ts';

const WEBHOOK_SECRET = 'gitea-hook-5e1d9c3b7a';
const cm = (name: string, value: string): string => configMapYaml(name, `  value: "${value}"`);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** A ConfigMap rendered from a template; `value` names what the template reads (a missing one fails the render). */
const template = (value: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: statused\ndata:\n  value: "{{ ${value} }}"\n`;

describe('Gitea end to end', () => {
  let gitea: Gitea;
  let ns: TestNamespace;
  let operator: OperatorProcess;
  let repo: GiteaRepo;

  beforeAll(async () => {
    await installCrds();
    gitea = await startGitea({ onProgress: (line) => console.log(`[gitea] ${line}`) });
    ns = await testNamespace({ prefix: 'gitea' });
    await core.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name: 'syncline-webhooks' }, stringData: { gitea: WEBHOOK_SECRET } } });
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: 'gitea-token' }, stringData: { username: gitea.admin.username, password: gitea.admin.token } },
    });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name, '--webhook-secret', `${ns.name}/syncline-webhooks`] });
    repo = await gitea.createRepo('configs');
    await repo.commit({ 'app/cm.yaml': cm('configs', 'v0') });
  });
  afterAll(async () => {
    await operator?.stop();
    await ns?.[Symbol.asyncDispose]();
    await gitea?.stop();
  });

  it('serves the repository privately: without credentials a ConfigSync cannot fetch it', async () => {
    // given a private Gitea repository with one commit, which Gitea shows nobody signed out
    const hidden = await gitea.createRepo('hidden');
    await hidden.commit({ 'app/cm.yaml': cm('hidden', 'v0') });
    const anonymous = await fetch(`${gitea.url}/api/v1/repos/${hidden.owner}/${hidden.name}`);
    expect([401, 403, 404]).toContain(anonymous.status);

    // when a ConfigSync follows it without a secretRef, then it never becomes Ready and says why
    await applyConfigSync(
      configSync(ns.name, 'anonymous', {
        source: { git: { repo: hidden.url, revision: 'main', path: 'app' } },
        refreshInterval: '1h',
        targets: [{ name: 'dev', namespace: ns.name }],
      }),
    );
    const failed = await eventually(
      async () => {
        const ready = condition(await readConfigSync(ns.name, 'anonymous'), 'Ready');
        return ready?.status === 'False' && ready.reason === 'FetchFailed' ? ready : undefined;
      },
      'the anonymous ConfigSync to report a failed fetch',
      120_000,
    );
    expect(failed.message).toMatch(/401|auth|credential/i);
    expect(failed.message).not.toContain(gitea.admin.token);
  });

  it('a push to Gitea is delivered by its webhook to the receiver and applied', async () => {
    // given a ConfigSync reading the repository with the token Secret, a 1 h refresh interval, synced once
    const first = await repo.resolve('refs/heads/main');
    await applyConfigSync(
      configSync(ns.name, 'configs', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app', secretRef: { name: 'gitea-token' } } },
        refreshInterval: '1h',
        targets: [{ name: 'dev', namespace: ns.name }],
      }),
    );
    await waitForReady(ns.name, 'configs', (cs) => cs.status?.sourceRevision === first, 120_000);
    expect((await configMapData(ns.name, 'configs'))?.['value']).toBe('v0');
    // The status write re-runs the reconcile once; let it finish so only a webhook can explain what follows.
    await sleep(500);

    // and Gitea's own webhook pointing at the operator's receiver
    if (operator.webhookAddress === undefined) throw new Error('the operator started without a webhook receiver');
    const hook = await repo.addWebhook({ url: `http://${operator.webhookAddress}/hooks/gitea`, secret: WEBHOOK_SECRET });
    expect(hook).toMatchObject({ type: 'gitea', active: true, events: ['push'] });

    // when a commit is pushed over HTTP
    const second = await repo.commit({ 'app/cm.yaml': cm('configs', 'v1') }, { message: 'v1' });

    // then Gitea delivers a signed push that wakes the ConfigSync, and the change is applied (within minutes
    // however loaded the machine: far inside the 1 h interval that would otherwise apply it)
    await eventually(async () => ((await configMapData(ns.name, 'configs'))?.['value'] === 'v1' ? true : undefined), 'the pushed value v1', 180_000);
    await waitForReady(ns.name, 'configs', (cs) => cs.status?.sourceRevision === second, 60_000);
    const pushes = operator.logs.filter((entry) => entry['msg'] === 'webhook push' && entry['provider'] === 'gitea');
    expect(pushes.length).toBeGreaterThanOrEqual(1);
    expect(pushes[0]).toMatchObject({ refs: ['refs/heads/main'], woken: 1 });

    // and Gitea's Test Delivery (a push of the branch's tip; Gitea has no ping) is accepted the same way
    const before = pushes.length;
    await repo.testWebhook(hook.id);
    const tested = await eventually(
      () => Promise.resolve(operator.logs.filter((entry) => entry['msg'] === 'webhook push' && entry['provider'] === 'gitea')[before]),
      'the test delivery',
      120_000,
    );
    expect(tested).toMatchObject({ refs: ['refs/heads/main'], woken: 1 });
  });

  it("commit statuses: written with the token, read back through Gitea's API", async () => {
    // given the commit at the tip of main
    const sha = await repo.resolve('refs/heads/main');
    const context = `syncline/${ns.name}/configs`;

    // when a status goes pending, then success, under one context
    const pending = await repo.createStatus(sha, { state: 'pending', context, description: 'syncing' });
    expect(pending).toMatchObject({ status: 'pending', context, description: 'syncing' });
    await repo.createStatus(sha, { state: 'success', context, description: 'applied', targetUrl: 'https://syncline.invalid/configs' });

    // then Gitea lists both, newest first, and the combined status is success
    const statuses = await repo.statuses(sha);
    expect(statuses.map((s) => [s.status, s.context, s.description])).toEqual([
      ['success', context, 'applied'],
      ['pending', context, 'syncing'],
    ]);
    expect(statuses[0]?.target_url).toBe('https://syncline.invalid/configs');
    expect(statuses[0]?.creator?.login).toBe(gitea.admin.username);
    const combined = await gitea.api<{ state: string; sha: string; total_count: number }>('GET', `/repos/${repo.owner}/${repo.name}/commits/${sha}/status`);
    expect(combined).toMatchObject({ state: 'success', sha, total_count: 1 });

    // and the credentials a ConfigSync's Secret holds for the clone (username, token as password) write
    // statuses too, as a notifier deriving them from the sync would send them
    const secret = await core.readNamespacedSecret({ name: 'gitea-token', namespace: ns.name });
    const basic = Buffer.from(
      `${Buffer.from(secret.data?.['username'] ?? '', 'base64').toString()}:${Buffer.from(secret.data?.['password'] ?? '', 'base64').toString()}`,
    ).toString('base64');
    const other = await gitea.api<{ status: string; context: string }>(
      'POST',
      `/repos/${repo.owner}/${repo.name}/statuses/${sha}`,
      { state: 'failure', context: `${context}/basic` },
      { authorization: `Basic ${basic}` },
    );
    expect(other).toMatchObject({ status: 'failure', context: `${context}/basic` });
    expect(await gitea.api('GET', `/repos/${repo.owner}/${repo.name}/commits/${sha}/status`)).toMatchObject({ state: 'failure', total_count: 2 });

    // and without credentials the same POST is refused
    const refused = await fetch(`${gitea.url}/api/v1/repos/${repo.owner}/${repo.name}/statuses/${sha}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ state: 'failure', context }),
    });
    expect([401, 403, 404]).toContain(refused.status);
    expect((await repo.statuses(sha)).length).toBe(3);
  });

  it('the operator writes commit statuses to Gitea: a pushed commit goes pending → success, a broken template to failure naming the file', async () => {
    // given a Gitea NotificationProvider with no address and no Secret of its own (the API comes from the repository URL,
    // the token from the ConfigSync's Git credentials) and a NotificationAlert for one ConfigSync
    const create = (plural: string, body: Record<string, unknown>): Promise<unknown> =>
      rest.request({ method: 'POST', path: `/apis/syncline.dev/v1alpha1/namespaces/${ns.name}/${plural}`, body });
    await create('notificationproviders', {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'NotificationProvider',
      metadata: { name: 'gitea' },
      spec: { type: 'gitea' },
    });
    await create('notificationalerts', {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'NotificationAlert',
      metadata: { name: 'gitea' },
      spec: { providerRef: { name: 'gitea' }, eventSources: [{ kind: 'ConfigSync', name: 'statused' }] },
    });
    await eventually(
      async () => {
        const alert = await rest.request<{ status?: { conditions?: { type: string; status: string }[] } }>({
          method: 'GET',
          path: `/apis/syncline.dev/v1alpha1/namespaces/${ns.name}/notificationalerts/gitea`,
        });
        return alert.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true ? true : undefined;
      },
      'the NotificationAlert to be Ready',
      120_000,
    );
    const statused = await gitea.createRepo('statused');
    const first = await statused.commit({ 'app/cm.yaml.hbs': template('target.name') });
    await applyConfigSync(
      configSync(ns.name, 'statused', {
        source: { git: { repo: statused.url, revision: 'main', path: 'app', secretRef: { name: 'gitea-token' } } },
        refreshInterval: '1h',
        targets: [{ name: 'dev', namespace: ns.name }],
      }),
    );
    await waitForReady(ns.name, 'statused', (cs) => cs.status?.sourceRevision === first, 120_000);
    const context = `syncline/${ns.name}/statused/dev`;
    const states = async (sha: string): Promise<string[]> => (await statused.statuses(sha)).filter((s) => s.context === context).map((s) => s.status);
    await eventually(async () => ((await states(first)).includes('success') ? true : undefined), 'the first commit to succeed on Gitea', 120_000);
    if (operator.webhookAddress === undefined) throw new Error('the operator started without a webhook receiver');
    await statused.addWebhook({ url: `http://${operator.webhookAddress}/hooks/gitea`, secret: WEBHOOK_SECRET });

    // when a commit is pushed (only Gitea's webhook can wake the sync before its 1 h interval)
    const second = await statused.commit({ 'app/cm.yaml.hbs': template('target.namespace') }, { message: 'namespace' });

    // then Syncline applies it, and Gitea's API shows the commit's status going pending → success (newest first)
    await eventually(async () => ((await configMapData(ns.name, 'statused'))?.['value'] === ns.name ? true : undefined), 'the pushed commit applied', 180_000);
    await eventually(async () => ((await states(second)).includes('success') ? true : undefined), 'the pushed commit to succeed on Gitea', 120_000);
    const woken = operator.logs.filter((entry) => entry['msg'] === 'webhook push' && String(entry['repo']).includes('statused'));
    expect(woken[0]).toMatchObject({ provider: 'gitea', refs: ['refs/heads/main'], woken: 1 });
    const applied = (await statused.statuses(second)).filter((s) => s.context === context);
    expect(applied.map((s) => s.status)).toEqual(['success', 'pending']);
    expect(applied[0]?.description).toContain(second.slice(0, 12));
    // written by the owner of the ConfigSync's token, and the combined status says success
    expect(applied.every((s) => s.creator?.login === gitea.admin.username)).toBe(true);
    const combined = (sha: string): Promise<{ state: string; sha: string; total_count: number }> =>
      gitea.api('GET', `/repos/${statused.owner}/${statused.name}/commits/${sha}/status`);
    expect(await combined(second)).toMatchObject({ state: 'success', sha: second, total_count: 1 });

    // when a commit whose template reads a value that does not exist is pushed
    const broken = await statused.commit({ 'app/cm.yaml.hbs': template('values.missing') }, { message: 'broken' });

    // then its status goes pending → failure, the description naming the file, and so does the combined status
    await eventually(async () => ((await states(broken)).includes('failure') ? true : undefined), 'the broken commit to fail on Gitea', 180_000);
    const failed = (await statused.statuses(broken)).filter((s) => s.context === context);
    expect(failed.map((s) => s.status)).toEqual(['failure', 'pending']);
    expect(failed[0]?.description).toMatch(/RenderFailed/);
    expect(failed[0]?.description).toMatch(/app\/cm\.yaml\.hbs:\d+/);
    expect(await combined(broken)).toMatchObject({ state: 'failure', sha: broken, total_count: 1 });
    // and what was applied before stays
    expect((await configMapData(ns.name, 'statused'))?.['value']).toBe(ns.name);

    // and the token is in nothing the operator logged
    expect(JSON.stringify(operator.logs)).not.toContain(gitea.admin.token);
  }, 600_000);
});

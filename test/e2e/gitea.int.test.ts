// A real forge end to end: Gitea (built from its Go module by test support) holds a private repository
// that a ConfigSync reads over HTTP with a token Secret; a push makes Gitea deliver its signed webhook to
// the operator's receiver, which applies the change long before the 1 h refresh interval. The commit-status
// API a forge notifier writes to is exercised with the same token and read back through Gitea's API.
import { startGitea, startOperator, type Gitea, type GiteaRepo, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, condition, configMapData, configMapYaml, configSync, core, eventually, installCrds, readConfigSync, waitForReady } from './harness.ts';

const WEBHOOK_SECRET = 'gitea-hook-5e1d9c3b7a';
const cm = (name: string, value: string): string => configMapYaml(name, `  value: "${value}"`);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

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
    await applyConfigSync(configSync(ns.name, 'anonymous', { source: { git: { repo: hidden.url, revision: 'main', path: 'app' } }, refreshInterval: '1h', targets: [{ name: 'dev', namespace: ns.name }] }));
    const failed = await eventually(async () => {
      const ready = condition(await readConfigSync(ns.name, 'anonymous'), 'Ready');
      return ready?.status === 'False' && ready.reason === 'FetchFailed' ? ready : undefined;
    }, 'the anonymous ConfigSync to report a failed fetch', 120_000);
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
    const tested = await eventually(() => Promise.resolve(operator.logs.filter((entry) => entry['msg'] === 'webhook push' && entry['provider'] === 'gitea')[before]), 'the test delivery', 120_000);
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
    const basic = Buffer.from(`${Buffer.from(secret.data?.['username'] ?? '', 'base64').toString()}:${Buffer.from(secret.data?.['password'] ?? '', 'base64').toString()}`).toString('base64');
    const other = await gitea.api<{ status: string; context: string }>('POST', `/repos/${repo.owner}/${repo.name}/statuses/${sha}`, { state: 'failure', context: `${context}/basic` }, { authorization: `Basic ${basic}` });
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
});

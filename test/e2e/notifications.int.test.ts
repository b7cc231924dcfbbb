// End to end with the real operator process: a failing render sends ONE Slack-format message naming file:line,
// the fix sends a recovery, and each commit's status goes pending → failure (the broken one) and pending →
// success (the fix) on a GitHub-compatible and a Gitea-compatible commit status API, the Gitea one with the
// ConfigSync's own Git token. Receivers are real HTTP servers speaking the documented formats.
import {
  forgeStatusApi,
  startGitServer,
  startHttpReceiver,
  startOperator,
  type GitServer,
  type HttpReceiver,
  type OperatorProcess,
  type TestRepo,
} from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, configSync, eventually, installCrds, rest } from './harness.ts';

const GIT_TOKEN = 'git-token-for-tests';
const GITHUB_TOKEN = 'github-token-for-tests';

/**
 * The test Git server serves repositories at /<name>.git; forges name them /<owner>/<name>. This forwards
 * /acme/<name>.git/... to it, so the ConfigSync's URL has the owner/repository path a forge has.
 */
async function ownerPathProxy(git: GitServer): Promise<{ url: string; close(): Promise<void> }> {
  const target = new URL(git.url);
  const server: Server = createServer((req, res) => {
    const forwarded = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: (req.url ?? '/').replace(/^\/acme\//, '/'),
        headers: { ...req.headers, host: target.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', () => res.destroy());
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const template = (value: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  color: "{{ ${value} }}"\n`;

describe('notifications end to end', () => {
  let git: GitServer;
  let repo: TestRepo;
  let proxy: { url: string; close(): Promise<void> };
  let ns: TestNamespace;
  let operator: OperatorProcess;
  let slack: HttpReceiver;
  let forge: HttpReceiver;
  const forgeApi = forgeStatusApi(GITHUB_TOKEN);
  const giteaApi = forgeStatusApi(GIT_TOKEN);

  const create = (plural: string, body: Record<string, unknown>): Promise<unknown> =>
    rest.request({
      method: 'POST',
      path: plural === 'secrets' ? `/api/v1/namespaces/${ns.name}/secrets` : `/apis/syncline.dev/v1alpha1/namespaces/${ns.name}/${plural}`,
      body,
    });

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer({ auth: { bearerToken: GIT_TOKEN } });
    repo = await git.createRepo('configs');
    proxy = await ownerPathProxy(git);
    slack = await startHttpReceiver();
    // One receiver for both flavours: GitHub's API base is the address itself, Gitea's is under /api/v1.
    forge = await startHttpReceiver({ respond: (r) => (r.path.startsWith('/api/v1/') ? giteaApi.responder(r) : forgeApi.responder(r)) });
    ns = await testNamespace({ prefix: 'notify' });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name] });
  }, 240_000);
  afterAll(async () => {
    await operator.stop();
    await ns[Symbol.asyncDispose]();
    await Promise.all([slack.close(), forge.close(), proxy.close()]);
    await git.close();
  });

  it('a failing render: one Slack message naming file:line; the fix: a recovery; commit statuses pending → failure, then pending → success', async () => {
    // given NotificationProviders (Slack through an incoming webhook URL kept in a Secret; GitHub with its own token; Gitea
    // with none, so the ConfigSync's Git token is used) and one NotificationAlert each for the ConfigSync
    await create('secrets', { metadata: { name: 'slack' }, stringData: { address: `${slack.url}/services/T0/B0/XSECRET` } });
    await create('secrets', { metadata: { name: 'github' }, stringData: { token: GITHUB_TOKEN } });
    await create('secrets', { metadata: { name: 'git-auth' }, stringData: { bearerToken: GIT_TOKEN } });
    await create('notificationproviders', {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'NotificationProvider',
      metadata: { name: 'slack' },
      spec: { type: 'slack', secretRef: { name: 'slack' } },
    });
    await create('notificationproviders', {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'NotificationProvider',
      metadata: { name: 'github' },
      spec: { type: 'github', address: forge.url, secretRef: { name: 'github' } },
    });
    await create('notificationproviders', {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'NotificationProvider',
      metadata: { name: 'gitea' },
      spec: { type: 'gitea', address: `${forge.url}/api/v1` },
    });
    for (const provider of ['slack', 'github', 'gitea']) {
      await create('notificationalerts', {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'NotificationAlert',
        metadata: { name: provider },
        spec: { providerRef: { name: provider }, eventSources: [{ kind: 'ConfigSync', name: 'web' }], summary: 'e2e' },
      });
    }
    await eventually(
      async () => {
        const list = await rest.request<{ items: { status?: { conditions?: { type: string; status: string }[] } }[] }>({
          method: 'GET',
          path: `/apis/syncline.dev/v1alpha1/namespaces/${ns.name}/notificationalerts`,
        });
        return list.items.length === 3 && list.items.every((a) => a.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
          ? true
          : undefined;
      },
      'the three NotificationAlerts to be Ready',
      60_000,
    );

    // when a ConfigSync follows a commit whose template names a value that does not exist
    const broken = await repo.commit({ 'app/web.yaml.hbs': template('values.missing') });
    await applyConfigSync(
      configSync(ns.name, 'web', {
        source: { git: { repo: `${proxy.url}/acme/configs.git`, revision: 'main', path: 'app', secretRef: { name: 'git-auth' } } },
        refreshInterval: '2s',
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );

    // then Slack gets one message, in Slack's format, naming the file and line
    const [failure] = await slack.waitFor((r) => r.length >= 1, 'the Slack message about the render');
    expect(failure?.path).toBe('/services/T0/B0/XSECRET');
    const failureBody = JSON.parse(failure?.body ?? '{}') as { text: string; blocks: { type: string }[] };
    expect(failureBody.text).toMatch(/RenderFailed/);
    expect(failureBody.text).toMatch(/app\/web\.yaml\.hbs:\d+/);
    expect(failureBody.blocks.map((b) => b.type)).toEqual(['header', 'section', 'context']);
    // and both forges show the broken commit pending, then failed
    const contextName = `syncline/${ns.name}/web/main`;
    const statesOf = (statuses: typeof forgeApi.statuses, sha: string): string[] =>
      statuses.filter((s) => s.sha === sha && s.context === contextName).map((s) => s.state);
    await eventually(
      () =>
        Promise.resolve(statesOf(forgeApi.statuses, broken).includes('failure') && statesOf(giteaApi.statuses, broken).includes('failure') ? true : undefined),
      'failure statuses of the broken commit',
    );
    expect(statesOf(forgeApi.statuses, broken)).toEqual(['pending', 'failure']);
    expect(statesOf(giteaApi.statuses, broken)).toEqual(['pending', 'failure']);
    expect(giteaApi.statuses.every((s) => s.owner === 'acme' && s.repo === 'configs' && s.flavor === 'gitea')).toBe(true);

    // when the template is fixed
    const fixed = await repo.commit({ 'app/web.yaml.hbs': template('target.name') });

    // then Slack hears of the recovery, and still only one message about the failure (resyncs every 2 s said nothing)
    const messages = await slack.waitFor((r) => r.some((m) => /Recovered/.test(m.body)), 'the recovery message');
    const texts = messages.map((m) => (JSON.parse(m.body) as { text: string }).text);
    expect(texts.filter((t) => t.includes('RenderFailed'))).toHaveLength(1);
    expect(texts.find((t) => t.startsWith('Recovered'))).toContain(`revision ${fixed.slice(0, 12)}`);
    // and the fixed commit goes pending → success on both forges
    await eventually(
      () =>
        Promise.resolve(statesOf(forgeApi.statuses, fixed).includes('success') && statesOf(giteaApi.statuses, fixed).includes('success') ? true : undefined),
      'success statuses of the fixed commit',
    );
    expect(statesOf(forgeApi.statuses, fixed)).toEqual(['pending', 'success']);
    expect(statesOf(giteaApi.statuses, fixed)).toEqual(['pending', 'success']);
    // and every request to the forges carried its token as documented; none was refused
    expect(forge.requests.every((r) => r.headers['authorization'] === `Bearer ${GITHUB_TOKEN}` || r.headers['authorization'] === `token ${GIT_TOKEN}`)).toBe(
      true,
    );
    // and nothing the operator logged names the webhook URL or a token
    const logged = JSON.stringify(operator.logs);
    for (const secret of ['XSECRET', GIT_TOKEN, GITHUB_TOKEN]) expect(logged).not.toContain(secret);
  }, 180_000);
});

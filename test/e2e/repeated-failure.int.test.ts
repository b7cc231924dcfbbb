// A failure that repeats, as an operator on call meets it: a ConfigSync whose remote cluster does not answer is
// retried with backoff. Against the real control plane and the real operator process: the retries count up ONE
// Warning Event (count, lastTimestamp, as kubectl shows "x5 over 1m"), its message carries no countdown and no
// "0 failed", and a NotificationAlert sends ONE message for it; the local target keeps syncing meanwhile.
import { startGitServer, startHttpReceiver, startOperator, type GitServer, type HttpReceiver, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { applyConfigSync, condition, configMapYaml, configSync, core, eventually, installCrds, readConfigSync, rest } from './harness.ts';

const API = '/apis/syncline.dev/v1alpha1';

/** A loopback port nothing listens on: connections to it are refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('a repeated failure', () => {
  let git: GitServer;
  let ns: TestNamespace;
  let operator: OperatorProcess;
  let hook: HttpReceiver;

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    hook = await startHttpReceiver();
    ns = await testNamespace({ prefix: 'repeat' });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name] });
  }, 240_000);
  afterAll(async () => {
    await operator.stop();
    await ns[Symbol.asyncDispose]();
    await hook.close();
    await git.close();
  });

  it('is one Warning Event counting up and one notification, worded without timers, while the local target syncs', async () => {
    // given a RemoteCluster whose server refuses connections, a webhook NotificationAlert for every ConfigSync
    const kubeconfig = stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'gone', cluster: { server: `https://127.0.0.1:${await closedPort()}` } }],
      users: [{ name: 'u', user: { token: 'not-used' } }],
      contexts: [{ name: 'gone', context: { cluster: 'gone', user: 'u' } }],
      'current-context': 'gone',
    });
    await core.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name: 'gone' }, stringData: { kubeconfig } } });
    await core.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name: 'hook' }, stringData: { address: `${hook.url}/hook` } } });
    const create = (plural: string, kind: string, name: string, spec: Record<string, unknown>): Promise<unknown> =>
      rest.request({
        method: 'POST',
        path: `${API}/namespaces/${ns.name}/${plural}`,
        body: { apiVersion: 'syncline.dev/v1alpha1', kind, metadata: { name }, spec },
      });
    await create('remoteclusters', 'RemoteCluster', 'gone', { kubeconfigSecretRef: { name: 'gone', key: 'kubeconfig' } });
    await create('notificationproviders', 'NotificationProvider', 'hook', { type: 'webhook', secretRef: { name: 'hook' } });
    await create('notificationalerts', 'NotificationAlert', 'syncs', {
      providerRef: { name: 'hook' },
      eventSources: [{ kind: 'ConfigSync' }],
      eventSeverity: 'error',
    });
    await eventually(
      async () => {
        const alert = await rest.request<{ status?: { conditions?: { type: string; status: string }[] } }>({
          method: 'GET',
          path: `${API}/namespaces/${ns.name}/notificationalerts/syncs`,
        });
        return alert.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true ? true : undefined;
      },
      'the NotificationAlert to be Ready',
      60_000,
    );

    // when a ConfigSync applies one ConfigMap here and one to the cluster that is gone
    const repo = await git.createRepo('repeat');
    await repo.commit({ 'app/settings.yaml': configMapYaml('settings', '  v: "1"') });
    await applyConfigSync(
      configSync(ns.name, 'web', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '1h',
        targets: [
          { name: 'here', namespace: ns.name },
          { name: 'away', namespace: 'default', cluster: { name: 'gone' } },
        ],
      }),
    );

    // then, after several retries, one ApplyFailed Event has counted them up
    const failedEvents = async () =>
      (await core.listNamespacedEvent({ namespace: ns.name, fieldSelector: 'involvedObject.kind=ConfigSync,involvedObject.name=web,reason=ApplyFailed' }))
        .items;
    const counted = await eventually(
      async () => {
        const events = await failedEvents();
        return events.some((e) => (e.count ?? 0) >= 4) ? events : undefined;
      },
      'the ApplyFailed Event to count four attempts',
      150_000,
    );
    expect(counted.map((e) => e.message)).toHaveLength(1);
    const [event] = counted;
    expect(event?.type).toBe('Warning');
    expect(event?.message).toMatch(/^1 failed: away: cluster gone: /);
    expect(event?.message).not.toMatch(/next attempt|\d+ms|\b0 failed/);
    expect(Date.parse(String(event?.lastTimestamp))).toBeGreaterThan(Date.parse(String(event?.firstTimestamp)));
    // and the Ready condition says the same as the Event (the failures as listed there)
    const cs = await readConfigSync(ns.name, 'web');
    expect(condition(cs, 'Ready')).toMatchObject({ status: 'False', reason: 'ApplyFailed' });
    expect(event?.message).toBe(`1 failed: ${condition(cs, 'Ready')?.message ?? ''}`);
    // and the local target applied its ConfigMap meanwhile
    expect(cs.status?.targets?.find((t) => t.name === 'here')).toMatchObject({ phase: 'Synced', objects: 1 });
    await core.readNamespacedConfigMap({ namespace: ns.name, name: 'settings' });

    // and the webhook heard of the failure once
    const sent = hook.requests.map((r) => JSON.parse(r.body) as { reason: string; name: string });
    expect(sent.filter((m) => m.reason === 'ApplyFailed' && m.name === 'web')).toHaveLength(1);
  }, 240_000);
});

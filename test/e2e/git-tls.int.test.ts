// A ConfigSync whose repository sits behind a private CA and a forward proxy: the Git Secret's ca.crt and
// spec.source.git.proxySecretRef, read by the real operator.
import {
  createTestCa,
  startConnectProxy,
  startGitServer,
  startOperator,
  type ConnectProxy,
  type GitServer,
  type OperatorProcess,
  type TestCa,
} from '@syncline/test-support';
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
  waitForReady,
} from './harness.ts';

const b64 = (value: string): string => Buffer.from(value).toString('base64');

describe('Git behind a private CA and a proxy', () => {
  let ca: TestCa;
  let git: GitServer;
  let proxy: ConnectProxy;
  let ns: TestNamespace;
  let operator: OperatorProcess;

  beforeAll(async () => {
    await installCrds();
    ca = await createTestCa();
    git = await startGitServer({ tls: ca.server, auth: { username: 'deploy', password: 'git-pass-9' } });
    proxy = await startConnectProxy({ auth: { username: 'corp', password: 'proxy-pass-3' } });
    ns = await testNamespace({ prefix: 'gittls' });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name] });
  });
  afterAll(async () => {
    await operator.stop();
    await ns[Symbol.asyncDispose]();
    await proxy.close();
    await git.close();
  });

  it('syncs through the proxy with the CA from the Git Secret, and says where the CA goes when it is missing', async () => {
    const repo = await git.createRepo('behind-proxy');
    const sha = await repo.commit({ 'app/a.yaml': configMapYaml('tls-a', '  v: "1"') });
    const secret = (name: string, data: Record<string, string>) => core.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name }, data } });
    await secret('git-no-ca', { username: b64('deploy'), password: b64('git-pass-9') });
    await secret('git', { username: b64('deploy'), password: b64('git-pass-9'), 'ca.crt': b64(ca.caCert) });
    await secret('proxy', { address: b64(proxy.url), username: b64('corp'), password: b64('proxy-pass-3') });
    const spec = (secretName: string): Record<string, unknown> => ({
      source: { git: { repo: repo.url, revision: 'main', path: 'app', secretRef: { name: secretName }, proxySecretRef: { name: 'proxy' } } },
      refreshInterval: '1h',
      targets: [{ name: 'main', namespace: ns.name }],
    });

    // Without the CA: not Ready, and the condition names the key to add (no credential in it).
    await applyConfigSync(configSync(ns.name, 'untrusted', spec('git-no-ca')));
    const failed = await eventually(
      async () => {
        const ready = condition(await readConfigSync(ns.name, 'untrusted'), 'Ready');
        return ready?.status === 'False' && ready.message.includes('ca.crt') ? ready : undefined;
      },
      'the untrusted certificate to be reported',
      120_000,
    );
    expect(failed.message).not.toMatch(/git-pass-9|proxy-pass-3/);
    expect(proxy.tunnels().length).toBeGreaterThan(0);

    // With it: synced, every request through the proxy.
    const tunnelsBefore = proxy.tunnels().length;
    await applyConfigSync(configSync(ns.name, 'trusted', spec('git')));
    await waitForReady(ns.name, 'trusted', (c) => c.status?.sourceRevision === sha, 120_000);
    expect(await configMapData(ns.name, 'tls-a')).toEqual({ v: '1' });
    expect(proxy.tunnels().length).toBeGreaterThan(tunnelsBefore);
    expect(new Set(proxy.tunnels())).toEqual(new Set([new URL(git.url).host]));
  }, 300_000);
});

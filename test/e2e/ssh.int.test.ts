// End to end over SSH: the real operator syncs a ConfigSync from an ssh:// repo served by a real sshd, with
// the deploy key and known_hosts in a Secret; a key the server refuses shows as a clear condition, and the
// key shows up nowhere (status, events, operator logs).
import { generateSshKey, startGitServer, startOperator, startSshGitServer } from '@syncline/test-support';
import type { GitServer, OperatorProcess, SshGitServer, SshKeyPair } from '@syncline/test-support';
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

describe('ConfigSync from Git over SSH', () => {
  let git: GitServer;
  let ssh: SshGitServer;
  let ns: TestNamespace;
  let operator: OperatorProcess;
  let stranger: SshKeyPair;

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    ssh = await startSshGitServer({ root: git.root });
    stranger = await generateSshKey('not-authorized');
    ns = await testNamespace({ prefix: 'e2e-ssh' });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name] });
  });
  afterAll(async () => {
    await operator.stop();
    await ns[Symbol.asyncDispose]();
    await ssh.close();
    await git.close();
  });

  it('syncs with the deploy key from a Secret, and says clearly when the server refuses a key, without showing it', async () => {
    // given a repo served over SSH and Secrets with the right and a wrong key
    const repo = await git.createRepo('configs');
    const sha = await repo.commit({
      'app/settings.yaml': configMapYaml('over-ssh', '  transport: ssh'),
      'other/settings.yaml': configMapYaml('after-fix', '  fixed: "yes"'),
    });
    const secret = (name: string, identity: string) =>
      core.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name }, stringData: { identity, known_hosts: `${ssh.knownHosts}\n` } } });
    await secret('git-auth', ssh.userKey.privateKey);
    await secret('git-wrong', stranger.privateKey);
    const spec = (secretName: string, path: string) => ({
      source: { git: { repo: ssh.url('configs'), revision: 'main', path, secretRef: { name: secretName } } },
      refreshInterval: '1s',
      targets: [{ name: 'dev', namespace: ns.name }],
    });

    // when
    await applyConfigSync(configSync(ns.name, 'good', spec('git-auth', 'app')));
    await applyConfigSync(configSync(ns.name, 'denied', spec('git-wrong', 'other')));

    // then the right key syncs
    const good = await waitForReady(ns.name, 'good', (c) => c.status?.sourceRevision === sha, 60_000);
    expect(condition(good, 'Ready')?.message).toContain(sha);
    expect(await configMapData(ns.name, 'over-ssh')).toEqual({ transport: 'ssh' });

    // and the wrong one stalls with a message that says what to fix
    const denied = await eventually(
      async () => {
        const c = await readConfigSync(ns.name, 'denied');
        return condition(c, 'Ready')?.reason === 'FetchFailed' ? c : undefined;
      },
      'FetchFailed',
      60_000,
    );
    const message = condition(denied, 'Ready')?.message ?? '';
    expect(message).toContain(`ssh authentication as ${ssh.user}@127.0.0.1:${ssh.port} failed: the server refused the key from Secret ${ns.name}/git-wrong`);
    expect(condition(denied, 'Stalled')?.status).toBe('True');

    // and neither key shows up in status, events or the operator's logs
    const events = await core.listNamespacedEvent({ namespace: ns.name });
    const everything = [JSON.stringify(denied), JSON.stringify(good), JSON.stringify(events.items), JSON.stringify(operator.logs)].join('\n');
    for (const key of [stranger, ssh.userKey]) {
      for (const part of [key.privateKey, ...key.privateKey.split('\n').filter((l) => l.length >= 8 && !l.startsWith('-----'))]) {
        expect(everything).not.toContain(part);
      }
    }

    // when the Secret gets the right key, then the stalled sync recovers on its own
    await core.patchNamespacedSecret({
      namespace: ns.name,
      name: 'git-wrong',
      body: [{ op: 'replace', path: '/data/identity', value: Buffer.from(ssh.userKey.privateKey).toString('base64') }],
    });
    await waitForReady(ns.name, 'denied', (c) => c.status?.sourceRevision === sha, 60_000);
    expect(await configMapData(ns.name, 'after-fix')).toEqual({ fixed: 'yes' });
  }, 120_000);

  it('reads https credentials from a Secret too (each value decoded once)', async () => {
    // given a server that wants basic auth, and the Secret with its credentials
    await using authed = await startGitServer({ auth: { username: 'deploy', password: 's3cr:t/+=' } });
    const repo = await authed.createRepo('private');
    const sha = await repo.commit({ 'app/a.yaml': configMapYaml('over-https', '  transport: https') });
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: 'https-auth' }, stringData: { username: 'deploy', password: 's3cr:t/+=' } },
    });

    // when
    await applyConfigSync(
      configSync(ns.name, 'https', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app', secretRef: { name: 'https-auth' } } },
        refreshInterval: '1s',
        targets: [{ name: 'dev', namespace: ns.name }],
      }),
    );

    // then
    await waitForReady(ns.name, 'https', (c) => c.status?.sourceRevision === sha, 60_000);
    expect(await configMapData(ns.name, 'over-https')).toEqual({ transport: 'https' });
  }, 120_000);
});

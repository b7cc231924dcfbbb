// End to end: crashes and replicas. The operator killed mid-sync converges after a restart; of two
// replicas only the leader writes; killing the leader hands over within the lease duration.
import { CoordinationV1Api } from '@kubernetes/client-node';
import { startGitServer, startOperator, type GitServer, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configMapYaml, applyConfigSync, configMapData, configSync, core, eventually, installCrds, kc, waitForReady } from './harness.ts';

const cm = (name: string, value: string): string => configMapYaml(name, `  v: "${value}"`);

describe('operator replicas', () => {
  let git: GitServer;
  let ns: TestNamespace;
  const running: OperatorProcess[] = [];

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    ns = await testNamespace({ prefix: 'replicas' });
  });
  afterAll(async () => {
    await Promise.all(running.map((o) => o.stop()));
    await ns[Symbol.asyncDispose]();
    await git.close();
  });

  const start = async (args: string[] = []): Promise<OperatorProcess> => {
    const operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name, ...args] });
    running.push(operator);
    return operator;
  };

  it('converges after being killed mid-sync', async () => {
    const repo = await git.createRepo('crash');
    const files: Record<string, string> = {};
    for (let i = 0; i < 60; i++) files[`app/cm-${i}.yaml`] = cm(`crash-${i}`, String(i));
    const sha = await repo.commit(files);
    const operator = await start();
    await applyConfigSync(
      configSync(ns.name, 'crash', {
        source: { git: { repo: repo.url, path: 'app' } },
        refreshInterval: '1h',
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );
    // kill it as soon as the first objects appear: the sync is under way
    await eventually(
      async () => ((await core.listNamespacedConfigMap({ namespace: ns.name, labelSelector: 'syncline.dev/owner' })).items.length > 0 ? true : undefined),
      'the sync to start',
      20_000,
    );
    await operator.kill();

    await start();
    const cs = await waitForReady(ns.name, 'crash', (c) => c.status?.sourceRevision === sha);
    expect(cs.status?.targets?.[0]).toMatchObject({ phase: 'Synced', objects: 60 });
    const applied = await core.listNamespacedConfigMap({ namespace: ns.name, labelSelector: 'syncline.dev/owner' });
    expect(applied.items.filter((c) => c.metadata?.name?.startsWith('crash-'))).toHaveLength(60);
    await Promise.all(running.splice(0).map((o) => o.stop()));
  }, 90_000);

  it('lets only the leader write, and hands over within the lease duration when it dies', async () => {
    const lease = `syncline-${ns.name}`;
    const electionArgs = ['--leader-elect', '--leader-election-namespace', ns.name, '--leader-election-id', lease, '--lease-duration', '4'];
    const first = await start(electionArgs);
    const second = await start(electionArgs);
    const leases = kc.makeApiClient(CoordinationV1Api);
    const holder = await eventually(async () => (await leases.readNamespacedLease({ name: lease, namespace: ns.name })).spec?.holderIdentity, 'a leader');
    const leader = holder.endsWith(`-${first.pid}`) ? first : second;
    const follower = leader === first ? second : first;
    expect(holder.endsWith(`-${leader.pid}`)).toBe(true);

    const repo = await git.createRepo('leader');
    const sha = await repo.commit({ 'app/a.yaml': cm('leader-a', 'one') });
    await applyConfigSync(
      configSync(ns.name, 'leader', {
        source: { git: { repo: repo.url, path: 'app' } },
        refreshInterval: '1s',
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );
    await waitForReady(ns.name, 'leader', (c) => c.status?.sourceRevision === sha);
    expect(leader.logs.some((l) => l['msg'] === 'synced')).toBe(true);
    expect(follower.logs.some((l) => l['msg'] === 'synced' || l['msg'] === 'became leader')).toBe(false);

    // the leader dies without releasing the lease: the follower must take over within its duration
    await leader.kill();
    const killedAt = Date.now();
    const next = await repo.commit({ 'app/a.yaml': cm('leader-a', 'two') });
    await waitForReady(ns.name, 'leader', (c) => c.status?.sourceRevision === next, 30_000);
    const handover = Date.now() - killedAt;
    expect(await configMapData(ns.name, 'leader-a')).toEqual({ v: 'two' });
    expect(follower.logs.some((l) => l['msg'] === 'became leader')).toBe(true);
    // lease 4 s + one retry period (2 s) + the sync itself
    expect(handover).toBeLessThan(12_000);
  }, 90_000);
});

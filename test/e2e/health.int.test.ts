// End to end: health after apply (wait, timeout, the Healthy condition), apply waves and dependsOn. The test
// control plane runs no kubelet and no deployment controller: the test writes a Deployment's status through
// the status subresource, as the controller would. refreshInterval is an hour, so everything seen here is
// driven by watches, not by polling.
import { startGitServer, startOperator, type GitServer, type OperatorProcess, type TestRepo } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import type { ConfigSync } from '@syncline/operator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, condition, configMapData, configMapYaml, configSync, installCrds, readConfigSync, rest, untilConfigSync } from './harness.ts';

const deploymentYaml = (name: string, annotations = ''): string =>
  `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
${annotations === '' ? '' : `  annotations:\n${annotations}\n`}spec:
  replicas: 1
  progressDeadlineSeconds: 600
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers: [{name: app, image: registry.example.com/${name}:1}]
`;

type Deployment = { metadata: { generation?: number; resourceVersion?: string } };

const rolledOut = (generation: number) => ({
  observedGeneration: generation,
  replicas: 1,
  updatedReplicas: 1,
  readyReplicas: 1,
  availableReplicas: 1,
  conditions: [
    {
      type: 'Available',
      status: 'True',
      reason: 'MinimumReplicasAvailable',
      message: 'Deployment has minimum availability.',
      lastUpdateTime: '2026-01-01T00:00:00Z',
      lastTransitionTime: '2026-01-01T00:00:00Z',
    },
    {
      type: 'Progressing',
      status: 'True',
      reason: 'NewReplicaSetAvailable',
      message: 'ReplicaSet has successfully progressed.',
      lastUpdateTime: '2026-01-01T00:00:00Z',
      lastTransitionTime: '2026-01-01T00:00:00Z',
    },
  ],
});
const deadlineExceeded = (generation: number) => ({
  observedGeneration: generation,
  replicas: 1,
  updatedReplicas: 1,
  readyReplicas: 0,
  availableReplicas: 0,
  unavailableReplicas: 1,
  conditions: [
    {
      type: 'Available',
      status: 'False',
      reason: 'MinimumReplicasUnavailable',
      message: 'Deployment does not have minimum availability.',
      lastUpdateTime: '2026-01-01T00:00:00Z',
      lastTransitionTime: '2026-01-01T00:00:00Z',
    },
    {
      type: 'Progressing',
      status: 'False',
      reason: 'ProgressDeadlineExceeded',
      message: 'ReplicaSet "web-5d4b9" has timed out progressing.',
      lastUpdateTime: '2026-01-01T00:00:00Z',
      lastTransitionTime: '2026-01-01T00:00:00Z',
    },
  ],
});

describe('health, waves and dependencies end to end', () => {
  let git: GitServer;
  let repo: TestRepo;
  let ns: TestNamespace;
  let operator: OperatorProcess;

  const deploymentPath = (name: string): string => `/apis/apps/v1/namespaces/${ns.name}/deployments/${name}`;
  /** What the deployment controller would write, for the Deployment's current generation. */
  const setDeploymentStatus = async (name: string, status: (generation: number) => Record<string, unknown>): Promise<void> => {
    const deployment = await rest.request<Deployment>({ method: 'GET', path: deploymentPath(name) });
    await rest.request({
      method: 'PATCH',
      path: `${deploymentPath(name)}/status`,
      contentType: 'application/merge-patch+json',
      body: { status: status(deployment.metadata.generation ?? 1) },
    });
  };
  const until = (name: string, check: (cs: ConfigSync) => boolean, what: string): Promise<ConfigSync> => untilConfigSync(ns.name, name, check, what, 60_000);
  const sync = (name: string, path: string, extra: Record<string, unknown> = {}) =>
    configSync(ns.name, name, {
      source: { git: { repo: repo.url, revision: 'main', path } },
      refreshInterval: '1h',
      targets: [{ name: 'main', namespace: ns.name }],
      ...extra,
    });

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    repo = await git.createRepo('health');
    await repo.commit({
      'web/deployment.yaml': deploymentYaml('web'),
      'web/config.yaml': configMapYaml('web-config', '  a: "1"'),
      'api/deployment.yaml': deploymentYaml('api'),
      'waves/db.yaml': deploymentYaml('db'),
      'waves/after.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after-db\n  annotations:\n    syncline.dev/apply-wave: "1"\ndata: {b: "2"}\n`,
      'base/base.yaml': configMapYaml('base', '  c: "3"'),
      'slow/deployment.yaml': deploymentYaml('slow'),
      'app/app.yaml': configMapYaml('app', '  d: "4"'),
    });
    ns = await testNamespace({ prefix: 'health' });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name] });
  }, 240_000);
  afterAll(async () => {
    await operator.stop();
    await ns[Symbol.asyncDispose]();
    await git.close();
  });

  it('wait: Ready waits for the rollout, turns True when it is healthy, and HealthCheckFailed names a stuck Deployment', async () => {
    // given a sync that waits, with a Deployment nobody has rolled out yet
    await applyConfigSync(sync('web', 'web', { wait: true, timeout: '10m' }));

    // then it is applied but not Ready: Progressing, naming the Deployment
    let cs = await until('web', (c) => condition(c, 'Ready')?.reason === 'Progressing', 'Ready=False Progressing');
    expect(condition(cs, 'Ready')).toMatchObject({ status: 'False' });
    expect(condition(cs, 'Ready')?.message).toContain('Deployment/web');
    expect(condition(cs, 'Healthy')).toMatchObject({ status: 'Unknown', reason: 'Progressing' });
    expect(cs.status?.targets?.[0]?.health).toEqual({ healthy: 1, progressing: 1, failed: 0, unknown: 0 });
    expect(await configMapData(ns.name, 'web-config')).toEqual({ a: '1' });

    // when the Deployment reports a finished rollout (as the controller would)
    await setDeploymentStatus('web', rolledOut);

    // then Ready turns True, woken by the status change (the refresh interval is an hour)
    cs = await until('web', (c) => condition(c, 'Ready')?.status === 'True', 'Ready=True');
    expect(condition(cs, 'Healthy')).toMatchObject({ status: 'True', reason: 'Healthy' });
    expect(cs.status?.targets?.[0]?.health).toEqual({ healthy: 2, progressing: 0, failed: 0, unknown: 0 });

    // and nothing more is written while nothing changes
    const before = (await readConfigSync(ns.name, 'web')).metadata.resourceVersion;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect((await readConfigSync(ns.name, 'web')).metadata.resourceVersion).toBe(before);

    // when the rollout exceeds its progress deadline
    await setDeploymentStatus('web', deadlineExceeded);

    // then Ready=False HealthCheckFailed names the Deployment and why
    cs = await until('web', (c) => condition(c, 'Ready')?.reason === 'HealthCheckFailed', 'Ready=False HealthCheckFailed');
    expect(condition(cs, 'Ready')?.message).toContain('Deployment/web: ProgressDeadlineExceeded');
    expect(condition(cs, 'Healthy')).toMatchObject({ status: 'False', reason: 'HealthCheckFailed' });
    expect(cs.status?.targets?.[0]?.health).toMatchObject({ failed: 1 });
  }, 180_000);

  it('timeout: a rollout that never becomes healthy turns HealthCheckFailed when the timeout expires, with no event to wake it', async () => {
    await applyConfigSync(sync('slow', 'slow', { wait: true, timeout: '3s' }));
    const cs = await until('slow', (c) => condition(c, 'Ready')?.reason === 'HealthCheckFailed', 'HealthCheckFailed after the timeout');
    expect(condition(cs, 'Ready')?.message).toContain('not healthy within 3s');
    expect(condition(cs, 'Ready')?.message).toContain('Deployment/slow');
    expect(condition(cs, 'Healthy')).toMatchObject({ status: 'False', reason: 'HealthCheckFailed' });
  }, 120_000);

  it('without wait: Ready is about the apply, and the Healthy condition and counts report the rollout', async () => {
    await applyConfigSync(sync('api', 'api'));
    const cs = await until('api', (c) => condition(c, 'Ready')?.status === 'True' && condition(c, 'Healthy') !== undefined, 'Ready with a Healthy condition');
    expect(condition(cs, 'Healthy')).toMatchObject({ status: 'Unknown', reason: 'Progressing' });
    expect(condition(cs, 'Healthy')?.message).toContain('Deployment/api');
    expect(cs.status?.targets?.[0]?.health).toEqual({ healthy: 0, progressing: 1, failed: 0, unknown: 0 });

    await setDeploymentStatus('api', rolledOut);
    await until('api', (c) => condition(c, 'Healthy')?.status === 'True', 'Healthy=True');
  }, 120_000);

  it('apply waves with wait: wave 1 is applied once wave 0 is healthy', async () => {
    await applyConfigSync(sync('waves', 'waves', { wait: true }));
    const cs = await until('waves', (c) => c.status?.targets?.[0]?.phase === 'Pending', 'wave 1 held back');
    expect(cs.status?.targets?.[0]?.message).toContain('wave 0 is not healthy yet');
    expect(condition(cs, 'Ready')).toMatchObject({ status: 'False', reason: 'Progressing' });
    expect(await configMapData(ns.name, 'after-db')).toBeUndefined();

    await setDeploymentStatus('db', rolledOut);
    const done = await until('waves', (c) => condition(c, 'Ready')?.status === 'True', 'Ready=True after wave 1');
    expect(done.status?.targets?.[0]).toMatchObject({ phase: 'Synced', objects: 2 });
    expect(await configMapData(ns.name, 'after-db')).toEqual({ b: '2' });
  }, 120_000);

  it('dependsOn: waits for its dependency to be Ready, then applies; a cycle is refused', async () => {
    // given a sync that depends on one that does not exist yet
    await applyConfigSync(sync('app', 'app', { dependsOn: [{ name: 'base' }] }));
    const waiting = await until('app', (c) => condition(c, 'Ready')?.reason === 'DependencyNotReady', 'DependencyNotReady');
    expect(condition(waiting, 'Ready')?.message).toContain('base (not found)');
    expect(await configMapData(ns.name, 'app')).toBeUndefined();

    // when the dependency is created and becomes Ready, then the dependent applies
    await applyConfigSync(sync('base', 'base'));
    await until('app', (c) => condition(c, 'Ready')?.status === 'True', 'Ready=True after its dependency');
    expect(await configMapData(ns.name, 'app')).toEqual({ d: '4' });

    // given two syncs that depend on each other, then both are refused with the cycle named
    // (nothing is fetched or applied for them, so they may name any path)
    await applyConfigSync(sync('loop-a', 'app', { dependsOn: [{ name: 'loop-b' }] }));
    await applyConfigSync(sync('loop-b', 'app', { dependsOn: [{ name: 'loop-a' }] }));
    for (const name of ['loop-a', 'loop-b']) {
      const cs = await until(name, (c) => condition(c, 'Ready')?.reason === 'DependencyCycle', 'DependencyCycle');
      expect(condition(cs, 'Stalled')).toMatchObject({ status: 'True', reason: 'DependencyCycle' });
      expect(condition(cs, 'Ready')?.message).toMatch(/loop-[ab] → loop-[ab] → loop-[ab]/);
    }
  }, 120_000);
});

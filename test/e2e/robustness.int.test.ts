// End to end with two real control planes: a NamespaceReplication of every default kind into a RemoteCluster,
// beside a ConfigSync that applies many kinds, keeps more watches open than a capped connection pool holds;
// the ConfigSync still reconciles, statuses are written and the leader keeps renewing its Lease. Then the
// operator is restarted again and again while RemoteClusters, ManifestSyncs and NamespaceReplications exist:
// every object converges each time, whatever order the caches fill in. Past the watch budget, the object that
// needs the watches says so in its status.
import {
  startControlPlane,
  startGitServer,
  startOperator,
  type ControlPlane,
  type GitServer,
  type OperatorProcess,
  type TestRepo,
} from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { KubeConfig } from '@kubernetes/client-node';
import { createKubeRest, type ManifestSync, type NamespaceReplication } from '@syncline/operator';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { applyConfigSync, configSync, eventually, installCrds, rest, waitForReady } from './harness.ts';

type Lease = { spec?: { holderIdentity?: string; renewTime?: string } };
type Conditioned = {
  metadata: { generation?: number };
  status?: { observedGeneration?: number; conditions?: { type: string; status: string; reason: string; message: string }[] };
};

/** Nine kinds, so the ConfigSync's drift watches add to the replication's. */
const manifests = (revision: string): Record<string, string> => ({
  'app/configmap.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {revision: "${revision}"}\n`,
  'app/secret.yaml': 'apiVersion: v1\nkind: Secret\nmetadata: {name: web}\nstringData: {key: value}\n',
  'app/service.yaml': 'apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  ports: [{port: 80}]\n  selector: {app: web}\n',
  'app/serviceaccount.yaml': 'apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: web}\n',
  'app/role.yaml':
    'apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: web}\nrules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]\n',
  'app/rolebinding.yaml':
    'apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: web}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: web}\nsubjects: [{kind: ServiceAccount, name: web}]\n',
  'app/deployment.yaml':
    'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: nginx:1.27}]\n',
  'app/networkpolicy.yaml': 'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: web}\nspec:\n  podSelector: {matchLabels: {app: web}}\n',
  'app/pdb.yaml':
    'apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web}\nspec:\n  maxUnavailable: 1\n  selector: {matchLabels: {app: web}}\n',
});

describe('robust under many watches and restarts', () => {
  let git: GitServer;
  let repo: TestRepo;
  let home: TestNamespace;
  let dr: ControlPlane;
  let operator: OperatorProcess;
  const operatorArgs = (): string[] => ['--namespace', home.name, '--leader-elect', '--leader-election-namespace', home.name];
  const path = (plural: string, name: string): string => `/apis/syncline.dev/v1alpha1/namespaces/${home.name}/${plural}/${name}`;
  const apply = async (kind: string, plural: string, name: string, spec: Record<string, unknown>): Promise<void> => {
    await rest.request({
      method: 'PATCH',
      path: path(plural, name),
      query: { fieldManager: 'syncline-tests', force: true },
      contentType: 'application/apply-patch+yaml',
      body: { apiVersion: 'syncline.dev/v1alpha1', kind, metadata: { name, namespace: home.name }, spec },
    });
  };
  const ready = (object: Conditioned): boolean => {
    const condition = object.status?.conditions?.find((c) => c.type === 'Ready');
    return condition?.status === 'True' && object.status?.observedGeneration === object.metadata.generation;
  };
  const readyNow = async (plural: string, name: string, timeoutMs = 120_000): Promise<Conditioned> => {
    let last: Conditioned | undefined;
    try {
      return await eventually(
        async () => {
          last = await rest.request<Conditioned>({ method: 'GET', path: path(plural, name) });
          return ready(last) ? last : undefined;
        },
        `${plural}/${name} to be Ready for its generation`,
        timeoutMs,
      );
    } catch (error) {
      throw new Error(`${(error as Error).message}; last status: ${JSON.stringify(last?.status)}`);
    }
  };
  const renewTime = async (): Promise<string | undefined> =>
    (await rest.request<Lease>({ method: 'GET', path: `/apis/coordination.k8s.io/v1/namespaces/${home.name}/leases/syncline-leader` })).spec?.renewTime;

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    home = await testNamespace({ prefix: 'robust' });
    dr = await startControlPlane();
    const drKc = new KubeConfig();
    drKc.loadFromFile(dr.kubeconfigPath);
    await (
      await createKubeRest(drKc)
    ).request({ method: 'POST', path: '/api/v1/namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'copies' } } });
    const config = parse(await readFile(dr.kubeconfigPath, 'utf8')) as { users: { name: string }[]; contexts: { name: string }[] };
    const kubeconfig = stringify({
      ...config,
      users: config.users.filter((u) => u.name === 'admin'),
      contexts: config.contexts.filter((c) => c.name === 'admin'),
      'current-context': 'admin',
    });
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${home.name}/secrets`,
      body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'dr-kubeconfig' }, stringData: { kubeconfig } },
    });
    await apply('RemoteCluster', 'remoteclusters', 'dr', { kubeconfigSecretRef: { name: 'dr-kubeconfig', key: 'kubeconfig' }, probeInterval: '5s' });
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${home.name}/configmaps`,
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' }, data: { mode: 'primary' } },
    });
    repo = await git.createRepo('robust');
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: operatorArgs() });
  }, 300_000);
  afterAll(async () => {
    await operator.stop();
    await dr.stop();
    await home[Symbol.asyncDispose]();
    await git.close();
  });

  it('a NamespaceReplication of every default kind to a RemoteCluster does not starve the other reconciles or the Lease', async () => {
    const first = await repo.commit(manifests('one'));
    await applyConfigSync(
      configSync(home.name, 'web', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '1s',
        targets: [{ name: 'local', namespace: home.name }],
      }),
    );
    await waitForReady(home.name, 'web', (cs) => cs.status?.sourceRevision === first, 90_000);

    // Every default kind, watched in the source and (drift) in the destination.
    await apply('NamespaceReplication', 'namespacereplications', 'standby', { destination: { cluster: { name: 'dr' }, namespace: 'standby' } });
    const replicated = (await readyNow('namespacereplications', 'standby')) as NamespaceReplication;
    expect(replicated.status?.kinds).toEqual(expect.arrayContaining([{ kind: 'ConfigMap', objects: expect.any(Number) as number }]));

    // The ConfigSync still reconciles a new commit, and its status is written.
    const second = await repo.commit(manifests('two'));
    await waitForReady(home.name, 'web', (cs) => cs.status?.sourceRevision === second, 90_000);
    // The leader keeps renewing its Lease.
    const before = await renewTime();
    await eventually(async () => ((await renewTime()) !== before ? true : undefined), 'the Lease to be renewed', 60_000);
    expect(operator.logs.filter((l) => typeof l['level'] === 'number' && l['level'] >= 50)).toEqual([]);
  }, 420_000);

  it('after each of several restarts, RemoteClusters, ManifestSyncs and NamespaceReplications converge', async () => {
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${home.name}/secrets`,
      body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, stringData: { password: 'one' } },
    });
    await apply('ManifestSync', 'manifestsyncs', 'db', {
      sourceRef: { apiVersion: 'v1', kind: 'Secret', name: 'db' },
      targets: [{ namespace: 'copies', cluster: { name: 'dr' } }],
    });
    await readyNow('manifestsyncs', 'db');
    for (let round = 1; round <= 4; round++) {
      // Changed while the operator is down: each object must be reconciled (and succeed) by the new process.
      await operator.stop();
      await apply('RemoteCluster', 'remoteclusters', 'dr', {
        kubeconfigSecretRef: { name: 'dr-kubeconfig', key: 'kubeconfig' },
        probeInterval: `${5 + round}s`,
      });
      await apply('ManifestSync', 'manifestsyncs', 'db', {
        sourceRef: { apiVersion: 'v1', kind: 'Secret', name: 'db' },
        targets: [{ namespace: 'copies', cluster: { name: 'dr' } }],
        patch: { metadata: { annotations: { round: String(round) } } },
      });
      await apply('NamespaceReplication', 'namespacereplications', 'standby', {
        destination: { cluster: { name: 'dr' }, namespace: 'standby' },
        interval: `${5 + round}m`,
      });
      operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: operatorArgs() });
      await readyNow('remoteclusters', 'dr');
      const copy = (await readyNow('manifestsyncs', 'db')) as ManifestSync;
      expect(copy.status?.targets?.every((t) => t.phase === 'Synced')).toBe(true);
      await readyNow('namespacereplications', 'standby');
    }
  }, 900_000);

  it('past the watch budget, a NamespaceReplication says so in its status, and recovers once the budget allows', async () => {
    // The manager's and mirroring's own watches take 13 of 20: the 15 kinds of the replication's source do not fit.
    await operator.stop();
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: [...operatorArgs(), '--watch-budget', '20'] });
    const refused = await eventually(
      async () => {
        const nr = await rest.request<Conditioned>({ method: 'GET', path: path('namespacereplications', 'standby') });
        const condition = nr.status?.conditions?.find((c) => c.type === 'Ready');
        return condition?.reason === 'WatchBudgetExceeded' ? condition : undefined;
      },
      'the replication to report the watch budget',
      120_000,
    );
    expect(refused.status).toBe('False');
    expect(refused.message).toMatch(/the watch budget \(--watch-budget=20\) is exhausted/);

    await operator.stop();
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: operatorArgs() });
    await eventually(
      async () => {
        const nr = await rest.request<Conditioned>({ method: 'GET', path: path('namespacereplications', 'standby') });
        return nr.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? true : undefined;
      },
      'the replication to be Ready again',
      120_000,
    );
  }, 420_000);
});

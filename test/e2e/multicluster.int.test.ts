// End to end with three real control planes: the suite's (local) and two started here as remote clusters.
// One ConfigSync renders into all three with per-cluster values; a remote cluster that hangs fails only its
// own target; a rotated token keeps working; refused kubeconfigs run nothing; deletion prunes everywhere;
// a ManifestSync copies a Secret into a remote namespace.
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import type { RemoteCluster } from '@syncline/operator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { startClusterProxy, type ClusterProxy } from './proxy.ts';
import {
  applyConfigSync,
  condition,
  configMapData,
  configSync,
  core,
  deleteConfigSync,
  eventually,
  installCrds,
  readConfigSync,
  rest,
  waitForReady,
} from './harness.ts';

type Kubeconfig = { clusters: { cluster: { server: string; 'certificate-authority-data': string } }[]; users: { name: string; user: { token: string } }[] };

describe('multi-cluster', () => {
  let git: GitServer;
  let home: TestNamespace;
  let operator: OperatorProcess;
  let east: ControlPlane;
  let west: ControlPlane;
  let westProxy: ClusterProxy;
  let eastConfig: Kubeconfig;
  let westConfig: Kubeconfig;

  const coreOf = (plane: ControlPlane): CoreV1Api => {
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    return kc.makeApiClient(CoreV1Api);
  };
  const remoteData = async (plane: ControlPlane, namespace: string, name: string): Promise<Record<string, string> | undefined> => {
    try {
      return (await coreOf(plane).readNamespacedConfigMap({ name, namespace })).data ?? {};
    } catch (error) {
      if ((error as { code?: number }).code === 404) return undefined;
      throw error;
    }
  };
  const putSecret = async (name: string, stringData: Record<string, string>): Promise<void> => {
    await rest.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${home.name}/secrets/${name}`,
      query: { fieldManager: 'syncline-tests', force: true },
      contentType: 'application/apply-patch+yaml',
      body: { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: home.name }, stringData },
    });
  };
  const applyRemoteCluster = async (name: string, spec: Record<string, unknown>): Promise<void> => {
    await rest.request({
      method: 'PATCH',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${home.name}/remoteclusters/${name}`,
      query: { fieldManager: 'syncline-tests', force: true },
      contentType: 'application/apply-patch+yaml',
      body: { apiVersion: 'syncline.dev/v1alpha1', kind: 'RemoteCluster', metadata: { name, namespace: home.name }, spec },
    });
  };
  const readRemoteCluster = (name: string): Promise<RemoteCluster> =>
    rest.request<RemoteCluster>({ method: 'GET', path: `/apis/syncline.dev/v1alpha1/namespaces/${home.name}/remoteclusters/${name}` });
  const clusterReady = async (name: string, reason: string): Promise<RemoteCluster> =>
    eventually(
      async () => {
        const rc = await readRemoteCluster(name);
        return rc.status?.conditions?.find((c) => c.type === 'Ready')?.reason === reason ? rc : undefined;
      },
      `RemoteCluster ${name} to say ${reason}`,
      60_000,
    );

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    home = await testNamespace({ prefix: 'multi' });
    [east, west] = await Promise.all([startControlPlane(), startControlPlane()]);
    eastConfig = parse(await readFile(east.kubeconfigPath, 'utf8')) as Kubeconfig;
    westConfig = parse(await readFile(west.kubeconfigPath, 'utf8')) as Kubeconfig;
    westProxy = await startClusterProxy(Number(new URL(west.server).port));
    for (const plane of [east, west]) await coreOf(plane).createNamespace({ body: { metadata: { name: 'apps' } } });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', home.name] });

    // east: a whole kubeconfig; west: server + CA + token, through the proxy
    const eastKubeconfig = stringify({
      ...eastConfig,
      contexts: [{ name: 'admin', context: { cluster: 'syncline-test', user: 'admin' } }],
      'current-context': 'admin',
      users: eastConfig.users.filter((u) => u.name === 'admin'),
    });
    await putSecret('east-kubeconfig', { kubeconfig: eastKubeconfig });
    await putSecret('west-ca', { 'ca.crt': Buffer.from(westConfig.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64').toString() });
    await putSecret('west-token', { token: westConfig.users.find((u) => u.name === 'admin')?.user.token ?? '' });
    await applyRemoteCluster('east', { kubeconfigSecretRef: { name: 'east-kubeconfig', key: 'kubeconfig' }, probeInterval: '5s' });
    await applyRemoteCluster('west', {
      server: `https://127.0.0.1:${westProxy.port}`,
      caSecretRef: { name: 'west-ca', key: 'ca.crt' },
      tokenSecretRef: { name: 'west-token', key: 'token' },
      probeInterval: '5s',
    });
  }, 300_000);
  afterAll(async () => {
    await operator.stop();
    await westProxy.close();
    await Promise.all([east.stop(), west.stop()]);
    await home[Symbol.asyncDispose]();
    await git.close();
  });

  it('probes each RemoteCluster: Ready, Connected, the server version', async () => {
    for (const name of ['east', 'west']) {
      const rc = await clusterReady(name, 'Connected');
      expect(rc.status?.serverVersion).toMatch(/^v\d+\.\d+/);
      expect(rc.status?.lastProbeTime).toBeDefined();
    }
  });

  let repo: TestRepo;
  const template =
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fleet\ndata:\n  color: {{ values.color }}\n  cluster: "{{ target.cluster }}"\n  commit: "{{ values.commit }}"\n';

  it('applies one ConfigSync into the local cluster and two remote ones with per-cluster values, and a change lands in all three', async () => {
    await clusterReady('east', 'Connected');
    await clusterReady('west', 'Connected');
    repo = await git.createRepo('fleet');
    const sha = await repo.commit({ 'app/fleet.yaml.hbs': template });
    await applyConfigSync(
      configSync(home.name, 'fleet', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '1s',
        values: { color: 'grey', commit: 'one' },
        targets: [
          { name: 'local', namespace: home.name },
          { name: 'east', namespace: 'apps', cluster: { name: 'east' }, values: { color: 'blue' } },
          { name: 'west', namespace: 'apps', cluster: { name: 'west' }, values: { color: 'green' } },
        ],
      }),
    );
    const cs = await waitForReady(home.name, 'fleet', (c) => c.status?.sourceRevision === sha && c.status.appliedTargets === 3, 60_000);
    expect(cs.status?.targets?.map((t) => [t.name, t.cluster, t.phase])).toEqual([
      ['local', undefined, 'Synced'],
      ['east', 'east', 'Synced'],
      ['west', 'west', 'Synced'],
    ]);
    expect(await configMapData(home.name, 'fleet')).toEqual({ color: 'grey', cluster: '', commit: 'one' });
    expect(await remoteData(east, 'apps', 'fleet')).toEqual({ color: 'blue', cluster: 'east', commit: 'one' });
    expect(await remoteData(west, 'apps', 'fleet')).toEqual({ color: 'green', cluster: 'west', commit: 'one' });

    const next = await repo.commit({ 'app/fleet.yaml.hbs': template.replace('{{ values.commit }}', 'two') });
    await waitForReady(home.name, 'fleet', (c) => c.status?.sourceRevision === next, 60_000);
    for (const [plane, ns] of [
      [east, 'apps'],
      [west, 'apps'],
    ] as const)
      expect((await remoteData(plane, ns, 'fleet'))?.['commit']).toBe('two');
    expect((await configMapData(home.name, 'fleet'))?.['commit']).toBe('two');
  });

  it('a remote cluster that hangs fails only its own target; the others keep syncing; back, it converges', async () => {
    westProxy.setHang(true);
    const three = await repo.commit({ 'app/fleet.yaml.hbs': template.replace('{{ values.commit }}', 'three') });
    await eventually(
      async () =>
        (await configMapData(home.name, 'fleet'))?.['commit'] === 'three' && (await remoteData(east, 'apps', 'fleet'))?.['commit'] === 'three'
          ? true
          : undefined,
      'local and east at commit three',
      60_000,
    );
    const partial = await eventually(
      async () => {
        const c = await readConfigSync(home.name, 'fleet');
        return c.status?.targets?.find((t) => t.name === 'west')?.phase === 'Failed' ? c : undefined;
      },
      'the west target to fail',
      90_000,
    );
    expect(condition(partial, 'Ready')?.status).toBe('False');
    expect(condition(partial, 'Ready')?.message).toMatch(/west/);
    expect(partial.status?.targets?.find((t) => t.name === 'local')?.phase).toBe('Synced');
    expect((await remoteData(west, 'apps', 'fleet'))?.['commit']).toBe('two');

    westProxy.setHang(false);
    await waitForReady(home.name, 'fleet', (c) => c.status?.sourceRevision === three && c.status.appliedTargets === 3, 120_000);
    expect((await remoteData(west, 'apps', 'fleet'))?.['commit']).toBe('three');
    // waits out request timeouts and backoff on purpose: far longer than the default test timeout
  }, 300_000);

  it('keeps working when the token in the Secret is rotated', async () => {
    // a ServiceAccount with rights in east; its token replaces the admin's, then the first account goes
    const eastCore = coreOf(east);
    const eastKc = new KubeConfig();
    eastKc.loadFromFile(east.kubeconfigPath);
    const rbac = eastKc.makeApiClient(RbacAuthorizationV1Api);
    const tokenOf = async (account: string): Promise<string> => {
      await eastCore.createNamespacedServiceAccount({ namespace: 'default', body: { metadata: { name: account } } });
      await rbac.createClusterRoleBinding({
        body: {
          metadata: { name: account },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [{ kind: 'ServiceAccount', name: account, namespace: 'default' }],
        },
      });
      return (
        (await eastCore.createNamespacedServiceAccountToken({ name: account, namespace: 'default', body: { spec: { expirationSeconds: 3600 } } })).status
          ?.token ?? ''
      );
    };
    const kubeconfigWith = (token: string): string =>
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: eastConfig.clusters,
        users: [{ name: 'sa', user: { token } }],
        contexts: [{ name: 'sa', context: { cluster: 'syncline-test', user: 'sa' } }],
        'current-context': 'sa',
      });
    await putSecret('east-kubeconfig', { kubeconfig: kubeconfigWith(await tokenOf('deployer-1')) });
    const four = await repo.commit({ 'app/fleet.yaml.hbs': template.replace('{{ values.commit }}', 'four') });
    await eventually(
      async () => ((await remoteData(east, 'apps', 'fleet'))?.['commit'] === 'four' ? true : undefined),
      'east at commit four with the first token',
      60_000,
    );

    await putSecret('east-kubeconfig', { kubeconfig: kubeconfigWith(await tokenOf('deployer-2')) });
    await eastCore.deleteNamespacedServiceAccount({ name: 'deployer-1', namespace: 'default' });
    const five = await repo.commit({ 'app/fleet.yaml.hbs': template.replace('{{ values.commit }}', 'five') });
    await waitForReady(home.name, 'fleet', (c) => c.status?.sourceRevision === five && c.status.appliedTargets === 3, 60_000);
    expect((await remoteData(east, 'apps', 'fleet'))?.['commit']).toBe('five');
    await clusterReady('east', 'Connected');
    void four;
  });

  it('refuses each dangerous or broken kubeconfig with a condition, and runs nothing', async () => {
    const marker = join(tmpdir(), `syncline-exec-ran-${randomBytes(4).toString('hex')}`);
    const cluster = {
      name: 'c',
      cluster: { server: east.server, 'certificate-authority-data': eastConfig.clusters[0]?.cluster['certificate-authority-data'] },
    };
    const variants: [string, Record<string, unknown>, RegExp][] = [
      [
        'exec',
        {
          clusters: [cluster],
          users: [{ name: 'u', user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: '/bin/sh', args: ['-c', `touch ${marker}`] } } }],
        },
        /runs a command \(exec\): refused/,
      ],
      [
        'auth-provider',
        { clusters: [cluster], users: [{ name: 'u', user: { 'auth-provider': { name: 'oidc', config: {} } } }] },
        /auth-provider plugin: refused/,
      ],
      [
        'file',
        {
          clusters: [{ name: 'c', cluster: { server: east.server, 'certificate-authority': '/etc/ssl/certs/ca-certificates.crt' } }],
          users: [{ name: 'u', user: { token: 'x' } }],
        },
        /reads a file \(certificate-authority\)/,
      ],
      [
        'token-file',
        { clusters: [cluster], users: [{ name: 'u', user: { tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' } }] },
        /reads a file \(tokenFile\)/,
      ],
      [
        'insecure',
        { clusters: [{ name: 'c', cluster: { server: east.server, 'insecure-skip-tls-verify': true } }], users: [{ name: 'u', user: { token: 'x' } }] },
        /insecure-skip-tls-verify is set: refused/,
      ],
    ];
    for (const [name, config] of variants) {
      await putSecret(`bad-${name}`, {
        kubeconfig: stringify({
          apiVersion: 'v1',
          kind: 'Config',
          contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
          'current-context': 'x',
          ...config,
        }),
      });
      await applyRemoteCluster(`bad-${name}`, { kubeconfigSecretRef: { name: `bad-${name}`, key: 'kubeconfig' } });
    }
    await putSecret('bad-contexts', {
      kubeconfig: stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [cluster],
        users: [{ name: 'u', user: { token: 'x' } }],
        contexts: [
          { name: 'a', context: { cluster: 'c', user: 'u' } },
          { name: 'b', context: { cluster: 'c', user: 'u' } },
        ],
      }),
    });
    await applyRemoteCluster('bad-contexts', { kubeconfigSecretRef: { name: 'bad-contexts', key: 'kubeconfig' } });
    await putSecret('bad-token', { token: 'not-a-token' });
    await applyRemoteCluster('bad-token', {
      server: east.server,
      caSecretRef: { name: 'west-ca', key: 'ca.crt' },
      tokenSecretRef: { name: 'bad-token', key: 'token' },
    });

    for (const [name, , message] of variants)
      expect((await clusterReady(`bad-${name}`, 'InvalidKubeconfig')).status?.conditions?.[0]?.message).toMatch(message);
    expect((await clusterReady('bad-contexts', 'InvalidKubeconfig')).status?.conditions?.[0]?.message).toMatch(/2 contexts and no current-context/);
    // east's own CA does not sign west's... the CA here is west's: either way the token is refused or TLS fails
    const badToken = await eventually(async () => {
      const rc = await readRemoteCluster('bad-token');
      const reason = rc.status?.conditions?.[0]?.reason;
      return reason === 'Unauthorized' || reason === 'Unreachable' ? rc : undefined;
    }, 'bad-token to be refused');
    expect(JSON.stringify(badToken.status)).not.toContain('not-a-token');
    expect(existsSync(marker)).toBe(false);
  });

  it('a cluster whose objects may be written but not watched: the target says drift is checked at the refresh interval', async () => {
    // given an identity in east that may read and write ConfigMaps in apps, but not watch them
    const eastKc = new KubeConfig();
    eastKc.loadFromFile(east.kubeconfigPath);
    const eastCore = coreOf(east);
    const rbac = eastKc.makeApiClient(RbacAuthorizationV1Api);
    await eastCore.createNamespacedServiceAccount({ namespace: 'apps', body: { metadata: { name: 'no-watch' } } });
    await rbac.createNamespacedRole({
      namespace: 'apps',
      body: {
        metadata: { name: 'no-watch' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'patch', 'update', 'delete'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: 'apps',
      body: {
        metadata: { name: 'no-watch' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'no-watch' },
        subjects: [{ kind: 'ServiceAccount', name: 'no-watch', namespace: 'apps' }],
      },
    });
    const token =
      (await eastCore.createNamespacedServiceAccountToken({ name: 'no-watch', namespace: 'apps', body: { spec: { expirationSeconds: 3600 } } })).status
        ?.token ?? '';
    await putSecret('east-no-watch', { token });
    await putSecret('east-ca', { 'ca.crt': Buffer.from(eastConfig.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64').toString() });
    await applyRemoteCluster('east-no-watch', {
      server: east.server,
      caSecretRef: { name: 'east-ca', key: 'ca.crt' },
      tokenSecretRef: { name: 'east-no-watch', key: 'token' },
    });
    const blind = await git.createRepo('blind');
    const sha = await blind.commit({ 'app/blind.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: blind\ndata:\n  v: "1"\n' });
    // when a sync applies there, then it applies and says how drift is watched instead
    await applyConfigSync(
      configSync(home.name, 'blind', {
        source: { git: { repo: blind.url, revision: 'main', path: 'app' } },
        refreshInterval: '1m',
        targets: [{ name: 'east', namespace: 'apps', cluster: { name: 'east-no-watch' } }],
      }),
    );
    const cs = await waitForReady(
      home.name,
      'blind',
      (c) => c.status?.sourceRevision === sha && (c.status.targets?.[0]?.message ?? '').includes('cannot watch'),
      60_000,
    );
    expect(cs.status?.targets?.[0]).toMatchObject({ phase: 'Synced', cluster: 'east-no-watch' });
    expect(cs.status?.targets?.[0]?.message).toMatch(/cannot watch cluster .*east-no-watch for drift; checked every/);
    expect(await remoteData(east, 'apps', 'blind')).toEqual({ v: '1' });
    await deleteConfigSync(home.name, 'blind');
  });

  it('copies a Secret into a namespace of a remote cluster with a ManifestSync', async () => {
    await putSecret('shared-credentials', { password: 'remote-copy' });
    await rest.request({
      method: 'PATCH',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${home.name}/manifestsyncs/to-east`,
      query: { fieldManager: 'syncline-tests', force: true },
      contentType: 'application/apply-patch+yaml',
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'ManifestSync',
        metadata: { name: 'to-east', namespace: home.name },
        spec: { sourceRef: { apiVersion: 'v1', kind: 'Secret', name: 'shared-credentials' }, targets: [{ namespace: 'apps', cluster: { name: 'east' } }] },
      },
    });
    await eventually(
      async () => {
        const secret = await coreOf(east)
          .readNamespacedSecret({ name: 'shared-credentials', namespace: 'apps' })
          .catch(() => undefined);
        return secret?.data?.['password'] === Buffer.from('remote-copy').toString('base64') ? true : undefined;
      },
      'the copy in east',
      60_000,
    );
  });

  it('prunes in every cluster when the ConfigSync is deleted', async () => {
    await deleteConfigSync(home.name, 'fleet');
    await eventually(
      async () =>
        (await configMapData(home.name, 'fleet')) === undefined &&
        (await remoteData(east, 'apps', 'fleet')) === undefined &&
        (await remoteData(west, 'apps', 'fleet')) === undefined
          ? true
          : undefined,
      'fleet pruned from all three clusters',
      60_000,
    );
    void core;
  });
});

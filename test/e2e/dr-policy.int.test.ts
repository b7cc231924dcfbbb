// End to end with two real control planes of its own: a NamespaceReplicationPolicy in a trusted namespace keeps
// one NamespaceReplication per namespace labelled dr=gold — including a namespace labelled later and one
// created later — each with its standby under the mapped name; a namespace unlabelled with kubectl loses its
// replication and keeps its standby data; a policy in an untrusted namespace creates nothing; and the incident
// columns (`syncline get nsrepl -A`, the policy's summary) say what a person needs.
import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { startControlPlane, startOperator, type ControlPlane, type OperatorProcess } from '@syncline/test-support';
import { createKubeRest, installCrds, type KubeRest, type NamespaceReplication, type NamespaceReplicationPolicy } from '@syncline/operator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { eventually } from './harness.ts';

const root = join(import.meta.dirname, '..', '..');
const bin = join(root, 'packages', 'cli', 'bin', 'syncline.js');
type Result = { code: number; stdout: string; stderr: string };

function run(file: string, args: readonly string[]): Promise<Result> {
  const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}` };
  return new Promise((resolve) => {
    execFile(file, [...args], { env, cwd: root, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

const OPS = 'ops';
const API = '/apis/syncline.dev/v1alpha1';

describe('replication policy: many namespaces with one object', () => {
  let primary: ControlPlane;
  let standby: ControlPlane;
  let operator: OperatorProcess | undefined;
  let rest: KubeRest;
  const primaryKc = new KubeConfig();
  const standbyKc = new KubeConfig();
  const kubectl = (args: readonly string[]): Promise<Result> => run('kubectl', ['--kubeconfig', primary.kubeconfigPath, ...args]);
  const replications = async (): Promise<NamespaceReplication[]> =>
    (await rest.request<{ items: NamespaceReplication[] }>({ method: 'GET', path: `${API}/namespaces/${OPS}/namespacereplications` })).items;
  const readPolicy = (namespace: string, name: string): Promise<NamespaceReplicationPolicy> =>
    rest.request<NamespaceReplicationPolicy>({ method: 'GET', path: `${API}/namespaces/${namespace}/namespacereplicationpolicies/${name}` });
  const standbyConfigMap = (namespace: string): Promise<string | undefined> =>
    standbyKc
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ name: 'settings', namespace })
      .then(
        (cm) => cm.data?.['app'],
        () => undefined,
      );
  const protect = async (name: string, labels: Record<string, string> = {}): Promise<void> => {
    const core = primaryKc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name, labels } } });
    await core.createNamespacedConfigMap({ namespace: name, body: { metadata: { name: 'settings' }, data: { app: name } } });
    await primaryKc.makeApiClient(AppsV1Api).createNamespacedDeployment({
      namespace: name,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } },
        },
      },
    });
  };
  const policy = (namespace: string) => ({
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'NamespaceReplicationPolicy',
    metadata: { name: 'gold', namespace },
    spec: {
      namespaceSelector: { matchLabels: { dr: 'gold' } },
      namespaceMapping: { suffix: '-dr' },
      template: { destination: { cluster: { name: 'dr' } }, interval: '3s', resourceTypes: ['Deployment.apps', 'ConfigMap'] },
    },
  });

  beforeAll(async () => {
    [primary, standby] = await Promise.all([startControlPlane(), startControlPlane()]);
    primaryKc.loadFromFile(primary.kubeconfigPath);
    standbyKc.loadFromFile(standby.kubeconfigPath);
    rest = await createKubeRest(primaryKc);
    await installCrds(rest, { fieldManager: 'syncline-tests' });
    const core = primaryKc.makeApiClient(CoreV1Api);
    for (const name of [OPS, 'tenant']) await core.createNamespace({ body: { metadata: { name } } });
    const config = parse(await readFile(standby.kubeconfigPath, 'utf8')) as { users: { name: string }[]; contexts: { name: string }[] };
    const kubeconfig = stringify({
      ...config,
      users: config.users.filter((u) => u.name === 'admin'),
      contexts: config.contexts.filter((c) => c.name === 'admin'),
      'current-context': 'admin',
    });
    await core.createNamespacedSecret({ namespace: OPS, body: { metadata: { name: 'dr-kubeconfig' }, stringData: { kubeconfig } } });
    await rest.request({
      method: 'POST',
      path: `${API}/namespaces/${OPS}/remoteclusters`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'RemoteCluster',
        metadata: { name: 'dr' },
        spec: { kubeconfigSecretRef: { name: 'dr-kubeconfig', key: 'kubeconfig' }, probeInterval: '5s' },
      },
    });
    await protect('shop', { dr: 'gold' });
    await protect('blog');
    for (const namespace of [OPS, 'tenant'])
      await rest.request({ method: 'POST', path: `${API}/namespaces/${namespace}/namespacereplicationpolicies`, body: policy(namespace) });
    operator = await startOperator({
      kubeconfig: primary.kubeconfigPath,
      args: ['--mirror', 'off', '--trusted-namespaces', OPS, '--dr-heartbeat-interval', '1s'],
    });
  }, 400_000);

  afterAll(async () => {
    await operator?.stop();
    await primary.stop();
    await standby.stop();
  });

  it('replicates every labelled namespace through one NamespaceReplication each, under the mapped standby name', async () => {
    await eventually(async () => ((await standbyConfigMap('shop-dr')) === 'shop' ? true : undefined), 'shop replicated into shop-dr', 120_000);
    const [nr, ...others] = await replications();
    expect(others).toEqual([]);
    expect(nr?.metadata.name).toBe('gold-shop');
    expect(nr?.spec).toMatchObject({ sourceNamespace: 'shop', destination: { cluster: { name: 'dr' }, namespace: 'shop-dr' }, interval: '3s' });
    expect((nr?.metadata as { ownerReferences?: unknown[] }).ownerReferences).toEqual([
      expect.objectContaining({ kind: 'NamespaceReplicationPolicy', name: 'gold', controller: true }),
    ]);
    expect((await standbyKc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: 'web', namespace: 'shop-dr' })).spec?.replicas).toBe(0);
    const status = await eventually(
      async () => {
        const p = await readPolicy(OPS, 'gold');
        return p.status?.ready === 1 && p.status.namespaces?.[0]?.lastChange !== undefined ? p.status : undefined;
      },
      'the policy to summarise its namespace',
      60_000,
    );
    expect(status).toMatchObject({ matched: 1, ready: 1, promoted: 0, inventory: [{ replication: 'gold-shop', namespace: 'shop' }] });
    expect(status.namespaces).toEqual([expect.objectContaining({ namespace: 'shop', standbyNamespace: 'shop-dr', replication: 'gold-shop', ready: 'True' })]);
    expect(status.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      message: expect.stringContaining('1 namespace(s) matched, 1 replicating') as string,
    });

    // the incident view: the last replicated change, the heartbeat as the standby stored it, not promoted
    const table = await eventually(
      async () => {
        const result = await run(process.execPath, [bin, 'get', 'nsrepl', '-A', '--kubeconfig', primary.kubeconfigPath]);
        return /^ops\s+gold-shop\s.*\s\d+s\s+standby\s/m.test(result.stdout) ? result.stdout : undefined;
      },
      'get nsrepl -A to show the heartbeat and the standby state',
      60_000,
    );
    expect(table).toMatch(/^NAMESPACE\s+NAME\s+SOURCE\s+CLUSTER\s+.*LAST CHANGE\s+FENCED\s+HEARTBEAT\s+STANDBY\s+AGE$/m);
    const policies = await run(process.execPath, [bin, 'get', 'drpolicy', '-n', OPS, '--kubeconfig', primary.kubeconfigPath]);
    expect(policies.stdout).toMatch(
      /^NAME\s+CLUSTER\s+NAMESPACES\s+REPLICATING\s+PROMOTED\s+OLDEST CHANGE\s+READY\s+AGE\ngold\s+dr\s+1\s+1\s+0\s+\d+s\s+True\s/m,
    );
  }, 240_000);

  it('ignores a policy in a namespace that is not trusted, and says why', async () => {
    const refused = await eventually(
      async () => {
        const p = await readPolicy('tenant', 'gold');
        return p.status?.conditions?.find((c) => c.type === 'Stalled' && c.status === 'True');
      },
      'the untrusted policy to be Stalled',
      60_000,
    );
    expect(refused).toMatchObject({ reason: 'NamespaceNotAllowed', message: expect.stringContaining('only one in a trusted namespace') as string });
    const inTenant = await rest.request<{ items: unknown[] }>({ method: 'GET', path: `${API}/namespaces/tenant/namespacereplications` });
    expect(inTenant.items).toEqual([]);
  }, 120_000);

  it('picks up a namespace labelled later and one created later', async () => {
    expect((await kubectl(['label', 'namespace', 'blog', 'dr=gold'])).code).toBe(0);
    await protect('news', { dr: 'gold' });
    await eventually(
      async () => ((await standbyConfigMap('blog-dr')) === 'blog' && (await standbyConfigMap('news-dr')) === 'news' ? true : undefined),
      'blog and news replicated',
      120_000,
    );
    expect((await replications()).map((nr) => nr.metadata.name).sort()).toEqual(['gold-blog', 'gold-news', 'gold-shop']);
    await eventually(async () => ((await readPolicy(OPS, 'gold')).status?.ready === 3 ? true : undefined), 'three namespaces replicating', 60_000);
  }, 240_000);

  it('an unlabelled namespace loses its NamespaceReplication; its standby data stays', async () => {
    expect((await kubectl(['label', 'namespace', 'blog', 'dr-'])).code).toBe(0);
    await eventually(async () => ((await replications()).some((nr) => nr.metadata.name === 'gold-blog') ? undefined : true), 'gold-blog removed', 60_000);
    const status = await eventually(
      async () => {
        const p = await readPolicy(OPS, 'gold');
        return p.status?.matched === 2 ? p.status : undefined;
      },
      'the policy to list two namespaces',
      60_000,
    );
    expect(status.inventory?.map((e) => e.replication)).toEqual(['gold-news', 'gold-shop']);
    expect(status.namespaces?.map((r) => r.namespace)).toEqual(['news', 'shop']);
    // the standby of blog is left exactly as it was: nothing deleted there
    expect(await standbyConfigMap('blog-dr')).toBe('blog');
    expect((await standbyKc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: 'web', namespace: 'blog-dr' })).metadata?.name).toBe('web');
    // and a change in blog no longer reaches it
    await primaryKc
      .makeApiClient(CoreV1Api)
      .patchNamespacedConfigMap({ name: 'settings', namespace: 'blog', body: [{ op: 'replace', path: '/data/app', value: 'changed' }] });
    await primaryKc
      .makeApiClient(CoreV1Api)
      .patchNamespacedConfigMap({ name: 'settings', namespace: 'shop', body: [{ op: 'replace', path: '/data/app', value: 'changed' }] });
    await eventually(async () => ((await standbyConfigMap('shop-dr')) === 'changed' ? true : undefined), 'shop still replicating', 60_000);
    expect(await standbyConfigMap('blog-dr')).toBe('blog');
  }, 240_000);

  it('leaves a NamespaceReplication it did not create alone, even under the name it would use', async () => {
    // given a replication made by hand under the policy's name for namespace pay (a copied label too)
    await rest.request({
      method: 'POST',
      path: `${API}/namespaces/${OPS}/namespacereplications`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'NamespaceReplication',
        metadata: { name: 'gold-pay', labels: { 'syncline.dev/policy': 'gold' } },
        spec: { sourceNamespace: 'pay', destination: { cluster: { name: 'dr' }, namespace: 'pay-by-hand' }, interval: '7s', suspend: true },
      },
    });
    // when pay is labelled
    await protect('pay', { dr: 'gold' });
    // then the policy says so and does not touch it
    const row = await eventually(
      async () => (await readPolicy(OPS, 'gold')).status?.namespaces?.find((r) => r.namespace === 'pay'),
      'the line for pay',
      60_000,
    );
    expect(row.message).toContain('this policy did not create');
    const byHand = (await replications()).find((nr) => nr.metadata.name === 'gold-pay');
    expect(byHand?.spec).toMatchObject({ interval: '7s', suspend: true, destination: { namespace: 'pay-by-hand' } });
    expect((await readPolicy(OPS, 'gold')).status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'Conflict' });
  }, 120_000);

  it('deleting the policy deletes the replications it created (garbage collection); every standby stays', async () => {
    await rest.request({ method: 'DELETE', path: `${API}/namespaces/${OPS}/namespacereplicationpolicies/gold` });
    await eventually(
      async () => ((await replications()).map((nr) => nr.metadata.name).join(',') === 'gold-pay' ? true : undefined),
      'only the hand-made replication left',
      120_000,
    );
    expect(await standbyConfigMap('shop-dr')).toBe('changed');
    expect(await standbyConfigMap('news-dr')).toBe('news');
  }, 180_000);
});

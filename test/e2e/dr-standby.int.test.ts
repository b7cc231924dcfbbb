// End to end, the day the primary is gone, with two real control planes of its own: a NamespaceReplication
// keeps a standby; the primary control plane (and its operator) is killed; `syncline failover --standby`, run
// with the standby's kubeconfig only, promotes the standby (workloads at their recorded counts); the primary
// started again from its data reads the promotion and writes nothing at all to the standby — no object, no
// heartbeat: every object and Lease there keeps its resourceVersion for a minute while it runs (Fenced, an
// Event); `syncline failback --standby --reset-standby` hands the standby back. Then automatic failover: a
// standby-side operator promotes when the heartbeat stops, not while a person holds it; the old primary back
// again stays silent; a deleted replication's heartbeat is removed.
import { AppsV1Api, BatchV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { startControlPlane, startOperator, type ControlPlane, type OperatorProcess } from '@syncline/test-support';
import { createKubeRest, installCrds, type KubeRest, type NamespaceReplication } from '@syncline/operator';
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
const syncline = (args: readonly string[]): Promise<Result> => run(process.execPath, [bin, ...args]);

const NS = 'shop';
const nrPath = `/apis/syncline.dev/v1alpha1/namespaces/${NS}/namespacereplications/shop`;

describe('disaster recovery with the primary gone', () => {
  let primaryDir: string;
  let primary: ControlPlane;
  let standby: ControlPlane;
  let operator: OperatorProcess | undefined;
  let standbyOperator: OperatorProcess | undefined;
  let primaryRest: KubeRest;
  const standbyKc = new KubeConfig();
  const standbyApps = (): AppsV1Api => standbyKc.makeApiClient(AppsV1Api);
  const standbyCore = (): CoreV1Api => standbyKc.makeApiClient(CoreV1Api);
  const replicas = async (name: string): Promise<number | undefined> => (await standbyApps().readNamespacedDeployment({ name, namespace: NS })).spec?.replicas;
  const standbyAnnotations = async (): Promise<Record<string, string>> => (await standbyCore().readNamespace({ name: NS })).metadata?.annotations ?? {};
  const readNr = (): Promise<NamespaceReplication> => primaryRest.request<NamespaceReplication>({ method: 'GET', path: nrPath });
  const condition = (nr: NamespaceReplication, type: string): { status: string; reason: string; message: string } | undefined =>
    nr.status?.conditions?.find((c) => c.type === type);
  const standbyLease = async (): Promise<{ spec?: { renewTime?: string } }> =>
    (await createKubeRest(standbyKc)).request({ method: 'GET', path: `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/syncline-heartbeat-shop` });
  /** `Kind/name` → resourceVersion of everything of these kinds in the standby namespace, and the Namespace itself. */
  const standbyVersions = async (): Promise<Record<string, string>> => {
    const standbyRest = await createKubeRest(standbyKc);
    const versions: Record<string, string> = {};
    const ns = await standbyRest.request<{ metadata: { resourceVersion?: string } }>({ method: 'GET', path: `/api/v1/namespaces/${NS}` });
    versions[`Namespace/${NS}`] = ns.metadata.resourceVersion ?? '';
    const kinds = [
      ['Deployment', `/apis/apps/v1/namespaces/${NS}/deployments`],
      ['StatefulSet', `/apis/apps/v1/namespaces/${NS}/statefulsets`],
      ['CronJob', `/apis/batch/v1/namespaces/${NS}/cronjobs`],
      ['ConfigMap', `/api/v1/namespaces/${NS}/configmaps`],
      ['Secret', `/api/v1/namespaces/${NS}/secrets`],
      ['Service', `/api/v1/namespaces/${NS}/services`],
      ['Lease', `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`],
    ] as const;
    for (const [kind, path] of kinds) {
      const list = await standbyRest.request<{ items: { metadata: { name: string; resourceVersion?: string } }[] }>({ method: 'GET', path });
      for (const item of list.items) versions[`${kind}/${item.metadata.name}`] = item.metadata.resourceVersion ?? '';
    }
    return Object.fromEntries(Object.entries(versions).sort(([a], [b]) => (a < b ? -1 : 1)));
  };
  const startPrimaryOperator = (kubeconfig: string): Promise<OperatorProcess> =>
    startOperator({ kubeconfig, args: ['--mirror', 'off', '--dr-heartbeat-interval', '1s'] });

  beforeAll(async () => {
    primaryDir = await mkdtemp(join(tmpdir(), 'syncline-primary-'));
    [primary, standby] = await Promise.all([startControlPlane({ dataDir: primaryDir }), startControlPlane()]);
    standbyKc.loadFromFile(standby.kubeconfigPath);
    const primaryKc = new KubeConfig();
    primaryKc.loadFromFile(primary.kubeconfigPath);
    primaryRest = await createKubeRest(primaryKc);
    await installCrds(primaryRest, { fieldManager: 'syncline-tests' });
    await installCrds(await createKubeRest(standbyKc), { fieldManager: 'syncline-tests' });

    const core = primaryKc.makeApiClient(CoreV1Api);
    const apps = primaryKc.makeApiClient(AppsV1Api);
    await core.createNamespace({ body: { metadata: { name: NS } } });
    const config = parse(await readFile(standby.kubeconfigPath, 'utf8')) as { users: { name: string }[]; contexts: { name: string }[] };
    const kubeconfig = stringify({
      ...config,
      users: config.users.filter((u) => u.name === 'admin'),
      contexts: config.contexts.filter((c) => c.name === 'admin'),
      'current-context': 'admin',
    });
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'dr-kubeconfig' }, stringData: { kubeconfig } } });
    await primaryRest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${NS}/remoteclusters`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'RemoteCluster',
        metadata: { name: 'dr' },
        spec: { kubeconfigSecretRef: { name: 'dr-kubeconfig', key: 'kubeconfig' }, probeInterval: '5s' },
      },
    });
    const template = (app: string) => ({ metadata: { labels: { app } }, spec: { containers: [{ name: app, image: 'nginx:1.27' }] } });
    await apps.createNamespacedDeployment({
      namespace: NS,
      body: { metadata: { name: 'web' }, spec: { replicas: 3, selector: { matchLabels: { app: 'web' } }, template: template('web') } },
    });
    await apps.createNamespacedStatefulSet({
      namespace: NS,
      body: { metadata: { name: 'db' }, spec: { replicas: 2, serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: template('db') } },
    });
    await primaryKc.makeApiClient(BatchV1Api).createNamespacedCronJob({
      namespace: NS,
      body: {
        metadata: { name: 'report' },
        spec: {
          schedule: '0 0 1 1 *',
          jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'r', image: 'busybox' }] } } } },
        },
      },
    });
    await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'settings' }, data: { mode: 'before' } } });
    await primaryRest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${NS}/namespacereplications`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'NamespaceReplication',
        metadata: { name: 'shop' },
        spec: {
          destination: { cluster: { name: 'dr' }, namespace: NS },
          interval: '3s',
          resourceTypes: ['Deployment.apps', 'StatefulSet.apps', 'CronJob.batch', 'ConfigMap'],
        },
      },
    });
    operator = await startPrimaryOperator(primary.kubeconfigPath);
  }, 400_000);

  afterAll(async () => {
    await operator?.stop();
    await standbyOperator?.stop();
    await primary.stop();
    await standby.stop();
    await rm(primaryDir, { recursive: true, force: true });
  });

  it('replicates, and the primary heartbeats into the standby', async () => {
    await eventually(async () => (condition(await readNr(), 'Ready')?.status === 'True' ? true : undefined), 'the standby to be Ready', 120_000);
    expect(await replicas('web')).toBe(0);
    const status = await eventually(
      async () => {
        const result = await syncline(['dr', 'status', '--standby', '--kubeconfig', standby.kubeconfigPath, '-o', 'json']);
        const rows = JSON.parse(result.stdout) as {
          namespace: string;
          replication: string;
          promoted: boolean;
          lastHeartbeat?: string;
          lastReplicatedChange?: string;
        }[];
        return rows[0]?.lastHeartbeat !== undefined && rows[0].lastReplicatedChange !== undefined ? rows : undefined;
      },
      'a heartbeat with the last replicated change, as dr status shows it',
      60_000,
    );
    expect(status).toEqual([expect.objectContaining({ namespace: NS, replication: `${NS}/shop`, promoted: false })]);
    const table = await syncline(['dr', 'status', '--standby', '--kubeconfig', standby.kubeconfigPath]);
    expect(table.stdout).toMatch(/^NAMESPACE\s+REPLICATION\s+PROMOTED\s+LAST HEARTBEAT\s+HEARTBEAT AGE/m);
  }, 240_000);

  it('fails over from the standby with the primary killed: workloads at their counts, the promotion recorded', async () => {
    await operator?.kill();
    operator = undefined;
    process.kill(primary.pid, 'SIGKILL');
    await primary.stop();

    const result = await syncline(['failover', '--standby', '--kubeconfig', standby.kubeconfigPath, '--by', 'oncall-alice']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`${NS}: promoted at`);
    expect(await replicas('web')).toBe(3);
    expect((await standbyApps().readNamespacedStatefulSet({ name: 'db', namespace: NS })).spec?.replicas).toBe(2);
    expect((await standbyKc.makeApiClient(BatchV1Api).readNamespacedCronJob({ name: 'report', namespace: NS })).spec?.suspend).toBe(false);
    expect(await standbyAnnotations()).toMatchObject({ 'syncline.dev/promoted-by': 'oncall-alice' });
    const rows = JSON.parse((await syncline(['dr', 'status', '--standby', '--kubeconfig', standby.kubeconfigPath, '-o', 'json'])).stdout) as {
      promoted: boolean;
    }[];
    expect(rows[0]?.promoted).toBe(true);
    // a namespace that is not a standby is refused by name
    const refused = await syncline(['failover', '--standby', '--kubeconfig', standby.kubeconfigPath, 'kube-system']);
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining('namespace kube-system is not a standby')]);
  }, 240_000);

  it('the primary back: its operator sees the promotion, never replicates over the standby, and says so', async () => {
    primary = await startControlPlane({ dataDir: primaryDir });
    const primaryKc = new KubeConfig();
    primaryKc.loadFromFile(primary.kubeconfigPath);
    primaryRest = await createKubeRest(primaryKc);
    await primaryKc
      .makeApiClient(CoreV1Api)
      .patchNamespacedConfigMap({ name: 'settings', namespace: NS, body: [{ op: 'replace', path: '/data/mode', value: 'after-promotion' }] });
    operator = await startPrimaryOperator(primary.kubeconfigPath);

    const fenced = await eventually(
      async () => {
        const nr = await readNr();
        return condition(nr, 'Fenced')?.status === 'True' ? nr : undefined;
      },
      'the replication to report the fence',
      120_000,
    );
    expect(condition(fenced, 'Ready')).toMatchObject({ status: 'False', reason: 'StandbyPromoted' });
    expect(condition(fenced, 'Fenced')?.message).toContain('syncline failback --standby --reset-standby shop');
    expect(fenced.status?.standbyPromotion?.by).toBe('oncall-alice');
    const events = await eventually(
      async () => {
        const list = await primaryRest.request<{ items: { reason?: string; involvedObject?: { kind?: string } }[] }>({
          method: 'GET',
          path: `/api/v1/namespaces/${NS}/events`,
        });
        return list.items.some((e) => e.reason === 'StandbyPromoted' && e.involvedObject?.kind === 'NamespaceReplication') ? list : undefined;
      },
      'the StandbyPromoted event',
      30_000,
    );
    expect(events.items.length).toBeGreaterThan(0);
    // what a person reads in the primary: the last replicated change, and the standby's own word that it was promoted
    const table = await syncline(['get', 'nsrepl', '-A', '--kubeconfig', primary.kubeconfigPath]);
    expect(table.stdout).toMatch(/^NAMESPACE\s+NAME\s+.*LAST CHANGE\s+FENCED\s+HEARTBEAT\s+STANDBY\s+AGE$/m);
    expect(table.stdout).toMatch(/^shop\s+shop\s+dr\s+Continuous\s+False\s+.*\s\d+[smhd]\S*\s+True\s+\d+[smhd]\S*\s+promoted\s/m);
    // the standby kept its promoted state: nothing replicated over it
    expect(await replicas('web')).toBe(3);
    expect((await standbyCore().readNamespacedConfigMap({ name: 'settings', namespace: NS })).data?.['mode']).toBe('before');

    // not one write from the fenced primary for a minute (it reconciles every 3 s, its heartbeat ticks every
    // second): once the standby's own controllers are quiet, every object and Lease keeps its resourceVersion
    const quiet = await eventually(
      async () => {
        const first = await standbyVersions();
        await new Promise((resolve) => setTimeout(resolve, 5_000));
        const second = await standbyVersions();
        return JSON.stringify(first) === JSON.stringify(second) ? second : undefined;
      },
      'the standby to be quiet',
      120_000,
    );
    expect(Object.keys(quiet)).toEqual(
      expect.arrayContaining(['Namespace/shop', 'Lease/syncline-heartbeat-shop', 'Deployment/web', 'StatefulSet/db', 'CronJob/report', 'ConfigMap/settings']),
    );
    const renewedBefore = (await standbyLease()).spec?.renewTime;
    await new Promise((resolve) => setTimeout(resolve, 60_000));
    expect(await standbyVersions()).toEqual(quiet);
    expect((await standbyLease()).spec?.renewTime).toBe(renewedBefore);
    // while the primary was running all along, fenced, and said so in its own cluster
    expect(condition(await readNr(), 'Fenced')?.status).toBe('True');
    expect(operator?.logs.some((l) => l['msg'] === 'the standby was promoted: no heartbeat is written there (fenced)')).toBe(true);
  }, 400_000);

  it('fails back by resetting the standby: workloads at zero, replication from the primary resumes', async () => {
    const result = await syncline(['failback', '--standby', '--reset-standby', '--kubeconfig', standby.kubeconfigPath, NS]);
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(await replicas('web')).toBe(0);
    expect(await standbyAnnotations()).not.toHaveProperty('syncline.dev/promoted-at');
    await eventually(
      async () => ((await standbyCore().readNamespacedConfigMap({ name: 'settings', namespace: NS })).data?.['mode'] === 'after-promotion' ? true : undefined),
      'the primary to replicate again',
      120_000,
    );
    await eventually(
      async () => {
        const nr = await readNr();
        return condition(nr, 'Ready')?.status === 'True' && condition(nr, 'Fenced') === undefined && nr.status?.standbyPromotion === undefined
          ? true
          : undefined;
      },
      'the fence lifted in status',
      60_000,
    );
  }, 240_000);

  it('fails over automatically when the heartbeat stops, and not while held', async () => {
    const standbyRest = await createKubeRest(standbyKc);
    const lease = (): Promise<{ spec?: { renewTime?: string } }> =>
      standbyRest.request({ method: 'GET', path: `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/syncline-heartbeat-shop` });
    await eventually(
      async () => {
        const renewed = Date.parse((await lease()).spec?.renewTime ?? '');
        return Date.now() - renewed < 5_000 ? true : undefined;
      },
      'a fresh heartbeat',
      60_000,
    );
    standbyOperator = await startOperator({
      kubeconfig: standby.kubeconfigPath,
      args: ['--mirror', 'off', '--dr-heartbeat-interval', 'off', '--dr-auto-failover-grace', '4s'],
    });
    // a person holds automatic failover during maintenance, with kubectl
    const hold = await run('kubectl', ['--kubeconfig', standby.kubeconfigPath, 'annotate', 'namespace', NS, 'syncline.dev/dr-hold=planned-maintenance']);
    expect(hold.code).toBe(0);
    // the primary's operator stops: no more heartbeats
    await operator?.kill();
    operator = undefined;
    const eventFor = async (reason: string): Promise<boolean | undefined> => {
      const list = await standbyRest.request<{ items: { reason?: string; involvedObject?: { kind?: string } }[] }>({
        method: 'GET',
        path: `/api/v1/namespaces/${NS}/events`,
      });
      return list.items.some((e) => e.reason === reason && e.involvedObject?.kind === 'Lease') ? true : undefined;
    };
    await eventually(() => eventFor('PromotionHeld'), 'the held promotion to be reported', 90_000);
    expect(await standbyAnnotations()).not.toHaveProperty('syncline.dev/promoted-at');
    expect(await replicas('web')).toBe(0);

    const release = await run('kubectl', ['--kubeconfig', standby.kubeconfigPath, 'annotate', 'namespace', NS, 'syncline.dev/dr-hold-']);
    expect(release.code).toBe(0);
    await eventually(async () => ((await replicas('web')) === 3 ? true : undefined), 'web at its recorded count after the automatic failover', 90_000);
    expect((await standbyAnnotations())['syncline.dev/promoted-by']).toMatch(/^auto-failover /);
    await eventually(() => eventFor('StandbyPromoted'), 'the promotion Event', 30_000);
    const metrics = await (await fetch(`http://${standbyOperator.probeAddress}/metrics`)).text();
    expect(metrics).toMatch(/syncline_dr_promotions_total\{namespace="shop",trigger="heartbeat"\} 1/);
  }, 300_000);

  it("the old primary back after an automatic failover stays silent; reset, it heartbeats again, and a deleted replication's heartbeat is removed", async () => {
    const standbyRest = await createKubeRest(standbyKc);
    const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/syncline-heartbeat-shop`;
    const stale = await standbyLease();
    // given the primary's operator running again: fenced (the standby is promoted), it renews nothing there
    operator = await startPrimaryOperator(primary.kubeconfigPath);
    await eventually(async () => (condition(await readNr(), 'Fenced')?.status === 'True' ? true : undefined), 'the replication to report the fence', 120_000);
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    expect((await standbyLease()).spec?.renewTime).toBe(stale.spec?.renewTime);
    // when the standby is handed back (its Leases removed, the promotion cleared), the heartbeat resumes
    await standbyOperator?.stop();
    standbyOperator = undefined;
    const reset = await syncline(['failback', '--standby', '--reset-standby', '--kubeconfig', standby.kubeconfigPath, NS]);
    expect([reset.code, reset.stderr]).toEqual([0, '']);
    await eventually(
      async () => (Date.now() - Date.parse((await standbyLease()).spec?.renewTime ?? '') < 5_000 ? true : undefined),
      'a fresh heartbeat',
      60_000,
    );
    // when the NamespaceReplication is deleted
    await primaryRest.request({ method: 'DELETE', path: nrPath });
    // then its heartbeat Lease leaves the standby
    await eventually(
      () =>
        standbyRest.request({ method: 'GET', path: leasePath }).then(
          () => undefined,
          (error: unknown) => ((error as { status?: number }).status === 404 ? true : undefined),
        ),
      'the heartbeat Lease to be removed',
      60_000,
    );
  }, 240_000);
});

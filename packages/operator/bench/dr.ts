// `pnpm bench dr [--objects 1000] [--changes 30] [--steady 600] [--deployments 100]`: a namespace of mixed
// objects kept warm in a second control plane by a NamespaceReplication (Continuous). Prints the initial
// replication time, single-change latency to the standby (p50 ≤ 1 s, p99 ≤ 2 s), write requests to both API
// servers in a steady state (0), and the failover of the namespace's Deployments until all run their recorded
// counts in the standby (≤ 5 s), then the failback for information.
import { KubeConfig } from '@kubernetes/client-node';
import { createKubeRest, type NamespaceReplication } from '@syncline/operator';
import { startControlPlane, startOperator } from '@syncline/test-support';
import { parseArgs } from 'node:util';
import { adminKubeconfig, benchEnvironment, diff, writeRequests } from './_environment.ts';

const { values: flags } = parseArgs({ options: { objects: { type: 'string', default: '1000' }, changes: { type: 'string', default: '30' }, steady: { type: 'string', default: '600' }, deployments: { type: 'string', default: '100' } } });
const OBJECTS = Number(flags.objects);
const CHANGES = Number(flags.changes);
const STEADY_SECONDS = Number(flags.steady);
const DEPLOYMENTS = Number(flags.deployments);
const shop = 'shop';
const progress = (line: string): void => console.error(`[bench] ${line}`);

await using environment = await benchEnvironment(shop);
const { controlPlane, rest } = environment;
progress('starting the standby control plane');
const standby = await startControlPlane();
try {
  const standbyKc = new KubeConfig();
  standbyKc.loadFromFile(standby.kubeconfigPath);
  const dr = await createKubeRest(standbyKc);

  // The namespace: DEPLOYMENTS Deployments, and the rest a mix of the other replicated kinds.
  const mix = mixedObjects(OBJECTS, DEPLOYMENTS);
  progress(`creating ${mix.length} objects in ${shop}`);
  await pool(mix, 16, (object) => rest.request({ method: 'POST', path: object.path, body: object.body }));
  await rest.request({ method: 'POST', path: `/api/v1/namespaces/${shop}/secrets`, body: { metadata: { name: 'standby-kubeconfig' }, stringData: { kubeconfig: await adminKubeconfig(standby) } } });
  await rest.request({ method: 'POST', path: `/apis/syncline.dev/v1alpha1/namespaces/${shop}/remoteclusters`, body: { apiVersion: 'syncline.dev/v1alpha1', kind: 'RemoteCluster', metadata: { name: 'dr' }, spec: { kubeconfigSecretRef: { name: 'standby-kubeconfig', key: 'kubeconfig' } } } });
  await using _operator = await startOperator({ kubeconfig: controlPlane.kubeconfigPath, args: ['--namespace', shop, '--mirror', 'off'] });

  // 1. Initial replication.
  const nrPath = `/apis/syncline.dev/v1alpha1/namespaces/${shop}/namespacereplications/shop`;
  const started = Date.now();
  await rest.request({ method: 'POST', path: `/apis/syncline.dev/v1alpha1/namespaces/${shop}/namespacereplications`, body: { apiVersion: 'syncline.dev/v1alpha1', kind: 'NamespaceReplication', metadata: { name: 'shop' }, spec: { destination: { cluster: { name: 'dr' } } } } });
  const replicated = await until(async () => {
    const nr = await rest.request<NamespaceReplication>({ method: 'GET', path: nrPath });
    const objects = (nr.status?.kinds ?? []).reduce((n, k) => n + k.objects, 0);
    return nr.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true && objects >= mix.length ? objects : undefined;
  }, 300_000);
  const initialMs = Date.now() - started;
  progress(`initial replication of ${replicated} objects: ${initialMs} ms`);

  // 2. Single changes, one at a time: until the standby holds the new value.
  const latencies: number[] = [];
  for (let i = 0; i < CHANGES; i++) {
    const name = `cm-${i}`;
    const t0 = performance.now();
    await rest.request({ method: 'PATCH', path: `/api/v1/namespaces/${shop}/configmaps/${name}`, contentType: 'application/merge-patch+json', body: { data: { v: `changed-${i}` } } });
    await until(async () => ((await dr.request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${shop}/configmaps/${name}` })).data?.['v'] === `changed-${i}` ? true : undefined), 60_000, 20);
    latencies.push(performance.now() - t0);
    await sleep(300);
  }
  progress(`changes: ${latencies.map((l) => Math.round(l)).join(', ')} ms`);

  // 3. Steady state: nothing changes; the standby's own controllers are quiet too (no kubelet here).
  await sleep(5000);
  const before = await Promise.all([writeRequests(rest), writeRequests(dr)]);
  progress(`steady state for ${STEADY_SECONDS} s`);
  await sleep(STEADY_SECONDS * 1000);
  const after = await Promise.all([writeRequests(rest), writeRequests(dr)]);
  const steadyPrimary = diff(after[0], before[0]);
  const steadyStandby = diff(after[1], before[1]);

  // 4. Failover: every Deployment in the standby at its recorded count; then failback to zero.
  const deploymentsAt = async (want: (d: { spec?: { replicas?: number }; metadata: { annotations?: Record<string, string> } }) => boolean): Promise<boolean> => {
    const list = await dr.request<{ items: { spec?: { replicas?: number }; metadata: { annotations?: Record<string, string> } }[] }>({ method: 'GET', path: `/apis/apps/v1/namespaces/${shop}/deployments` });
    return list.items.length === DEPLOYMENTS && list.items.every(want);
  };
  const failoverStart = Date.now();
  await rest.request({ method: 'PATCH', path: nrPath, contentType: 'application/merge-patch+json', body: { spec: { failover: true } } });
  await until(async () => ((await deploymentsAt((d) => String(d.spec?.replicas) === d.metadata.annotations?.['syncline.dev/original-replicas'])) ? true : undefined), 120_000, 50);
  const failoverMs = Date.now() - failoverStart;
  const failbackStart = Date.now();
  await rest.request({ method: 'PATCH', path: nrPath, contentType: 'application/merge-patch+json', body: { spec: { failover: false } } });
  await until(async () => ((await deploymentsAt((d) => d.spec?.replicas === 0)) ? true : undefined), 120_000, 50);
  const failbackMs = Date.now() - failbackStart;

  const sorted = [...latencies].sort((a, b) => a - b);
  const quantile = (q: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
  const p50 = quantile(0.5);
  const p99 = quantile(0.99);
  const verdict = (ok: boolean): string => (ok ? 'ok' : 'MISSED');
  console.log(`\ndr bench: ${replicated} objects (${DEPLOYMENTS} Deployments) in ${shop} → a standby control plane, Continuous mode`);
  console.log(`  initial replication:                       ${initialMs} ms`);
  console.log(`  a single change → visible in the standby:  p50 ${Math.round(p50)} ms, p99 ${Math.round(p99)} ms over ${CHANGES}  (targets ≤ 1000 / ≤ 2000 ms)  ${verdict(p50 <= 1000 && p99 <= 2000)}`);
  console.log(`  steady state ${STEADY_SECONDS} s, writes (non-lease):      primary ${steadyPrimary.total} ${JSON.stringify(steadyPrimary.byVerbResource)}, standby ${steadyStandby.total} ${JSON.stringify(steadyStandby.byVerbResource)}  (target 0)  ${verdict(steadyPrimary.total + steadyStandby.total === 0)}`);
  console.log(`  failover of ${DEPLOYMENTS} Deployments until all scaled:   ${failoverMs} ms  (target ≤ 5000 ms)  ${verdict(failoverMs <= 5000)}`);
  console.log(`  failback until all at 0 again:             ${failbackMs} ms`);
} finally {
  await standby.stop();
}

type Creation = { path: string; body: object };

/** `count` objects: `deployments` Deployments, and ConfigMaps, Secrets, Services, StatefulSets, CronJobs, ServiceAccounts and RBAC. */
function mixedObjects(count: number, deployments: number): Creation[] {
  const core = (plural: string): string => `/api/v1/namespaces/${shop}/${plural}`;
  const apps = (plural: string): string => `/apis/apps/v1/namespaces/${shop}/${plural}`;
  const pod = (app: string): object => ({ metadata: { labels: { app } }, spec: { containers: [{ name: app, image: 'nginx:1.27' }] } });
  const makers: ((i: number) => Creation)[] = [
    (i) => ({ path: core('configmaps'), body: { metadata: { name: `cm-${i}` }, data: { v: `value-${i}`, config: 'x'.repeat(200) } } }),
    (i) => ({ path: core('secrets'), body: { metadata: { name: `secret-${i}` }, stringData: { password: `pw-${i}` } } }),
    (i) => ({ path: core('services'), body: { metadata: { name: `svc-${i}` }, spec: { ...(i % 5 === 0 ? { clusterIP: 'None' } : {}), ports: [{ port: 80 }], selector: { app: `svc-${i}` } } } }),
    (i) => ({ path: apps('statefulsets'), body: { metadata: { name: `sts-${i}` }, spec: { replicas: 2, serviceName: `sts-${i}`, selector: { matchLabels: { app: `sts-${i}` } }, template: pod(`sts-${i}`) } } }),
    (i) => ({ path: `/apis/batch/v1/namespaces/${shop}/cronjobs`, body: { metadata: { name: `cron-${i}` }, spec: { schedule: '0 * * * *', jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } } } } } } }),
    (i) => ({ path: core('serviceaccounts'), body: { metadata: { name: `sa-${i}` } } }),
    (i) => ({ path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${shop}/roles`, body: { metadata: { name: `role-${i}` }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] } }),
  ];
  // ConfigMaps are half of the rest (the single changes edit them); the other kinds share the remainder.
  const weights = [6, 2, 1, 1, 1, 1, 1];
  const rest = count - deployments;
  const objects: Creation[] = Array.from({ length: deployments }, (_, i) => ({ path: apps('deployments'), body: { metadata: { name: `deploy-${i}` }, spec: { replicas: 1 + (i % 4), selector: { matchLabels: { app: `deploy-${i}` } }, template: pod(`deploy-${i}`) } } }));
  const total = weights.reduce((a, b) => a + b, 0);
  makers.forEach((make, k) => {
    const n = k === 0 ? rest - Math.floor((rest * (total - (weights[0] ?? 0))) / total) : Math.floor((rest * (weights[k] ?? 0)) / total);
    for (let i = 0; i < n; i++) objects.push(make(i));
  });
  return objects;
}

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs: number, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms`);
    await sleep(intervalMs);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function pool<T>(items: readonly T[], width: number, run: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await run(items[next++] as T);
  }));
}


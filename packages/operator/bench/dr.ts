// `pnpm bench dr [--objects 1000] [--changes 30] [--steady 600] [--deployments 100] [--grace 5]`: a namespace of mixed
// objects kept warm in a second control plane by a NamespaceReplication (Continuous), the real operator
// process. Prints the initial replication time, single-change latency to the standby (p50 ≤ 1 s, p99 ≤ 2 s)
// with what one change costs (reconciles, LISTs on each API server), write requests to both API servers in a
// steady state (0), and the failover of the namespace's Deployments until all run their recorded counts in the
// standby (≤ 5 s), then the failback for information; then the primary killed: RTO until a standby-side
// automatic failover has every Deployment at its count (≤ grace + 5 s), and RPO, the changes of the last
// second before the kill the standby lacks (none older than 1 s). Figures on the last lines.
import { KubeConfig } from '@kubernetes/client-node';
import { createKubeRest, installCrds, type KubeRest, type NamespaceReplication } from '@syncline/operator';
import { startControlPlane, startOperator } from '@syncline/test-support';
import { parseArgs } from 'node:util';
import {
  adminKubeconfig,
  benchEnvironment,
  cpuSeconds,
  diff,
  metricSum,
  peakRss,
  percentile,
  pool,
  requestCounts,
  sleep,
  writeRequests,
} from './_environment.ts';

const { values: flags } = parseArgs({
  options: {
    objects: { type: 'string', default: '1000' },
    changes: { type: 'string', default: '30' },
    steady: { type: 'string', default: '600' },
    deployments: { type: 'string', default: '100' },
    grace: { type: 'string', default: '5' },
  },
});
const OBJECTS = Number(flags.objects);
const CHANGES = Number(flags.changes);
const STEADY_SECONDS = Number(flags.steady);
const DEPLOYMENTS = Number(flags.deployments);
const GRACE_SECONDS = Number(flags.grace);
const shop = 'shop';
const progress = (line: string): void => console.error(`[bench] ${line}`);
const reads = (client: KubeRest): Promise<Map<string, number>> => requestCounts(client, (verb) => verb === 'LIST');

await using environment = await benchEnvironment(shop);
const { controlPlane, rest } = environment;
progress('starting the standby control plane');
const standby = await startControlPlane();
try {
  const standbyKc = new KubeConfig();
  standbyKc.loadFromFile(standby.kubeconfigPath);
  const dr = await createKubeRest(standbyKc);

  const mix = mixedObjects(OBJECTS, DEPLOYMENTS);
  progress(`creating ${mix.length} objects in ${shop}`);
  await pool(mix, 16, (object) => rest.request({ method: 'POST', path: object.path, body: object.body }));
  // The standby's admin credentials stay out of the standby (as an SRE would exclude them).
  await rest.request({
    method: 'POST',
    path: `/api/v1/namespaces/${shop}/secrets`,
    body: { metadata: { name: 'standby-kubeconfig', labels: { 'syncline.dev/dr': 'exclude' } }, stringData: { kubeconfig: await adminKubeconfig(standby) } },
  });
  await rest.request({
    method: 'POST',
    path: `/apis/syncline.dev/v1alpha1/namespaces/${shop}/remoteclusters`,
    body: {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'RemoteCluster',
      metadata: { name: 'dr' },
      spec: { kubeconfigSecretRef: { name: 'standby-kubeconfig', key: 'kubeconfig' } },
    },
  });
  await using operator = await startOperator({
    kubeconfig: controlPlane.kubeconfigPath,
    args: ['--namespace', shop, '--mirror', 'off', '--dr-heartbeat-interval', '1s'],
  });
  const reconciles = async (): Promise<{ count: number; seconds: number }> => ({
    count: await metricSum(operator.probeAddress, 'syncline_reconcile_duration_seconds_count'),
    seconds: await metricSum(operator.probeAddress, 'syncline_reconcile_duration_seconds_sum'),
  });

  // 1. Initial replication: created → Ready with every object counted, then checked in the standby itself.
  const nrPath = `/apis/syncline.dev/v1alpha1/namespaces/${shop}/namespacereplications/shop`;
  const started = Date.now();
  await rest.request({
    method: 'POST',
    path: `/apis/syncline.dev/v1alpha1/namespaces/${shop}/namespacereplications`,
    body: { apiVersion: 'syncline.dev/v1alpha1', kind: 'NamespaceReplication', metadata: { name: 'shop' }, spec: { destination: { cluster: { name: 'dr' } } } },
  });
  const replicated = await until(async () => {
    const nr = await rest.request<NamespaceReplication>({ method: 'GET', path: nrPath });
    const objects = (nr.status?.kinds ?? []).reduce((n, k) => n + k.objects, 0);
    return nr.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true && objects >= mix.length ? objects : undefined;
  }, 300_000);
  const initialMs = Date.now() - started;
  const missing = await missingInStandby(dr, mix);
  if (missing.length > 0) throw new Error(`Ready, but ${missing.length} object(s) are not in the standby: ${missing.slice(0, 5).join(', ')}`);
  progress(`initial replication of ${replicated} objects: ${initialMs} ms, all in the standby`);

  // 2. Single changes, one at a time and spaced: until the standby holds the new value (a GET every 20 ms).
  await sleep(2000);
  const changeBefore = {
    primary: await reads(rest),
    standby: await reads(dr),
    primaryWrites: await writeRequests(rest),
    standbyWrites: await writeRequests(dr),
    reconciles: await reconciles(),
  };
  const latencies: number[] = [];
  const configMaps = mix.filter((m) => m.kind === 'ConfigMap').length;
  for (let i = 0; i < CHANGES; i++) {
    const name = `cm-${i % configMaps}`;
    const t0 = performance.now();
    await rest.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${shop}/configmaps/${name}`,
      contentType: 'application/merge-patch+json',
      body: { data: { v: `changed-${i}` } },
    });
    await until(
      async () =>
        (await dr.request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${shop}/configmaps/${name}` })).data?.['v'] ===
        `changed-${i}`
          ? true
          : undefined,
      60_000,
      20,
    );
    latencies.push(performance.now() - t0);
    await sleep(500);
  }
  await sleep(1000); // the last change's status write
  const changeReconciles = await reconciles();
  const primaryWrites = diff(await writeRequests(rest), changeBefore.primaryWrites);
  delete primaryWrites.byVerbResource['PATCH configmaps'];
  const perChange = {
    reconciles: (changeReconciles.count - changeBefore.reconciles.count) / CHANGES,
    reconcileMs: ((changeReconciles.seconds - changeBefore.reconciles.seconds) * 1000) / Math.max(1, changeReconciles.count - changeBefore.reconciles.count),
    primaryLists: diff(await reads(rest), changeBefore.primary).total / CHANGES,
    standbyLists: diff(await reads(dr), changeBefore.standby).total / CHANGES,
    primaryWrites: primaryWrites.total / CHANGES - 1, // less the bench's own PATCH
    standbyWrites: diff(await writeRequests(dr), changeBefore.standbyWrites).total / CHANGES,
  };
  progress(`changes: ${latencies.map((l) => Math.round(l)).join(', ')} ms; per change ${JSON.stringify(perChange)}`);

  // 3. Steady state: nothing changes; Continuous mode still relists every spec.interval (5m by default).
  await sleep(5000);
  const before = await Promise.all([writeRequests(rest), writeRequests(dr), reads(rest), reads(dr)]);
  const steadyReconcilesBefore = await reconciles();
  const cpuBefore = cpuSeconds(operator.pid);
  progress(`steady state for ${STEADY_SECONDS} s`);
  const steadyStarted = Date.now();
  await sleep(STEADY_SECONDS * 1000);
  const steadyElapsed = (Date.now() - steadyStarted) / 1000;
  const cpuUsed = cpuSeconds(operator.pid) - cpuBefore;
  const after = await Promise.all([writeRequests(rest), writeRequests(dr), reads(rest), reads(dr)]);
  const steadyReconciles = (await reconciles()).count - steadyReconcilesBefore.count;
  const steadyPrimary = diff(after[0], before[0]);
  const steadyStandby = diff(after[1], before[1]);
  const steadyLists = diff(after[2], before[2]).total + diff(after[3], before[3]).total;

  // 4. Failover: every Deployment in the standby at its recorded count; then failback to zero.
  type Workload = { spec?: { replicas?: number }; metadata: { annotations?: Record<string, string> } };
  const deploymentsAt = async (want: (d: Workload) => boolean): Promise<true | undefined> => {
    const list = await dr.request<{ items: Workload[] }>({ method: 'GET', path: `/apis/apps/v1/namespaces/${shop}/deployments` });
    return list.items.length === DEPLOYMENTS && list.items.every(want) ? true : undefined;
  };
  const failoverStart = Date.now();
  await rest.request({ method: 'PATCH', path: nrPath, contentType: 'application/merge-patch+json', body: { spec: { failover: true } } });
  await until(
    () => deploymentsAt((d) => d.spec?.replicas !== 0 && String(d.spec?.replicas) === d.metadata.annotations?.['syncline.dev/original-replicas']),
    120_000,
    50,
  );
  const failoverMs = Date.now() - failoverStart;
  const failbackStart = Date.now();
  await rest.request({ method: 'PATCH', path: nrPath, contentType: 'application/merge-patch+json', body: { spec: { failover: false } } });
  await until(() => deploymentsAt((d) => d.spec?.replicas === 0), 120_000, 50);
  const failbackMs = Date.now() - failbackStart;
  const rssMb = peakRss(operator.pid);

  // 5. The primary gone: a standby-side operator promotes once the heartbeat is older than the grace period.
  // RTO: from killing the primary (control plane and operator) to every Deployment at its recorded count in
  // the standby. RPO: of the changes made in the last second before the kill, those the standby lacks.
  progress(`RTO: a standby-side operator (--dr-auto-failover-grace ${GRACE_SECONDS}s), then the primary killed`);
  await installCrds(dr, { fieldManager: 'bench' });
  await using standbyOperator = await startOperator({
    kubeconfig: standby.kubeconfigPath,
    args: ['--mirror', 'off', '--dr-heartbeat-interval', 'off', '--dr-auto-failover-grace', `${GRACE_SECONDS}s`],
  });
  await until(async () => {
    const lease = await dr.request<{ spec?: { renewTime?: string } }>({
      method: 'GET',
      path: `/apis/coordination.k8s.io/v1/namespaces/${shop}/leases/syncline-heartbeat-shop`,
    });
    return Date.now() - Date.parse(lease.spec?.renewTime ?? '') < 2000 ? true : undefined;
  }, 60_000);
  const lastSecond: { name: string; value: string; at: number }[] = [];
  for (let i = 0; i < 10; i++) {
    const change = { name: `cm-${i % configMaps}`, value: `rpo-${i}`, at: Date.now() };
    await rest.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${shop}/configmaps/${change.name}`,
      contentType: 'application/merge-patch+json',
      body: { data: { v: change.value } },
    });
    lastSecond.push(change);
    await sleep(100);
  }
  await operator.kill();
  process.kill(controlPlane.pid, 'SIGKILL');
  const killedAt = Date.now();
  await until(
    () => deploymentsAt((d) => d.spec?.replicas !== 0 && String(d.spec?.replicas) === d.metadata.annotations?.['syncline.dev/original-replicas']),
    120_000,
    50,
  );
  const rtoMs = Date.now() - killedAt;
  // A ConfigMap changed twice in the last second needs only its last value.
  const latest = [...new Map(lastSecond.map((c) => [c.name, c])).values()];
  const lacking = (
    await Promise.all(
      latest.map(async (c) =>
        (await dr.request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${shop}/configmaps/${c.name}` })).data?.['v'] ===
        c.value
          ? undefined
          : c,
      ),
    )
  ).filter((c) => c !== undefined);
  const oldestLackingMs = lacking.reduce((oldest, c) => Math.max(oldest, killedAt - c.at), 0);
  await standbyOperator.stop();

  const p50 = percentile(latencies, 50);
  const p99 = percentile(latencies, 99);
  const verdict = (ok: boolean): string => (ok ? 'ok' : 'MISSED');
  const counts = Object.entries(mix.reduce<Record<string, number>>((n, m) => ({ ...n, [m.kind]: (n[m.kind] ?? 0) + 1 }), {}))
    .map(([kind, n]) => `${n} ${kind}`)
    .join(', ');
  console.log(`\ndr bench: ${replicated} objects in ${shop} (${counts}) → a standby control plane, Continuous mode, Node ${process.versions.node}`);
  console.log(`  initial replication (created → Ready, all in the standby):  ${initialMs} ms`);
  console.log(
    `  a single change → visible in the standby:  p50 ${Math.round(p50)} ms, p99 ${Math.round(p99)} ms, max ${Math.round(Math.max(...latencies))} ms over ${CHANGES}  (targets p50 ≤ 1000 ms, p99 ≤ 2000 ms)  ${verdict(p50 <= 1000 && p99 <= 2000)}`,
  );
  console.log(
    `    per change: ${perChange.reconciles.toFixed(1)} reconcile(s) of ${Math.round(perChange.reconcileMs)} ms, LISTs ${perChange.primaryLists.toFixed(1)} primary + ${perChange.standbyLists.toFixed(1)} standby, writes ${perChange.standbyWrites.toFixed(1)} standby + ${perChange.primaryWrites.toFixed(1)} primary ${JSON.stringify(primaryWrites.byVerbResource)} over ${CHANGES}`,
  );
  console.log(
    `  steady state ${steadyElapsed.toFixed(0)} s (${steadyReconciles} reconcile(s), ${steadyLists} LISTs), writes (non-lease): primary ${steadyPrimary.total} ${JSON.stringify(steadyPrimary.byVerbResource)}, standby ${steadyStandby.total} ${JSON.stringify(steadyStandby.byVerbResource)}  (target 0)  ${verdict(steadyPrimary.total + steadyStandby.total === 0)}`,
  );
  console.log(`    operator CPU ${cpuUsed.toFixed(2)} s (${((cpuUsed / steadyElapsed) * 100).toFixed(1)}% of one core), peak RSS ${rssMb.toFixed(0)} MB`);
  console.log(
    `  failover of ${DEPLOYMENTS} Deployments until all at their recorded counts:  ${failoverMs} ms  (target ≤ 5000 ms)  ${verdict(failoverMs <= 5000)}`,
  );
  console.log(`  failback until all at 0 again:  ${failbackMs} ms  (information)`);
  console.log(
    `  RTO, primary killed → all ${DEPLOYMENTS} Deployments at their recorded counts (automatic failover, grace ${GRACE_SECONDS} s, heartbeat every 1 s):  ${rtoMs} ms  (target ≤ ${(GRACE_SECONDS + 5) * 1000} ms)  ${verdict(rtoMs <= (GRACE_SECONDS + 5) * 1000)}`,
  );
  console.log(
    `  RPO, of ${latest.length} objects changed in the last second before the kill the standby lacks ${lacking.length}${lacking.length === 0 ? '' : ` (oldest ${oldestLackingMs} ms before the kill: ${lacking.map((c) => c.name).join(', ')})`}  (target: none older than 1000 ms)  ${verdict(oldestLackingMs <= 1000)}`,
  );
} finally {
  await standby.stop();
}

type Creation = { kind: string; name: string; path: string; body: object };

/**
 * Exactly `count` objects: `deployments` Deployments, the rest ConfigMaps, Secrets, Services (one in five
 * headless), StatefulSets, CronJobs, ServiceAccounts, Roles and RoleBindings in proportions 12:6:4:2:2:4:3:3
 * (ConfigMaps take the rounding; the single changes edit them).
 */
function mixedObjects(count: number, deployments: number): Creation[] {
  const core = (plural: string): string => `/api/v1/namespaces/${shop}/${plural}`;
  const apps = (plural: string): string => `/apis/apps/v1/namespaces/${shop}/${plural}`;
  const rbac = (plural: string): string => `/apis/rbac.authorization.k8s.io/v1/namespaces/${shop}/${plural}`;
  const pod = (app: string): object => ({
    metadata: { labels: { app } },
    spec: { containers: [{ name: app, image: 'nginx:1.27', ports: [{ containerPort: 80 }] }] },
  });
  const object = (kind: string, name: string, path: string, body: object): Creation => ({
    kind,
    name,
    path,
    body: { metadata: { name, labels: { tier: 'shop' } }, ...body },
  });
  const kinds: { weight: number; make: (i: number) => Creation }[] = [
    { weight: 12, make: (i) => object('ConfigMap', `cm-${i}`, core('configmaps'), { data: { v: `value-${i}`, config: 'x'.repeat(200) } }) },
    { weight: 6, make: (i) => object('Secret', `secret-${i}`, core('secrets'), { stringData: { password: `pw-${i}` } }) },
    {
      weight: 4,
      make: (i) =>
        object('Service', `svc-${i}`, core('services'), {
          spec: { ...(i % 5 === 0 ? { clusterIP: 'None' } : {}), ports: [{ port: 80 }], selector: { app: `svc-${i}` } },
        }),
    },
    {
      weight: 2,
      make: (i) =>
        object('StatefulSet', `sts-${i}`, apps('statefulsets'), {
          spec: { replicas: 2, serviceName: `sts-${i}`, selector: { matchLabels: { app: `sts-${i}` } }, template: pod(`sts-${i}`) },
        }),
    },
    {
      weight: 2,
      make: (i) =>
        object('CronJob', `cron-${i}`, `/apis/batch/v1/namespaces/${shop}/cronjobs`, {
          spec: {
            schedule: '0 * * * *',
            jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } } } },
          },
        }),
    },
    { weight: 4, make: (i) => object('ServiceAccount', `sa-${i}`, core('serviceaccounts'), {}) },
    { weight: 3, make: (i) => object('Role', `role-${i}`, rbac('roles'), { rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }] }) },
    {
      weight: 3,
      make: (i) =>
        object('RoleBinding', `rb-${i}`, rbac('rolebindings'), {
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `role-${i}` },
          subjects: [{ kind: 'ServiceAccount', name: `sa-${i}`, namespace: shop }],
        }),
    },
  ];
  const objects: Creation[] = Array.from({ length: deployments }, (_, i) =>
    object('Deployment', `deploy-${i}`, apps('deployments'), {
      spec: { replicas: 1 + (i % 4), selector: { matchLabels: { app: `deploy-${i}` } }, template: pod(`deploy-${i}`) },
    }),
  );
  const rest = Math.max(0, count - deployments);
  const total = kinds.reduce((n, k) => n + k.weight, 0);
  const sizes = kinds.map((k) => Math.floor((rest * k.weight) / total));
  sizes[0] = rest - sizes.slice(1).reduce((a, b) => a + b, 0);
  kinds.forEach((k, n) => {
    for (let i = 0; i < (sizes[n] ?? 0); i++) objects.push(k.make(i));
  });
  return objects;
}

/** `Kind/name` of every object of `mix` the standby does not hold. */
async function missingInStandby(client: KubeRest, mix: readonly Creation[]): Promise<string[]> {
  const present = new Set<string>();
  for (const path of new Set(mix.map((m) => m.path))) {
    const list = await client.request<{ items: { kind?: string; metadata: { name: string } }[] }>({ method: 'GET', path });
    for (const item of list.items) present.add(`${path}/${item.metadata.name}`);
  }
  return mix.filter((m) => !present.has(`${m.path}/${m.name}`)).map((m) => `${m.kind}/${m.name}`);
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

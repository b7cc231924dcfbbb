// `pnpm bench apply [--sweep]`: 1,000 objects (ConfigMaps, Secrets, Services, Deployments across 10
// namespaces) on a fresh test control plane, Syncline's planApply + executePlan side by side with
// `kubectl apply --server-side` of the same objects. Requests are counted twice: at the API server
// (apiserver_request_total on the four resources only, so controller lease renewals don't count) and at the
// client (every ApplyClient call the engine makes).
// An unchanged re-apply is measured two ways: cold (the engine alone: one LIST per kind and namespace, plan,
// nothing written) and warm (the no-op record of unchanged.ts, proven by a watch of the applied kinds that the
// bench runs itself as the operator's drift watches do: no request at all).
// Services are headless: the test control plane's service CIDR is a /24, too small for two sets of 250.
// --sweep also times the first apply at several concurrencies (how DEFAULT_CONCURRENCY was chosen).
import { AppsV1Api, CoreV1Api, KubeConfig, makeInformer, type Informer, type KubernetesObject, type ObjectCache } from '@kubernetes/client-node';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request, type RequestOptions } from 'node:https';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane } from '@syncline/test-support';
import {
  DEFAULT_CONCURRENCY,
  OWNER_LABEL,
  applyFingerprint,
  createApplyClient,
  executePlan,
  parseObjectId,
  planApply,
  readLive,
  recordNoop,
  stillUnchanged,
  unchangedChangeSet,
  type ApplyClient,
  type ChangeSet,
  type Inventory,
  type KubeObject,
  type NoopRecord,
  type Owner,
  type WatchedVersion,
} from '../src/index.ts';

const NAMESPACES = 10;
const PER_KIND = 25; // per namespace and kind: 10 × 4 × 25 = 1,000 objects
const RESOURCES = new Set(['configmaps', 'secrets', 'services', 'deployments']);
const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION']);
const READ_VERBS = new Set(['GET', 'LIST']);
const RUNS = 11; // re-applies of each kind: a resync loop; the median is the figure, all are printed

function objectsFor(prefix: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (let n = 0; n < NAMESPACES; n++) {
    const namespace = `${prefix}-${n}`;
    for (let i = 0; i < PER_KIND; i++) {
      const name = `app-${i}`;
      const labels = { app: name, tier: 'bench' };
      out.push({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace, labels },
        data: { 'app.yaml': `name: ${name}\nreplicas: 2\nfeature: ${'x'.repeat(200)}\n`, level: 'info' },
      });
      out.push({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, namespace, labels },
        type: 'Opaque',
        stringData: { password: `secret-${i}`, user: 'app' },
      });
      out.push({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, namespace, labels },
        spec: { clusterIP: 'None', selector: labels, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      });
      out.push({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name, namespace, labels },
        spec: {
          replicas: 2,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              containers: [
                {
                  name: 'app',
                  image: 'nginx:1.27',
                  ports: [{ containerPort: 8080 }],
                  resources: { requests: { cpu: '100m', memory: '128Mi' } },
                  env: [{ name: 'LEVEL', value: 'info' }],
                },
              ],
            },
          },
        },
      });
    }
  }
  return out;
}

function writeManifests(objects: KubeObject[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'syncline-bench-'));
  // one multi-document file per namespace and kind, as a config repo would hold them
  const files = new Map<string, KubeObject[]>();
  for (const o of objects) {
    const key = `${o.metadata.namespace ?? ''}-${o.kind}`;
    files.set(key, [...(files.get(key) ?? []), o]);
  }
  // JSON is YAML; kubectl reads a v1 List as its items
  for (const [key, list] of files) writeFileSync(join(dir, `${key}.json`), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: list }));
  return dir;
}

type ServerCounts = { writes: number; reads: number };
const minus = (a: ServerCounts, b: ServerCounts): ServerCounts => ({ writes: a.writes - b.writes, reads: a.reads - b.reads });

/** Requests the API server has answered on the four resources: writes, and reads (GET, LIST; WATCH not counted). */
async function serverCounts(kc: KubeConfig): Promise<ServerCounts> {
  const opts: RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const text = await new Promise<string>((resolve, reject) => {
    const r = request(new URL('/metrics', kc.getCurrentCluster()?.server), { ...opts, method: 'GET' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', reject);
    });
    r.on('error', reject);
    r.end();
  });
  const counts = { writes: 0, reads: 0 };
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = new Map([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m): [string, string] => [m[1] ?? '', m[2] ?? '']));
    if (!RESOURCES.has(labels.get('resource') ?? '') || (labels.get('dry_run') ?? '') !== '') continue;
    const verb = labels.get('verb') ?? '';
    const n = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (WRITE_VERBS.has(verb)) counts.writes += n;
    else if (READ_VERBS.has(verb)) counts.reads += n;
  }
  return counts;
}

/** The client the engine is given, counting its calls (a LIST of more than 1,000 objects would page: none here). */
function counting(inner: ApplyClient): { client: ApplyClient; calls: () => number } {
  let calls = 0;
  const client: ApplyClient = {
    discovery: (options) => {
      if (options?.refresh === true) calls++; // otherwise cached since the warm-up below: no request
      return inner.discovery(options);
    },
    list: (scope, signal) => (calls++, inner.list(scope, signal)),
    get: (id, signal) => (calls++, inner.get(id, signal)),
    apply: (object, options) => (calls++, inner.apply(object, options)),
    jsonPatch: (id, operations, options) => (calls++, inner.jsonPatch(id, operations, options)),
    delete: (id, options) => (calls++, inner.delete(id, options)),
    waitEstablished: (name, options) => (calls++, inner.waitEstablished(name, options)),
  };
  return { client, calls: () => calls };
}

const phases = { read: 0, plan: 0, execute: 0 };
async function syncOnce(client: ApplyClient, desired: KubeObject[], inventory: Inventory, owner: Owner, concurrency: number): Promise<ChangeSet> {
  let t = performance.now();
  const live = await readLive({ client, desired, inventory, concurrency });
  phases.read = performance.now() - t;
  t = performance.now();
  const plan = planApply({ desired, inventory, live, owner });
  phases.plan = performance.now() - t;
  t = performance.now();
  const changes = await executePlan(plan, { client, concurrency });
  phases.execute = performance.now() - t;
  return changes;
}
const phaseLine = (): string => `read ${phases.read.toFixed(0)} ms + plan ${phases.plan.toFixed(0)} ms + execute ${phases.execute.toFixed(0)} ms`;

function count(changes: ChangeSet): string {
  const by = new Map<string, number>();
  for (const e of changes.entries) by.set(e.action, (by.get(e.action) ?? 0) + 1);
  return [...by].map(([a, n]) => `${n} ${a}`).join(', ');
}

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const result = await work();
  return [result, performance.now() - started];
}

/**
 * Watches of the four applied kinds (label-selected on the owner mark, all namespaces), as the operator's drift
 * watches are: what they hold of an object is its resourceVersion, the proof the no-op record needs.
 */
async function watchApplied(kc: KubeConfig): Promise<{ watched: WatchedVersion; versionOf: (id: string) => string | undefined; stop: () => Promise<void> }> {
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const labelSelector = OWNER_LABEL;
  const informers = new Map<string, Informer<KubernetesObject> & ObjectCache<KubernetesObject>>([
    ['/ConfigMap', makeInformer(kc, '/api/v1/configmaps', () => core.listConfigMapForAllNamespaces({ labelSelector }), labelSelector)],
    ['/Secret', makeInformer(kc, '/api/v1/secrets', () => core.listSecretForAllNamespaces({ labelSelector }), labelSelector)],
    ['/Service', makeInformer(kc, '/api/v1/services', () => core.listServiceForAllNamespaces({ labelSelector }), labelSelector)],
    ['apps/Deployment', makeInformer(kc, '/apis/apps/v1/deployments', () => apps.listDeploymentForAllNamespaces({ labelSelector }), labelSelector)],
  ]);
  const failed = new Set<string>();
  for (const [kind, informer] of informers) informer.on('error', () => failed.add(kind)); // a failed ListWatch stops: nothing is proven after
  await Promise.all([...informers.values()].map((i) => i.start())); // resolves once listed and watching
  const versionOf = (id: string): string | undefined => {
    const { group, kind, namespace, name } = parseObjectId(id);
    return informers.get(`${group}/${kind}`)?.get(name, namespace)?.metadata?.resourceVersion;
  };
  return {
    versionOf,
    watched: (id) => {
      const { group, kind } = parseObjectId(id);
      const key = `${group}/${kind}`;
      if (!informers.has(key) || failed.has(key)) return undefined;
      return versionOf(id) ?? null;
    },
    stop: async () => {
      await Promise.all([...informers.values()].map((i) => i.stop()));
    },
  };
}

/**
 * One resync the way the operator's applyTarget runs it: skipped without a request while the last clean no-op
 * still holds (same inputs, the watch still holds the versions read then); otherwise a full apply, whose record
 * is kept when it was a clean no-op.
 */
async function resync(options: {
  client: ApplyClient;
  desired: KubeObject[];
  inventory: Inventory;
  owner: Owner;
  noop: { record: NoopRecord | undefined; watched: WatchedVersion };
}): Promise<{ changes: ChangeSet; skipped: boolean }> {
  const { desired, inventory, owner, noop } = options;
  const fingerprint = applyFingerprint({ desired, inventory: inventory.map((e) => e.id), owner, options: {} });
  if (stillUnchanged(noop.record, fingerprint, noop.watched)) return { changes: unchangedChangeSet(desired, inventory), skipped: true };
  noop.record = undefined;
  const live = await readLive({ client: options.client, desired, inventory });
  const changes = await executePlan(planApply({ desired, inventory, live, owner }), { client: options.client });
  noop.record = recordNoop(fingerprint, { desired, inventory, live, changes, owner });
  return { changes, skipped: false };
}

const median = <T extends { ms: number }>(runs: T[]): T => {
  const m = [...runs].sort((a, b) => a.ms - b.ms)[Math.floor(runs.length / 2)];
  if (m === undefined) throw new Error('no runs');
  return m;
};
const medianCpu = (runs: { cpu: number }[]): number => [...runs].map((r) => r.cpu).sort((a, b) => a - b)[Math.floor(runs.length / 2)] ?? Number.NaN;
const cpuMs = (used: NodeJS.CpuUsage): number => (used.user + used.system) / 1000;
const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

const sweep = process.argv.includes('--sweep');
const loadAtStart = load();
const cp = await startControlPlane({ onProgress: (line) => console.error(`[control-plane] ${line}`) });
try {
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  const kubectl = (...args: string[]): { ms: number; out: string } => {
    const started = performance.now();
    const r = spawnSync('kubectl', ['--kubeconfig', cp.kubeconfigPath, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 600_000 });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.status ?? r.signal ?? ''}): ${r.stderr.slice(-2000)}`);
    return { ms: performance.now() - started, out: r.stdout };
  };
  const prefixes = ['kubectl', 'syncline', ...(sweep ? [4, 8, 16, 32, 64].map((c) => `sweep${c}`) : [])];
  const nsList = {
    apiVersion: 'v1',
    kind: 'List',
    items: prefixes.flatMap((p) => Array.from({ length: NAMESPACES }, (_, n) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: `${p}-${n}` } }))),
  };
  const nsDir = mkdtempSync(join(tmpdir(), 'syncline-bench-ns-'));
  writeFileSync(join(nsDir, 'ns.json'), JSON.stringify(nsList));
  kubectl('apply', '-f', nsDir);
  rmSync(nsDir, { recursive: true });
  // new namespaces make the controller manager write a kube-root-ca.crt ConfigMap into each: let that settle
  for (let last = -1, now = (await serverCounts(kc)).writes; now !== last;) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    [last, now] = [now, (await serverCounts(kc)).writes];
  }
  const counted = counting(await createApplyClient(kc));
  const { client } = counted;
  await client.discovery(); // warm, as a running operator's would be
  kubectl('api-resources'); // warm kubectl's discovery cache the same way

  // kubectl: first apply and an unchanged re-apply
  const kubectlObjects = objectsFor('kubectl');
  const dir = writeManifests(kubectlObjects);
  let s0 = await serverCounts(kc);
  const kFirst = kubectl('apply', '--server-side', '-f', dir);
  let s1 = await serverCounts(kc);
  const kubectlFirst = minus(s1, s0);
  const kAgain = kubectl('apply', '--server-side', '-f', dir);
  s0 = await serverCounts(kc);
  const kubectlAgain = minus(s0, s1);
  rmSync(dir, { recursive: true });

  if (sweep) {
    // interleaved order, so that warm-up and the machine's background load don't favour one setting
    for (const c of [16, 4, 64, 8, 32]) {
      const [, ms] = await timed(() => syncOnce(client, objectsFor(`sweep${c}`), [], { namespace: 'bench', name: 'sweep', target: String(c) }, c));
      console.log(`sweep: concurrency ${String(c).padStart(2)}: first apply ${ms.toFixed(0)} ms`);
    }
  }

  // Syncline: first apply
  const owner: Owner = { namespace: 'bench', name: 'apply', target: 'local' };
  const desired = objectsFor('syncline');
  s0 = await serverCounts(kc);
  let calls0 = counted.calls();
  const cpuBefore = process.cpuUsage();
  const [first, firstMs] = await timed(() => syncOnce(client, desired, [], owner, DEFAULT_CONCURRENCY));
  const firstPhases = `${phaseLine()}; client CPU ${cpuMs(process.cpuUsage(cpuBefore)).toFixed(0)} ms`;
  s1 = await serverCounts(kc);
  const firstServer = minus(s1, s0);
  const firstCalls = counted.calls() - calls0;

  // Cold: RUNS unchanged re-applies by the engine alone (a resync loop without a watch); the median is the figure
  // (the first ones still pay for compiling the comparison code, which the first apply never ran)
  const coldRuns: { ms: number; cpu: number; phases: string; changes: ChangeSet }[] = [];
  calls0 = counted.calls();
  for (let i = 0; i < RUNS; i++) {
    const before = process.cpuUsage();
    const [changes, ms] = await timed(() => syncOnce(client, desired, first.inventory, owner, DEFAULT_CONCURRENCY));
    const cpu = cpuMs(process.cpuUsage(before));
    coldRuns.push({ ms, cpu, phases: `${phaseLine()}; client CPU ${cpu.toFixed(0)} ms`, changes });
  }
  s0 = await serverCounts(kc);
  const coldServer = minus(s0, s1);
  const coldCalls = counted.calls() - calls0;
  const cold = median(coldRuns);

  // Warm: the same resyncs through the no-op record, proven by watches of the applied kinds. The first resync
  // after the watches start is a full apply that records the no-op (the operator's first resync after a commit
  // does the same); the RUNS after it are the figure.
  const watches = await watchApplied(kc);
  const noop: { record: NoopRecord | undefined; watched: WatchedVersion } = { record: undefined, watched: watches.watched };
  const recording = await resync({ client, desired, inventory: first.inventory, owner, noop });
  if (noop.record?.fingerprint === undefined) throw new Error(`the re-apply was not a clean no-op: ${count(recording.changes)}`);
  const warmRuns: { ms: number; cpu: number; skipped: boolean; changes: ChangeSet }[] = [];
  s1 = await serverCounts(kc);
  calls0 = counted.calls();
  for (let i = 0; i < RUNS; i++) {
    const before = process.cpuUsage();
    const [{ changes, skipped }, ms] = await timed(() => resync({ client, desired, inventory: recording.changes.inventory, owner, noop }));
    warmRuns.push({ ms, cpu: cpuMs(process.cpuUsage(before)), skipped, changes });
  }
  s0 = await serverCounts(kc);
  const warmServer = minus(s0, s1);
  const warmCalls = counted.calls() - calls0;
  const warm = median(warmRuns);

  // Someone edits one ConfigMap behind our back (an update, as kubectl edit does): one write not ours. Its watch
  // event is what wakes the operator; the resync after it must not be skipped, and corrects it with one write.
  const target = desired.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'app-7' && o.metadata.namespace === 'syncline-3');
  const targetId = '/ConfigMap/syncline-3/app-7';
  const versionBefore = watches.versionOf(targetId);
  kubectl('patch', 'configmap', 'app-7', '-n', 'syncline-3', '--type=merge', '-p', '{"data":{"level":"debug"}}');
  for (const deadline = Date.now() + 30_000; watches.versionOf(targetId) === versionBefore && Date.now() < deadline;)
    await new Promise((resolve) => setTimeout(resolve, 10));
  const seen = watches.versionOf(targetId) !== versionBefore;
  s0 = await serverCounts(kc);
  calls0 = counted.calls();
  const [drift, driftMs] = await timed(() => resync({ client, desired, inventory: warm.changes.inventory, owner, noop }));
  s1 = await serverCounts(kc);
  const driftServer = minus(s1, s0);
  const driftCalls = counted.calls() - calls0;
  const corrected = drift.changes.entries.filter((e) => e.action === 'configured');
  await watches.stop();

  const pct = (ms: number): number => (ms / firstMs) * 100;
  const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');
  const coldPct = pct(cold.ms);
  const warmPct = pct(warm.ms);
  const warmRequests = warmServer.reads + warmServer.writes;
  console.log(`objects: ${desired.length} (${NAMESPACES} namespaces × ${PER_KIND} × ConfigMap/Secret/Service/Deployment); concurrency ${DEFAULT_CONCURRENCY}`);
  console.log(
    `kubectl apply --server-side, first: ${kFirst.ms.toFixed(0)} ms, ${kubectlFirst.writes} writes, ${kubectlFirst.reads} reads; re-apply: ${kAgain.ms.toFixed(0)} ms, ${kubectlAgain.writes} writes, ${kubectlAgain.reads} reads`,
  );
  console.log(
    `syncline first apply: ${firstMs.toFixed(0)} ms, ${firstServer.writes} writes, ${firstServer.reads} reads, ${firstCalls} client calls (${count(first)}; ${firstPhases})`,
  );
  console.log(
    `syncline re-apply unchanged, cold (engine alone, median of ${RUNS}: ${coldRuns.map((r) => r.ms.toFixed(0)).join('/')} ms): ${cold.ms.toFixed(1)} ms; ` +
      `in all ${RUNS}: ${coldServer.writes} writes, ${coldServer.reads} reads, ${coldCalls} client calls (${count(cold.changes)}; ${cold.phases})`,
  );
  console.log(
    `syncline re-apply unchanged, warm (no-op record + watch, median of ${RUNS}: ${warmRuns.map((r) => r.ms.toFixed(1)).join('/')} ms): ${warm.ms.toFixed(2)} ms, client CPU ${warm.cpu.toFixed(1)} ms; ` +
      `in all ${RUNS}: ${warmServer.writes} writes, ${warmServer.reads} reads, ${warmCalls} client calls, ${warmRuns.filter((r) => r.skipped).length} of ${RUNS} skipped (${count(warm.changes)})`,
  );
  console.log(
    `syncline one drifted object (warm): ${driftMs.toFixed(1)} ms, ${driftServer.writes} writes, ${driftServer.reads} reads, ${driftCalls} client calls, ` +
      `${drift.skipped ? 'SKIPPED' : 'full apply'}${seen ? '' : ' [the watch never saw the edit]'}, corrected: ${corrected.map((e) => `${e.id} (${e.reason ?? ''})`).join(', ') || 'none'}${target === undefined ? ' [target missing]' : ''}`,
  );
  console.log(`load average (1/5/15 min): ${loadAtStart} at start, ${load()} at end`);
  console.log(`first apply: ${(firstMs / kFirst.ms).toFixed(2)}× kubectl (target ≤ 0.5×: ${verdict(firstMs / kFirst.ms <= 0.5)})`);
  console.log(
    `re-apply unchanged, cold: ${coldPct.toFixed(1)}% of first apply (target ≤ 2%: ${verdict(coldPct <= 2)}), ${coldServer.writes} writes (target 0: ${verdict(coldServer.writes === 0)}), ` +
      `${coldServer.reads / RUNS} reads each, client CPU ${medianCpu(coldRuns).toFixed(1)} ms (median)`,
  );
  console.log(
    `re-apply unchanged, warm: ${warmPct.toFixed(2)}% of first apply (target ≤ 2%: ${verdict(warmPct <= 2)}), ` +
      `${warmRequests} API requests (target 0: ${verdict(warmRequests === 0 && warmCalls === 0)}), client CPU ${medianCpu(warmRuns).toFixed(1)} ms (median)`,
  );
  console.log(`drift: ${driftServer.writes} write (target 1: ${verdict(driftServer.writes === 1 && corrected.length === 1)})`);
} finally {
  await cp.stop();
}

// `pnpm bench mirror [--namespaces 500] [--steady 60] [--noise 10000]`: one labelled Secret with `*` into N
// namespaces against the real control plane and the real operator process, then the same copy through a
// ManifestSync with a namespaceSelector. Prints, with their targets: time until all N replicas exist,
// a source update until all N carry it and until the first does (p50 of several updates), a new namespace
// until its replica exists, write requests in a steady state (with resyncs every 10 s, so no-op reconciles
// run), and operator RSS before and after 10,000 unrelated 10 KB Secrets.
import { startOperator } from '@syncline/test-support';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { benchEnvironment, diff, writeRequests } from './_environment.ts';

const { values: flags } = parseArgs({
  options: {
    namespaces: { type: 'string', default: '500' },
    steady: { type: 'string', default: '60' },
    noise: { type: 'string', default: '10000' },
    updates: { type: 'string', default: '7' },
  },
});
const N = Number(flags.namespaces);
const STEADY_SECONDS = Number(flags.steady);
const NOISE = Number(flags.noise);
const UPDATES = Number(flags.updates);
const home = 'bench';
const progress = (line: string): void => console.error(`[bench] ${line}`);

await using environment = await benchEnvironment(home);
const { controlPlane, rest } = environment;
const targets = Array.from({ length: N }, (_, i) => `b-${String(i).padStart(4, '0')}`);
progress(`creating ${N} namespaces`);
await pool(targets, 32, (name) => rest.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name, labels: { bench: 'mirror' } } } }));
await rest.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: 'noise' } } });

await using operator = await startOperator({
  kubeconfig: controlPlane.kubeconfigPath,
  args: ['--namespace', home, '--trusted-namespaces', home, '--mirror-resync', '10s', '--webhook-addr', 'off'],
});
await waitUntil(async () => (await fetch(`http://${operator.probeAddress}/readyz`)).status === 200, 60_000);
await sleep(2000);
const rssIdle = rss(operator.pid);

type Seen = Map<string, { value: string; at: number }>;
/** Watches Secrets named `name` (label-selected) and records when each namespace's copy carries which value. */
function track(selector: string, name: string): { seen: Seen; stop(): void } {
  const seen: Seen = new Map();
  const abort = new AbortController();
  void rest
    .watch(
      '/api/v1/secrets',
      { labelSelector: selector, fieldSelector: `metadata.name=${name}` },
      (raw) => {
        const event = raw as { type: string; object: { metadata: { namespace: string }; data?: Record<string, string> } };
        if (event.type !== 'ADDED' && event.type !== 'MODIFIED') return;
        const value = Buffer.from(event.object.data?.['v'] ?? '', 'base64').toString();
        if (seen.get(event.object.metadata.namespace)?.value !== value) seen.set(event.object.metadata.namespace, { value, at: performance.now() });
      },
      abort.signal,
    )
    .catch(() => undefined);
  return { seen, stop: () => abort.abort() };
}
const carrying = (seen: Seen, value: string): { count: number; first: number; last: number } => {
  const times = targets
    .map((t) => seen.get(t))
    .filter((s) => s?.value === value)
    .map((s) => s?.at ?? 0);
  return { count: times.length, first: Math.min(...times), last: Math.max(...times) };
};

type Figures = {
  allMs: number;
  updateAllMs: number[];
  updateFirstMs: number[];
  newNamespaceMs: number[];
  steadyWrites: { total: number; byVerbResource: Record<string, number> };
};

async function measure(
  label: string,
  setup: {
    selector: string;
    name: string;
    create(): Promise<void>;
    update(value: string): Promise<void>;
    newNamespaceLabels: Record<string, string>;
    remove(): Promise<void>;
  },
): Promise<Figures> {
  const tracker = track(setup.selector, setup.name);
  await sleep(500);
  progress(`${label}: creating the source`);
  const t0 = performance.now();
  await setup.create();
  await waitUntil(() => carrying(tracker.seen, 'v0').count === N, 120_000);
  const allMs = carrying(tracker.seen, 'v0').last - t0;
  progress(`${label}: all ${N} in ${Math.round(allMs)} ms`);
  await sleep(3000);

  const updateAllMs: number[] = [];
  const updateFirstMs: number[] = [];
  for (let u = 1; u <= UPDATES; u++) {
    const value = `v${u}`;
    const start = performance.now();
    await setup.update(value);
    await waitUntil(() => carrying(tracker.seen, value).count === N, 120_000);
    const c = carrying(tracker.seen, value);
    updateAllMs.push(c.last - start);
    updateFirstMs.push(c.first - start);
    await sleep(1500);
  }
  progress(`${label}: updates all ${updateAllMs.map(Math.round).join(', ')} ms; first ${updateFirstMs.map(Math.round).join(', ')} ms`);

  const newNamespaceMs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const name = `late-${label.toLowerCase().replace(/[^a-z]/g, '')}-${i}`;
    const start = performance.now();
    await rest.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name, labels: setup.newNamespaceLabels } } });
    await waitUntil(() => tracker.seen.has(name), 60_000);
    newNamespaceMs.push((tracker.seen.get(name)?.at ?? 0) - start);
    await sleep(500);
  }
  progress(`${label}: new namespaces ${newNamespaceMs.map(Math.round).join(', ')} ms`);

  await sleep(5000); // echoes of our own writes settle
  progress(`${label}: steady state for ${STEADY_SECONDS} s`);
  const before = await writeRequests(rest);
  await sleep(STEADY_SECONDS * 1000);
  const steadyWrites = diff(await writeRequests(rest), before);
  tracker.stop();
  await setup.remove();
  return { allMs, updateAllMs, updateFirstMs, newNamespaceMs, steadyWrites };
}

const secretBody = (name: string, value: string, metadata: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: home, ...metadata },
  data: { v: Buffer.from(value).toString('base64') },
});

const mirror = await measure('Mirror', {
  selector: 'syncline.dev/sync-replica=true',
  name: 'shared',
  create: async () => {
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${home}/secrets`,
      body: secretBody('shared', 'v0', { labels: { 'syncline.dev/sync-source': 'true' }, annotations: { 'syncline.dev/targets': '*' } }),
    });
  },
  update: async (value) => {
    await rest.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${home}/secrets/shared`,
      contentType: 'application/merge-patch+json',
      body: { data: { v: Buffer.from(value).toString('base64') } },
    });
  },
  newNamespaceLabels: {},
  remove: async () => {
    await rest.request({ method: 'DELETE', path: `/api/v1/namespaces/${home}/secrets/shared` });
  },
});
const rssMirror = rss(operator.pid);

progress(`creating ${NOISE} unrelated Secrets of 10 KB`);
const tenKb = Buffer.alloc((10 * 1024 * 3) / 4, 7).toString('base64');
await pool(
  Array.from({ length: NOISE }, (_, i) => i),
  32,
  (i) =>
    rest.request({
      method: 'POST',
      path: '/api/v1/namespaces/noise/secrets',
      body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: `noise-${i}` }, data: { blob: tenKb } },
    }),
);
await sleep(5000);
const rssNoise = rss(operator.pid);

const manifest = await measure('ManifestSync', {
  selector: 'syncline.dev/owner',
  name: 'copied',
  create: async () => {
    await rest.request({ method: 'POST', path: `/api/v1/namespaces/${home}/secrets`, body: secretBody('copied', 'v0') });
    await rest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${home}/manifestsyncs`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'ManifestSync',
        metadata: { name: 'copied' },
        spec: {
          sourceRef: { apiVersion: 'v1', kind: 'Secret', name: 'copied' },
          syncPolicy: { mode: 'Immediate', interval: '10s' },
          targets: [{ namespaceSelector: { matchLabels: { bench: 'mirror' } } }],
        },
      },
    });
  },
  update: async (value) => {
    await rest.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${home}/secrets/copied`,
      contentType: 'application/merge-patch+json',
      body: { data: { v: Buffer.from(value).toString('base64') } },
    });
  },
  newNamespaceLabels: { bench: 'mirror' },
  remove: async () => {
    await rest.request({ method: 'DELETE', path: `/apis/syncline.dev/v1alpha1/namespaces/${home}/manifestsyncs/copied` });
  },
});
const rssEnd = rss(operator.pid);

const p50 = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? Number.NaN;
const ms = (value: number): string => `${Math.round(value)} ms`;
const report = (label: string, f: Figures): string[] => [
  `${label}: all ${N} replicas exist: ${ms(f.allMs)} (target ≤ 3000 ms)`,
  `${label}: source update until all ${N} carry it: p50 ${ms(p50(f.updateAllMs))}, max ${ms(Math.max(...f.updateAllMs))} over ${f.updateAllMs.length} updates (target ≤ 3000 ms)`,
  `${label}: source update until the first replica carries it: p50 ${ms(p50(f.updateFirstMs))} (target ≤ 100 ms)`,
  `${label}: new namespace until its replica exists: p50 ${ms(p50(f.newNamespaceMs))}, max ${ms(Math.max(...f.newNamespaceMs))} over ${f.newNamespaceMs.length} (target ≤ 500 ms)`,
  `${label}: steady state ${STEADY_SECONDS} s (resync every 10 s): ${f.steadyWrites.total} write requests ${JSON.stringify(f.steadyWrites.byVerbResource)} (target 0)`,
];
console.log('');
console.log(`operator: ${process.platform} ${process.arch}, node ${process.version}, --namespace ${home} (mirroring watches are cluster-wide)`);
for (const line of [
  ...report('Mirror', mirror),
  ...report('ManifestSync', manifest),
  `operator RSS: idle ${rssIdle.toFixed(0)} MB; after mirroring into ${N} namespaces ${rssMirror.toFixed(0)} MB; with ${NOISE} unrelated 10 KB Secrets ${rssNoise.toFixed(0)} MB (must not grow with them); at the end ${rssEnd.toFixed(0)} MB`,
])
  console.log(line);

async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(20);
  }
}

function rss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

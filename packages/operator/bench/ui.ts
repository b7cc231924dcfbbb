// `pnpm bench ui [--syncs 1000] [--manifests 100] [--pages 100] [--ticks 50]`: the web UI
// of the real operator process against the real control plane, with N ConfigSyncs and M ManifestSyncs in its
// informers (suspended, so the operator does not reconcile them: their status, a full one with conditions,
// targets, inventory and a 10-deploy history, is written by the bench). Measures, with Debian's Chromium
// driven by playwright-core:
//   - the overview's first paint with every count in place (a fresh page, signed in);
//   - a status change until it shows in an open page (status written → text on the page), p99;
//   - P open pages (SSE streams): the API-server requests they add (target 0: the page is fed from the
//     operator's informers) and what they add to the operator's RSS.
import { ensureChromium, startOperator } from '@syncline/test-support';
import { execFileSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium, type BrowserContext } from 'playwright-core';
import { benchEnvironment, diff, percentile, pool, requestCounts, sleep } from './_environment.ts';

const { values: flags } = parseArgs({
  options: {
    syncs: { type: 'string', default: '1000' },
    manifests: { type: 'string', default: '100' },
    pages: { type: 'string', default: '100' },
    ticks: { type: 'string', default: '50' },
  },
});
const SYNCS = Number(flags.syncs);
const MANIFESTS = Number(flags.manifests);
const PAGES = Number(flags.pages);
const TICKS = Number(flags.ticks);
const namespace = 'bench-ui';
const API = `/apis/syncline.dev/v1alpha1/namespaces/${namespace}`;
const progress = (line: string): void => console.error(`[bench] ${line}`);

const executablePath = ensureChromium();
// The page's assets, as `pnpm build:ui` builds them (the web UI is its own package, above this one).
execFileSync(process.execPath, [join(import.meta.dirname, '..', '..', 'ui', 'src', 'build.ts')], { stdio: 'inherit' });
await using environment = await benchEnvironment(namespace);
const { controlPlane, git, rest } = environment;
const repo = await git.createRepo('ui');
const head = await repo.commit({ 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: page\ndata:\n  a: "1"\n' });

progress(`creating ${SYNCS} ConfigSyncs and ${MANIFESTS} ManifestSyncs with their status`);
const history = Array.from({ length: 10 }, (_, i) => ({
  revision: i === 0 ? head : `${String(i).padStart(2, '0')}${'ab'.repeat(19)}`,
  appliedAt: new Date(Date.now() - i * 3600_000).toISOString(),
  objects: 5,
  digest: `sha256:${String(i).repeat(16)}`,
}));
const readyCondition = (message: string): Record<string, unknown> => ({
  type: 'Ready',
  status: 'True',
  reason: 'Synced',
  message,
  lastTransitionTime: new Date().toISOString(),
  observedGeneration: 1,
});
await pool(
  Array.from({ length: SYNCS }, (_, i) => i),
  16,
  async (i) => {
    await rest.request({
      method: 'POST',
      path: `${API}/configsyncs`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'ConfigSync',
        metadata: { name: `s${i}`, labels: { team: `t${i % 10}` } },
        spec: { suspend: true, source: { git: { repo: repo.url, path: 'app' } }, targets: [{ name: 'dev', namespace }] },
      },
    });
    await rest.request({
      method: 'PATCH',
      path: `${API}/configsyncs/s${i}/status`,
      contentType: 'application/merge-patch+json',
      body: {
        status: {
          observedGeneration: 1,
          sourceRevision: head,
          conditions: [readyCondition(`Applied revision main@sha1:${head}`)],
          targets: [{ name: 'dev', namespace, phase: 'Synced', objects: 5 }],
          inventory: [{ target: 'dev', entries: Array.from({ length: 5 }, (_, k) => `/ConfigMap/${namespace}/cm-${i}-${k}`) }],
          history,
        },
      },
    });
  },
);
await rest.request({ method: 'POST', path: `/api/v1/namespaces/${namespace}/configmaps`, body: { metadata: { name: 'shared' }, data: { a: '1' } } });
await pool(
  Array.from({ length: MANIFESTS }, (_, i) => i),
  16,
  (i) =>
    rest.request({
      method: 'POST',
      path: `${API}/manifestsyncs`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'ManifestSync',
        metadata: { name: `m${i}` },
        spec: { suspend: true, sourceRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'shared' }, targets: [{ namespace }] },
      },
    }),
);
// The viewer: a ServiceAccount that may list every Syncline kind in every namespace.
await rest.request({ method: 'POST', path: `/api/v1/namespaces/${namespace}/serviceaccounts`, body: { metadata: { name: 'viewer' } } });
await rest.request({
  method: 'POST',
  path: '/apis/rbac.authorization.k8s.io/v1/clusterroles',
  body: { metadata: { name: 'bench-ui-viewer' }, rules: [{ apiGroups: ['syncline.dev'], resources: ['*'], verbs: ['get', 'list', 'watch'] }] },
});
await rest.request({
  method: 'POST',
  path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
  body: {
    metadata: { name: 'bench-ui-viewer' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'bench-ui-viewer' },
    subjects: [{ kind: 'ServiceAccount', name: 'viewer', namespace }],
  },
});
const token = (
  await rest.request<{ status: { token: string } }>({
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/serviceaccounts/viewer/token`,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  })
).status.token;

await using operator = await startOperator({
  kubeconfig: controlPlane.kubeconfigPath,
  args: ['--namespace', namespace, '--mirror', 'off', '--ui-addr', '127.0.0.1:0'],
});
const ui = operator.uiAddress ?? '';
const url = `http://${ui}`;
progress(`operator up, UI at ${url}; waiting for it to mark every object Suspended`);
await waitForSuspended();

const signIn = async (): Promise<string> => {
  const response = await fetch(`${url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }).toString(),
  });
  const cookie = /syncline_session=([^;]+)/.exec(response.headers.get('set-cookie') ?? '')?.[1];
  if (cookie === undefined) throw new Error(`sign-in failed: ${response.status}`);
  return cookie;
};

const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
const newContext = async (): Promise<BrowserContext> => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addCookies([{ name: 'syncline_session', value: await signIn(), url }]);
  return context;
};

// 1. First paint: a fresh page until the counts of every object are on it.
const context = await newContext();
const paints: number[] = [];
for (let run = 0; run < 6; run++) {
  const page = await context.newPage();
  const started = Date.now();
  await page.goto(`${url}/`);
  await page
    .locator('[data-count="ConfigSync/suspended"]')
    .filter({ hasText: new RegExp(`^${SYNCS}$`) })
    .waitFor({ timeout: 60_000 });
  await page
    .locator('[data-count="ManifestSync/suspended"]')
    .filter({ hasText: new RegExp(`^${MANIFESTS}$`) })
    .waitFor({ timeout: 60_000 });
  // the first run warms the browser's cache of the script: counted apart
  if (run > 0) paints.push(Date.now() - started);
  await page.close();
}
progress(`first paint: ${paints.join(', ')} ms`);

// 2. A status change until the open page shows it.
const page = await context.newPage();
await page.goto(`${url}/objects/ConfigSync/${namespace}/s0`);
await page.waitForSelector('.conditions');
const delays: number[] = [];
for (let tick = 0; tick < TICKS; tick++) {
  const text = `tick-${tick}-${Date.now()}`;
  const started = Date.now();
  await rest.request({
    method: 'PATCH',
    path: `${API}/configsyncs/s0/status`,
    contentType: 'application/merge-patch+json',
    body: {
      status: {
        conditions: [
          readyCondition(text),
          { type: 'Suspended', status: 'True', reason: 'Suspended', message: 'spec.suspend is true', lastTransitionTime: new Date().toISOString() },
        ],
      },
    },
  });
  await page.locator('.conditions pre.message').filter({ hasText: text }).waitFor({ timeout: 30_000 });
  delays.push(Date.now() - started);
  await sleep(50);
}
progress(`status change → page: p50 ${percentile(delays, 50)} ms, max ${Math.max(...delays)} ms`);

// 3. P open pages: SSE streams of P signed-in viewers, while statuses change.
const cookies = await Promise.all(Array.from({ length: PAGES }, () => signIn()));
await sleep(2000);
const counted = (): ReturnType<typeof requestCounts> =>
  requestCounts(rest, (_verb, resource) => resource !== '' && resource !== 'leases' && resource !== 'services');
const baseline: number[] = [];
for (let i = 0; i < 5; i++) {
  baseline.push(rssMb(operator.pid));
  await sleep(200);
}
const rssBefore = Math.max(...baseline);
const before = await counted();
// RSS is sampled through the window: the peak is what the pages cost at worst (a GC may lower it after).
let rssPeak = 0;
const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb(operator.pid))), 100);
const streams = await Promise.all(cookies.map((cookie) => openStream(cookie)));
for (let tick = 0; tick < 20; tick++) {
  await rest.request({
    method: 'PATCH',
    path: `${API}/configsyncs/s${tick + 1}/status`,
    contentType: 'application/merge-patch+json',
    body: { status: { conditions: [readyCondition(`busy ${tick}`)] } },
  });
  await sleep(100);
}
await sleep(3000);
const received = streams.reduce((n, s) => n + s.upserts(), 0);
clearInterval(sampler);
const rssAfter = rssPeak;
const added = diff(await counted(), before);
for (const stream of streams) stream.close();
// The bench's own 20 status writes are not the pages'.
const own = 20;
const byPages: Record<string, number> = { ...added.byVerbResource, 'PATCH configsyncs': (added.byVerbResource['PATCH configsyncs'] ?? 0) - own };
if (byPages['PATCH configsyncs'] === 0) delete byPages['PATCH configsyncs'];
// SubjectAccessReviews are per viewer (kind, namespace; cached 30 s), not per page: counted apart.
const reviews = (byPages['POST subjectaccessreviews'] ?? 0) + (byPages['CREATE subjectaccessreviews'] ?? 0);
delete byPages['POST subjectaccessreviews'];
delete byPages['CREATE subjectaccessreviews'];
const pageRequests = Object.values(byPages).reduce((n, v) => n + v, 0);
await browser.close();

const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');
const paint = Math.max(...paints);
const p99 = percentile(delays, 99);
console.log(
  `ui bench: ${SYNCS} ConfigSyncs + ${MANIFESTS} ManifestSyncs in the operator's informers, Chromium ${browser.version()}, Node ${process.versions.node}`,
);
console.log(
  `overview first paint, every count in place:       median ${percentile(paints, 50)} ms, max ${paint} ms of ${paints.length}  (target ≤ 1000 ms: ${verdict(paint <= 1000)})`,
);
console.log(
  `status change → visible in an open page:          p50 ${percentile(delays, 50)} ms, p99 ${p99} ms of ${delays.length}  (target p99 ≤ 500 ms: ${verdict(p99 <= 500)})`,
);
console.log(`${PAGES} open pages (SSE), 20 status changes (${received} upserts delivered):`);
console.log(
  `  API-server requests they added (reads, lists, watches, writes): ${pageRequests}${pageRequests > 0 ? `  ${JSON.stringify(byPages)}` : ''}  (target 0: ${verdict(pageRequests === 0)})`,
);
console.log(
  `  SubjectAccessReviews in the window:             ${reviews}  (one viewer behind all ${PAGES} pages: per viewer, kind and namespace every 30 s, not per page)`,
);
console.log(
  `  operator RSS added (peak in the window − before): ${(rssAfter - rssBefore).toFixed(1)} MB (${rssBefore.toFixed(0)} → ${rssAfter.toFixed(0)} MB)  (target ≤ 30 MB: ${verdict(rssAfter - rssBefore <= 30)})`,
);

/** Every object carries the Suspended condition the operator writes: its first pass is over. */
async function waitForSuspended(): Promise<void> {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const [syncs, manifests] = await Promise.all(
      ['configsyncs', 'manifestsyncs'].map((plural) =>
        rest.request<{ items: { status?: { conditions?: { type: string }[] } }[] }>({ method: 'GET', path: `${API}/${plural}` }),
      ),
    );
    const done = [...(syncs?.items ?? []), ...(manifests?.items ?? [])].filter(
      (o) => o.status?.conditions?.some((c) => c.type === 'Suspended') === true,
    ).length;
    if (done === SYNCS + MANIFESTS) return;
    if (Date.now() > deadline) throw new Error(`timed out: ${done}/${SYNCS + MANIFESTS} Suspended`);
    await sleep(1000);
  }
}

/** One open page's stream: resolves once its snapshot arrived; counts the upserts after it. */
function openStream(cookie: string): Promise<{ upserts(): number; close(): void }> {
  return new Promise((resolve, reject) => {
    let upserts = 0;
    let snapshot = false;
    let tail = '';
    const req = httpRequest(`${url}/api/events`, { headers: { Cookie: `syncline_session=${cookie}`, Accept: 'text/event-stream' } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        tail += chunk;
        const events = tail.split('\n\n');
        tail = events.pop() ?? '';
        for (const event of events) {
          if (event.startsWith('event: snapshot') && !snapshot) {
            snapshot = true;
            resolve({ upserts: () => upserts, close: () => req.destroy() });
          } else if (event.startsWith('event: upsert')) upserts++;
        }
      });
    });
    req.on('error', (error) => {
      if (!snapshot) reject(error);
    });
    req.end();
  });
}

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
}

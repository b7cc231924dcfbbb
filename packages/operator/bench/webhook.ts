// `pnpm bench webhook [--pushes 50] [--polls 10]`: push → all objects of a 10-object change applied, on the
// real control plane with the real operator process and the test Git server. Each push is a commit that
// changes all 10 ConfigMaps plus a GitHub-signed push delivery to the receiver; the clock stops when a
// watch has seen all 10 with the new value. In the same run, the same change on a second repository that
// nobody sends webhooks for, waiting for its 10 s refresh interval. Figures on the last lines.
import type { KubeRest } from '@syncline/operator';
import { startOperator, type TestRepo } from '@syncline/test-support';
import { parseArgs } from 'node:util';
import { benchEnvironment, percentile, sleep } from './_environment.ts';
import { deliverPush } from './_push.ts';

const { values: flags } = parseArgs({ options: { pushes: { type: 'string', default: '50' }, polls: { type: 'string', default: '10' } } });
const PUSHES = Number(flags.pushes);
const POLLS = Number(flags.polls);
const OBJECTS = 10;
const namespace = 'bench-webhook';
const secret = 'bench-github-secret';

await using environment = await benchEnvironment(namespace);
const { controlPlane, git, rest } = environment;
await rest.request({
  method: 'POST',
  path: `/api/v1/namespaces/${namespace}/secrets`,
  body: { metadata: { name: 'webhooks' }, stringData: { github: secret } },
});

// Latest `revision` value per ConfigMap name, kept current by one watch.
const seen = new Map<string, string>();
const waiters = new Set<() => void>();
const watchAbort = new AbortController();
void watchConfigMaps(rest, watchAbort.signal);

const hooked = await git.createRepo('hooked');
const polled = await git.createRepo('polled');
const change = (repo: TestRepo, prefix: string, revision: string): Promise<string> =>
  repo.commit(
    Object.fromEntries(
      Array.from({ length: OBJECTS }, (_, i) => [
        `app/cm-${i}.yaml`,
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${prefix}-${i}\ndata:\n  revision: "${revision}"\n`,
      ]),
    ),
  );
await change(hooked, 'hooked', '0');
await change(polled, 'polled', '0');

await using operator = await startOperator({
  kubeconfig: controlPlane.kubeconfigPath,
  args: ['--namespace', namespace, '--webhook-secret', `${namespace}/webhooks`],
});
const webhookAddress = operator.webhookAddress;
if (webhookAddress === undefined) throw new Error('the operator started without a webhook receiver');

for (const [name, repo, refreshInterval] of [
  ['hooked', hooked, '1h'],
  ['polled', polled, '10s'],
] as const) {
  await rest.request({
    method: 'POST',
    path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs`,
    body: {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'ConfigSync',
      metadata: { name },
      spec: { source: { git: { repo: repo.url, revision: 'main', path: 'app' } }, refreshInterval, targets: [{ name: 'bench', namespace }] },
    },
  });
}
console.error('[bench] waiting for the first sync');
await allApplied('hooked', '0', 60_000);
await allApplied('polled', '0', 60_000);
console.error(`[bench] ${PUSHES} pushes with webhooks`);
await sleep(1_000);

// Phase 1: pushes with webhooks.
const pushMs: number[] = [];
git.resetRequests();
for (let i = 1; i <= PUSHES; i++) {
  const sha = await change(hooked, 'hooked', String(i));
  const started = performance.now();
  await deliverPush({ address: webhookAddress, secret, repoUrl: hooked.url, sha });
  await allApplied('hooked', String(i), 30_000);
  pushMs.push(performance.now() - started);
  await sleep(200);
}
const fetchesPerPush = git.requests('hooked').uploadPack / PUSHES;

// Phase 2: the same change, found by the 10 s refresh interval.
console.error(`[bench] ${POLLS} changes found by the refresh interval`);
const pollMs: number[] = [];
for (let i = 1; i <= POLLS; i++) {
  const started = performance.now();
  await change(polled, 'polled', String(i));
  await allApplied('polled', String(i), 60_000);
  pollMs.push(performance.now() - started);
  // Start the next change at an unrelated point of the interval.
  await sleep(Math.floor(Math.random() * 3_000));
}
watchAbort.abort();

const ms = (v: number): string => (v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(0)} ms`);
console.log(`webhook bench: push → all ${OBJECTS} objects of a change applied, one ConfigSync, Node ${process.versions.node}`);
console.log(
  `webhook (GitHub push, ${PUSHES} pushes):        p50 ${ms(percentile(pushMs, 50))}  p99 ${ms(percentile(pushMs, 99))}  max ${ms(Math.max(...pushMs))}  (target p50 ≤ 500 ms, p99 ≤ 1.5 s; ${fetchesPerPush.toFixed(2)} fetches/push)`,
);
console.log(
  `refresh interval 10s (${POLLS} changes, no webhook): p50 ${ms(percentile(pollMs, 50))}  p99 ${ms(percentile(pollMs, 99))}  max ${ms(Math.max(...pollMs))}`,
);

function allApplied(prefix: string, revision: string, timeoutMs: number): Promise<void> {
  const done = (): boolean => Array.from({ length: OBJECTS }, (_, i) => seen.get(`${prefix}-${i}`)).every((r) => r === revision);
  if (done()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      waiters.delete(check);
      reject(new Error(`${prefix}: revision ${revision} not applied within ${timeoutMs} ms`));
    }, timeoutMs);
    const check = (): void => {
      if (!done()) return;
      clearTimeout(timer);
      waiters.delete(check);
      resolve();
    };
    waiters.add(check);
  });
}

async function watchConfigMaps(client: KubeRest, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      const list = await client.request<{ metadata: { resourceVersion: string }; items: { metadata: { name: string }; data?: Record<string, string> }[] }>({
        method: 'GET',
        path: `/api/v1/namespaces/${namespace}/configmaps`,
      });
      for (const item of list.items) if (item.data?.['revision'] !== undefined) seen.set(item.metadata.name, item.data['revision']);
      for (const waiter of [...waiters]) waiter();
      await client.watch(
        `/api/v1/namespaces/${namespace}/configmaps`,
        { resourceVersion: list.metadata.resourceVersion, timeoutSeconds: 600 },
        (raw) => {
          const event = raw as { type: string; object: { metadata: { name: string }; data?: Record<string, string> } };
          const revision = event.object.data?.['revision'];
          if ((event.type === 'ADDED' || event.type === 'MODIFIED') && revision !== undefined) seen.set(event.object.metadata.name, revision);
          for (const waiter of [...waiters]) waiter();
        },
        signal,
      );
    } catch (error) {
      if (!signal.aborted) console.error(`[bench] configmap watch: ${error instanceof Error ? error.message : String(error)}; restarting`);
    }
  }
}

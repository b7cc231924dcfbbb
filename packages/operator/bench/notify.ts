// `pnpm bench notify [--syncs 200] [--rounds 5] [--batch WINDOW] [--profile DIR]`: the reconcile figures of `bench
// operator` (N ConfigSyncs × 5 objects on one repo, the real control plane and the real operator process) in two
// namespaces, each with its own operator (the JavaScript bundle the image runs): one without notifications, one with
// one NotificationAlert per sync sending every event to one webhook NotificationProvider (a real HTTP receiver), one
// request per event. `--batch WINDOW` adds a third namespace and operator whose NotificationProvider batches
// (spec.batch.window WINDOW, maxEvents at its default). Prints, per variant, the time until all Ready and the median
// time a new commit takes to reach all syncs (rounds alternate between the variants), the operator's CPU per commit,
// and the API server requests each new commit caused (leases apart): the notifications must add none (the Events
// they are made of are recorded either way). Its last lines: the CPU per commit with notifications, one request per
// event and batched, against the target (+5 % at most). DIR gets every operator's CPU profile (DIR/<namespace>/).
import type { ConfigSync } from '@syncline/operator';
import { parseDuration } from '@syncline/runtime';
import { OPERATOR_NODE_FLAGS, startHttpReceiver, startOperator } from '@syncline/test-support';
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { benchEnvironment, cpuSeconds, diff, pool, requestCounts, sleep } from './_environment.ts';
import { buildOperatorBundle } from './_bundle.ts';

const { values: flags } = parseArgs({
  options: { syncs: { type: 'string', default: '200' }, rounds: { type: 'string', default: '5' }, batch: { type: 'string' }, profile: { type: 'string' } },
});
const BATCH_WINDOW = flags.batch;
const batchWindowMs = BATCH_WINDOW === undefined ? 0 : parseDuration(BATCH_WINDOW);
const SYNCS = Number(flags.syncs);
const ROUNDS = Number(flags.rounds);
const progress = (line: string): void => console.error(`[bench] ${line}`);
const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

await using environment = await benchEnvironment('bench-plain');
const { controlPlane, git, rest } = environment;
await using receiver = await startHttpReceiver();
const repo = await git.createRepo('configs');
const template = (i: number, rev: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "{{ target.name }}-${i}"\ndata:\n  revision: "${rev}"\n`;
const commitAll = (rev: string): Promise<string> => repo.commit(Object.fromEntries([1, 2, 3, 4, 5].map((i) => [`app/cm-${i}.yaml.hbs`, template(i, rev)])));
let revision = await commitAll('r0');
// What the image runs: the operator bundled into JavaScript (packages/cli/build/bundle.ts), for both operators.
const bundle = buildOperatorBundle();

/** `windows`: each round's span on the monotonic clock a CPU profile's timestamps use (scripts/cpu-profile.ts --window). */
type Variant = {
  namespace: string;
  alerts: boolean;
  batched: boolean;
  pid: number;
  allReadyMs: number;
  commitMs: number[];
  cpuMs: number[];
  requestsPerCommit: Record<string, number>[];
  windows: { fromUs: number; toUs: number }[];
};

/**
 * Requests the API server counted, leases and the /metrics scrape apart; watches too: the API server counts one when
 * it ends, and the control plane's own controllers end theirs at random (each operator's watches are the same
 * set but for the NotificationProvider and NotificationAlert watches, two long-lived ones); Services too: the API server's own repair
 * loops LIST them every 3 minutes (as in `bench operator`).
 */
const apiRequests = (): ReturnType<typeof requestCounts> =>
  requestCounts(rest, (verb, resource) => resource !== '' && resource !== 'leases' && resource !== 'services' && verb !== 'WATCH');

/** The namespace, its NotificationProvider and NotificationAlerts (with alerts), and its own operator watching only it. */
async function setUp(namespace: string, alerts: boolean, batched = false): Promise<Variant & { operator: AsyncDisposable }> {
  if (namespace !== 'bench-plain') await rest.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: namespace } } });
  if (alerts) {
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${namespace}/secrets`,
      body: { metadata: { name: 'hook' }, stringData: { address: `${receiver.url}/${namespace}` } },
    });
    await rest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/notificationproviders`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'NotificationProvider',
        metadata: { name: 'hook' },
        spec: {
          type: 'webhook',
          secretRef: { name: 'hook' },
          rateLimit: { messages: 10_000, interval: '1m' },
          ...(batched && BATCH_WINDOW !== undefined ? { batch: { window: BATCH_WINDOW } } : {}),
        },
      },
    });
    await pool(
      Array.from({ length: SYNCS }, (_, i) => i),
      16,
      (i) =>
        rest.request({
          method: 'POST',
          path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/notificationalerts`,
          body: {
            apiVersion: 'syncline.dev/v1alpha1',
            kind: 'NotificationAlert',
            metadata: { name: `s${i}` },
            spec: { providerRef: { name: 'hook' }, eventSources: [{ kind: 'ConfigSync', name: `s${i}` }] },
          },
        }),
    );
  }
  const nodeArgs = flags.profile === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${flags.profile}/${namespace}`];
  const operator = await startOperator({
    kubeconfig: controlPlane.kubeconfigPath,
    args: ['--namespace', namespace],
    command: [process.execPath, ...OPERATOR_NODE_FLAGS, ...nodeArgs, bundle],
  });
  // The NotificationAlerts' first status writes are setup, not reconcile work: wait them out before the syncs are created.
  while (alerts) {
    const list = await rest.request<{ items: { status?: { conditions?: { type: string; status: string }[] } }[] }>({
      method: 'GET',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/notificationalerts`,
    });
    if (list.items.filter((a) => a.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length === SYNCS) break;
    await sleep(1000);
  }
  return { namespace, alerts, batched, pid: operator.pid, allReadyMs: 0, commitMs: [], cpuMs: [], requestsPerCommit: [], windows: [], operator };
}

async function createSyncs(variant: Variant): Promise<void> {
  progress(`${variant.namespace}: creating ${SYNCS} ConfigSyncs${variant.alerts ? ` (${SYNCS} NotificationAlerts exist)` : ''}`);
  const started = Date.now();
  // A refresh interval of an hour: only the measured commits reconcile (no resync of one variant during the other's round).
  await pool(
    Array.from({ length: SYNCS }, (_, i) => i),
    16,
    (i) =>
      rest.request({
        method: 'POST',
        path: `/apis/syncline.dev/v1alpha1/namespaces/${variant.namespace}/configsyncs`,
        body: {
          apiVersion: 'syncline.dev/v1alpha1',
          kind: 'ConfigSync',
          metadata: { name: `s${i}` },
          spec: { source: { git: { repo: repo.url, path: 'app' } }, refreshInterval: '1h', targets: [{ name: `s${i}`, namespace: variant.namespace }] },
        },
      }),
  );
  await waitForAll(variant.namespace, revision);
  variant.allReadyMs = Date.now() - started;
}

/** A new commit, every sync of the variant asked to reconcile now: the time until all are Ready at it, and the requests it caused. */
async function commitRound(variant: Variant, round: number): Promise<void> {
  await sleep(3000); // the status writes and Events of the last round land
  revision = await commitAll(`${variant.namespace}-${round}`);
  const before = await apiRequests();
  const cpuBefore = cpuSeconds(variant.pid);
  const fromUs = monotonicUs();
  const at = new Date().toISOString();
  const started = Date.now();
  await pool(
    Array.from({ length: SYNCS }, (_, i) => i),
    16,
    (i) =>
      rest.request({
        method: 'PATCH',
        path: `/apis/syncline.dev/v1alpha1/namespaces/${variant.namespace}/configsyncs/s${i}`,
        contentType: 'application/merge-patch+json',
        body: { metadata: { annotations: { 'syncline.dev/reconcile-requested-at': at } } },
      }),
  );
  await waitForAll(variant.namespace, revision);
  variant.commitMs.push(Date.now() - started);
  // Events are written after the status (and notifications sent after the Events, batched ones when their window ends): let them land.
  await sleep(2000 + batchWindowMs);
  variant.cpuMs.push(Math.round((cpuSeconds(variant.pid) - cpuBefore) * 1000));
  variant.windows.push({ fromUs, toUs: monotonicUs() });
  variant.requestsPerCommit.push(diff(await apiRequests(), before).byVerbResource);
  progress(`${variant.namespace}: commit ${round} → all Ready in ${variant.commitMs.at(-1)} ms`);
}

// Both operators run side by side, each idle while the other's round runs; the rounds alternate, so a change of
// the machine's load (it is shared) falls on both variants alike.
const plain = await setUp('bench-plain', false);
const notified = await setUp('bench-alerts', true);
const batched = BATCH_WINDOW === undefined ? undefined : await setUp('bench-batched', true, true);
const variants = [plain, notified, ...(batched === undefined ? [] : [batched])];
// Every sync's events: created (Synced) and one per round.
const expected = SYNCS * (1 + ROUNDS);
/** Events the receiver got from a variant's NotificationProvider: a request each, or a batch's array. */
const deliveredTo = (variant: Variant): number =>
  receiver.requests
    .filter((r) => r.path === `/${variant.namespace}`)
    .reduce((sum, r) => sum + (variant.batched ? (JSON.parse(r.body) as unknown[]).length : 1), 0);
try {
  for (const variant of variants) await createSyncs(variant);
  for (let round = 1; round <= ROUNDS; round++) for (const variant of variants) await commitRound(variant, round);
  const deadline = Date.now() + 60_000;
  while (variants.some((v) => v.alerts && deliveredTo(v) < expected) && Date.now() < deadline) await sleep(200);
} finally {
  for (const variant of variants) await variant.operator[Symbol.asyncDispose]();
}
// The rounds' spans beside each profile: `node scripts/cpu-profile.ts DIR/bench-alerts/CPU…cpuprofile --window
// DIR/bench-alerts/rounds.json --minus DIR/bench-plain/CPU…cpuprofile --minus-window DIR/bench-plain/rounds.json` is then
// what the notifications cost over the rounds.
if (flags.profile !== undefined)
  for (const variant of variants) await writeFile(`${flags.profile}/${variant.namespace}/rounds.json`, JSON.stringify(variant.windows));

const median = (values: readonly number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
/** The bench's own requests (the reconcile-request PATCHes, its LIST and watch) are the same in every variant. */
const total = (counts: readonly Record<string, number>[]): number => median(counts.map((c) => Object.values(c).reduce((a, b) => a + b, 0)));
const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');
const pct = (x: number): string => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;
const label = (variant: Variant): string => (variant.batched ? `batched (window ${BATCH_WINDOW ?? ''})` : 'one request per event');
const withAlerts = variants.filter((v) => v.alerts);
console.log(
  `notify bench: ${SYNCS} ConfigSyncs × 5 objects, one NotificationAlert each to one webhook Provider${BATCH_WINDOW === undefined ? '' : ` (one request per event, and batched with a window of ${BATCH_WINDOW})`}; ${ROUNDS} new commits per variant; Node ${process.versions.node}`,
);
const plainCommit = median(plain.commitMs);
const plainCpu = median(plain.cpuMs);
for (const variant of withAlerts) {
  const slowerReady = (variant.allReadyMs - plain.allReadyMs) / plain.allReadyMs;
  const slower = (median(variant.commitMs) - plainCommit) / plainCommit;
  const extraRequests = total(variant.requestsPerCommit) - total(plain.requestsPerCommit);
  console.log(`with alerts, ${label(variant)}:`);
  console.log(
    `  time until all ${SYNCS} Ready (from creation): without ${(plain.allReadyMs / 1000).toFixed(2)} s, with alerts ${(variant.allReadyMs / 1000).toFixed(2)} s (${pct(slowerReady)}; target within 5%: ${verdict(slowerReady <= 0.05)})`,
  );
  console.log(
    `  new commit → all Ready (median of ${ROUNDS}, alternating): without ${(plainCommit / 1000).toFixed(2)} s, with alerts ${(median(variant.commitMs) / 1000).toFixed(2)} s (${pct(slower)}; target within 5%: ${verdict(slower <= 0.05)})`,
  );
  console.log(`    each round, without: ${plain.commitMs.join(', ')} ms; with: ${variant.commitMs.join(', ')} ms`);
  console.log(`  operator CPU per new commit, each round, without: ${plain.cpuMs.join(', ')} ms; with: ${variant.cpuMs.join(', ')} ms`);
  console.log(
    `  API server requests per new commit (median; leases and watches apart): without ${total(plain.requestsPerCommit)}, with alerts ${total(variant.requestsPerCommit)} (difference ${extraRequests}; target 0: ${verdict(extraRequests <= 0)})`,
  );
  console.log(`    without: ${JSON.stringify(plain.requestsPerCommit.at(-1))}`);
  console.log(`    with:    ${JSON.stringify(variant.requestsPerCommit.at(-1))}`);
  const delivered = deliveredTo(variant);
  const requests = receiver.requests.filter((r) => r.path === `/${variant.namespace}`).length;
  console.log(
    `  notifications delivered to the receiver: ${delivered} of ${expected} events in ${requests} requests (target all: ${verdict(delivered >= expected)})`,
  );
}
// The last lines: the CPU each new commit costs the operator with notifications, against the target.
for (const variant of withAlerts) {
  const cpu = median(variant.cpuMs);
  const more = (cpu - plainCpu) / plainCpu;
  console.log(
    `operator CPU per new commit (median of ${ROUNDS}), ${label(variant)}: without ${plainCpu} ms, with alerts ${cpu} ms (${pct(more)}; target within 5%: ${verdict(more <= 0.05)})`,
  );
}

/** Resolves when every sync of `namespace` is Ready at `sha`, as a watch sees it (no polling of N objects). */
async function waitForAll(namespace: string, sha: string): Promise<void> {
  const readyAt = (cs: ConfigSync): boolean =>
    cs.status?.sourceRevision === sha && cs.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
  const ready = new Set<string>();
  const until = Date.now() + 600_000;
  while (Date.now() < until) {
    const list = await rest.request<{ items: ConfigSync[]; metadata: { resourceVersion: string } }>({
      method: 'GET',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs`,
    });
    ready.clear();
    for (const cs of list.items) if (readyAt(cs)) ready.add(cs.metadata.name);
    if (ready.size === SYNCS) return;
    const done = new AbortController();
    try {
      await rest.watch(
        `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs`,
        { resourceVersion: list.metadata.resourceVersion, timeoutSeconds: 300 },
        (event) => {
          const { type, object } = event as { type: string; object: ConfigSync };
          if (type !== 'DELETED' && readyAt(object)) ready.add(object.metadata.name);
          else ready.delete(object.metadata.name);
          if (ready.size === SYNCS) done.abort();
        },
        done.signal,
      );
    } catch (error) {
      if (!done.signal.aborted) progress(`watch ended (${error instanceof Error ? error.message : String(error)}); listing again`);
    }
    if (ready.size === SYNCS) return;
  }
  throw new Error(`timed out: ${ready.size}/${SYNCS} Ready at ${sha.slice(0, 8)}`);
}

// `pnpm bench notify [--syncs 200] [--rounds 12] [--batch WINDOW] [--trigger webhook|annotation] [--bundle FILE] [--profile DIR]`:
// the reconcile figures of `bench operator` (N ConfigSyncs × 5 objects on one repo, the real control plane and the
// real operator process) in two namespaces, each with its own operator (the JavaScript bundle the image runs): one
// without notifications, one with one NotificationAlert per sync sending every event to one webhook
// NotificationProvider (a real HTTP receiver), one request per event. `--batch WINDOW` adds a third namespace and
// operator whose NotificationProvider batches (spec.batch.window WINDOW, maxEvents at its default). A new commit
// reaches a variant's syncs as it reaches users' (--trigger webhook, the default): one signed GitHub push to that
// variant's operator; `--trigger annotation` asks each sync to reconcile instead (N PATCHes).
// After a warm-up round per variant alone (the API server's request counts then are that variant's: notifications
// must add none), each measured round pushes one commit to every operator at once: a variant with alerts and the one
// without run in the same seconds of the same machine (it is shared, and what a second of a vCPU does changes from
// one minute to the next), and each operator's CPU is its own process's. Each round's line says what each operator
// did (reconciles, its main thread's and helper threads' CPU) and the time the hypervisor stole.
// Its last lines, against the target (+5 % at most), one request per event and batched: the median over the rounds
// of the CPU a new commit costs with notifications beyond without (two whole processes' totals: the machine's
// noise is in them), and the firm figure: the CPU the notifications' own frames took in each operator's CPU profile
// beyond the operator without alerts, round by round, over that operator's CPU (_notify-frames.ts says what it
// counts and what it cannot). Every operator runs with --cpu-prof (the same sampling cost in each); DIR (default:
// a temporary directory) keeps the profiles (DIR/<namespace>/) and the rounds' spans.
import type { ConfigSync } from '@syncline/operator';
import { parseDuration } from '@syncline/runtime';
import { OPERATOR_NODE_FLAGS, startHttpReceiver, startOperator } from '@syncline/test-support';
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { benchEnvironment, cpuSeconds, cpuSecondsByThread, diff, metricSum, percentile, pool, requestCounts, sleep } from './_environment.ts';
import { buildOperatorBundle } from './_bundle.ts';
import { deliverPush } from './_push.ts';
import { notificationChunks, notificationSamples, profileIn, type RoundCounts, type RoundSamples } from './_notify-frames.ts';

const { values: flags } = parseArgs({
  options: {
    syncs: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '12' },
    batch: { type: 'string' },
    profile: { type: 'string' },
    trigger: { type: 'string', default: 'webhook' },
    bundle: { type: 'string' },
  },
});
if (flags.trigger !== 'webhook' && flags.trigger !== 'annotation') throw new Error(`--trigger ${flags.trigger}: expected webhook or annotation`);
const viaWebhook = flags.trigger === 'webhook';
const webhookSecret = 'bench-github-secret';
const BATCH_WINDOW = flags.batch;
const batchWindowMs = BATCH_WINDOW === undefined ? 0 : parseDuration(BATCH_WINDOW);
const SYNCS = Number(flags.syncs);
const ROUNDS = Number(flags.rounds);
/** Where the operators' CPU profiles go: the firm figure is read from them. */
const profileDir = flags.profile ?? mkdtempSync(join(tmpdir(), 'bench-notify-'));
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
// What the image runs: the operator bundled into JavaScript (packages/cli/build/bundle.ts), for every operator;
// --bundle FILE runs one built before (another branch's, for a before/after in the same conditions).
const bundle = flags.bundle ?? buildOperatorBundle();

/**
 * What one new commit cost a variant: the operator's CPU (all threads; its main thread; V8's and libuv's helpers),
 * its reconciles, the API requests (warm-up round only), and `stealMs`: CPU time the hypervisor gave others while
 * the round ran (both cores).
 */
type Round = { cpuMs: number; mainMs: number; helpersMs: number; reconciles: number; requests: number; stealMs: number };

/** `windows`: each round's span on the monotonic clock a CPU profile's timestamps use (scripts/cpu-profile.ts --window). */
type Variant = {
  namespace: string;
  alerts: boolean;
  batched: boolean;
  pid: number;
  probeAddress: string;
  webhookAddress: string | undefined;
  allReadyMs: number;
  commitMs: number[];
  cpuMs: number[];
  rounds: Round[];
  warmUp?: Round;
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
  if (viaWebhook)
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${namespace}/secrets`,
      body: { metadata: { name: 'webhooks' }, stringData: { github: webhookSecret } },
    });
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
  const nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${profileDir}/${namespace}`];
  const operator = await startOperator({
    kubeconfig: controlPlane.kubeconfigPath,
    args: ['--namespace', namespace, ...(viaWebhook ? ['--webhook-secret', `${namespace}/webhooks`] : [])],
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
  return {
    namespace,
    alerts,
    batched,
    pid: operator.pid,
    probeAddress: operator.probeAddress,
    webhookAddress: operator.webhookAddress,
    allReadyMs: 0,
    commitMs: [],
    cpuMs: [],
    rounds: [],
    requestsPerCommit: [],
    windows: [],
    operator,
  };
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

/**
 * A new commit, pushed to the operators of `group` at once (or every sync of theirs asked to reconcile): the time
 * until all of a variant's syncs are Ready at it, and what it cost each operator. A group of one is the warm-up
 * round, the only one where the API server's request counts are a single variant's.
 */
async function commitRound(group: readonly Variant[], round: number): Promise<void> {
  await sleep(3000); // the status writes and Events of the last round land
  revision = await commitAll(`${group.map((v) => v.namespace).join('+')}-${round}`);
  const before = await apiRequests();
  const marks = await Promise.all(
    group.map(async (variant) => ({
      reconciles: await metricSum(variant.probeAddress, 'syncline_reconcile_total'),
      threads: cpuSecondsByThread(variant.pid),
      cpu: cpuSeconds(variant.pid),
    })),
  );
  const stealBefore = stealTicks();
  const fromUs = monotonicUs();
  await Promise.all(
    group.map(async (variant) => {
      const started = Date.now();
      await trigger(variant);
      await waitForAll(variant.namespace, revision);
      variant.commitMs.push(Date.now() - started);
    }),
  );
  // Events are written after the status (and notifications sent after the Events, batched ones when their window ends): let them land.
  await sleep(2000 + batchWindowMs);
  const toUs = monotonicUs();
  const stealMs = ((stealTicks() - stealBefore) * 1000) / 100;
  const requests = diff(await apiRequests(), before);
  for (const [i, variant] of group.entries()) {
    const mark = marks[i] as (typeof marks)[number];
    const cpuMs = Math.round((cpuSeconds(variant.pid) - mark.cpu) * 1000);
    const mainMs = Math.round(((cpuSecondsByThread(variant.pid).get('main') ?? 0) - (mark.threads.get('main') ?? 0)) * 1000);
    const reconciles = (await metricSum(variant.probeAddress, 'syncline_reconcile_total')) - mark.reconciles;
    const r: Round = { cpuMs, mainMs, helpersMs: cpuMs - mainMs, reconciles, requests: group.length === 1 ? requests.total : NaN, stealMs };
    if (group.length === 1) {
      variant.requestsPerCommit.push(requests.byVerbResource);
      variant.warmUp = r;
    } else {
      variant.cpuMs.push(cpuMs);
      variant.rounds.push(r);
      variant.windows.push({ fromUs, toUs });
    }
    progress(
      `${variant.namespace}: commit ${round} → all Ready in ${variant.commitMs.at(-1)} ms; operator CPU ${r.cpuMs} ms (main ${r.mainMs}, helpers ${r.helpersMs}); ${r.reconciles} reconciles${group.length === 1 ? `, ${r.requests} requests` : ''}; steal ${r.stealMs} ms`,
    );
  }
}

/** Tells the variant's syncs about the new commit as users do (a signed push to its operator), or asks each to reconcile. */
async function trigger(variant: Variant): Promise<void> {
  if (viaWebhook) {
    if (variant.webhookAddress === undefined) throw new Error('the operator started without a webhook receiver');
    await deliverPush({ address: variant.webhookAddress, secret: webhookSecret, repoUrl: repo.url, sha: revision });
    return;
  }
  const at = new Date().toISOString();
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
}

/** CPU time the hypervisor stole from this machine's CPUs so far (/proc/stat, clock ticks of 10 ms). */
function stealTicks(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]?.trim().split(/\s+/) ?? [];
  return Number(fields[8] ?? 0);
}

// The operators run side by side. A warm-up round per variant, alone (the API server's request counts are then its
// own), then the measured rounds: one commit pushed to every operator at once, so each round of a variant with alerts
// and the one without run in the same seconds of the same machine (it is shared, and how much work a second of CPU
// does changes from one minute to the next). Each operator's CPU is its own process's.
const plain = await setUp('bench-plain', false);
const notified = await setUp('bench-alerts', true);
const batched = BATCH_WINDOW === undefined ? undefined : await setUp('bench-batched', true, true);
const variants = [plain, notified, ...(batched === undefined ? [] : [batched])];
// Every sync's events: created (Synced), the warm-up round and one per round.
const expected = SYNCS * (2 + ROUNDS);
/** Events the receiver got from a variant's NotificationProvider: a request each, or a batch's array. */
const deliveredTo = (variant: Variant): number =>
  receiver.requests
    .filter((r) => r.path === `/${variant.namespace}`)
    .reduce((sum, r) => sum + (variant.batched ? (JSON.parse(r.body) as unknown[]).length : 1), 0);
try {
  for (const variant of variants) await createSyncs(variant);
  for (const variant of variants) await commitRound([variant], 0);
  for (let round = 1; round <= ROUNDS; round++) await commitRound(variants, round);
  const deadline = Date.now() + 60_000;
  while (variants.some((v) => v.alerts && deliveredTo(v) < expected) && Date.now() < deadline) await sleep(200);
} finally {
  for (const variant of variants) await variant.operator[Symbol.asyncDispose]();
}
// The rounds' spans beside each profile: `node scripts/cpu-profile.ts DIR/bench-alerts/CPU…cpuprofile --window
// DIR/bench-alerts/rounds.json --minus DIR/bench-plain/CPU…cpuprofile --minus-window DIR/bench-plain/rounds.json` is then
// what the notifications cost over the rounds.
for (const variant of variants) await writeFile(`${profileDir}/${variant.namespace}/rounds.json`, JSON.stringify(variant.windows));

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
/** The measured rounds' times until all Ready (the first, the warm-up round, ran alone). */
const measured = (variant: Variant): number[] => variant.commitMs.slice(1);
const plainCommit = median(measured(plain));
for (const variant of withAlerts) {
  const slowerReady = (variant.allReadyMs - plain.allReadyMs) / plain.allReadyMs;
  const slower = (median(measured(variant)) - plainCommit) / plainCommit;
  const extraRequests = total(variant.requestsPerCommit) - total(plain.requestsPerCommit);
  console.log(`with alerts, ${label(variant)}:`);
  console.log(
    `  time until all ${SYNCS} Ready (from creation): without ${(plain.allReadyMs / 1000).toFixed(2)} s, with alerts ${(variant.allReadyMs / 1000).toFixed(2)} s (${pct(slowerReady)}; target within 5%: ${verdict(slowerReady <= 0.05)})`,
  );
  console.log(
    `  new commit → all Ready, alone (warm-up round): without ${((plain.commitMs[0] ?? NaN) / 1000).toFixed(2)} s, with alerts ${((variant.commitMs[0] ?? NaN) / 1000).toFixed(2)} s; all variants at once (median of ${ROUNDS}): without ${(plainCommit / 1000).toFixed(2)} s, with alerts ${(median(measured(variant)) / 1000).toFixed(2)} s (${pct(slower)})`,
  );
  console.log(`  operator CPU per new commit, alone (warm-up round): without ${plain.warmUp?.cpuMs ?? NaN} ms, with alerts ${variant.warmUp?.cpuMs ?? NaN} ms`);
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
// Each round of each variant: what the operator did. A round that cost more CPU with as many reconciles (and
// requests: the warm-up round shows them) was a slower machine, not more work.
for (const variant of variants) {
  console.log(`rounds of ${variant.namespace} (${variant.alerts ? label(variant) : 'no alerts'}):`);
  variant.rounds.forEach((r, i) =>
    console.log(
      `  ${String(i + 1).padStart(2)}: CPU ${String(r.cpuMs).padStart(5)} ms (main ${String(r.mainMs).padStart(5)}, helpers ${String(r.helpersMs).padStart(4)}), ${r.reconciles} reconciles, all Ready in ${variant.commitMs[i + 1]} ms; steal ${r.stealMs} ms`,
    ),
  );
}
/** The CPU notifications cost per commit, round by round: with alerts against without in the same round, as a share of without. */
const paired = (variant: Variant): number[] => variant.rounds.map((r, i) => (r.cpuMs - (plain.rounds[i]?.cpuMs ?? NaN)) / (plain.rounds[i]?.cpuMs ?? NaN));
const spread = (values: readonly number[]): string =>
  `middle half ${pct(percentile(values, 25))} to ${pct(percentile(values, 75))}, all ${pct(Math.min(...values))} to ${pct(Math.max(...values))}, more in ${values.filter((v) => v > 0).length} of ${values.length}`;
// The last lines: the CPU each new commit costs the operator with notifications, against the target.
for (const variant of withAlerts) {
  const pairs = paired(variant);
  console.log(`operator CPU per new commit, ${label(variant)} vs without, round by round: ${pairs.map(pct).join(', ')}`);
  console.log(`  ${spread(pairs)}`);
}
for (const variant of withAlerts) {
  const more = median(paired(variant));
  const upper = percentile(paired(variant), 75);
  const firm = more <= 0.05 ? (upper <= 0.05 ? '; three rounds in four within it' : `; but a quarter of the rounds at ${pct(upper)} or more`) : '';
  console.log(
    `operator CPU per new commit with one NotificationAlert per sync, ${label(variant)}: median of ${ROUNDS} rounds ${pct(more)} (without ${median(plain.cpuMs)} ms, with ${median(variant.cpuMs)} ms; target ≤ +5%: ${verdict(more <= 0.05)}${firm})`,
  );
}

reportAttributed(profileDir);

/**
 * The firm figure (_notify-frames.ts says what it counts and what it cannot): each round, the CPU the notifications'
 * frames took in a variant beyond what they took in the operator without alerts (its Event tap meets no
 * NotificationAlert), over that operator's CPU in the round. Both come from the same seconds of the same machine and
 * neither is a difference of two whole processes' totals, so its spread is the frames' own, not the machine's.
 */
function reportAttributed(dir: string): void {
  const bundleDir = dirname(bundle);
  const chunks = notificationChunks(bundleDir);
  type Reading = { framesMs: number[]; undiciMs: number[]; gcMs: number[] };
  const attributed = new Map<Variant, { settled: Reading; all: Reading }>();
  for (const variant of variants) {
    const file = profileIn(join(dir, variant.namespace), variant.pid);
    const rounds = file === undefined ? [] : notificationSamples(file, variant.windows, bundleDir, chunks);
    const mainMs = (i: number): number => variant.rounds[i]?.mainMs ?? NaN;
    // A round's samples stand for its main thread's CPU, in equal parts.
    const reading = (pick: (r: RoundSamples) => RoundCounts): Reading => {
      const share = (i: number, n: number): number => (n / (rounds[i] === undefined ? NaN : pick(rounds[i]).busy)) * mainMs(i);
      const framesMs = rounds.map((r, i) => share(i, pick(r).own + pick(r).http));
      return {
        framesMs,
        undiciMs: rounds.map((r, i) => share(i, pick(r).undici)),
        // If the collector's work followed JavaScript time: an estimate, not a measurement.
        gcMs: rounds.map((r, i) => (framesMs[i] ?? NaN) * (pick(r).gc / Math.max(1, pick(r).busy - pick(r).gc - pick(r).program))),
      };
    };
    const settled = reading((r) => r.settled);
    const all = reading((r) => r.all);
    attributed.set(variant, { settled, all });
    console.log(
      `notifications' frames in ${variant.namespace}, CPU per commit by round: ${settled.framesMs.map((ms) => ms.toFixed(0)).join(', ')} ms (median ${median(settled.framesMs).toFixed(0)}; every sample: ${median(all.framesMs).toFixed(0)}); undici reading answers (the REST client's too): ${median(settled.undiciMs).toFixed(0)} ms (every sample: ${median(all.undiciMs).toFixed(0)}); the collector in proportion, an estimate: ${median(settled.gcMs).toFixed(0)} ms`,
    );
  }
  const base = attributed.get(plain);
  for (const variant of withAlerts) {
    const mine = attributed.get(variant);
    if (base === undefined || mine === undefined) continue;
    // The frames beyond without alerts, and undici's work beyond without alerts (the same REST requests in both).
    const beyond = (m: Reading, b: Reading, i: number): number =>
      (m.framesMs[i] ?? NaN) - (b.framesMs[i] ?? NaN) + (m.undiciMs[i] ?? NaN) - (b.undiciMs[i] ?? NaN);
    const over = (i: number): number => plain.rounds[i]?.cpuMs ?? NaN;
    const share = mine.settled.framesMs.map((_, i) => beyond(mine.settled, base.settled, i) / over(i));
    const upperReading = mine.all.framesMs.map((_, i) => beyond(mine.all, base.all, i) / over(i));
    const withGc = mine.settled.framesMs.map(
      (_, i) => (beyond(mine.settled, base.settled, i) + (mine.settled.gcMs[i] ?? 0) - (base.settled.gcMs[i] ?? 0)) / over(i),
    );
    const more = median(share);
    const upper = percentile(share, 75);
    console.log(
      `operator CPU per new commit in the notifications' own frames (with alerts beyond without, over the CPU without), ${label(variant)}: median of ${ROUNDS} rounds ${pct(more)}, ${spread(share)}; with the collector in proportion ${pct(median(withGc))}; counting every sample ${pct(median(upperReading))} (target ≤ +5%: ${verdict(more <= 0.05)}${more <= 0.05 ? (upper <= 0.05 ? ', three rounds in four within it' : `, but a quarter of the rounds at ${pct(upper)} or more`) : ''})`,
    );
  }
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

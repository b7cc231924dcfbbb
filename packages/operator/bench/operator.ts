// `pnpm bench operator [--syncs 200] [--trace FILE] [--steady 600] [--concurrency N] [--profile DIR] [--layout shared|namespace-per-sync] [--scope namespace|cluster] [--mixed] [--encrypted] [--trigger webhook|annotation] [--sources | --bundle FILE] [--logs FILE] [--log-level debug] [--heap-snapshot DIR] [--memory-trace FILE] [--engine handlebars|kustomize|helm] [--engines] [--perf-map] [--node-arg FLAG]… [--operator-env NAME=VALUE]…`
// (--node-arg, --operator-env: a Node/V8 flag after OPERATOR_NODE_FLAGS, a variable over OPERATOR_ENV, for the operator only: a candidate
// setting measured against the shipped ones, e.g. `--node-arg=--heap-growing-percent=40`, `--operator-env MALLOC_ARENA_MAX=0` (glibc's default))
// (--sources: runs the operator's .ts sources rather than the JavaScript bundle the image runs, packages/cli/build/bundle.ts;
// --bundle FILE: runs that bundle's entry instead of building one, e.g. an earlier commit's, for a before/after in the same conditions)
// (--engine: what renders the syncs, see _engines.ts; --engines: all three runs side by side)
// (--heap-snapshot: DIR gets a heap snapshot of the operator when the new commit is everywhere, the RSS peak's neighbourhood;
// `node scripts/heap-by-type.ts FILE` sums it by constructor)
// (--memory-trace: FILE gets the operator's memory every 250 ms, RSS split into V8's spaces and what is outside them;
// the last lines say, per phase, what its RSS peak was made of, see _memory.ts)
// (--trace FILE: the operator writes a wall-clock trace of its reconciles to FILE, read per phase at the end: see _trace.ts)
// (--trigger: how the new commit reaches the syncs: `webhook`, the default, is what users do, one signed GitHub push to the
// operator's receiver, which wakes every sync of the repository; `annotation` patches each ConfigSync's reconcile-requested-at)
// (--encrypted, with --layout namespace-per-sync: one object of the five is a SOPS-encrypted Secret, age, decrypted by every sync)
// (--profile DIR: DIR gets the operator's CPU profile, ready-window.json, commit-window.json and steady-window.json (the phases' windows, for scripts/cpu-profile.ts --window), and the report its busy time and top functions per phase, see _profile.ts; layout and scope: see _layout.ts; --mixed: the figures alone and beside a NamespaceReplication
// and mirrored Secrets, see _mixed.ts): N ConfigSyncs × 5 objects on one repo against the
// real control plane and the real operator process. Prints time until all Ready, git fetches per new
// commit, operator peak RSS, and for the steady state (nothing changing, refreshInterval 30s) the write
// requests the API server counted (by verb, leases apart) and the operator's CPU time.
import type { ConfigSync } from '@syncline/operator';
import { OPERATOR_NODE_FLAGS, ensureRenderEngine, ensureSops, generateAgeKey, startOperator } from '@syncline/test-support';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { benchLayout } from './_layout.ts';
import {
  benchEnvironment,
  childrenPeakRss,
  cpuSeconds,
  cpuSecondsByThread,
  cpuSplit,
  diff,
  metricSum,
  namespacesFilled,
  peakRss,
  pool,
  requestCounts,
  sleep,
  writeRequests,
} from './_environment.ts';
import { mixedPart, runMixedComparison } from './_mixed.ts';
import { deliverPush } from './_push.ts';
import { BenchEngine, engineFiles, engineSource, parseBenchEngine, runEngineComparison } from './_engines.ts';
import { buildOperatorBundle } from './_bundle.ts';
import { cpuPressure, cpuTimeline, formatSpan, monotonicMicros, profileSpan } from './_profile.ts';
import { memoryTraceReport, memoryTraceStart } from './_memory.ts';
import { readTrace, traceReport } from './_trace.ts';

const { values: flags } = parseArgs({
  options: {
    syncs: { type: 'string', default: '200' },
    steady: { type: 'string', default: '600' },
    concurrency: { type: 'string' },
    profile: { type: 'string' },
    'heap-snapshot': { type: 'string' },
    'memory-trace': { type: 'string' },
    trace: { type: 'string' },
    layout: { type: 'string', default: 'shared' },
    scope: { type: 'string', default: 'namespace' },
    mixed: { type: 'boolean', default: false },
    encrypted: { type: 'boolean', default: false },
    engine: { type: 'string', default: 'handlebars' },
    engines: { type: 'boolean', default: false },
    trigger: { type: 'string', default: 'webhook' },
    sources: { type: 'boolean', default: false },
    bundle: { type: 'string' },
    logs: { type: 'string' },
    'log-level': { type: 'string' },
    part: { type: 'string' },
    json: { type: 'string' },
    'perf-map': { type: 'boolean', default: false },
    'node-arg': { type: 'string', multiple: true, default: [] },
    'operator-env': { type: 'string', multiple: true, default: [] },
  },
});
if (flags.mixed) await runMixedComparison(import.meta.filename, process.argv.slice(2));
if (flags.engines) await runEngineComparison(import.meta.filename, process.argv.slice(2));
const engine = parseBenchEngine(flags.engine);
if (engine !== BenchEngine.Handlebars && flags.encrypted) throw new Error('--encrypted is measured with Handlebars only');
const renderEngineArgs =
  engine === BenchEngine.Handlebars ? [] : ['--render-engine', await ensureRenderEngine({ onProgress: (line) => console.error(`[bench] ${line}`) })];
const SYNCS = Number(flags.syncs);
const STEADY_SECONDS = Number(flags.steady);
const namespace = 'bench';
if (flags.trigger !== 'webhook' && flags.trigger !== 'annotation') throw new Error(`--trigger ${flags.trigger}: expected webhook or annotation`);
const viaWebhook = flags.trigger === 'webhook';
const webhookSecret = 'bench-github-secret';

await using environment = await benchEnvironment(namespace);
const { controlPlane, git, rest } = environment;
const layout = await benchLayout({ layout: flags.layout, scope: flags.scope, namespace, syncs: SYNCS, rest });

const repo = await git.createRepo('configs');
const template = (i: number, rev: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "{{ target.name }}-${i}"\ndata:\n  revision: "${rev}"\n  target: "{{ target.name }}"\n`;
if (flags.encrypted && flags.layout !== 'namespace-per-sync')
  throw new Error('--encrypted needs --layout namespace-per-sync (the encrypted Secret has one name in every target namespace)');
const sopsKey = flags.encrypted ? await generateAgeKey() : undefined;
const encryptedSecret =
  sopsKey === undefined
    ? undefined
    : (await ensureSops((line) => console.error(`[bench] ${line}`))).encrypt({
        name: 'db.yaml',
        plaintext: 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\nstringData:\n  password: bench-password\n',
        args: ['--age', sopsKey.recipient, '--encrypted-regex', '^(data|stringData)$'],
      });
if (viaWebhook)
  await rest.request({
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/secrets`,
    body: { metadata: { name: 'webhooks' }, stringData: { github: webhookSecret } },
  });
if (sopsKey !== undefined)
  await rest.request({
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/secrets`,
    body: { metadata: { name: 'sops-keys' }, stringData: { 'identity.agekey': sopsKey.identity } },
  });
const commitAll = (rev: string): Promise<string> =>
  repo.commit({
    ...(engine !== BenchEngine.Handlebars ? engineFiles(engine, rev) : {}),
    ...Object.fromEntries(
      engine !== BenchEngine.Handlebars
        ? []
        : (encryptedSecret === undefined ? [1, 2, 3, 4, 5] : [1, 2, 3, 4]).map((i) => [`app/cm-${i}.yaml.hbs`, template(i, rev)]),
    ),
    ...(encryptedSecret === undefined ? {} : { 'app/db.yaml': encryptedSecret }),
  });
const first = await commitAll('one');
// The API server's first create of a ConfigSync can wait about 2 s on its own start-up (seen on a loaded machine,
// with or without an operator running; a create 3 s later takes milliseconds): one created and deleted here, before
// the operator starts, keeps that wait out of the first phase.
const warmUp = `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs`;
await rest.request({
  method: 'POST',
  path: warmUp,
  body: {
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'ConfigSync',
    metadata: { name: 'warm-up' },
    spec: { source: { git: { repo: repo.url, path: 'app' } }, targets: [{ name: 'warm-up', namespace }] },
  },
});
await rest.request({ method: 'DELETE', path: `${warmUp}/warm-up` });
const part = await mixedPart(flags.part, { rest, namespace });

// What the image runs: the operator bundled into JavaScript (packages/cli/build/bundle.ts); --sources runs the .ts files instead.
const memoryTrace = flags['memory-trace'] === undefined ? undefined : memoryTraceStart(flags['memory-trace']);
const nodeArgs = [
  ...(flags.profile === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${flags.profile}`]),
  ...(flags['heap-snapshot'] === undefined ? [] : ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${flags['heap-snapshot']}`]),
  ...(memoryTrace?.nodeArgs ?? []),
  // --perf-map: the operator writes /tmp/perf-PID.map, so Linux `perf record -g -p PID` names its JavaScript functions.
  ...(flags['perf-map'] ? ['--perf-basic-prof-only-functions'] : []),
  ...flags['node-arg'],
];
const operatorEnv = Object.fromEntries(
  flags['operator-env'].map((pair) => {
    const at = pair.indexOf('=');
    if (at <= 0) throw new Error(`--operator-env ${pair}: expected NAME=VALUE`);
    return [pair.slice(0, at), pair.slice(at + 1)];
  }),
);
const bundle = flags.sources ? undefined : (flags.bundle ?? buildOperatorBundle());
await using operator = await startOperator({
  kubeconfig: controlPlane.kubeconfigPath,
  ...(bundle === undefined ? {} : { command: [process.execPath, ...OPERATOR_NODE_FLAGS, ...nodeArgs, bundle] as const }),
  args: [
    ...layout.operatorArgs,
    ...renderEngineArgs,
    ...(viaWebhook ? ['--webhook-secret', `${namespace}/webhooks`] : []),
    ...(flags.concurrency === undefined ? [] : ['--concurrency', flags.concurrency]),
    ...(flags['log-level'] === undefined ? [] : ['--log-level', flags['log-level']]),
    ...(part?.operatorArgs ?? []),
  ],
  nodeArgs,
  env: { ...operatorEnv, ...memoryTrace?.env, ...(flags.trace === undefined ? {} : { SYNCLINE_TRACE: flags.trace }) },
}); // info level: startOperator waits for the 'syncline started' line

const progress = (line: string): void => console.error(`[bench] ${line}`);
await part?.ready(progress);
// The phases measure a running operator, as users meet one: it logs 'syncline started' before its caches have
// listed and its watches are open (a LIST of every kind it watches, the API server's discovery, a connection per
// watch, the code of all that compiled), work that would otherwise fall into the first phase and count as the
// syncs'. The first phase starts once /readyz answers 200 (as a Deployment's readiness probe waits for) and the
// operator has come to rest.
const startup = await operatorAtRest(operator);
progress(`operator ready and at rest ${startup.seconds.toFixed(1)} s after its start line (${startup.cpu.toFixed(2)} s of CPU meanwhile)`);
progress(`control plane, Git server and operator up; creating ${SYNCS} ConfigSyncs`);
// Phase 1: N ConfigSyncs created at once → all Ready.
// What a phase cost: every request the API server counted (the bench's own POST/PATCH/LIST/WATCH included), by
// verb and resource, and the CPU the control plane and the operator used.
const phaseRequests = (): ReturnType<typeof requestCounts> => requestCounts(rest, (_verb, resource) => resource !== '' && resource !== 'leases');
const cpuNow = (): { controlPlane: number; operator: number } => ({ controlPlane: cpuSeconds(controlPlane.pid), operator: cpuSeconds(operator.pid) });
/** How many syncs waitForAll last saw Ready: the timelines' count column. */
let readyNow = 0;
async function startPhase(): Promise<
  () => Promise<{
    requests: ReturnType<typeof diff>;
    cpu: { controlPlane: number; operator: number };
    timeline: string[];
    pressure: number | undefined;
    reconciles: number;
    threads: string;
  }>
> {
  const requests = await phaseRequests();
  const cpu = cpuNow();
  const threads = cpuSecondsByThread(operator.pid);
  readyNow = 0;
  const pressure = cpuPressure();
  const reconciles = await metricSum(operator.probeAddress, 'syncline_reconcile_total');
  // The bench's own process (its watch of the syncs, the Git server and the git http-backend processes it ran) shares
  // the cores too: a tenth where the three together stay under the cores' worth is time nobody used.
  const timeline = cpuTimeline(
    { 'control plane': () => cpuSeconds(controlPlane.pid), operator: () => cpuSeconds(operator.pid), 'bench + git': benchCpuSeconds },
    () => readyNow,
  );
  return async () => {
    const after = cpuNow();
    const slices = timeline.stop();
    return {
      requests: diff(await phaseRequests(), requests),
      cpu: { controlPlane: after.controlPlane - cpu.controlPlane, operator: after.operator - cpu.operator },
      timeline: slices,
      pressure: pressure.stop(),
      reconciles: (await metricSum(operator.probeAddress, 'syncline_reconcile_total')) - reconciles,
      threads: threadsSince(threads),
    };
  };
}
/** The operator's CPU seconds since `before` by thread (main, V8's compiler and GC workers, libuv's pool), busiest first. */
function threadsSince(before: Map<string, number>): string {
  return [...cpuSecondsByThread(operator.pid)]
    .map(([name, s]) => [name, s - (before.get(name) ?? 0)] as const)
    .filter(([, s]) => s > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([name, s]) => `${name} ${s.toFixed(2)} s`)
    .join(', ');
}
const endReadyPhase = await startPhase();
progress(`phase 1 starts at ${new Date().toISOString()}`);
const readyMark = monotonicMicros();
const started = Date.now();
const marks = [
  { label: 'at rest (before syncs)', at: 0 },
  { label: 'until all Ready', at: started },
];
git.resetRequests();
/** When each ConfigSync's POST was answered (--trace reports the first and the last). */
const created: number[] = [];
await pool(
  Array.from({ length: SYNCS }, (_, i) => i),
  16,
  (i) =>
    rest
      .request({
        method: 'POST',
        path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs`,
        body: {
          apiVersion: 'syncline.dev/v1alpha1',
          kind: 'ConfigSync',
          metadata: { name: `s${i}` },
          spec: {
            source: { git: { repo: repo.url, path: 'app' }, ...engineSource(engine, i) },
            refreshInterval: '30s',
            ...(sopsKey === undefined ? {} : { decryption: { provider: 'sops', secretRef: { name: 'sops-keys' } } }),
            targets: [{ name: `s${i}`, namespace: layout.targetNamespace(i) }],
          },
        },
      })
      .then(() => created.push(Date.now())),
);
await waitForAll(first);
const allReadyMs = Date.now() - started;
const readyEndMark = monotonicMicros();
const {
  requests: readyRequests,
  cpu: readyCpu,
  timeline: readyTimeline,
  pressure: readyPressure,
  reconciles: readyReconciles,
  threads: readyThreads,
} = await endReadyPhase();
const readyGitCounts = git.requests('configs');
const initialFetches = readyGitCounts.uploadPack;
/** The Git server's requests of a phase, on the epoch clock of the trace. */
const gitRequests = (): { at: number; what: string }[] =>
  git.requestLog().map((r) => ({ at: performance.timeOrigin + r.at, what: r.method === 'GET' ? 'refs' : 'pack' }));
const readyGit = gitRequests();
const readyEnded = Date.now();

progress(`all Ready in ${allReadyMs} ms; committing a change`);
// Phase 2: a new commit, every sync asked to reconcile now → fetches for that commit.
const second = await commitAll('two');
git.resetRequests();
const endCommitPhase = await startPhase();
progress(`phase 2 starts at ${new Date().toISOString()}`);
const commitStarted = Date.now();
const commitMark = monotonicMicros();
marks.push({ label: 'new commit → all Ready', at: commitStarted });
if (viaWebhook) {
  if (operator.webhookAddress === undefined) throw new Error('the operator started without a webhook receiver');
  await deliverPush({ address: operator.webhookAddress, secret: webhookSecret, repoUrl: repo.url, sha: second });
} else {
  const at = new Date().toISOString();
  await pool(
    Array.from({ length: SYNCS }, (_, i) => i),
    16,
    (i) =>
      rest.request({
        method: 'PATCH',
        path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs/s${i}`,
        contentType: 'application/merge-patch+json',
        body: { metadata: { annotations: { 'syncline.dev/reconcile-requested-at': at } } },
      }),
  );
}
await waitForAll(second);
const newCommitMs = Date.now() - commitStarted;
const commitEndMark = monotonicMicros();
marks.push({ label: 'first resync after it', at: Date.now() });
const {
  requests: commitRequests,
  cpu: commitCpu,
  timeline: commitTimeline,
  pressure: commitPressure,
  reconciles: commitReconciles,
  threads: commitThreads,
} = await endCommitPhase();
const commitGitCounts = git.requests('configs');
const fetchesPerCommit = commitGitCounts.uploadPack;
const commitGit = gitRequests();
const commitEnded = Date.now();
// With an engine, the render process is the operator's too: its peak is added (an upper bound of the pair's peak).
const renderRssMb = childrenPeakRss(operator.pid);
const peakRssMb = peakRss(operator.pid) + renderRssMb;
// --logs FILE: the operator's log lines so far (JSON, one a line), beside the phases' start times above.
if (flags.logs !== undefined) await writeFile(flags.logs, operator.logs.map((entry) => JSON.stringify(entry)).join('\n'));
if (flags['heap-snapshot'] !== undefined) await heapSnapshot(operator.pid, flags['heap-snapshot']);

progress(`new commit applied everywhere in ${newCommitMs} ms; steady state for ${STEADY_SECONDS} s`);
// Phase 3: steady state — nothing changes; resyncs every 30 s must write nothing.
await sleep(3000); // let the status writes of phase 2 land
// The control plane's namespace controllers still filling the namespaces this bench made (a namespace per sync)
// write a ServiceAccount and a ConfigMap into each: counted in the window, they would be taken for the operator's.
const filled = await namespacesFilled(rest);
if (!filled) progress('the control plane had not filled every namespace (default ServiceAccount, kube-root-ca.crt) after 120 s; its writes count below');
const writesBefore = await writeRequests(rest);
// Reads other than watches: GET and LIST of resources (leases apart; `resource` is empty for /metrics itself;
// Services apart too: the API server's own ClusterIP and NodePort repair loops LIST every Service every 3 minutes,
// and this bench's syncs have none).
const readRequests = (): ReturnType<typeof requestCounts> =>
  requestCounts(rest, (verb, resource) => (verb === 'GET' || verb === 'LIST') && resource !== '' && resource !== 'leases' && resource !== 'services');
// The first resync after a change: answered from what the commit's applies read back and the drift watches still
// vouch for (a target whose objects someone touched reads them: a LIST of its own per kind and namespace).
// Counted apart, then the steady window.
const firstReadsBefore = await readRequests();
if (STEADY_SECONDS > 0) await sleep(35_000); // --steady 0: the phases' figures alone, no steady state
const firstReads = diff(await readRequests(), firstReadsBefore);
const readsBefore = await readRequests();
// The resyncs the window held (read from the operator's metrics outside the CPU measurement): the proof runs each time.
const reconcilesBeforeSteady = await metricSum(operator.probeAddress, 'syncline_reconcile_total');
const cpuBefore = cpuSeconds(operator.pid);
const threadsBefore = cpuSecondsByThread(operator.pid);
const splitBefore = cpuSplit(operator.pid);
git.resetRequests(); // ref lookups are counted over the steady window alone, the span they are divided by
const steadyStarted = Date.now();
const steadyFromUs = Number(process.hrtime.bigint() / 1000n);
marks.push({ label: 'steady state', at: steadyStarted });
await sleep(STEADY_SECONDS * 1000);
const steadyElapsed = (Date.now() - steadyStarted) / 1000;
const cpuUsed = cpuSeconds(operator.pid) - cpuBefore;
const splitAfter = cpuSplit(operator.pid);
const threadsUsed = [...cpuSecondsByThread(operator.pid)]
  .map(([name, s]) => [name, s - (threadsBefore.get(name) ?? 0)] as const)
  .filter(([, s]) => s > 0)
  .sort((a, b) => b[1] - a[1]);
// The steady window on the monotonic clock a CPU profile's timestamps use: `node scripts/cpu-profile.ts PROFILE
// --window DIR/steady-window.json` reads that window alone.
if (flags.profile !== undefined)
  await mkdir(flags.profile, { recursive: true }).then(() =>
    writeFile(`${flags.profile}/steady-window.json`, JSON.stringify({ fromUs: steadyFromUs, toUs: Number(process.hrtime.bigint() / 1000n) })),
  );
const steadyReconciles = (await metricSum(operator.probeAddress, 'syncline_reconcile_total')) - reconcilesBeforeSteady;
const writesAfter = await writeRequests(rest);
const writes = diff(writesAfter, writesBefore);
const reads = diff(await readRequests(), readsBefore);
const resolvesDuringSteady = git.requests('configs').infoRefs;

// Targets are ratios to the floor measured in the same run (the control plane's own CPU for the phase over the
// machine's cores), so they hold on any machine: all Ready and new commit → all Ready ≤ 1.25× their floors. Peak RSS
// ≤ 150 MB; steady: 0 writes, 0 reads, operator CPU ≤ 1 % of a core (200 syncs) or ≤ 10 % (1,000 syncs).
const large = SYNCS >= 1000;
const refreshes = steadyElapsed / 30;
const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');
const cores = availableParallelism();
const readyFloor = readyCpu.controlPlane / cores;
const commitFloor = commitCpu.controlPlane / cores;
const readyRatio = allReadyMs / 1000 / readyFloor;
const commitRatio = newCommitMs / 1000 / commitFloor;
const trigger = viaWebhook ? 'one signed push to the webhook receiver' : `reconcile requested on each of the ${SYNCS} syncs`;
const steadyCpuTarget = large ? 0.1 : 0.01;
console.log(
  `operator bench: ${bundle === undefined ? 'the .ts sources' : 'the JavaScript bundle'}, ${SYNCS} ConfigSyncs × 5 objects${sopsKey === undefined ? '' : ' (1 of the 5 a SOPS-encrypted Secret, age)'}, one repo, Node ${process.versions.node}, ${cores} cores; ${layout.description}`,
);
console.log(`time until all ${SYNCS} Ready (from creation):      ${(allReadyMs / 1000).toFixed(2)} s  (${initialFetches} fetch(es) of the first commit)`);
console.log(`new commit → all Ready (${trigger}): ${(newCommitMs / 1000).toFixed(2)} s`);
console.log(
  `API requests until all Ready / for the new commit: ${readyRequests.total} ${JSON.stringify(readyRequests.byVerbResource)} / ${commitRequests.total} ${JSON.stringify(commitRequests.byVerbResource)}`,
);
// The API server's own work for these requests, spread over every core of the machine, is a floor no operator
// sharing the machine can go under: with it the times above read against the machine they ran on.
console.log(
  `CPU until all Ready / for the new commit:           control plane ${readyCpu.controlPlane.toFixed(2)} s, operator ${readyCpu.operator.toFixed(2)} s / control plane ${commitCpu.controlPlane.toFixed(2)} s, operator ${commitCpu.operator.toFixed(2)} s`,
);
console.log(`  operator CPU by thread until all Ready:   ${readyThreads}`);
console.log(`  operator CPU by thread for the new commit: ${commitThreads}`);
// A new sync runs once (its finalizer, then the sync, in one run), a woken one once: more are resyncs and retries within the phase.
console.log(`reconciles until all Ready / for the new commit:  ${readyReconciles} / ${commitReconciles}  (the least: ${SYNCS} / ${SYNCS})`);
console.log(`git fetches for the new commit:                    ${fetchesPerCommit}  (target: 1)`);
console.log(
  `git requests until all Ready / for the new commit: ${readyGitCounts.infoRefs} ref listings, ${readyGitCounts.uploadPack} upload-packs / ${commitGitCounts.infoRefs} ref listings, ${commitGitCounts.uploadPack} upload-packs`,
);
if (STEADY_SECONDS === 0) console.log('steady state: not measured (--steady 0)');
else {
  console.log(`steady state ${steadyElapsed.toFixed(0)} s after the first resync (refreshInterval 30s, ~${Math.round(refreshes * SYNCS)} resyncs):`);
  console.log(
    `  write requests to the API server (non-lease):    ${writes.total}${writes.total > 0 ? `  ${JSON.stringify(writes.byVerbResource)}` : ''}  (target: 0: ${verdict(writes.total === 0)})`,
  );
  console.log(
    `  first resync after the commit (35 s before this window): ${firstReads.total} reads${firstReads.total > 0 ? `  ${JSON.stringify(firstReads.byVerbResource)}` : ''} (target 0: ${verdict(firstReads.total === 0)}; the applies' responses proved what they wrote)`,
  );
  console.log(
    `  reads other than watches (GET/LIST, non-lease):  ${reads.total}${reads.total > 0 ? `  ${JSON.stringify(reads.byVerbResource)}` : ''}  (target: 0: ${verdict(reads.total === 0)})`,
  );
  console.log(
    `  Git ref lookups:                                 ${resolvesDuringSteady} (${(resolvesDuringSteady / Math.max(1, refreshes)).toFixed(1)} per refresh interval; target ≤ 2)`,
  );
  console.log(
    `  operator CPU:                                    ${cpuUsed.toFixed(2)} s (${((cpuUsed / steadyElapsed) * 100).toFixed(2)}% of one core; target ≤ ${steadyCpuTarget * 100}%: ${verdict(cpuUsed / steadyElapsed <= steadyCpuTarget)})`,
  );
  console.log(`    by thread: ${threadsUsed.map(([name, s]) => `${name} ${s.toFixed(2)} s`).join(', ')}`);
  console.log(`    reconciles in the window: ${steadyReconciles}`);
  console.log(`    user ${(splitAfter.user - splitBefore.user).toFixed(2)} s, system ${(splitAfter.system - splitBefore.system).toFixed(2)} s`);
}
if (flags['memory-trace'] !== undefined) for (const line of memoryTraceReport(flags['memory-trace'], marks)) console.log(line);
console.log(
  `operator peak RSS:                                 ${peakRssMb.toFixed(0)} MB${renderRssMb > 0 ? ` (the render process's ${renderRssMb.toFixed(0)} MB included)` : ''}  (target ≤ 150 MB: ${verdict(peakRssMb <= 150)})`,
);
// Wall against CPU: a slice where neither process is busy is latency (a queue, a timer, a round trip), not work.
console.log(`until all Ready, by tenths of the phase (count: syncs Ready):`);
for (const line of readyTimeline) console.log(line);
console.log(`new commit → all Ready, by tenths of the phase:`);
for (const line of commitTimeline) console.log(line);
if (flags.trace !== undefined) {
  await sleep(1000); // the operator flushes its trace every half second
  const marks = readTrace(flags.trace);
  console.log(
    `the bench's ${SYNCS} POSTs of ConfigSyncs: the first answered at +${((Math.min(...created) - started) / 1000).toFixed(3)} s, the last at +${((Math.max(...created) - started) / 1000).toFixed(3)} s`,
  );
  for (const line of traceReport({ label: 'until all Ready', marks, from: started, to: readyEnded, gitRequests: readyGit })) console.log(line);
  for (const line of traceReport({ label: 'new commit → all Ready', marks, from: commitStarted, to: commitEnded, gitRequests: commitGit })) console.log(line);
}
for (const line of requestTable({ 'until all Ready': readyRequests.byVerbResource, 'new commit': commitRequests.byVerbResource })) console.log(line);
if (flags.profile !== undefined) {
  // The profile is written when the operator exits: stopped here, after the steady window.
  await operator[Symbol.asyncDispose]();
  const file = readdirSync(flags.profile)
    .filter((f) => f.includes(`.${operator.pid}.0.`) && f.endsWith('.cpuprofile'))
    .map((f) => join(flags.profile as string, f))[0];
  if (file === undefined) console.log(`no CPU profile of the operator's main thread (pid ${operator.pid}) in ${flags.profile}`);
  else {
    console.log(
      `operator CPU profile: ${file} (\`node packages/operator/bench/_profile.ts FILE\` for the whole run; wall time here counts time the process waited for a core)`,
    );
    // The phases' windows, for `node scripts/cpu-profile.ts PROFILE --window DIR/ready-window.json` (or commit-window.json).
    await writeFile(`${flags.profile}/ready-window.json`, JSON.stringify({ fromUs: readyMark, toUs: readyEndMark }));
    await writeFile(`${flags.profile}/commit-window.json`, JSON.stringify({ fromUs: commitMark, toUs: commitEndMark }));
    for (const line of formatSpan('until all Ready', profileSpan(file, readyMark, readyEndMark))) console.log(line);
    for (const line of formatSpan('new commit → all Ready', profileSpan(file, commitMark, commitEndMark))) console.log(line);
  }
}
// A floor is the control plane's CPU over every core: it holds when the bench has the cores to itself. Where other
// work waited for a CPU most of the phase, the ratio says how busy the machine was as much as what the operator did.
const share = (p: number | undefined): string => (p === undefined ? 'not reported' : `${(p * 100).toFixed(0)} %`);
console.log(
  `CPU pressure (some task waiting for a CPU, /proc/pressure/cpu): until all Ready ${share(readyPressure)} of the time, new commit ${share(commitPressure)} (the bench's own processes contend for the cores too; other work on the machine raises it)`,
);
console.log(
  `floor (the control plane's CPU for the phase over ${cores} cores; no operator on this machine can be faster): all Ready ${readyFloor.toFixed(2)} s, new commit ${commitFloor.toFixed(2)} s`,
);
console.log(
  `all Ready after creation:  ${(allReadyMs / 1000).toFixed(2)} s = ${readyRatio.toFixed(2)}× its floor  (target ≤ 1.25×: ${verdict(readyRatio <= 1.25)})`,
);
console.log(
  `new commit → all Ready:    ${(newCommitMs / 1000).toFixed(2)} s = ${commitRatio.toFixed(2)}× its floor  (target ≤ 1.25×: ${verdict(commitRatio <= 1.25)}; ${viaWebhook ? 'webhook' : 'annotation'})`,
);

if (part === undefined && flags.json !== undefined) {
  await writeFile(
    flags.json,
    JSON.stringify({
      allReadyMs,
      newCommitMs,
      fetchesPerCommit,
      peakRssMb,
      steadyWrites: writes.total,
      firstReads: firstReads.total,
      steadyReads: reads.total,
      refLookupsPerRefresh: resolvesDuringSteady / Math.max(1, refreshes),
      cpuPercent: (cpuUsed / steadyElapsed) * 100,
    }),
  );
}
if (part !== undefined && flags.json !== undefined) {
  await part.report(flags.json, {
    allReadyMs,
    newCommitMs,
    fetchesPerCommit,
    peakRssMb,
    steadyWrites: writes.total,
    firstReads: firstReads.total,
    steadyReads: reads.total,
    refLookupsPerRefresh: resolvesDuringSteady / Math.max(1, refreshes),
    cpuPercent: (cpuUsed / steadyElapsed) * 100,
  });
}

/**
 * Resolves when every sync is Ready at `revision`, as a watch sees it: the moment the last one got there,
 * without polling 1,000 ConfigSyncs (whose LISTs would load the API server being measured). A watch that ends
 * is resumed from a fresh LIST.
 */
/** This process's CPU seconds, with those of the children it waited for (the Git server's git http-backend runs). */
function benchCpuSeconds(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100;
}

async function waitForAll(revision: string): Promise<void> {
  const readyAt = (cs: ConfigSync): boolean =>
    cs.status?.sourceRevision === revision && cs.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
  const ready = new Set<string>();
  const seen = (cs: ConfigSync): void => {
    if (readyAt(cs)) ready.add(cs.metadata.name);
    else ready.delete(cs.metadata.name);
    readyNow = ready.size;
  };
  const deadline = Date.now() + 600_000;
  let lastReport = Date.now();
  while (Date.now() < deadline) {
    const list = await rest.request<{ items: ConfigSync[]; metadata: { resourceVersion: string } }>({
      method: 'GET',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs`,
    });
    ready.clear();
    for (const cs of list.items) seen(cs);
    if (ready.size === SYNCS) return;
    const done = new AbortController();
    const report = setInterval(() => {
      if (Date.now() - lastReport < 10_000) return;
      lastReport = Date.now();
      progress(`${ready.size}/${SYNCS} Ready at ${revision.slice(0, 8)}`);
    }, 1000);
    try {
      await rest.watch(
        `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs`,
        { resourceVersion: list.metadata.resourceVersion, timeoutSeconds: 300 },
        (event) => {
          const { type, object } = event as { type: string; object: ConfigSync };
          if (type === 'DELETED') ready.delete(object.metadata.name);
          else if (type === 'ADDED' || type === 'MODIFIED') seen(object);
          if (ready.size === SYNCS) done.abort();
        },
        done.signal,
      );
    } catch (error) {
      if (!done.signal.aborted) progress(`watch ended (${error instanceof Error ? error.message : String(error)}); listing again`);
    } finally {
      clearInterval(report);
    }
    if (ready.size === SYNCS) return;
  }
  throw new Error(`timed out: ${ready.size}/${SYNCS} Ready at ${revision.slice(0, 8)}`);
}

/** Asks the operator for a heap snapshot (SIGUSR2, --heapsnapshot-signal) and waits until it is written to `dir`. */
async function heapSnapshot(pid: number, dir: string): Promise<void> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  for (let waited = 0; waited < 120_000; waited += 500) {
    await sleep(500);
    const written = readdirSync(dir).filter((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (written.length > 0) {
      await sleep(2000); // the file is complete once its size stops growing; V8 writes it in one go, blocking the process
      progress(`heap snapshot: ${dir}/${written[0]}`);
      return;
    }
  }
  throw new Error(`no heap snapshot appeared in ${dir}`);
}

/** The API server's requests per phase, by verb and resource, one row each, the most first. */
function requestTable(phases: Record<string, Record<string, number>>): string[] {
  const names = Object.keys(phases);
  const keys = [...new Set(names.flatMap((n) => Object.keys(phases[n] ?? {})))];
  const count = (n: string, k: string): number => phases[n]?.[k] ?? 0;
  keys.sort((a, b) => names.reduce((t, n) => t + count(n, b) - count(n, a), 0));
  const width = Math.max(...keys.map((k) => k.length), 'verb resource'.length);
  return [
    `API requests by verb and resource: ${'verb resource'.padEnd(width)}  ${names.map((n) => n.padStart(16)).join('')}`,
    ...keys.map((k) => `                                   ${k.padEnd(width)}  ${names.map((n) => String(count(n, k)).padStart(16)).join('')}`),
  ];
}

/**
 * Waits until the operator's /readyz answers 200 (its caches synced, its watches open), then until half a second
 * passes in which it uses at most 2 % of a core (the work its start set going, compiles on V8's threads included,
 * is done); at most 60 s in all. Returns how long that took and the CPU the operator used meanwhile.
 */
async function operatorAtRest(started: { readonly pid: number; readonly probeAddress: string }): Promise<{ seconds: number; cpu: number }> {
  const from = Date.now();
  const cpuFrom = cpuSeconds(started.pid);
  const deadline = from + 60_000;
  const ready = async (): Promise<boolean> => {
    try {
      return (await fetch(`http://${started.probeAddress}/readyz`)).status === 200;
    } catch {
      return false;
    }
  };
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error('the operator did not become ready (/readyz) within 60 s');
    await sleep(100);
  }
  for (let before = cpuSeconds(started.pid); Date.now() < deadline;) {
    await sleep(500);
    const now = cpuSeconds(started.pid);
    if (now - before <= 0.01) break;
    before = now;
  }
  return { seconds: (Date.now() - from) / 1000, cpu: cpuSeconds(started.pid) - cpuFrom };
}

// `pnpm soak [--minutes N | --seconds N]`: the real operator (two replicas with leader election) against the
// real test control plane and the real Git server for a bounded time (default 10 minutes) while faults land
// on a schedule: Git 500s, slow and hung responses, truncated packs; the API server's connection cut and
// restored; watch streams that go silent without closing (a hung socket); replicas SIGKILLed and restarted;
// the leader killed (a handover); a flood of webhook deliveries, valid and forged; commits throughout that add,
// change and remove files; hand edits with the real kubectl of synced objects; and beside the ConfigSyncs, a
// namespace of every default kind kept warm by NamespaceReplications (a standby namespace and, with a second
// control plane, a RemoteCluster), a labelled Secret mirrored and a Secret copied by a ManifestSync, their
// sources changing throughout. Then, with the faults stopped: every sync Ready at its repository's last
// commit, every object the last commits describe present with its data, nothing else of ours left (prune)
// and nothing of anyone else deleted, every kubectl edit corrected to Git, every standby and copy equal to its
// source, every hung watch given up by the operator, every Lease renewal on time (seen from the API server's
// side: no renewal later than the lease's duration after the previous one), and no unbounded memory growth.
// One summary line at the end; exits non-zero on any failure. Everything listens on and talks to 127.0.0.1.
import type { ConfigSync, KubeRest } from '@syncline/operator';
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { benchEnvironment } from '../packages/operator/bench/_environment.ts';
import type { TestRepo } from '@syncline/test-support';
import { startControlPlane, type ControlPlane } from '@syncline/test-support';
import { WATCH_FRESH_MS, createKubeRest } from '@syncline/operator';
import { KubeConfig } from '@kubernetes/client-node';
import { adminKubeconfig } from '../packages/operator/bench/_environment.ts';
import { KubectlFaults } from './soak/kubectl-edits.ts';
import { LeaseWatcher } from '../packages/operator/bench/_leases.ts';
import { MirrorLoad } from './soak/mirrors.ts';
import { startApiProxy, startGitProxy, type GitFaultMode } from './soak/proxies.ts';
import { ReplicaSet, type Incarnation } from './soak/replicas.ts';
import { SoakRepos } from './soak/repos.ts';
import { ReplicationLoad, type Standby } from './soak/replication.ts';
import { startWatchHangProxy } from '@syncline/test-support';
import { WebhookSender, type WebhookSecrets } from './soak/webhooks.ts';

const usage = `usage: pnpm soak [--minutes N | --seconds N] [--syncs N] [--repos N] [--webhooks N] [--seed N]
                 [--lease-duration S] [--settle-timeout S] [--no-remote] [--keep]
  --no-remote: no second control plane (the NamespaceReplication to a RemoteCluster is left out)`;
const { values: flags } = parseArgs({
  options: {
    minutes: { type: 'string' },
    seconds: { type: 'string' },
    syncs: { type: 'string', default: '20' },
    repos: { type: 'string', default: '3' },
    webhooks: { type: 'string', default: '10000' },
    seed: { type: 'string' },
    'lease-duration': { type: 'string', default: '15' },
    'settle-timeout': { type: 'string', default: '180' },
    keep: { type: 'boolean', default: false },
    'no-remote': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (flags.help) {
  console.log(usage);
  process.exit(0);
}
const positive = (name: string, text: string | undefined): number => {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) {
    console.error(`--${name} must be a positive number\n${usage}`);
    process.exit(2);
  }
  return n;
};
const durationMs = flags.seconds !== undefined ? positive('seconds', flags.seconds) * 1000 : positive('minutes', flags.minutes ?? '10') * 60_000;
const SYNCS = positive('syncs', flags.syncs);
const REPOS = positive('repos', flags.repos);
const WEBHOOKS = positive('webhooks', flags.webhooks);
const LEASE_SECONDS = positive('lease-duration', flags['lease-duration']);
const SETTLE_MS = positive('settle-timeout', flags['settle-timeout']) * 1000;
const seed = flags.seed !== undefined ? positive('seed', flags.seed) : randomInt(1, 2 ** 31 - 1);

const NAMESPACE = 'soak';
const TARGET_NAMESPACES = ['soak-t0', 'soak-t1', 'soak-t2', 'soak-t3'];
const KUBECTL_NAMESPACE = 'soak-kubectl';
const DR_SOURCE = 'soak-dr';
const LEASE = 'syncline-soak';
const OWNER_LABEL = 'syncline.dev/owner';
const RSS_WARMUP_MS = 30_000;
const MiB = 1024 * 1024;

const random = mulberry32(seed);
const between = (min: number, max: number): number => min + Math.floor(random() * (max - min + 1));
const started = Date.now();
const say = (line: string): void =>
  console.error(`[soak ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s ${new Date().toISOString().slice(11, 19)}] ${line}`);
const failures: string[] = [];

const workDir = await mkdtemp(join(tmpdir(), 'syncline-soak-'));
say(`seed ${seed}, ${durationMs / 1000}s of faults, ${SYNCS} syncs over ${REPOS} repositories, ${WEBHOOKS} webhook deliveries; work directory ${workDir}`);

await using environment = await benchEnvironment(NAMESPACE);
const { controlPlane, git, rest } = environment;

// --- the cluster side: target namespaces, objects that are not ours, the webhook Secret ---------------------
const secrets: WebhookSecrets = { github: 'soak-github-secret', gitlab: 'soak-gitlab-token', gitea: 'soak-gitea-secret', generic: 'soak-generic-secret' };
await rest.request({ method: 'POST', path: `/api/v1/namespaces/${NAMESPACE}/secrets`, body: { metadata: { name: 'soak-webhooks' }, stringData: secrets } });
const bystanderData = { owner: 'someone else', note: 'the operator must never touch this' };
for (const namespace of TARGET_NAMESPACES) {
  await rest.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: namespace } } });
  await rest.request({ method: 'POST', path: `/api/v1/namespaces/${namespace}/configmaps`, body: { metadata: { name: 'bystander' }, data: bystanderData } });
}

// --- NamespaceReplications (default kinds), mirrored and copied Secrets, a second control plane --------------
let remotePlane: ControlPlane | undefined;
const standbys: Standby[] = [{ name: 'standby-local', rest, namespace: `${DR_SOURCE}-standby` }];
if (!flags['no-remote']) {
  say('starting a second control plane for the RemoteCluster standby');
  remotePlane = await startControlPlane();
  const remoteKc = new KubeConfig();
  remoteKc.loadFromFile(remotePlane.kubeconfigPath);
  // The standby's credentials are excluded from what is replicated (as an SRE would).
  await rest.request({
    method: 'POST',
    path: `/api/v1/namespaces/${NAMESPACE}/secrets`,
    body: {
      metadata: { name: 'standby-kubeconfig', labels: { 'syncline.dev/dr': 'exclude' } },
      stringData: { kubeconfig: await adminKubeconfig(remotePlane) },
    },
  });
  await rest.request({
    method: 'POST',
    path: `/apis/syncline.dev/v1alpha1/namespaces/${NAMESPACE}/remoteclusters`,
    body: {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'RemoteCluster',
      metadata: { name: 'dr' },
      spec: { kubeconfigSecretRef: { name: 'standby-kubeconfig', key: 'kubeconfig' } },
    },
  });
  standbys.push({ name: 'standby-remote', rest: await createKubeRest(remoteKc), namespace: DR_SOURCE, cluster: 'dr' });
}
const replication = new ReplicationLoad({ rest, home: NAMESPACE, source: DR_SOURCE, random });
await replication.setUp(standbys);
const mirrors = new MirrorLoad({ rest, home: NAMESPACE, targets: TARGET_NAMESPACES, random });
await mirrors.setUp();

// --- the Git side: repositories behind a faulting proxy ---------------------------------------------------
const gitProxy = await startGitProxy(git.url, random);
const model = new SoakRepos({ syncs: SYNCS, repos: REPOS, namespaces: TARGET_NAMESPACES, random });
const repos: TestRepo[] = [];
const tips: string[] = [];
for (let r = 0; r < REPOS; r++) {
  const repo = await git.createRepo(`soak-${r}`);
  repos.push(repo);
  tips.push(await repo.commit(model.initialCommit(r), { message: 'initial' }));
}
const proxiedUrl = (repo: TestRepo): string => `${gitProxy.url}/${repo.name}.git`;
for (const sync of model.syncs) {
  const repo = repos[sync.repo];
  if (repo === undefined) throw new Error(`no repository ${sync.repo}`);
  await rest.request({
    method: 'PATCH',
    path: `/apis/syncline.dev/v1alpha1/namespaces/${NAMESPACE}/configsyncs/${sync.name}`,
    query: { fieldManager: 'soak', force: true },
    contentType: 'application/apply-patch+yaml',
    body: model.configSync(sync, NAMESPACE, proxiedUrl(repo)),
  });
}

// A Deployment and a Service for kubectl to edit, from a repository of their own.
await rest.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: KUBECTL_NAMESPACE } } });
/** The kubectl sync's refresh interval. */
const KUBECTL_REFRESH_MS = 30_000;
/**
 * How late a kubectl edit may be corrected: one refresh interval and 10 s. A frozen watch stream is trusted (its
 * cache vouches for a no-op resync) until it has been silent for WATCH_FRESH_MS, the API server's bookmark period
 * and a margin; a refresh interval shorter than that is held to that instead.
 */
const CORRECTION_LIMIT_MS = Math.max(KUBECTL_REFRESH_MS, WATCH_FRESH_MS) + 10_000;
const kubectlRepo = await git.createRepo('soak-kubectl');
await kubectlRepo.commit(KubectlFaults.files(), { message: 'web' });
await rest.request({
  method: 'POST',
  path: `/apis/syncline.dev/v1alpha1/namespaces/${NAMESPACE}/configsyncs`,
  body: {
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'ConfigSync',
    metadata: { name: 'kubectl-web' },
    spec: {
      source: { git: { repo: proxiedUrl(kubectlRepo), revision: 'main', path: 'web' } },
      refreshInterval: `${KUBECTL_REFRESH_MS / 1000}s`,
      policy: 'Sync',
      drift: 'Correct',
      targets: [{ name: 'web', namespace: KUBECTL_NAMESPACE }],
    },
  },
});
const kubectlFaults = new KubectlFaults({ kubeconfig: controlPlane.kubeconfigPath, namespace: KUBECTL_NAMESPACE, workDir, random, log: say });

// --- the operator: two replicas, talking to the API server through a proxy that can be cut, then one that can
// hang watch streams -----------------------------------------------------------------------------------------
const server = new URL(controlPlane.server);
const hangProxy = await startWatchHangProxy({ dataDir: controlPlane.dataDir, upstream: { host: server.hostname, port: Number(server.port) } });
// A cut spares the connections of frozen watch streams: only the operator's own deadline may end those.
const apiProxy = await startApiProxy({ host: '127.0.0.1', port: hangProxy.port, spare: (port) => hangProxy.carriesFrozen(port) });
// The serving certificate names 127.0.0.1 whatever the port, so TLS verifies through the proxy unchanged.
const kubeconfigPath = join(workDir, 'kubeconfig');
const kubeconfig = await readFile(controlPlane.kubeconfigPath, 'utf8');
if (!kubeconfig.includes(`server: ${controlPlane.server}`)) throw new Error(`the control plane's kubeconfig does not name ${controlPlane.server}`);
await writeFile(kubeconfigPath, kubeconfig.replace(`server: ${controlPlane.server}`, `server: https://127.0.0.1:${apiProxy.port}`), { mode: 0o600 });

const operatorArgs = [
  ...trustedNamespaceArgs(),
  '--leader-elect',
  '--leader-election-namespace',
  NAMESPACE,
  '--leader-election-id',
  LEASE,
  '--lease-duration',
  String(LEASE_SECONDS),
  '--webhook-secret',
  `${NAMESPACE}/soak-webhooks`,
  ...minRefreshIntervalArgs(),
];
const replicas = new ReplicaSet({ slots: ['a', 'b'], kubeconfig: kubeconfigPath, args: operatorArgs, workDir, log: say });
say(`starting two replicas: ${operatorArgs.join(' ')}`);
await replicas.start('a');
await replicas.start('b');

const faults = new AbortController();
const samplers = new AbortController();
const leases = new LeaseWatcher({ rest, namespace: NAMESPACE, name: LEASE });
/** The most watch streams seen open at once (sampled every second). */
let mostWatchesOpen = 0;
const sampleWatches = (): Promise<void> => {
  mostWatchesOpen = Math.max(mostWatchesOpen, hangProxy.openWatches());
  return Promise.resolve();
};
const samplerLoops = [
  every(2_000, samplers.signal, () => replicas.sampleRss()),
  every(1_000, samplers.signal, () => countDualLeaders()),
  every(1_000, samplers.signal, sampleWatches),
  leases.run(samplers.signal),
];

say('waiting for the first sync of every ConfigSync');
const initial = await waitForConvergence(rest, 180_000);
if (initial.length > 0) {
  await finish([`the first sync did not converge within 180 s: ${initial.slice(0, 5).join('; ')}`]);
}
say('waiting for the kubectl objects, the standbys and the copies');
const initialOthers = [
  ...(await waitFor(() => kubectlFaults.differences(rest), 120_000)).map((p) => `kubectl objects not as Git: ${p}`),
  ...(await replication.waitForStandbys(standbys, 180_000)),
  ...(await mirrors.waitForCopies(60_000)),
];
if (initialOthers.length > 0) await finish([`the first replication, copies or sync did not complete: ${initialOthers.slice(0, 6).join('; ')}`]);
say('all synced; faults start');

// --- the soak ---------------------------------------------------------------------------------------------
const counts = {
  commits: 0,
  added: 0,
  changed: 0,
  removed: 0,
  /** Per kind of Git fault: windows it was on, and requests it hit (for truncate and reset: responses cut). */
  git: {
    '500': { windows: 0, hits: 0 },
    slow: { windows: 0, hits: 0 },
    hang: { windows: 0, hits: 0 },
    truncate: { windows: 0, hits: 0 },
    reset: { windows: 0, hits: 0 },
  },
  apiCuts: 0,
  apiConnectionsCut: 0,
  watchHangs: 0,
  watchesFrozen: 0,
  restarts: 0,
  handovers: 0,
  handoverMs: [] as number[],
  dualLeaderSamples: 0,
};
const gitFaultWindows = (): number => Object.values(counts.git).reduce((n, k) => n + k.windows, 0);
const webhooks = new WebhookSender({ secrets, random });
const faultsStarted = Date.now();
setTimeout(() => faults.abort(), durationMs);
const progress = setInterval(
  () =>
    say(
      `commits ${counts.commits}, git faults ${gitFaultWindows()}, api cuts ${counts.apiCuts}, ` +
        `restarts ${counts.restarts}, handovers ${counts.handovers}, webhooks ${webhooks.tally.sent} (${webhooks.tally.wrong} wrong), ` +
        `kubectl edits ${kubectlFaults.corrections.length}, watches hung ${counts.watchesFrozen}, lease renewals ${leases.renewals} (${leases.late.length} late)`,
    ),
  30_000,
);

await Promise.all([
  commitLoop(faults.signal),
  gitFaultLoop(faults.signal),
  apiCutLoop(faults.signal),
  processFaultLoop(faults.signal),
  watchHangLoop(faults.signal),
  kubectlFaults.loop({ rest, spacingMs: 20_000, limitMs: CORRECTION_LIMIT_MS, signal: faults.signal }),
  replication.loop(faults.signal),
  mirrors.loop(faults.signal),
  webhooks.flood({
    total: WEBHOOKS,
    durationMs,
    concurrency: 8,
    receivers: () => replicas.receivers(),
    repoUrls: repos.map(proxiedUrl),
    unfollowedUrl: `${gitProxy.url}/nobody-follows-this.git`,
    signal: faults.signal,
  }),
]);
clearInterval(progress);
say(
  `faults stopped after ${((Date.now() - faultsStarted) / 1000).toFixed(0)}s; waiting up to ${SETTLE_MS / 1000}s for every sync to be Ready at its last commit`,
);

// --- convergence and checks -------------------------------------------------------------------------------
git.setBehavior(undefined);
gitProxy.setFault(undefined);
await apiProxy.restore();
for (const slot of replicas.slotNames) await replicas.start(slot);
const settleStarted = Date.now();
const notReady = await waitForConvergence(rest, SETTLE_MS);
const settleMs = Date.now() - settleStarted;
if (notReady.length > 0)
  failures.push(`${notReady.length} syncs not Ready at their last commit after ${SETTLE_MS / 1000}s: ${notReady.slice(0, 5).join('; ')}`);
else say(`every sync Ready at its last commit ${(settleMs / 1000).toFixed(1)}s after the faults stopped`);

const objects = await compareObjects(rest);
if (objects.missing.length > 0) failures.push(`${objects.missing.length} objects missing: ${objects.missing.slice(0, 10).join(', ')}`);
if (objects.unexpected.length > 0) failures.push(`${objects.unexpected.length} unexpected objects (not pruned): ${objects.unexpected.slice(0, 10).join(', ')}`);
if (objects.wrongData.length > 0) failures.push(`${objects.wrongData.length} objects with wrong data: ${objects.wrongData.slice(0, 5).join('; ')}`);
if (objects.bystandersHarmed.length > 0) failures.push(`objects that are not ours were deleted or changed: ${objects.bystandersHarmed.join(', ')}`);

for (const line of await explainObjects(rest, [...objects.missing, ...objects.unexpected, ...objects.wrongData.map((w) => w.split(':')[0] ?? '')].slice(0, 8)))
  say(line);

// The other loads: each compared with its source (the kubectl objects with Git), within what is left of the settle time.
const remaining = (): number => Math.max(10_000, SETTLE_MS - (Date.now() - settleStarted));
const kubectlLeft = await waitFor(() => kubectlFaults.differences(rest), remaining());
if (kubectlLeft.length > 0) failures.push(`kubectl edits not corrected to Git: ${kubectlLeft.join('; ')}`);
for (const late of kubectlFaults.late) failures.push(`kubectl edit corrected later than ${CORRECTION_LIMIT_MS / 1000}s: ${late}`);
const standbyLeft = await replication.waitForStandbys(standbys, remaining());
if (standbyLeft.length > 0) failures.push(`standbys not equal to the source: ${standbyLeft.slice(0, 8).join('; ')}`);
const copiesLeft = await mirrors.waitForCopies(remaining());
if (copiesLeft.length > 0) failures.push(`copies not at their source's data: ${copiesLeft.slice(0, 8).join('; ')}`);
const hung = await waitFor(() => Promise.resolve(hangProxy.tally().stillFrozenPaths), remaining());
if (hung.length > 0) failures.push(`${hung.length} hung watch streams never given up by the operator: ${hung.slice(0, 5).join(', ')}`);
for (const late of leases.late)
  failures.push(
    `Lease renewal late: ${late.holder} renewed ${(late.gapMs / 1000).toFixed(1)}s after its previous renewal (lease ${late.periodMs / 1000}s) at ${late.at}`,
  );
if (leases.renewals === 0) failures.push('no Lease renewal was seen');

const tally = webhooks.tally;
if (tally.wrong > 0) failures.push(`${tally.wrong} webhook deliveries got a wrong answer: ${tally.wrongExamples.join(' | ')}`);
const crashes = replicas.incarnations.filter((i) => i.end === 'crashed');
for (const crash of crashes)
  failures.push(
    `replica ${crash.slot} (pid ${crash.pid}) exited by itself with code ${String(crash.exitCode)}; last errors: ${(crash.lastErrors ?? []).join(' ') || 'none logged'}`,
  );
if (counts.dualLeaderSamples > 0) failures.push(`both replicas reported syncline_leader 1 at once in ${counts.dualLeaderSamples} samples`);

const memory = memoryFigures(replicas.incarnations);
if (memory.failure !== undefined) failures.push(memory.failure);

const syncsReady = SYNCS - notReady.length;
const lostLeadership = replicas.incarnations.filter((i) => i.end === 'lostLeadership').length;
const maxHandover = counts.handoverMs.length > 0 ? `${(Math.max(...counts.handoverMs) / 1000).toFixed(1)}s` : 'n/a';
const hangTally = hangProxy.tally();
// A frozen stream closed within 2 s of a replica's end went with its process; the others the operator gave up itself.
const processEnds = replicas.incarnations.flatMap((i) => (i.endedAt === undefined ? [] : [i.endedAt]));
const withProcess = hangTally.abandoned.filter((a) => processEnds.some((end) => Math.abs(a.at - end) <= 2_000));
const byOperator = hangTally.abandoned.filter((a) => !withProcess.includes(a));
const longest = (list: readonly { afterMs: number }[]): string =>
  list.length === 0 ? 'n/a' : `${(Math.max(...list.map((a) => a.afterMs)) / 1000).toFixed(0)}s`;
const correctionMs = kubectlFaults.corrections.flatMap((c) => (c.ms === undefined ? [] : [c.ms]));
const leaseFigures = leases.figures();
const summary =
  `soak ${failures.length === 0 ? 'PASS' : 'FAIL'}: ${(durationMs / 1000).toFixed(0)}s seed=${seed} | ` +
  `commits=${counts.commits} (+${counts.added} ~${counts.changed} -${counts.removed}) | ` +
  `git faults=${gitFaultWindows()}: ${Object.entries(counts.git)
    .map(([kind, { windows, hits }]) => `${kind}=${windows} (${hits} ${kind === 'truncate' || kind === 'reset' ? 'packs cut' : 'req'})`)
    .join(' ')} | api cuts=${counts.apiCuts} (${counts.apiConnectionsCut} conns) | ` +
  `kills: restarts=${counts.restarts} handovers=${counts.handovers} (max ${maxHandover}) lost-lease exits=${lostLeadership} crashes=${crashes.length} | ` +
  `webhooks sent=${tally.sent} accepted=${tally.accepted} rejected=${tally.rejected} unavailable=${tally.unavailable} unreachable=${tally.unreachable} wrong=${tally.wrong} | ` +
  `syncs ready=${syncsReady}/${SYNCS} (settled in ${(settleMs / 1000).toFixed(1)}s) | ` +
  `objects checked=${objects.checked} missing=${objects.missing.length} unexpected=${objects.unexpected.length} wrong-data=${objects.wrongData.length} | ` +
  `kubectl edits=${kubectlFaults.corrections.length} corrected=${correctionMs.length} (max ${correctionMs.length === 0 ? 'n/a' : `${(Math.max(...correctionMs) / 1000).toFixed(1)}s`}, ${kubectlFaults.late.length} later than ${CORRECTION_LIMIT_MS / 1000}s) refused=${kubectlFaults.refused.length} left=${kubectlLeft.length} | ` +
  `watch hangs=${counts.watchHangs} (${hangTally.frozen} streams: ${byOperator.length} given up by the operator after at most ${longest(byOperator)}, ${withProcess.length} ended with their process, ${hung.length} still hung) | ` +
  `standbys=${standbys.length} x ${replication.objectCount} objects of every default kind, churn +${replication.changes.added} ~${replication.changes.changed} -${replication.changes.removed}, differing=${standbyLeft.length} | ` +
  `copies: ${mirrors.updates} source updates, differing=${copiesLeft.length} | ` +
  `lease renewals=${leases.renewals} by ${leases.holders} holders, late=${leases.late.length} (max gap ${(leaseFigures.maxGapMs / 1000).toFixed(1)}s, p99 ${(leaseFigures.p99GapMs / 1000).toFixed(1)}s) | ` +
  `rss ${memory.summary}`;
await finish(failures, summary);

// --- the fault loops --------------------------------------------------------------------------------------

/** Commits throughout, each followed by the push delivery a Git host sends. */
async function commitLoop(signal: AbortSignal): Promise<void> {
  while (await pause(between(800, 3_000), signal)) {
    const r = between(0, REPOS - 1);
    const repo = repos[r];
    if (repo === undefined) continue;
    const { files, change } = model.nextCommit(r);
    tips[r] = await repo.commit(files, { message: `soak commit ${counts.commits + 1}` });
    counts.commits++;
    counts.added += change.added;
    counts.changed += change.changed;
    counts.removed += change.removed;
    void webhooks.notifyPush(proxiedUrl(repo), () => replicas.receivers());
  }
}

/** One Git fault at a time, each for a few seconds, a few seconds apart. */
async function gitFaultLoop(signal: AbortSignal): Promise<void> {
  const kinds = ['500', '500', 'slow', 'slow', 'truncate', 'truncate', 'reset', 'hang'] as const;
  while (await pause(between(3_000, 10_000), signal)) {
    const kind = kinds[between(0, kinds.length - 1)] ?? '500';
    const only = (['info/refs', 'git-upload-pack', undefined] as const)[between(0, 2)];
    const logged = git.requestLog().length;
    const windowMs = kind === 'hang' ? between(1_000, 2_500) : between(2_000, 6_000);
    const affected = (): number =>
      git
        .requestLog()
        .slice(logged)
        .filter((r) => only === undefined || r.path.includes(`/${only}`)).length;
    switch (kind) {
      case '500':
        git.setBehavior({ kind: 'status', status: 500, ...(only === undefined ? {} : { only }) });
        break;
      case 'slow':
        git.setBehavior({ kind: 'slow', chunkBytes: 128, intervalMs: 100, ...(only === undefined ? {} : { only }) });
        break;
      case 'hang':
        git.setBehavior({ kind: 'hang', ...(only === undefined ? {} : { only }) });
        break;
      case 'truncate':
      case 'reset':
        gitProxy.setFault(kind satisfies GitFaultMode);
        break;
    }
    const cutBefore = kind === 'truncate' || kind === 'reset' ? gitProxy.cut[kind] : 0;
    await sleep(windowMs);
    git.setBehavior(undefined);
    gitProxy.setFault(undefined);
    const hits = kind === 'truncate' || kind === 'reset' ? gitProxy.cut[kind] - cutBefore : affected();
    counts.git[kind].windows++;
    counts.git[kind].hits += hits;
    say(
      `git fault ${kind}${only === undefined || kind === 'truncate' || kind === 'reset' ? '' : ` on ${only}`} for ${(windowMs / 1000).toFixed(1)}s: ${hits} ${kind === 'truncate' || kind === 'reset' ? 'packs cut' : 'requests'}`,
    );
  }
}

/** The API server unreachable for a few seconds: every connection cut, new ones refused. */
async function apiCutLoop(signal: AbortSignal): Promise<void> {
  const spacing = Math.min(45_000, Math.max(10_000, durationMs / 8));
  while (await pause(between(spacing / 2, spacing), signal)) {
    const connections = await apiProxy.cut();
    counts.apiConnectionsCut += connections;
    counts.apiCuts++;
    const outageMs = between(2_000, 8_000);
    await sleep(outageMs);
    await apiProxy.restore();
    say(`api server cut for ${(outageMs / 1000).toFixed(1)}s (${connections} connections)`);
  }
}

/**
 * Restarts (the follower SIGKILLed and started again) and handovers (the leader SIGKILLed; the other replica
 * must take the lease), alternating, spread over the first two thirds of the run so that the last third has
 * a long-lived leader for the memory figures.
 */
async function processFaultLoop(signal: AbortSignal): Promise<void> {
  const perKind = Math.max(1, Math.round(durationMs / 200_000));
  const events = 2 * perKind;
  for (let e = 0; e < events; e++) {
    const at = faultsStarted + durationMs * (0.08 + (0.58 * e) / Math.max(1, events - 1)) + between(-3_000, 3_000);
    if (!(await pause(Math.max(0, at - Date.now()), signal))) return;
    const leader = await currentLeader(30_000);
    if (e % 2 === 0) {
      const victim = replicas.slotNames.find((s) => s !== leader) ?? 'b';
      say(`restart: SIGKILL replica ${victim}${leader === undefined ? ' (no leader known)' : ' (the follower)'}`);
      await replicas.kill(victim);
      await sleep(between(500, 3_000));
      await replicas.start(victim);
      counts.restarts++;
      continue;
    }
    if (leader === undefined) {
      say('handover skipped: no live leader found within 30 s');
      continue;
    }
    const survivor = replicas.slotNames.find((s) => s !== leader);
    const survivorIdentity = survivor === undefined ? undefined : replicas.identityOf(survivor);
    say(`handover: SIGKILL the leader, replica ${leader}`);
    await replicas.kill(leader);
    const killedAt = Date.now();
    const limitMs = LEASE_SECONDS * 1000 + 45_000;
    let holder: string | undefined;
    while (Date.now() - killedAt < limitMs) {
      holder = await leaseHolder();
      if (holder !== undefined && holder === replicas.identityOf(survivor ?? '')) break;
      await sleep(200);
    }
    if (survivorIdentity !== undefined && holder === replicas.identityOf(survivor ?? '')) {
      counts.handovers++;
      counts.handoverMs.push(Date.now() - killedAt);
      say(`handover: replica ${survivor ?? '?'} leads after ${((Date.now() - killedAt) / 1000).toFixed(1)}s`);
    } else {
      failures.push(`handover: replica ${survivor ?? '?'} did not take the lease within ${limitMs / 1000}s of the leader's death (holder ${holder ?? 'none'})`);
    }
    counts.restarts++;
    await replicas.start(leader);
  }
}

/**
 * Watch streams frozen without closing, in the first half of the run so that even a watch the operator gives
 * up on only at its deadline (the server-side timeout and a grace) is given up before the end: about one hang
 * per four minutes, at least one.
 */
async function watchHangLoop(signal: AbortSignal): Promise<void> {
  const hangs = Math.max(1, Math.round(durationMs / 240_000));
  for (let h = 0; h < hangs; h++) {
    const at = faultsStarted + durationMs * (0.05 + (0.4 * h) / Math.max(1, hangs - 1)) + between(0, 5_000);
    if (!(await pause(Math.max(0, at - Date.now()), signal))) return;
    // Right after an API cut the watches are not open again yet: wait (up to 30 s) until most of them are.
    for (let retry = 0; hangProxy.openWatches() < 0.5 * mostWatchesOpen && retry < 15 && (await pause(2_000, signal)); retry++);
    const frozen = hangProxy.hangOpenWatches();
    counts.watchHangs++;
    counts.watchesFrozen += frozen;
    say(`watch hang: ${frozen} open watch streams go silent without closing`);
  }
}

// --- helpers ----------------------------------------------------------------------------------------------

/** Polls `probe` until it finds nothing (an empty list) or `timeoutMs` passes; returns what it found last. */
async function waitFor(probe: () => Promise<string[]>, timeoutMs: number): Promise<string[]> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe().catch((error: unknown) => [`could not check: ${error instanceof Error ? error.message : String(error)}`]);
    if (found.length === 0 || Date.now() > until) return found;
    await sleep(1_000);
  }
}

async function leaseHolder(): Promise<string | undefined> {
  try {
    const lease = await rest.request<{ spec?: { holderIdentity?: string } }>({
      method: 'GET',
      path: `/apis/coordination.k8s.io/v1/namespaces/${NAMESPACE}/leases/${LEASE}`,
    });
    return lease.spec?.holderIdentity ?? undefined;
  } catch {
    return undefined;
  }
}

/** The slot of the replica that holds the lease, once one that is running does. */
async function currentLeader(timeoutMs: number): Promise<string | undefined> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const slot = replicas.slotOf(await leaseHolder());
    if (slot !== undefined || Date.now() > until) return slot;
    await sleep(500);
  }
}

async function countDualLeaders(): Promise<void> {
  if ((await replicas.scrapeLeaders()) > 1) counts.dualLeaderSamples++;
}

/** Waits until every ConfigSync is Ready at its repository's tip; returns what is still not (empty: converged). */
async function waitForConvergence(client: KubeRest, timeoutMs: number): Promise<string[]> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    let pending: string[];
    try {
      const list = await client.request<{ items: ConfigSync[] }>({ method: 'GET', path: `/apis/syncline.dev/v1alpha1/namespaces/${NAMESPACE}/configsyncs` });
      const byName = new Map(list.items.map((cs) => [cs.metadata.name, cs]));
      pending = model.syncs.flatMap((sync) => {
        const cs = byName.get(sync.name);
        const tip = tips[sync.repo] ?? '';
        const ready = cs?.status?.conditions?.find((c) => c.type === 'Ready');
        const synced = (cs?.status?.targets ?? []).filter((t) => t.phase === 'Synced').length;
        const ok =
          ready?.status === 'True' &&
          cs?.status?.observedGeneration === cs?.metadata.generation &&
          cs?.status?.sourceRevision === tip &&
          synced === sync.targets.length;
        return ok
          ? []
          : [
              `${sync.name}: Ready=${ready?.status ?? '?'} ${ready?.reason ?? ''} "${(ready?.message ?? '').slice(0, 160)}" at ${cs?.status?.sourceRevision?.slice(0, 8) ?? 'none'}, tip ${tip.slice(0, 8)}`,
            ];
      });
    } catch (error) {
      pending = [`could not list ConfigSyncs: ${error instanceof Error ? error.message : String(error)}`];
    }
    if (pending.length === 0 || Date.now() > until) return pending;
    await sleep(1_000);
  }
}

type ConfigMapItem = { metadata: { name: string; labels?: Record<string, string> }; data?: Record<string, string> };

/** The cluster against the model of the last commits: every target namespace, every ConfigMap. */
async function compareObjects(
  client: KubeRest,
): Promise<{ checked: number; missing: string[]; unexpected: string[]; wrongData: string[]; bystandersHarmed: string[] }> {
  const expected = model.expected();
  const result = { checked: 0, missing: [] as string[], unexpected: [] as string[], wrongData: [] as string[], bystandersHarmed: [] as string[] };
  for (const namespace of TARGET_NAMESPACES) {
    const list = await client.request<{ items: ConfigMapItem[] }>({ method: 'GET', path: `/api/v1/namespaces/${namespace}/configmaps` });
    const live = new Map(list.items.map((item) => [item.metadata.name, item]));
    const want = expected.get(namespace) ?? new Map<string, Record<string, string>>();
    for (const [name, data] of want) {
      result.checked++;
      const item = live.get(name);
      if (item === undefined) result.missing.push(`${namespace}/${name}`);
      else if (JSON.stringify(sorted(item.data ?? {})) !== JSON.stringify(sorted(data)))
        result.wrongData.push(`${namespace}/${name}: ${JSON.stringify(item.data)} instead of ${JSON.stringify(data)}`);
    }
    for (const item of list.items) {
      const name = item.metadata.name;
      const ours = item.metadata.labels?.[OWNER_LABEL] !== undefined || /^s\d+-/.test(name);
      if (ours && !want.has(name)) result.unexpected.push(`${namespace}/${name}`);
    }
    const bystander = live.get('bystander');
    result.checked++;
    if (bystander === undefined || JSON.stringify(sorted(bystander.data ?? {})) !== JSON.stringify(sorted(bystanderData)))
      result.bystandersHarmed.push(`${namespace}/bystander`);
  }
  return result;
}

/** For a report: what the cluster, the owning sync's status and the repository's tip each say about an object. */
async function explainObjects(client: KubeRest, ids: readonly string[]): Promise<string[]> {
  const lines: string[] = [];
  for (const id of ids) {
    const [namespace = '', name = ''] = id.split('/');
    const sync = model.syncs.find((s) => name.startsWith(`${s.name}-`));
    if (sync === undefined) continue;
    const item = await client
      .request<ConfigMapItem & { metadata: { annotations?: Record<string, string> } }>({
        method: 'GET',
        path: `/api/v1/namespaces/${namespace}/configmaps/${name}`,
      })
      .catch(() => undefined);
    const cs = await client
      .request<ConfigSync>({ method: 'GET', path: `/apis/syncline.dev/v1alpha1/namespaces/${NAMESPACE}/configsyncs/${sync.name}` })
      .catch(() => undefined);
    const inInventory = (cs?.status?.inventory ?? []).filter((i) => i.entries.includes(`/ConfigMap/${namespace}/${name}`)).map((i) => i.target);
    const repo = repos[sync.repo];
    const file = name.endsWith('-settings') ? 'settings.yaml.hbs' : `${name.slice(sync.name.length + 1)}.yaml`;
    const inTip =
      repo === undefined ? '?' : (await repo.git(['ls-tree', '--name-only', tips[sync.repo] ?? 'main', `${sync.path}/${file}`])).trim() !== '' ? 'yes' : 'no';
    lines.push(
      `${id}: in cluster ${item === undefined ? 'no' : `yes (revision ${item.data?.['revision'] ?? '?'}, owner label ${item.metadata.labels?.[OWNER_LABEL] === undefined ? 'no' : 'yes'}, owned-by ${item.metadata.annotations?.['syncline.dev/owned-by'] ?? 'none'})`}; ` +
        `in ${sync.name}'s inventory: ${inInventory.length === 0 ? 'no' : inInventory.join(',')}; in the tip of ${repo?.name ?? '?'} (${(tips[sync.repo] ?? '').slice(0, 8)}): ${inTip}`,
    );
  }
  return lines;
}

function sorted(data: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(data).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * RSS of each operator process, per stretch in one role (leader or follower: a follower does far less), after
 * a warm-up at the start of the stretch: the median of its last third against the median of its first third.
 * A stretch of at least a minute fails the check when it grew by more than half its early size and more than
 * 64 MiB. The figures reported are the longest leader stretch's (or the longest stretch's).
 */
function memoryFigures(incarnations: readonly Incarnation[]): { summary: string; failure?: string } {
  const median = (values: number[]): number => {
    const s = [...values].sort((a, b) => a - b);
    return s[Math.floor(s.length / 2)] ?? 0;
  };
  const max = Math.max(0, ...incarnations.flatMap((i) => i.rss.map(([, bytes]) => bytes)));
  type Stretch = { pid: number; leader: boolean; samples: Array<[number, number]> };
  const stretches: Stretch[] = [];
  for (const inc of incarnations) {
    let current: Stretch | undefined;
    for (const [at, bytes, leader] of inc.rss) {
      if (current?.leader !== leader) stretches.push((current = { pid: inc.pid, leader, samples: [] }));
      current.samples.push([at, bytes]);
    }
  }
  const judged = stretches.flatMap((stretch) => {
    const start = stretch.samples[0]?.[0] ?? 0;
    const samples = stretch.samples.filter(([at]) => at - start >= RSS_WARMUP_MS);
    const span = (samples.at(-1)?.[0] ?? 0) - (samples[0]?.[0] ?? 0);
    if (samples.length < 9 || span < 60_000) return [];
    const third = Math.floor(samples.length / 3);
    const first = median(samples.slice(0, third).map(([, b]) => b));
    const last = median(samples.slice(-third).map(([, b]) => b));
    return [{ ...stretch, first, last, span, grew: last - first > Math.max(64 * MiB, first / 2) }];
  });
  const mib = (bytes: number): string => (bytes / MiB).toFixed(0);
  const longest = [...judged].sort((a, b) => Number(b.leader) - Number(a.leader) || b.span - a.span)[0];
  const summary =
    longest === undefined
      ? `n/a (no replica held one role for ${RSS_WARMUP_MS / 1000 + 60}s) max=${mib(max)}MiB`
      : `first=${mib(longest.first)}MiB last=${mib(longest.last)}MiB max=${mib(max)}MiB (pid ${longest.pid} as ${longest.leader ? 'leader' : 'follower'}, ${(longest.span / 1000).toFixed(0)}s after warm-up)`;
  const grown = judged.filter((j) => j.grew);
  return grown.length === 0
    ? { summary }
    : {
        summary,
        failure: `memory grew: ${grown.map((j) => `pid ${j.pid} as ${j.leader ? 'leader' : 'follower'} ${mib(j.first)}MiB → ${mib(j.last)}MiB over ${(j.span / 1000).toFixed(0)}s`).join(', ')}`,
      };
}

/** The operator's refresh-interval floor, when this version has one: the soak's syncs refresh every 5–30 s. */
function minRefreshIntervalArgs(): string[] {
  const main = join(import.meta.dirname, '..', 'packages', 'cli', 'src', 'main.ts');
  // `run --help` lists the flags of run; versions before the commander CLI listed them in `--help`.
  const help = [['run', '--help'], ['--help']].map((args) => spawnSync(process.execPath, [main, ...args], { encoding: 'utf8' }).stdout).join('');
  return help.includes('--min-refresh-interval') ? ['--min-refresh-interval', '5s'] : [];
}

/**
 * The soak's syncs live in NAMESPACE and write into the other namespaces with the operator's rights: trusted,
 * when this version has the flag (before it, every namespace could).
 */
function trustedNamespaceArgs(): string[] {
  const main = join(import.meta.dirname, '..', 'packages', 'cli', 'src', 'main.ts');
  const help = spawnSync(process.execPath, [main, 'run', '--help'], { encoding: 'utf8' }).stdout;
  return help.includes('--trusted-namespaces') ? ['--trusted-namespaces', NAMESPACE] : [];
}

/** Waits `ms`; false when `signal` aborted first. */
async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false;
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

async function every(ms: number, signal: AbortSignal, task: () => Promise<void>): Promise<void> {
  while (await pause(ms, signal)) await task();
}

function mulberry32(a: number): () => number {
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function finish(problems: readonly string[], summary?: string): Promise<never> {
  faults.abort();
  samplers.abort();
  await Promise.all(samplerLoops);
  await replicas.stop();
  await gitProxy.close();
  await apiProxy.close();
  await hangProxy.close();
  await remotePlane?.stop();
  for (const problem of problems) console.error(`FAIL: ${problem}`);
  if (summary !== undefined) console.log(summary);
  if (problems.length === 0 && !flags.keep) await rm(workDir, { recursive: true, force: true });
  else console.error(`operator logs and kubeconfig kept in ${workDir}`);
  await environment[Symbol.asyncDispose]();
  process.exit(problems.length === 0 ? 0 : 1);
}

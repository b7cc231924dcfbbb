// `pnpm bench hooks [--rounds 3]`: what hooks cost in API writes. A control plane whose Pods run (KWOK simulated
// nodes, the Job controller), the real Git server and the real operator process; two ConfigSyncs of one ConfigMap
// each, one of them with a PreSync, a Sync and a PostSync Job (generated names, the default BeforeHookCreation).
// Each round commits a change of both ConfigMaps, asks both syncs to reconcile, and counts, until both are Ready at
// the commit, the writes to each ConfigSync (its status: MODIFIED events of a watch) and its Events (each
// repetition counted). The hook objects' own create and delete are not counted (the Job and Pod writes are the
// Job controller's and KWOK's); what is left over the sync without hooks, per hook, is the figure: target ≤ 1.
import { KubeConfig } from '@kubernetes/client-node';
import { createKubeRest, installCrds, type ConfigSync, type KubeRest } from '@syncline/operator';
import { startGitServer, startKwokCluster, startOperator } from '@syncline/test-support';
import { parseArgs } from 'node:util';

const { values: flags } = parseArgs({ options: { rounds: { type: 'string', default: '3' } } });
const ROUNDS = Number(flags.rounds);
const HOOKS = ['PreSync', 'Sync', 'PostSync'] as const;
const NAMESPACE = 'bench-hooks';
const progress = (line: string): void => console.error(`[bench] ${line}`);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

await using cluster = await startKwokCluster({ onProgress: (line) => console.error(`[control-plane] ${line}`) });
await using git = await startGitServer().then((server) => Object.assign(server, { [Symbol.asyncDispose]: () => server.close() }));
const kc = new KubeConfig();
kc.loadFromFile(cluster.kubeconfigPath);
const rest: KubeRest = await createKubeRest(kc);
await installCrds(rest, { fieldManager: 'bench' });
await rest.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: NAMESPACE } } });
const operator = await startOperator({ kubeconfig: cluster.kubeconfigPath, args: ['--namespace', NAMESPACE] });

const repo = await git.createRepo('hooks');
const configMap = (name: string, value: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata: {revision: "${value}"}\n`;
const job = (hook: string): string =>
  `apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: ${hook.toLowerCase()}-\n  annotations:\n    syncline.dev/hook: ${hook}\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: main, image: registry.example.com/hook:1}]\n`;
const commit = (value: string): Promise<string> =>
  repo.commit({
    'plain/cm.yaml': configMap('plain', value),
    'hooked/cm.yaml': configMap('hooked', value),
    ...Object.fromEntries(HOOKS.map((hook) => [`hooked/${hook.toLowerCase()}.yaml`, job(hook)])),
  });

const syncPath = (name: string): string => `/apis/syncline.dev/v1alpha1/namespaces/${NAMESPACE}/configsyncs/${name}`;
const readyAt = (cs: ConfigSync, sha: string): boolean =>
  cs.status?.sourceRevision === sha && cs.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** The Events recorded for a ConfigSync so far, each repetition counted (a repeat is a write too). */
async function eventWrites(name: string): Promise<number> {
  const list = await rest.request<{ items: { involvedObject: { kind?: string; name?: string }; count?: number; series?: { count?: number } }[] }>({
    method: 'GET',
    path: `/api/v1/namespaces/${NAMESPACE}/events`,
  });
  return list.items
    .filter((e) => e.involvedObject.kind === 'ConfigSync' && e.involvedObject.name === name)
    .reduce((n, e) => n + (e.count ?? e.series?.count ?? 1), 0);
}

/** Counts the status writes of one ConfigSync (MODIFIED events of a watch from the version read now) until stopped. */
async function countWrites(name: string): Promise<{ stop: () => number }> {
  const current = await rest.request<ConfigSync & { metadata: { resourceVersion: string } }>({ method: 'GET', path: syncPath(name) });
  const done = new AbortController();
  let modified = 0;
  let opened!: () => void;
  const open = new Promise<void>((resolve) => (opened = resolve));
  void rest
    .watch(
      `/apis/syncline.dev/v1alpha1/namespaces/${NAMESPACE}/configsyncs`,
      { fieldSelector: `metadata.name=${name}`, resourceVersion: current.metadata.resourceVersion, timeoutSeconds: 600 },
      (event) => {
        if ((event as { type: string }).type === 'MODIFIED') modified++;
      },
      done.signal,
      () => opened(),
    )
    .catch(() => undefined);
  await open;
  return {
    stop: () => {
      done.abort();
      return modified;
    },
  };
}

async function waitReady(name: string, sha: string): Promise<ConfigSync> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const cs = await rest.request<ConfigSync>({ method: 'GET', path: syncPath(name) });
    if (readyAt(cs, sha)) return cs;
    if (Date.now() > deadline) throw new Error(`timed out: ${name} not Ready at ${sha.slice(0, 8)}: ${JSON.stringify(cs.status?.conditions)}`);
    await sleep(250);
  }
}

try {
  await measure();
} finally {
  await operator[Symbol.asyncDispose]();
}

async function measure(): Promise<void> {
  let revision = await commit('r0');
  for (const name of ['plain', 'hooked']) {
    // An hour between resyncs: only the measured commits reconcile.
    await rest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${NAMESPACE}/configsyncs`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'ConfigSync',
        metadata: { name },
        spec: { source: { git: { repo: repo.url, path: name } }, refreshInterval: '1h', timeout: '3m', targets: [{ name: 'main', namespace: NAMESPACE }] },
      },
    });
  }
  for (const name of ['plain', 'hooked']) await waitReady(name, revision);
  progress('both syncs Ready at the first commit (its hooks ran); measuring new commits');

  type Round = { plain: { status: number; events: number }; hooked: { status: number; events: number; hooks: number } };
  const rounds: Round[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    await sleep(3000); // the last round's Events land
    const eventsBefore = { plain: await eventWrites('plain'), hooked: await eventWrites('hooked') };
    const counters = { plain: await countWrites('plain'), hooked: await countWrites('hooked') };
    revision = await commit(`r${round}`);
    const at = new Date().toISOString();
    for (const name of ['plain', 'hooked']) {
      await rest.request({
        method: 'PATCH',
        path: syncPath(name),
        contentType: 'application/merge-patch+json',
        body: { metadata: { annotations: { 'syncline.dev/reconcile-requested-at': at } } },
      });
    }
    const hooked = await waitReady('hooked', revision);
    await waitReady('plain', revision);
    await sleep(5000); // a late write would show here (none should come)
    const ran = (hooked.status?.targets?.[0]?.hooks ?? []).filter((h) => h.phase === 'Succeeded').length;
    rounds.push({
      plain: { status: counters.plain.stop(), events: (await eventWrites('plain')) - eventsBefore.plain },
      hooked: { status: counters.hooked.stop(), events: (await eventWrites('hooked')) - eventsBefore.hooked, hooks: ran },
    });
    const last = rounds.at(-1);
    progress(
      `round ${round}: without hooks ${last?.plain.status} status + ${last?.plain.events} Events; with ${ran} hooks ${last?.hooked.status} + ${last?.hooked.events}`,
    );
  }

  const perHook = rounds.map((r) => (r.hooked.status + r.hooked.events - (r.plain.status + r.plain.events)) / Math.max(1, r.hooked.hooks));
  const worst = Math.max(...perHook);
  const allRan = rounds.every((r) => r.hooked.hooks === HOOKS.length);
  console.log(
    `hooks bench: two ConfigSyncs of one ConfigMap, one with ${HOOKS.join(', ')} Jobs; ${ROUNDS} new commits; KWOK nodes; Node ${process.versions.node}`,
  );
  for (const [i, r] of rounds.entries())
    console.log(
      `  commit ${i + 1}: without hooks ${r.plain.status} status writes + ${r.plain.events} Events; with hooks ${r.hooked.status} + ${r.hooked.events} (${r.hooked.hooks} hooks succeeded)`,
    );
  console.log(`every hook ran once per commit: ${allRan ? 'yes' : 'NO'}`);
  console.log(
    `API writes per hook per commit beyond the hook object (worst of ${ROUNDS}): ${worst.toFixed(2)} (each: ${perHook.map((x) => x.toFixed(2)).join(', ')}; target ≤ 1: ${worst <= 1 && allRan ? 'met' : 'NOT met'})`,
  );
}

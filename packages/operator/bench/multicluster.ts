// `pnpm bench multicluster [--objects 200]`: one repo of N ConfigMaps, the local control plane plus three
// remote ones started here. Prints the time from a new commit until one ConfigSync with four targets (one per
// cluster) has applied it everywhere, against a ConfigSync with one local target in the same run (clusters
// are applied in parallel, so the target is ≤ 1.5×), the git fetches per new commit (1), and the same
// commit-to-applied time for the three live clusters while the fourth is stopped (unchanged).
import { KubeConfig } from '@kubernetes/client-node';
import type { ConfigSync, KubeRest } from '@syncline/operator';
import { startControlPlane, startOperator } from '@syncline/test-support';
import { parseArgs } from 'node:util';
import { createKubeRest } from '@syncline/operator';
import { adminKubeconfig, benchEnvironment } from './_environment.ts';

const { values: flags } = parseArgs({ options: { objects: { type: 'string', default: '200' } } });
const OBJECTS = Number(flags.objects);
const namespace = 'bench';
const progress = (line: string): void => console.error(`[bench] ${line}`);

await using environment = await benchEnvironment(namespace);
const { controlPlane, git, rest } = environment;
progress('starting three remote control planes');
const remotes = await Promise.all([1, 2, 3].map(() => startControlPlane()));
try {
  const remoteRest: KubeRest[] = [];
  for (const [i, plane] of remotes.entries()) {
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    const client = await createKubeRest(kc);
    remoteRest.push(client);
    await client.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: namespace } } });
    await apply(rest, `/api/v1/namespaces/${namespace}/secrets/remote-${i}`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `remote-${i}`, namespace },
      stringData: { kubeconfig: await adminKubeconfig(plane) },
    });
    await apply(rest, `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/remoteclusters/remote-${i}`, {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'RemoteCluster',
      metadata: { name: `remote-${i}`, namespace },
      spec: { kubeconfigSecretRef: { name: `remote-${i}`, key: 'kubeconfig' }, probeInterval: '30s' },
    });
  }

  const repo = await git.createRepo('fleet');
  const commitAll = (rev: string): Promise<string> =>
    repo.commit(
      Object.fromEntries(
        Array.from({ length: OBJECTS }, (_, i) => [
          `app/cm-${i}.yaml.hbs`,
          `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "{{ target.name }}-${i}"\ndata:\n  revision: "${rev}"\n`,
        ]),
      ),
    );
  const first = await commitAll('zero');
  await using operator = await startOperator({ kubeconfig: controlPlane.kubeconfigPath, args: ['--namespace', namespace, '--min-refresh-interval', '1s'] });
  const spec = (targets: object[]): object => ({ source: { git: { repo: repo.url, path: 'app' } }, refreshInterval: '1h', targets });
  const fleetTargets = [{ name: 'local', namespace }, ...remotes.map((_, i) => ({ name: `remote-${i}`, namespace, cluster: { name: `remote-${i}` } }))];
  await apply(rest, csPath('single'), {
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'ConfigSync',
    metadata: { name: 'single', namespace },
    spec: spec([{ name: 'single', namespace }]),
  });
  await apply(rest, csPath('fleet'), {
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'ConfigSync',
    metadata: { name: 'fleet', namespace },
    spec: spec(fleetTargets),
  });
  await waitFor(rest, 'single', first, 1);
  await waitFor(rest, 'fleet', first, 4);
  progress('both syncs Ready; measuring new commits');

  // One target, then four: each from a new commit (fetched once) to applied everywhere.
  const timeCommit = async (name: string, rev: string, targets: number): Promise<{ ms: number; fetches: number }> => {
    const sha = await commitAll(rev);
    git.resetRequests();
    const started = Date.now();
    await requestReconcile(rest, name);
    await waitFor(rest, name, sha, targets);
    return { ms: Date.now() - started, fetches: git.requests('fleet').uploadPack };
  };
  const singles: number[] = [];
  const fleets: number[] = [];
  let fetches = 0;
  for (let round = 0; round < 3; round++) {
    singles.push((await timeCommit('single', `single-${round}`, 1)).ms);
    const fleet = await timeCommit('fleet', `fleet-${round}`, 4);
    fleets.push(fleet.ms);
    fetches = Math.max(fetches, fleet.fetches);
  }

  // One remote cluster stopped: the other three targets' commit-to-applied time.
  progress('stopping remote-2');
  await remotes[2]?.stop();
  const degraded: number[] = [];
  for (let round = 0; round < 3; round++) {
    const sha = await commitAll(`degraded-${round}`);
    const started = Date.now();
    await requestReconcile(rest, 'fleet');
    await waitForTargets(rest, 'fleet', ['local', 'remote-0', 'remote-1'], sha, [rest, remoteRest[0], remoteRest[1]] as KubeRest[], `degraded-${round}`);
    degraded.push(Date.now() - started);
  }
  const med = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
  const ratio = med(fleets) / med(singles);
  console.log(`\nmulticluster bench: ${OBJECTS} objects, 1 repo, local + 3 remote control planes (median of 3)`);
  console.log(`  new commit → applied, 1 target (local):           ${med(singles)} ms  (${singles.join(', ')})`);
  console.log(
    `  new commit → applied, 4 targets (4 clusters):     ${med(fleets)} ms  (${fleets.join(', ')})  ratio ${ratio.toFixed(2)}×  (target ≤ 1.5×)  ${ratio <= 1.5 ? 'ok' : 'MISSED'}`,
  );
  console.log(`  git fetches per new commit (4 clusters):          ${fetches}  (target 1)  ${fetches === 1 ? 'ok' : 'MISSED'}`);
  console.log(
    `  one remote stopped → the 3 live targets applied:  ${med(degraded)} ms  (${degraded.join(', ')})  vs ${med(fleets)} ms with all up (target: unchanged, ≤ 1.5×)  ${med(degraded) <= 1.5 * med(fleets) ? 'ok' : 'MISSED'}`,
  );
  await operator.stop();
} finally {
  await Promise.all(remotes.map((plane) => plane.stop()));
}

function csPath(name: string): string {
  return `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs/${name}`;
}

async function apply(client: KubeRest, path: string, body: object): Promise<void> {
  await client.request({ method: 'PATCH', path, query: { fieldManager: 'bench', force: true }, contentType: 'application/apply-patch+yaml', body });
}

async function requestReconcile(client: KubeRest, name: string): Promise<void> {
  await client.request({
    method: 'PATCH',
    path: csPath(name),
    contentType: 'application/merge-patch+json',
    body: { metadata: { annotations: { 'syncline.dev/reconcile-requested-at': new Date().toISOString() } } },
  });
}

async function waitFor(client: KubeRest, name: string, sha: string, targets: number): Promise<void> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const cs = await client.request<ConfigSync>({ method: 'GET', path: csPath(name) });
    if (
      cs.status?.sourceRevision === sha &&
      cs.status.appliedTargets === targets &&
      cs.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
    )
      return;
    if (Date.now() > deadline) throw new Error(`${name} did not apply ${sha} within 300 s: ${JSON.stringify(cs.status?.conditions)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Until every object of each live target carries `rev` (the sync as a whole stays not Ready). */
async function waitForTargets(client: KubeRest, name: string, targets: string[], sha: string, clusters: KubeRest[], rev: string): Promise<void> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const done = await Promise.all(
      targets.map(async (target, i) => {
        const list = await clusters[i]
          ?.request<{ items: { metadata: { name: string }; data?: Record<string, string> }[] }>({
            method: 'GET',
            path: `/api/v1/namespaces/${namespace}/configmaps`,
          })
          .catch(() => undefined);
        const mine = (list?.items ?? []).filter((cm) => cm.metadata.name.startsWith(`${target}-`));
        return mine.length === OBJECTS && mine.every((cm) => cm.data?.['revision'] === rev);
      }),
    );
    if (done.every(Boolean)) return;
    if (Date.now() > deadline) throw new Error(`${name}: the live targets did not apply ${sha} within 300 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

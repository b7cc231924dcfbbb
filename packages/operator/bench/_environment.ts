// What the operator benchmarks share: their own control plane (beside any test run's), a Git server,
// a REST client, the CRDs and one namespace. Dispose it with `await using`.
import { KubeConfig } from '@kubernetes/client-node';
import { createKubeRest, installCrds, type KubeRest } from '@syncline/operator';
import { startControlPlane, startGitServer, type ControlPlane, type GitServer } from '@syncline/test-support';
import { readFileSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { parse, stringify } from 'yaml';

export type BenchEnvironment = {
  readonly controlPlane: ControlPlane;
  readonly git: GitServer;
  readonly rest: KubeRest;
  [Symbol.asyncDispose](): Promise<void>;
};

export async function benchEnvironment(namespace: string): Promise<BenchEnvironment> {
  const controlPlane = await startControlPlane({ onProgress: (line) => console.error(`[control-plane] ${line}`) });
  const git = await startGitServer();
  const kc = new KubeConfig();
  kc.loadFromFile(controlPlane.kubeconfigPath);
  const rest = await createKubeRest(kc);
  await installCrds(rest, { fieldManager: 'bench' });
  await rest.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: namespace } } });
  return {
    controlPlane,
    git,
    rest,
    async [Symbol.asyncDispose]() {
      await git.close();
      await controlPlane.stop();
    },
  };
}

const WRITE_VERBS = ['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY', 'CREATE', 'UPDATE'];

/** Requests the API server counted so far (apiserver_request_total), by `VERB resource`, for the verbs and resources `keep` accepts. */
export async function requestCounts(client: KubeRest, keep: (verb: string, resource: string) => boolean): Promise<Map<string, number>> {
  const raw = await client.request<string>({ method: 'GET', path: '/metrics', text: true });
  const counts = new Map<string, number>();
  if (!raw.includes('apiserver_request_total')) throw new Error('the API server metrics have no apiserver_request_total');
  for (const line of raw.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const verb = /verb="([A-Z]+)"/.exec(line)?.[1] ?? '';
    const resource = /resource="([^"]*)"/.exec(line)?.[1] ?? '';
    if (!keep(verb, resource)) continue;
    const key = `${verb} ${resource}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return counts;
}

/** Write requests the API server counted so far, by `VERB resource`, leases apart. */
export function writeRequests(client: KubeRest): Promise<Map<string, number>> {
  return requestCounts(client, (verb, resource) => WRITE_VERBS.includes(verb) && resource !== 'leases');
}

/**
 * Waits (up to `timeoutMs`) until the control plane's own controllers have filled every namespace: its `default`
 * ServiceAccount and its `kube-root-ca.crt` ConfigMap. A bench that made many namespaces calls it before a steady
 * window, so the writes counted there are the operator's, not the namespace controllers' catching up. Returns
 * whether they caught up.
 */
export async function namespacesFilled(client: KubeRest, timeoutMs = 120_000): Promise<boolean> {
  type Names = { items: { metadata: { namespace?: string; name: string } }[] };
  const count = async (path: string): Promise<number> => (await client.request<Names>({ method: 'GET', path })).items.length;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [namespaces, accounts, roots] = await Promise.all([
      count('/api/v1/namespaces'),
      count('/api/v1/serviceaccounts?fieldSelector=metadata.name%3Ddefault'),
      count('/api/v1/configmaps?fieldSelector=metadata.name%3Dkube-root-ca.crt'),
    ]);
    if (accounts >= namespaces && roots >= namespaces) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/** What `after` counted beyond `before`. */
export function diff(after: Map<string, number>, before: Map<string, number>): { total: number; byVerbResource: Record<string, number> } {
  const byVerbResource: Record<string, number> = {};
  let total = 0;
  for (const [key, value] of after) {
    const d = value - (before.get(key) ?? 0);
    if (d > 0) {
      byVerbResource[key] = d;
      total += d;
    }
  }
  return { total, byVerbResource };
}

/** The admin context of a control plane's kubeconfig, alone (a RemoteCluster refuses an ambiguous kubeconfig). */
export async function adminKubeconfig(plane: ControlPlane): Promise<string> {
  const config = parse(await readFile(plane.kubeconfigPath, 'utf8')) as { clusters: unknown[]; users: { name: string }[]; contexts: { name: string }[] };
  return stringify({
    ...config,
    users: config.users.filter((u) => u.name === 'admin'),
    contexts: config.contexts.filter((c) => c.name === 'admin'),
    'current-context': 'admin',
  });
}

/** Peak resident set size of a process, in MB. */
export function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

/** The peak RSS of a process's children (the render process), summed, in MB: 0 without children. */
export function childrenPeakRss(pid: number): number {
  let total = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
    for (const child of children === '' ? [] : children.split(/\s+/)) {
      try {
        total += peakRss(Number(child));
      } catch {
        // Gone since it was listed.
      }
    }
  }
  return total;
}

/** CPU time a process used so far (user + system), in seconds. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime in clock ticks (100 Hz)
}

/**
 * CPU time (user + system, seconds) each kind of thread of a process used so far, by thread name: the main thread
 * (the process's own name), V8's helpers (`V8 DefaultWorke`: concurrent GC marking and sweeping, optimizing
 * compiles), libuv's pool (`libuv-worker`: file system, DNS, crypto), and the rest. Threads gone since are not counted.
 */
export function cpuSecondsByThread(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      const name = task === String(pid) ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      byName.set(name, (byName.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      // Gone since it was listed.
    }
  }
  return byName;
}

/** A process's CPU time so far split into user and system (kernel) seconds, every thread together. */
export function cpuSplit(pid: number): { user: number; system: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
}

/** The `p`th percentile of `values` (nearest rank). */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs `run` over `items`, at most `width` at a time. */
export async function pool<T>(items: readonly T[], width: number, run: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await run(items[next++] as T);
    }),
  );
}

/** The sum over all series of one metric on a Prometheus endpoint (the operator's /metrics at HOST:PORT). */
export async function metricSum(address: string, name: string): Promise<number> {
  const text = await (await fetch(`http://${address}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

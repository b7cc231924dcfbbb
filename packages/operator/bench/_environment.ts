// What the operator benchmarks share: their own control plane (beside any test run's), a Git server,
// a REST client, the CRDs and one namespace. Dispose it with `await using`.
import { KubeConfig } from '@kubernetes/client-node';
import { createKubeRest, installCrds, type KubeRest } from '@syncline/operator';
import { startControlPlane, startGitServer, type ControlPlane, type GitServer } from '@syncline/test-support';
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

/** Write requests the API server counted so far (apiserver_request_total), by `VERB resource`, leases apart. */
export async function writeRequests(client: KubeRest): Promise<Map<string, number>> {
  const raw = await client.request<string>({ method: 'GET', path: '/metrics', text: true });
  const counts = new Map<string, number>();
  if (!raw.includes('apiserver_request_total')) throw new Error('the API server metrics have no apiserver_request_total');
  for (const line of raw.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const verb = /verb="([A-Z]+)"/.exec(line)?.[1] ?? '';
    const resource = /resource="([^"]*)"/.exec(line)?.[1] ?? '';
    if (!['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY', 'CREATE', 'UPDATE'].includes(verb) || resource === 'leases') continue;
    const key = `${verb} ${resource}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return counts;
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
  return stringify({ ...config, users: config.users.filter((u) => u.name === 'admin'), contexts: config.contexts.filter((c) => c.name === 'admin'), 'current-context': 'admin' });
}

// A namespace kept warm by NamespaceReplications with the default resourceTypes (every default kind, so a
// watch per kind): one standby in another namespace of the same cluster and, when the soak runs a second
// control plane, one in that cluster through a RemoteCluster. The source namespace holds an object of every
// default kind, and ConfigMaps are added, changed and removed in it throughout. At the end every standby
// holds every source object, each ConfigMap with the source's data, and no ConfigMap the source removed.
// The churn removes dozens of ConfigMaps in ten minutes, on purpose: as a team with such a workload would, the
// replications count deletions per pass (pruneGuard.window 0s) rather than within the default ten minutes,
// which would hold them as a slow wipe (the e2e tests of the prune guard cover that).
import type { KubeRest, NamespaceReplication } from '@syncline/operator';
import { setTimeout as sleep } from 'node:timers/promises';
import { defaultKindObjects, inNamespace, missingObjects, type Creation } from '../../packages/operator/bench/_kinds.ts';

export type Standby = {
  /** The NamespaceReplication's name (in the soak's trusted namespace). */
  readonly name: string;
  /** The client of the cluster that holds the standby, and the namespace there. */
  readonly rest: KubeRest;
  readonly namespace: string;
  /** A RemoteCluster (in the NamespaceReplication's namespace); omitted: this cluster. */
  readonly cluster?: string;
};

const CHURN_NAMES = 12;

export class ReplicationLoad {
  readonly #rest: KubeRest;
  readonly #home: string;
  readonly #source: string;
  readonly #random: () => number;
  readonly #objects: Creation[];
  /** The churned ConfigMaps the source holds now, by name, with their value. */
  readonly #churn = new Map<string, string>();
  changes = { added: 0, changed: 0, removed: 0 };

  constructor(options: { rest: KubeRest; home: string; source: string; random: () => number }) {
    this.#rest = options.rest;
    this.#home = options.home;
    this.#source = options.source;
    this.#random = options.random;
    this.#objects = defaultKindObjects(options.source, 45);
  }

  get objectCount(): number {
    return this.#objects.length;
  }

  /** The source namespace with one or more objects of every default kind, and a NamespaceReplication per standby. */
  async setUp(standbys: readonly Standby[]): Promise<void> {
    await this.#rest.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: this.#source } } });
    for (const object of this.#objects) await this.#rest.request({ method: 'POST', path: object.path, body: object.body });
    for (const standby of standbys) {
      await this.#rest.request({
        method: 'POST',
        path: `/apis/syncline.dev/v1alpha1/namespaces/${this.#home}/namespacereplications`,
        body: {
          apiVersion: 'syncline.dev/v1alpha1',
          kind: 'NamespaceReplication',
          metadata: { name: standby.name },
          spec: {
            sourceNamespace: this.#source,
            destination: { ...(standby.cluster === undefined ? {} : { cluster: { name: standby.cluster } }), namespace: standby.namespace },
            interval: '1m',
            pruneGuard: { window: '0s' },
          },
        },
      });
    }
  }

  /** Adds, changes or removes one churned ConfigMap in the source every 1–4 s. */
  async loop(signal: AbortSignal): Promise<void> {
    for (;;) {
      try {
        await sleep(1_000 + this.#random() * 3_000, undefined, { signal });
      } catch {
        return;
      }
      const name = `churn-${Math.floor(this.#random() * CHURN_NAMES)}`;
      const value = `v${Date.now()}`;
      const path = `/api/v1/namespaces/${this.#source}/configmaps`;
      try {
        if (!this.#churn.has(name)) {
          await this.#rest.request({ method: 'POST', path, body: { metadata: { name }, data: { v: value } } });
          this.#churn.set(name, value);
          this.changes.added++;
        } else if (this.#random() < 0.7) {
          await this.#rest.request({ method: 'PATCH', path: `${path}/${name}`, contentType: 'application/merge-patch+json', body: { data: { v: value } } });
          this.#churn.set(name, value);
          this.changes.changed++;
        } else {
          await this.#rest.request({ method: 'DELETE', path: `${path}/${name}` });
          this.#churn.delete(name);
          this.changes.removed++;
        }
      } catch {
        // The soak's own client talks to the API server directly: an error here is the API server's, retried by the next round.
      }
    }
  }

  /** What one standby lacks or holds wrongly now (empty: equal to the source), and whether its NamespaceReplication is Ready. */
  async differences(standby: Standby): Promise<string[]> {
    const problems: string[] = [];
    const missing = await missingObjects(standby.rest, this.#objects, this.#source, standby.namespace);
    if (missing.length > 0) problems.push(`${missing.length} source objects missing: ${missing.slice(0, 6).join(', ')}`);
    const list = await standby.rest.request<{ items: { metadata: { name: string }; data?: Record<string, string> }[] }>({
      method: 'GET',
      path: inNamespace(`/api/v1/namespaces/${this.#source}/configmaps`, this.#source, standby.namespace),
    });
    const live = new Map(list.items.map((item) => [item.metadata.name, item.data?.['v']]));
    for (const [name, value] of this.#churn)
      if (live.get(name) !== value) problems.push(`configmap ${name}: ${live.get(name) ?? 'missing'} instead of ${value}`);
    for (const name of live.keys())
      if (name.startsWith('churn-') && !this.#churn.has(name)) problems.push(`configmap ${name}: removed in the source, still in the standby`);
    const nr = await this.#rest.request<NamespaceReplication>({
      method: 'GET',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${this.#home}/namespacereplications/${standby.name}`,
    });
    const ready = nr.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready?.status !== 'True') problems.push(`Ready=${ready?.status ?? '?'} ${ready?.reason ?? ''}: ${(ready?.message ?? '').slice(0, 160)}`);
    return problems;
  }

  /** Waits until every standby equals the source; returns what still differs, per standby (empty: all equal). */
  async waitForStandbys(standbys: readonly Standby[], timeoutMs: number): Promise<string[]> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const problems = (
        await Promise.all(
          standbys.map(async (s) =>
            (await this.differences(s).catch((error: unknown) => [`could not read: ${error instanceof Error ? error.message : String(error)}`])).map(
              (p) => `${s.name}: ${p}`,
            ),
          ),
        )
      ).flat();
      if (problems.length === 0 || Date.now() > until) return problems;
      await sleep(1_000);
    }
  }
}

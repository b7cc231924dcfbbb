// Copies of one object into many namespaces, both ways the operator offers: a labelled Secret mirrored by its
// own annotations (`syncline.dev/sync-source`, `syncline.dev/targets`) and a Secret copied by a ManifestSync
// with a namespaceSelector. Both sources live in the soak's trusted namespace (a source in an untrusted one
// would reach only namespaces labelled `syncline.dev/accept-replicas: "true"`). Their data changes
// throughout; at the end every target namespace holds both copies with the sources' last data.
import type { KubeRest } from '@syncline/operator';
import { setTimeout as sleep } from 'node:timers/promises';

const MIRRORED = 'soak-mirrored';
const COPIED = 'soak-copied';
const TARGET_LABEL = 'soak.syncline.dev/copies';

export class MirrorLoad {
  readonly #rest: KubeRest;
  readonly #home: string;
  readonly #targets: readonly string[];
  readonly #random: () => number;
  readonly #values = new Map<string, string>([
    [MIRRORED, 'v0'],
    [COPIED, 'v0'],
  ]);
  updates = 0;

  constructor(options: { rest: KubeRest; home: string; targets: readonly string[]; random: () => number }) {
    this.#rest = options.rest;
    this.#home = options.home;
    this.#targets = options.targets;
    this.#random = options.random;
  }

  async setUp(): Promise<void> {
    const secrets = `/api/v1/namespaces/${this.#home}/secrets`;
    for (const namespace of this.#targets) {
      await this.#rest.request({
        method: 'PATCH',
        path: `/api/v1/namespaces/${namespace}`,
        contentType: 'application/merge-patch+json',
        body: { metadata: { labels: { [TARGET_LABEL]: 'true' } } },
      });
    }
    await this.#rest.request({
      method: 'POST',
      path: secrets,
      body: {
        metadata: { name: MIRRORED, labels: { 'syncline.dev/sync-source': 'true' }, annotations: { 'syncline.dev/targets': this.#targets.join(',') } },
        stringData: { v: 'v0' },
      },
    });
    await this.#rest.request({ method: 'POST', path: secrets, body: { metadata: { name: COPIED }, stringData: { v: 'v0' } } });
    await this.#rest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${this.#home}/manifestsyncs`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'ManifestSync',
        metadata: { name: COPIED },
        spec: {
          sourceRef: { apiVersion: 'v1', kind: 'Secret', name: COPIED },
          syncPolicy: { mode: 'Immediate', interval: '30s' },
          targets: [{ namespaceSelector: { matchLabels: { [TARGET_LABEL]: 'true' } } }],
        },
      },
    });
  }

  /** Changes one source's data every 2–6 s. */
  async loop(signal: AbortSignal): Promise<void> {
    for (;;) {
      try {
        await sleep(2_000 + this.#random() * 4_000, undefined, { signal });
      } catch {
        return;
      }
      const name = this.#random() < 0.5 ? MIRRORED : COPIED;
      const value = `v${Date.now()}`;
      try {
        await this.#rest.request({
          method: 'PATCH',
          path: `/api/v1/namespaces/${this.#home}/secrets/${name}`,
          contentType: 'application/merge-patch+json',
          body: { stringData: { v: value } },
        });
        this.#values.set(name, value);
        this.updates++;
      } catch {
        // The API server's error (the soak's client talks to it directly); the next round changes it again.
      }
    }
  }

  /** Copies that lack the source's last data now (empty: every target holds both, up to date). */
  async differences(): Promise<string[]> {
    const problems: string[] = [];
    for (const namespace of this.#targets) {
      for (const [name, value] of this.#values) {
        const copy = await this.#rest
          .request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${namespace}/secrets/${name}` })
          .catch(() => undefined);
        const live = copy === undefined ? 'missing' : Buffer.from(copy.data?.['v'] ?? '', 'base64').toString();
        if (live !== value) problems.push(`${namespace}/${name}: ${live} instead of ${value}`);
      }
    }
    return problems;
  }

  async waitForCopies(timeoutMs: number): Promise<string[]> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const problems = await this.differences();
      if (problems.length === 0 || Date.now() > until) return problems;
      await sleep(1_000);
    }
  }
}

// Every renewal of the operator's leader Lease, seen from the API server's side (a watch of the caller's own,
// not through the operator's proxies): a leader that holds the lease must renew it before it expires, i.e.
// within leaseDurationSeconds of its previous renewal, whatever the faults (an API server cut for a few
// seconds, hung watches, Git hanging). A late renewal is what a frozen operator looks like from outside, and a
// late one means another replica could have taken the lease while this one still wrote. A change of holder
// (a handover after the leader was killed) starts a new stretch: the gap across it is the handover, measured
// elsewhere.
import type { KubeRest } from '@syncline/operator';
import { setTimeout as sleep } from 'node:timers/promises';

export type Lease = {
  metadata: { resourceVersion?: string };
  spec?: { holderIdentity?: string | null; renewTime?: string | null; leaseDurationSeconds?: number; leaseTransitions?: number };
};

export type LateRenewal = { holder: string; gapMs: number; periodMs: number; at: string };

export class LeaseWatcher {
  readonly #rest: KubeRest;
  readonly #path: string;
  readonly #name: string;
  #last: { holder: string; renewedAt: number; periodMs: number } | undefined;
  readonly #gaps: number[] = [];
  readonly late: LateRenewal[] = [];
  renewals = 0;
  holders = 0;

  constructor(options: { rest: KubeRest; namespace: string; name: string }) {
    this.#rest = options.rest;
    this.#name = options.name;
    this.#path = `/apis/coordination.k8s.io/v1/namespaces/${options.namespace}/leases`;
  }

  /** Watches until `signal` aborts (a watch that ends is resumed from a fresh GET, which sees any renewal missed). */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        const list = await this.#rest.request<{ items: Lease[]; metadata: { resourceVersion: string } }>({
          method: 'GET',
          path: this.#path,
          query: { fieldSelector: `metadata.name=${this.#name}` },
        });
        for (const lease of list.items) this.observe(lease);
        await this.#rest.watch(
          this.#path,
          { fieldSelector: `metadata.name=${this.#name}`, resourceVersion: list.metadata.resourceVersion, timeoutSeconds: 60 },
          (event) => {
            const { type, object } = event as { type: string; object: Lease };
            if (type === 'ADDED' || type === 'MODIFIED') this.observe(object);
          },
          signal,
        );
      } catch {
        if (!signal.aborted) await sleep(200);
      }
    }
  }

  /** One state of the Lease, as the watch delivered it. */
  observe(lease: Lease): void {
    const holder = lease.spec?.holderIdentity ?? '';
    const renewTime = lease.spec?.renewTime;
    if (holder === '' || renewTime === undefined || renewTime === null) {
      this.#last = undefined; // released: the next holder starts a stretch of its own
      return;
    }
    const renewedAt = Date.parse(renewTime);
    const periodMs = (lease.spec?.leaseDurationSeconds ?? 15) * 1000;
    const last = this.#last;
    if (last !== undefined && last.holder === holder && renewedAt > last.renewedAt) {
      const gapMs = renewedAt - last.renewedAt;
      this.#gaps.push(gapMs);
      this.renewals++;
      if (gapMs > last.periodMs) this.late.push({ holder, gapMs, periodMs: last.periodMs, at: renewTime });
    } else if (last?.holder !== holder) {
      this.holders++;
    }
    if (last === undefined || last.holder !== holder || renewedAt > last.renewedAt) this.#last = { holder, renewedAt, periodMs };
  }

  /** The largest gap between two renewals by one holder, and the 99th percentile, in ms. */
  figures(): { maxGapMs: number; p99GapMs: number } {
    const sorted = [...this.#gaps].sort((a, b) => a - b);
    return { maxGapMs: sorted.at(-1) ?? 0, p99GapMs: sorted[Math.max(0, Math.ceil(sorted.length * 0.99) - 1)] ?? 0 };
  }
}

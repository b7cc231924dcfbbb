// Delivery ids seen recently, per provider. The same delivery arriving twice within a few seconds (a sender's
// retry racing its first attempt, a proxy resending) wakes the syncs once.
//
// Never "seen once, ignored for a day": GitHub's "Redeliver" and GitLab's "Resend request" keep the delivery id
// (GitLab's Idempotency-Key), and a redelivery a person asks for must act. It is recognised (for the log) and
// processed. Replaying an old signed delivery costs no more than one fresh ref listing (the payload is never
// trusted for the commit: the operator resolves the branch from Git itself), and the window bounds even that
// per id. Bounded in count and age; only verified deliveries are recorded, so unsigned requests cannot fill it.
export const DEFAULT_DEDUPE_WINDOW_MS = 5_000;

export type Sighting =
  | { readonly kind: 'first' }
  /** Seen within the window: drop it, the first one's wake covers it. */
  | { readonly kind: 'duplicate'; readonly agoMs: number }
  /** Seen before the window: a redelivery, processed like a new delivery. */
  | { readonly kind: 'redelivery'; readonly agoMs: number };

export class DeliveryLog {
  readonly #seen = new Map<string, number>();
  readonly #maxEntries: number;
  readonly #windowMs: number;
  readonly #memoryMs: number;
  readonly #now: () => number;

  constructor(options: { maxEntries?: number; windowMs?: number; memoryMs?: number; now?: () => number } = {}) {
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#windowMs = options.windowMs ?? DEFAULT_DEDUPE_WINDOW_MS;
    this.#memoryMs = Math.max(options.memoryMs ?? 24 * 3600_000, this.#windowMs);
    this.#now = options.now ?? Date.now;
  }

  /** Records the id and says whether it is new, a duplicate within the window, or a later redelivery. */
  sight(provider: string, id: string): Sighting {
    const key = `${provider}\0${id}`;
    const now = this.#now();
    const at = this.#seen.get(key);
    if (at !== undefined && now - at < this.#windowMs) return { kind: 'duplicate', agoMs: now - at };
    this.#seen.delete(key);
    this.#seen.set(key, now);
    // Map iteration is insertion order: the first entries are the oldest.
    for (const [oldest, when] of this.#seen) {
      if (this.#seen.size <= this.#maxEntries && now - when < this.#memoryMs) break;
      this.#seen.delete(oldest);
    }
    return at !== undefined && now - at < this.#memoryMs ? { kind: 'redelivery', agoMs: now - at } : { kind: 'first' };
  }
}

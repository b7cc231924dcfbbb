// Delivery ids seen recently, per provider: a replayed (or redelivered) delivery is acknowledged and ignored.
// Bounded in count and age; only verified deliveries are recorded, so unsigned requests cannot fill it.
export class DeliveryLog {
  readonly #seen = new Map<string, number>();
  readonly #maxEntries: number;
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(options: { maxEntries?: number; ttlMs?: number; now?: () => number } = {}) {
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#ttlMs = options.ttlMs ?? 24 * 3600_000;
    this.#now = options.now ?? Date.now;
  }

  /** Records the id; false when it was already seen within the TTL. */
  firstSighting(provider: string, id: string): boolean {
    const key = `${provider}\0${id}`;
    const now = this.#now();
    const at = this.#seen.get(key);
    if (at !== undefined && now - at < this.#ttlMs) return false;
    this.#seen.delete(key);
    this.#seen.set(key, now);
    // Map iteration is insertion order: the first entries are the oldest.
    for (const [oldest, when] of this.#seen) {
      if (this.#seen.size <= this.#maxEntries && now - when < this.#ttlMs) break;
      this.#seen.delete(oldest);
    }
    return true;
  }
}

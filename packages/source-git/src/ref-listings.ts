// One ref listing per (repository, credentials), shared. Concurrent callers wait for the same request, and a
// caller that accepts an age (the operator: half its refresh interval) reuses a listing that young. A webhook
// or a reconcile request asks for a fresh one (maxAgeMs 0).
//
// A listing's age counts from when it was started, not when it completed: that is the oldest the refs in it
// can be, and it makes the bound on lookups hold by construction. A caller with maxAgeMs W starts
// a listing only when none is in flight and the last one started more than W ago, so two listings started
// for such callers are more than W apart, and any span of 2·W (the operator's refresh interval) holds at
// most two of them, however the resyncs arrive. Listings forced by maxAgeMs 0 come on top, and so do the
// ones that follow a failed listing (a failure is not kept: the next caller asks again).
//
// A caller woken by a push at T (a webhook, a reconcile request) passes startedAfter T: any listing begun at or
// after T has seen the push, so the syncs one push wakes share one listing; a listing begun before T, even one
// still in flight, may have missed it and is not shared.

export interface SharedListingsOptions {
  /** Milliseconds; the GitSource's clock. */
  now: () => number;
  /** Listings kept at most (the oldest key goes first). Default 1,000. */
  maxEntries?: number;
}

interface Listing<T> {
  startedAt: number;
  inFlight: boolean;
  result: Promise<T>;
}

export class SharedListings<T> {
  readonly #entries = new Map<string, Listing<T>>();
  readonly #now: () => number;
  readonly #maxEntries: number;

  constructor(opts: SharedListingsOptions) {
    this.#now = opts.now;
    this.#maxEntries = opts.maxEntries ?? 1_000;
  }

  /**
   * The listing for `key` if one is in flight or started at most `maxAgeMs` ago (0: never), else a new one
   * from `list`. With `startedAfter`, only a listing begun at or after it is shared (in flight or done).
   */
  get(key: string, freshness: { readonly maxAgeMs: number; readonly startedAfter?: number | undefined }, list: () => Promise<T>): Promise<T> {
    const now = this.#now();
    const known = this.#entries.get(key);
    const { maxAgeMs, startedAfter } = freshness;
    const current = (listing: Listing<T>): boolean => (startedAfter === undefined ? listing.inFlight : listing.startedAt >= startedAfter);
    if (known !== undefined && (current(known) || (maxAgeMs > 0 && now - known.startedAt <= maxAgeMs))) return known.result;
    const entry: Listing<T> = { startedAt: now, inFlight: true, result: list() };
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    entry.result.then(
      () => {
        entry.inFlight = false;
      },
      () => {
        entry.inFlight = false;
        if (this.#entries.get(key) === entry) this.#entries.delete(key);
      },
    );
    const oldest = this.#entries.keys().next();
    if (this.#entries.size > this.#maxEntries && oldest.done !== true) this.#entries.delete(oldest.value);
    return entry.result;
  }
}

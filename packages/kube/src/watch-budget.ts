// The watch budget: how many watch streams (kinds × clusters, plus the operator's own) this process keeps
// open at once. Watches have a connection pool without a cap (so they can never starve a request), so
// something must bound them: past the budget a new watch is refused with an error that names the budget,
// and the object that asked for it reports that error in its status, instead of the operator slowing to a
// halt or the API server carrying thousands of streams.

/** The default of --watch-budget. */
export const DEFAULT_WATCH_BUDGET = 500;

export class WatchBudgetError extends Error {
  override readonly name = 'WatchBudgetError';
}

export class WatchBudget {
  readonly limit: number;
  #open = 0;

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`the watch budget must be a positive integer, not ${limit}`);
    this.limit = limit;
  }

  get open(): number {
    return this.#open;
  }

  /** Throws WatchBudgetError unless `count` more watches fit; `what` says who asked (e.g. `15 kinds in cluster shop/dr`). */
  check(count: number, what: string): void {
    if (this.#open + count > this.limit) {
      throw new WatchBudgetError(
        `the watch budget (--watch-budget=${this.limit}) is exhausted: ${this.#open} watches are open and ${what} needs ${count} more; raise --watch-budget or watch fewer kinds or clusters`,
      );
    }
  }

  /** Takes one watch from the budget (after check, or throwing like it); the returned function gives it back once. */
  acquire(what: string): () => void {
    this.check(1, what);
    this.#open++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#open--;
    };
  }
}

// Per-target backoff for targets in other clusters: a cluster that is down or slow is tried again after a
// growing delay, while the other targets of the same sync keep applying on every run.
export type TargetBackoff = {
  /** Milliseconds until `key` may be tried again; undefined = now. */
  retryInMs(key: string): number | undefined;
  failed(key: string): void;
  succeeded(key: string): void;
};

export function createTargetBackoff(options: { initialMs?: number; maxMs?: number; now?: () => number } = {}): TargetBackoff {
  const initial = options.initialMs ?? 2_000;
  const max = options.maxMs ?? 60_000;
  const now = options.now ?? Date.now;
  const state = new Map<string, { failures: number; nextAt: number }>();
  return {
    retryInMs(key) {
      const entry = state.get(key);
      if (entry === undefined) return undefined;
      const wait = entry.nextAt - now();
      return wait > 0 ? wait : undefined;
    },
    failed(key) {
      const failures = (state.get(key)?.failures ?? 0) + 1;
      state.set(key, { failures, nextAt: now() + Math.min(max, initial * 2 ** (failures - 1)) });
    },
    succeeded(key) {
      state.delete(key);
    },
  };
}

// Per-target backoff for targets in other clusters: a cluster that is down or slow is tried again after a
// growing delay, while the other targets of the same sync keep applying on every run. The failure that started
// the wait is kept, so a run that skips the cluster reports the same words as the attempt that failed (a
// repeated failure is one Event counting up, not a new message per run).
export type TargetBackoff = {
  /** While `key` waits: the failure that made it wait; undefined = try now. */
  waiting(key: string): { readonly retryInMs: number; readonly failure: string } | undefined;
  failed(key: string, failure: string): void;
  succeeded(key: string): void;
};

export function createTargetBackoff(options: { initialMs?: number; maxMs?: number; now?: () => number } = {}): TargetBackoff {
  const initial = options.initialMs ?? 2_000;
  const max = options.maxMs ?? 60_000;
  const now = options.now ?? Date.now;
  const state = new Map<string, { failures: number; nextAt: number; failure: string }>();
  return {
    waiting(key) {
      const entry = state.get(key);
      if (entry === undefined) return undefined;
      const wait = entry.nextAt - now();
      return wait > 0 ? { retryInMs: wait, failure: entry.failure } : undefined;
    },
    failed(key, failure) {
      const failures = (state.get(key)?.failures ?? 0) + 1;
      state.set(key, { failures, nextAt: now() + Math.min(max, initial * 2 ** (failures - 1)), failure });
    },
    succeeded(key) {
      state.delete(key);
    },
  };
}

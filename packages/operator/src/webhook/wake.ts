// How a push wakes a ConfigSync. The leader enqueues it (the work queue de-duplicates per key and runs a
// key once at a time, so a burst of pushes coalesces into at most one running and one pending reconcile).
// A follower has no running queue (only the leader writes), so it asks the leader the way `syncline
// reconcile` does: by setting the reconcile-requested-at annotation, which the leader's watch sees.
import { KubeApiError, type KubeRest } from '@syncline/kube';
import type { Logger } from 'pino';
import { RECONCILE_REQUESTED_ANNOTATION } from '@syncline/api';

export function createWaker(options: {
  rest: KubeRest;
  isLeader: () => boolean;
  enqueue: (key: string) => void;
  logger: Logger;
  now?: () => Date;
  /** Waits between tries of the follower's request (the sender already got its 202); default 0.5, 1, 2, 4, 8 s. */
  retryDelaysMs?: readonly number[];
}): (key: string) => void {
  const now = options.now ?? (() => new Date());
  const delays = options.retryDelaysMs ?? [500, 1_000, 2_000, 4_000, 8_000];
  return (key) => {
    if (options.isLeader()) {
      options.enqueue(key);
      return;
    }
    const [namespace, name] = key.split('/');
    if (namespace === undefined || name === undefined) return;
    // A push acknowledged with 202 must not be lost to a short API outage: retry with backoff (bounded), and
    // become the leader's own enqueue if this replica took over meanwhile.
    const ask = async (): Promise<void> => {
      for (let attempt = 0; ; attempt++) {
        if (options.isLeader()) {
          options.enqueue(key);
          return;
        }
        try {
          await options.rest.request({
            method: 'PATCH',
            path: `/apis/syncline.dev/v1alpha1/namespaces/${encodeURIComponent(namespace)}/configsyncs/${encodeURIComponent(name)}`,
            contentType: 'application/merge-patch+json',
            body: { metadata: { annotations: { [RECONCILE_REQUESTED_ANNOTATION]: now().toISOString() } } },
            timeoutMs: 10_000,
          });
          return;
        } catch (error) {
          const delay = delays[attempt];
          const message = error instanceof Error ? error.message : String(error);
          // A ConfigSync that is gone (404) will not be reconciled by anyone: asking again cannot help.
          if (delay === undefined || (error instanceof KubeApiError && error.status === 404)) {
            options.logger.warn({ configsync: key, err: message, attempts: attempt + 1 }, 'could not ask the leader to reconcile; the refresh interval will');
            return;
          }
          await new Promise((resolve) => setTimeout(resolve, delay));
        }
      }
    };
    void ask();
  };
}

export type CoalescingOptions = {
  /** A repository's held pushes are passed on once it has had no push for this long (default 150 ms). */
  readonly quietMs?: number;
  /** ... and at the latest this long after its first held push, so a never-ending stream still syncs (default 2 s). */
  readonly maxWaitMs?: number;
};

/** What one wake passed on: the syncs, how many pushes it held, and how long it held the first. */
export type CoalescedWake = { readonly repo: string; readonly syncs: number; readonly pushes: number; readonly heldMs: number };

/**
 * Coalesces the wakes of one repository: a push is passed on once the repository has been quiet for
 * `quietMs` (or `maxWaitMs` after the first held push). Why not wake at once: every write a sync makes
 * re-runs it (its watch events), and each run resolves the branch again, so during a burst a sync woken on
 * the first push would chase the branch tip and fetch every few commits. Woken once after the burst, it
 * fetches once: 50 pushes in a second cost one fetch, or two when the burst outlasts `maxWaitMs`. How many
 * wakes a given arrival pattern costs at most is `coalescingWindows`.
 */
export function createCoalescer(options: CoalescingOptions & { wake: (key: string) => void; onWake?: (wake: CoalescedWake) => void; now?: () => number }): {
  add(repo: string, keys: readonly string[]): void;
  flush(): void;
} {
  const quietMs = options.quietMs ?? 150;
  const maxWaitMs = options.maxWaitMs ?? 2_000;
  const now = options.now ?? Date.now;
  const held = new Map<string, { keys: Set<string>; firstAt: number; lastAt: number; pushes: number; timer: NodeJS.Timeout }>();
  const fire = (repo: string): void => {
    const entry = held.get(repo);
    if (entry === undefined) return;
    clearTimeout(entry.timer);
    held.delete(repo);
    options.onWake?.({ repo, syncs: entry.keys.size, pushes: entry.pushes, heldMs: now() - entry.firstAt });
    for (const key of entry.keys) options.wake(key);
  };
  // A timer is due from the event loop's idea of now, which a busy loop leaves behind the clock: it can fire
  // before the repository was quiet for quietMs. So it is only a reminder to look at the clock.
  const due = (repo: string): void => {
    const entry = held.get(repo);
    if (entry === undefined) return;
    const wait = Math.min(entry.lastAt + quietMs, entry.firstAt + maxWaitMs) - now();
    if (wait > 0) entry.timer = setTimeout(() => due(repo), wait);
    else fire(repo);
  };
  return {
    add(repo, keys) {
      if (keys.length === 0) return;
      const at = now();
      const entry = held.get(repo);
      if (entry !== undefined) {
        for (const key of keys) entry.keys.add(key);
        entry.lastAt = at;
        entry.pushes++;
        return;
      }
      const timer = setTimeout(() => due(repo), Math.min(quietMs, maxWaitMs));
      held.set(repo, { keys: new Set(keys), firstAt: at, lastAt: at, pushes: 1, timer });
    },
    flush() {
      for (const repo of [...held.keys()]) fire(repo);
    },
  };
}

/**
 * The most wakes pushes to one repository arriving at `times` (ms, ascending) can cost: a window holds every
 * push that comes less than `quietMs` after the previous one, for at most `maxWaitMs` after its first push.
 * The coalescer wakes once per window; late timers only merge windows, never split them. This is the
 * design's promise in a form a test can check against arrivals it measured, however slow the machine was.
 */
export function coalescingWindows(times: readonly number[], options: CoalescingOptions = {}): number {
  const quietMs = options.quietMs ?? 150;
  const maxWaitMs = options.maxWaitMs ?? 2_000;
  let windows = 0;
  let firstAt = Number.NEGATIVE_INFINITY;
  let lastAt = Number.NEGATIVE_INFINITY;
  for (const at of times) {
    if (at - lastAt >= quietMs || at - firstAt >= maxWaitMs) {
      windows++;
      firstAt = at;
    }
    lastAt = at;
  }
  return windows;
}

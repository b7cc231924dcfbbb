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
  /** A repository is quiet once it has had no push for this long (default 150 ms): its next push wakes at once. */
  readonly quietMs?: number;
  /** Pushes held behind a wake are passed on at the latest this long after the first of them, so a never-ending stream still syncs (default 2 s). */
  readonly maxWaitMs?: number;
};

/** What one wake passed on: the syncs, how many pushes it carried, and how long it held the first (0: woken at once). */
export type CoalescedWake = { readonly repo: string; readonly syncs: number; readonly pushes: number; readonly heldMs: number };

/**
 * Coalesces the wakes of one repository, leading edge first: the first push to a quiet repository wakes its
 * syncs at once; the pushes that follow it less than `quietMs` apart are held and passed on as one trailing
 * wake once the repository is quiet again (or `maxWaitMs` after the first held push). Why hold the followers:
 * each wake makes a sync resolve the branch again and fetch its tip, so during a burst a sync woken on every
 * push would chase the branch tip and fetch every few commits. The leading wake costs nothing in a burst of
 * one (the usual push) and, in a longer burst, one fetch more than waiting for the quiet: 50 pushes in a
 * second cost two fetches (the first commit's, the last's), or three when the burst outlasts `maxWaitMs`.
 * How many wakes a given arrival pattern costs at most is `coalescingWindows`.
 */
export function createCoalescer(options: CoalescingOptions & { wake: (key: string) => void; onWake?: (wake: CoalescedWake) => void; now?: () => number }): {
  add(repo: string, keys: readonly string[]): void;
  flush(): void;
} {
  const quietMs = options.quietMs ?? 150;
  const maxWaitMs = options.maxWaitMs ?? 2_000;
  const now = options.now ?? Date.now;
  type Held = { keys: Set<string>; firstAt: number; pushes: number };
  /** A repository that is not quiet: when its last push came, what waits for the trailing wake, the reminder. */
  const open = new Map<string, { lastAt: number; held: Held | undefined; timer: NodeJS.Timeout }>();
  const pass = (repo: string, held: Held, at: number): void => {
    options.onWake?.({ repo, syncs: held.keys.size, pushes: held.pushes, heldMs: at - held.firstAt });
    for (const key of held.keys) options.wake(key);
  };
  // A timer is due from the event loop's idea of now, which a busy loop leaves behind the clock: it can fire
  // before the repository was quiet for quietMs. So it is only a reminder to look at the clock.
  const due = (repo: string): void => {
    const entry = open.get(repo);
    if (entry === undefined) return;
    const at = now();
    const quietAt = entry.lastAt + quietMs;
    const deadline = entry.held === undefined ? quietAt : Math.min(quietAt, entry.held.firstAt + maxWaitMs);
    if (deadline > at) {
      entry.timer = setTimeout(() => due(repo), deadline - at);
      return;
    }
    const held = entry.held;
    entry.held = undefined;
    if (quietAt <= at) open.delete(repo);
    else entry.timer = setTimeout(() => due(repo), quietAt - at); // the ceiling: the stream goes on, held anew
    if (held !== undefined) pass(repo, held, at);
  };
  return {
    add(repo, keys) {
      if (keys.length === 0) return;
      const at = now();
      const entry = open.get(repo);
      if (entry !== undefined && at - entry.lastAt < quietMs) {
        if (entry.held === undefined) {
          // The first held push: the reminder is due by the ceiling too (when it is shorter than the quiet time).
          entry.held = { keys: new Set(), firstAt: at, pushes: 0 };
          clearTimeout(entry.timer);
          entry.timer = setTimeout(() => due(repo), Math.min(quietMs, maxWaitMs));
        }
        for (const key of keys) entry.held.keys.add(key);
        entry.held.pushes++;
        entry.lastAt = at;
        return;
      }
      // Quiet: wake at once. A reminder that has not run yet (a busy event loop) passes its held pushes along.
      const wake: Held = { keys: new Set(keys), firstAt: at, pushes: 1 };
      if (entry !== undefined) {
        clearTimeout(entry.timer);
        if (entry.held !== undefined) {
          for (const key of entry.held.keys) wake.keys.add(key);
          wake.pushes += entry.held.pushes;
          wake.firstAt = entry.held.firstAt;
        }
      }
      open.set(repo, { lastAt: at, held: undefined, timer: setTimeout(() => due(repo), quietMs) });
      pass(repo, wake, at);
    },
    flush() {
      for (const [repo, entry] of [...open]) {
        clearTimeout(entry.timer);
        open.delete(repo);
        if (entry.held !== undefined) pass(repo, entry.held, now());
      }
    },
  };
}

/**
 * The most wakes pushes to one repository arriving at `times` (ms, ascending) can cost: a push that comes
 * `quietMs` or more after the previous one wakes at once; the pushes after it, each less than `quietMs` after
 * the previous, are one trailing wake when the quiet comes, or `maxWaitMs` after the first of them (the later
 * ones are held anew). Late timers only merge wakes, never add one. This is the design's promise in a form a
 * test can check against arrivals it measured, however slow the machine was.
 */
export function coalescingWindows(times: readonly number[], options: CoalescingOptions = {}): number {
  const quietMs = options.quietMs ?? 150;
  const maxWaitMs = options.maxWaitMs ?? 2_000;
  let wakes = 0;
  let lastAt = Number.NEGATIVE_INFINITY;
  let heldFrom: number | undefined;
  for (const at of times) {
    if (heldFrom !== undefined && Math.min(lastAt + quietMs, heldFrom + maxWaitMs) <= at) {
      wakes++; // the trailing wake, before this push
      heldFrom = undefined;
    }
    if (at - lastAt >= quietMs) wakes++;
    else heldFrom ??= at;
    lastAt = at;
  }
  return wakes + (heldFrom === undefined ? 0 : 1);
}

// How a push wakes a ConfigSync. The leader enqueues it (the work queue de-duplicates per key and runs a
// key once at a time, so a burst of pushes coalesces into at most one running and one pending reconcile).
// A follower has no running queue (only the leader writes), so it asks the leader the way `syncline
// reconcile` does: by setting the reconcile-requested-at annotation, which the leader's watch sees.
import type { Logger } from 'pino';
import type { KubeRest } from '../kube/rest.ts';
import { RECONCILE_REQUESTED_ANNOTATION } from '../reconcile/configsync.ts';

export function createWaker(options: {
  rest: KubeRest;
  isLeader: () => boolean;
  enqueue: (key: string) => void;
  logger: Logger;
  now?: () => Date;
}): (key: string) => void {
  const now = options.now ?? (() => new Date());
  return (key) => {
    if (options.isLeader()) {
      options.enqueue(key);
      return;
    }
    const [namespace, name] = key.split('/');
    if (namespace === undefined || name === undefined) return;
    options.rest
      .request({
        method: 'PATCH',
        path: `/apis/syncline.dev/v1alpha1/namespaces/${encodeURIComponent(namespace)}/configsyncs/${encodeURIComponent(name)}`,
        contentType: 'application/merge-patch+json',
        body: { metadata: { annotations: { [RECONCILE_REQUESTED_ANNOTATION]: now().toISOString() } } },
        timeoutMs: 10_000,
      })
      .catch((error: unknown) => options.logger.warn({ configsync: key, err: error instanceof Error ? error.message : String(error) }, 'could not ask the leader to reconcile'));
  };
}

/**
 * Coalesces the wakes of one repository: a push is passed on once the repository has been quiet for
 * `quietMs` (or `maxWaitMs` after the first held push, so a never-ending stream still syncs). Why not wake
 * at once: every status write of a sync re-runs it (its watch event), and each re-run resolves the branch
 * again, so during a burst a sync woken on the first push would chase the branch tip and fetch every few
 * commits. Woken once after the burst, it fetches once: 50 pushes in a second cost one or two fetches.
 */
export function createCoalescer(options: { wake: (key: string) => void; quietMs?: number; maxWaitMs?: number }): { add(repo: string, keys: readonly string[]): void; flush(): void } {
  const quietMs = options.quietMs ?? 150;
  const maxWaitMs = options.maxWaitMs ?? 2_000;
  const held = new Map<string, { keys: Set<string>; firstAt: number; timer: NodeJS.Timeout }>();
  const fire = (repo: string): void => {
    const entry = held.get(repo);
    if (entry === undefined) return;
    clearTimeout(entry.timer);
    held.delete(repo);
    for (const key of entry.keys) options.wake(key);
  };
  return {
    add(repo, keys) {
      if (keys.length === 0) return;
      const now = Date.now();
      const entry = held.get(repo);
      if (entry !== undefined) clearTimeout(entry.timer);
      const firstAt = entry?.firstAt ?? now;
      const set = entry?.keys ?? new Set<string>();
      for (const key of keys) set.add(key);
      const timer = setTimeout(() => fire(repo), Math.max(0, Math.min(quietMs, firstAt + maxWaitMs - now)));
      held.set(repo, { keys: set, firstAt, timer });
    },
    flush() {
      for (const repo of [...held.keys()]) fire(repo);
    },
  };
}

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

// Recent activity for the web UI: the Events this operator records, kept in memory as it records them (the
// recorder is wrapped, so showing them costs the API server nothing: no list, no watch, per viewer or at all).
// Messages are the ones the reconcilers write to Events, which already hold no credential.
import type { EventRecorder } from '@syncline/kube';
import type { UiActivity, UiKind } from './model.ts';

const KINDS: readonly string[] = ['ConfigSync', 'ManifestSync', 'NamespaceReplication', 'RemoteCluster'] satisfies UiKind[];

export type ActivityLog = {
  /** The recorder to hand the reconcilers: records as before, and remembers what it recorded. */
  wrap(recorder: EventRecorder): EventRecorder;
  /** Newest last. */
  recent(): readonly UiActivity[];
  /** Calls `listener` for every new entry; returns the function that stops it. */
  observe(listener: (entry: UiActivity) => void): () => void;
};

export function createActivityLog(options: { limit?: number; now?: () => Date } = {}): ActivityLog {
  const limit = options.limit ?? 500;
  const now = options.now ?? (() => new Date());
  const entries: UiActivity[] = [];
  const listeners = new Set<(entry: UiActivity) => void>();
  let sequence = 0;
  const remember = (entry: UiActivity): void => {
    entries.push(entry);
    if (entries.length > limit) entries.splice(0, entries.length - limit);
    for (const listener of listeners) listener(entry);
  };
  return {
    wrap(recorder) {
      return {
        record(object, event) {
          // Only the kinds the UI shows; a mirrored Secret's events stay out (the UI lists no Secrets).
          // A repeat counts up an Event already listed.
          if (KINDS.includes(object.kind) && event.repeat !== true) {
            remember({
              id: ++sequence,
              at: now().toISOString(),
              kind: object.kind as UiKind,
              namespace: object.metadata.namespace ?? '',
              name: object.metadata.name,
              type: event.type,
              reason: event.reason,
              message: event.message.slice(0, 1024),
            });
          }
          return recorder.record(object, event);
        },
      };
    },
    recent: () => entries,
    observe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

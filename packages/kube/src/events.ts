// Kubernetes Events for changes and failures (never for no-op resyncs: the reconciler only records when
// the status changed). Messages come from source-git, render and apply, which redact credentials.
import { KubeApiError, type KubeRest } from './rest.ts';

export type RecordedEvent = {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  /**
   * The same news again (a failure that has not changed since it was recorded): it counts up the Event
   * recorded for it, however long ago, and is not news to anyone who listens (notifications, activity).
   */
  repeat?: boolean;
};

export type EventRecorder = {
  record(object: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; uid?: string } }, event: RecordedEvent): Promise<void>;
};

/** How long an identical event (same object, type, reason, message) counts up the earlier one, as kubectl shows it. */
const AGGREGATE_MS = 10 * 60_000;
/** Events remembered for that; the oldest go first. */
const REMEMBERED = 2_000;

/**
 * Records Events; a repeat, or an identical one within AGGREGATE_MS (two reconciles that both saw the same news, e.g. from
 * a cache that had not yet caught up with the first one's status write) raises the first one's count and
 * lastTimestamp instead of adding a second Event, as Kubernetes' own recorder does.
 */
export function createEventRecorder(options: {
  rest: KubeRest;
  component: string;
  host: string;
  clock: { now(): Date };
  onError?: (error: unknown) => void;
}): EventRecorder {
  const recent = new Map<string, { name: string; count: number; at: number }>();
  // Identical events are recorded one after the other, so a caller that does not wait (a reconciler frees its
  // worker before the Event is written) still counts up instead of racing a second Event in.
  const inFlight = new Map<string, Promise<void>>();
  return {
    record(object, event) {
      const namespace = object.metadata.namespace ?? 'default';
      const message = event.message.slice(0, 1024);
      const key = JSON.stringify([namespace, object.kind, object.metadata.name, object.metadata.uid ?? '', event.type, event.reason, message]);
      const next = (inFlight.get(key) ?? Promise.resolve()).then(() => write(object, event, { namespace, message, key }));
      inFlight.set(key, next);
      void next.finally(() => {
        if (inFlight.get(key) === next) inFlight.delete(key);
      });
      return next;
    },
  };

  type Recorded = Parameters<EventRecorder['record']>;

  async function write(
    object: Recorded[0],
    event: Recorded[1],
    { namespace, message, key }: { namespace: string; message: string; key: string },
  ): Promise<void> {
    const at = options.clock.now();
    const now = at.toISOString();
    const earlier = recent.get(key);
    try {
      if (earlier !== undefined && (event.repeat === true || at.getTime() - earlier.at < AGGREGATE_MS)) {
        const count = earlier.count + 1;
        try {
          await options.rest.request({
            method: 'PATCH',
            path: `/api/v1/namespaces/${namespace}/events/${earlier.name}`,
            contentType: 'application/merge-patch+json',
            body: { count, lastTimestamp: now },
          });
          recent.delete(key);
          recent.set(key, { ...earlier, count });
          return;
        } catch (error) {
          if (!(error instanceof KubeApiError && error.status === 404)) throw error;
          // The earlier Event expired: record a new one.
        }
      }
      const created = await options.rest.request<{ metadata?: { name?: string } }>({
        method: 'POST',
        path: `/api/v1/namespaces/${namespace}/events`,
        body: {
          metadata: { generateName: `${object.metadata.name}.`, namespace },
          involvedObject: { apiVersion: object.apiVersion, kind: object.kind, name: object.metadata.name, namespace, uid: object.metadata.uid },
          type: event.type,
          reason: event.reason,
          message,
          source: { component: options.component, host: options.host },
          reportingComponent: options.component,
          reportingInstance: options.host,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
      const name = created.metadata?.name;
      if (name !== undefined) {
        recent.delete(key);
        recent.set(key, { name, count: 1, at: at.getTime() });
        for (const oldest of recent.keys()) {
          if (recent.size <= REMEMBERED) break;
          recent.delete(oldest);
        }
      }
    } catch (error) {
      // An event is best effort: losing one must not fail the reconcile.
      options.onError?.(error);
    }
  }
}

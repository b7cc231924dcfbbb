// Kubernetes Events for changes and failures (never for no-op resyncs: the reconciler only records when
// the status changed). Messages come from source-git, render and apply, which redact credentials.
import type { KubeRest } from './rest.ts';

export type EventRecorder = {
  record(object: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; uid?: string } }, event: { type: 'Normal' | 'Warning'; reason: string; message: string }): Promise<void>;
};

export function createEventRecorder(options: { rest: KubeRest; component: string; host: string; clock: { now(): Date }; onError?: (error: unknown) => void }): EventRecorder {
  return {
    async record(object, event) {
      const namespace = object.metadata.namespace ?? 'default';
      const now = options.clock.now().toISOString();
      try {
        await options.rest.request({
          method: 'POST',
          path: `/api/v1/namespaces/${namespace}/events`,
          body: {
            metadata: { generateName: `${object.metadata.name}.`, namespace },
            involvedObject: { apiVersion: object.apiVersion, kind: object.kind, name: object.metadata.name, namespace, uid: object.metadata.uid },
            type: event.type,
            reason: event.reason,
            message: event.message.slice(0, 1024),
            source: { component: options.component, host: options.host },
            reportingComponent: options.component,
            reportingInstance: options.host,
            firstTimestamp: now,
            lastTimestamp: now,
            count: 1,
          },
        });
      } catch (error) {
        // An event is best effort: losing one must not fail the reconcile.
        options.onError?.(error);
      }
    },
  };
}

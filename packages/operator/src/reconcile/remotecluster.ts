// The RemoteCluster reconciler: resolve and check the credentials, probe the cluster, and say what was found
// (Ready with Connected, InvalidKubeconfig, SecretNotFound, Unauthorized or Unreachable; the server's
// version; when it was probed). Probed every probeInterval and whenever its Secret changes, so a rotated
// token is picked up without a restart.
import { type EventRecorder, type KubeRest } from '@syncline/kube';
import type { Logger } from 'pino';
import { RemoteClusterSpec, type Condition, type RemoteCluster, type RemoteClusterStatus } from '../api/v1alpha1.ts';
import type { ReconcileOutcome } from '../controller/queue.ts';
import { RemoteClusterError, RemoteClusterReason, probeCluster, type RemoteClusters } from '../remote/clusters.ts';
import { setCondition, type Reason } from './conditions.ts';
import { MAX_TIMER_MS, boundedInterval, type IntervalBounds } from './duration.ts';
import { conditionsDiffer, objectPath, writeStatus } from './object-status.ts';
import { truncate } from './target.ts';

export const REMOTECLUSTER_KEY_PREFIX = 'RemoteCluster/';

/** Every RemoteClusterReason is a condition Reason (checked here, at compile time). */
const asReason = (reason: RemoteClusterReason): Reason => reason;

export type RemoteClusterReconcilerDeps = {
  readonly rest: KubeRest;
  readonly remote: RemoteClusters;
  readonly clock: { now(): Date };
  readonly logger: Logger;
  readonly events: EventRecorder;
  readonly get: (key: string) => RemoteCluster | undefined;
  readonly intervalBounds: IntervalBounds;
  readonly probeTimeoutMs?: number;
};

export function createRemoteClusterReconciler(deps: RemoteClusterReconcilerDeps): (key: string) => Promise<ReconcileOutcome> {
  return async (key) => {
    const object = deps.get(key);
    if (object === undefined || object.metadata.deletionTimestamp !== undefined) return { kind: 'done' };
    const namespace = object.metadata.namespace ?? 'default';
    const now = deps.clock.now().toISOString();
    const at = { generation: object.metadata.generation, now };
    const previous = object.status ?? {};
    const parsed = RemoteClusterSpec.safeParse(object.spec);
    const probeMs = parsed.success ? Math.min(boundedInterval('probeInterval', parsed.data.probeInterval, deps.intervalBounds).ms, MAX_TIMER_MS) : undefined;
    let conditions: Condition[];
    let status: RemoteClusterStatus;
    let event: { type: 'Normal' | 'Warning'; reason: string; message: string };
    try {
      if (!parsed.success) throw new RemoteClusterError(RemoteClusterReason.InvalidKubeconfig, `invalid spec: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
      const clients = await deps.remote.clients(namespace, object.metadata.name);
      const { version } = await probeCluster(clients, deps.probeTimeoutMs ?? 10_000);
      const message = `Kubernetes ${version} at ${clients.server}`;
      conditions = setCondition(previous.conditions ?? [], { type: 'Ready', status: 'True', reason: asReason(RemoteClusterReason.Connected), message }, at);
      status = { ...previous, observedGeneration: object.metadata.generation, conditions, serverVersion: version, server: clients.server, lastProbeTime: now };
      event = { type: 'Normal', reason: RemoteClusterReason.Connected, message };
    } catch (error) {
      const reason = error instanceof RemoteClusterError ? error.reason : RemoteClusterReason.Unreachable;
      const message = truncate(error instanceof Error ? error.message : String(error));
      conditions = setCondition(previous.conditions ?? [], { type: 'Ready', status: 'False', reason: asReason(reason), message }, at);
      status = { ...previous, observedGeneration: object.metadata.generation, conditions, lastProbeTime: now };
      event = { type: 'Warning', reason, message };
    }
    // An unchanged probe writes nothing (zero writes at steady state): lastProbeTime is the last probe that
    // found something new, and the next probe is at most probeInterval away.
    const unchanged = !conditionsDiffer(previous.conditions, conditions) && status.serverVersion === previous.serverVersion && status.server === previous.server && previous.lastProbeTime !== undefined;
    if (unchanged) status = { ...status, lastProbeTime: previous.lastProbeTime };
    const wrote = await writeStatus(deps.rest, objectPath('remoteclusters', namespace, object.metadata.name), object, status);
    if (wrote && conditionsDiffer(previous.conditions, conditions)) {
      deps.logger[event.type === 'Warning' ? 'warn' : 'info']({ remotecluster: key, reason: event.reason, message: event.message }, 'remote cluster');
      await deps.events.record(object, event);
    }
    // An invalid spec or credentials wait for a change of the object or its Secret (both are watched).
    if (probeMs === undefined) return { kind: 'stalled' };
    return { kind: 'done', requeueAfterMs: probeMs };
  };
}

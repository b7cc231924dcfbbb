// The RemoteCluster reconciler: resolve and check the credentials, probe the cluster, and say what was found
// (Ready with Connected, InvalidKubeconfig, SecretNotFound, Unauthorized or Unreachable; the server's
// version; when it was probed). Probed every probeInterval and whenever its Secret changes, so a rotated
// token is picked up without a restart.
import { type EventRecorder, type KubeRest } from '@syncline/kube';
import type { Logger } from 'pino';
import { RemoteClusterSpec, type Condition, type RemoteCluster, type RemoteClusterStatus } from '@syncline/api';
import type { ReconcileOutcome } from '@syncline/runtime';
import { RemoteClusterError, RemoteClusterReason, probeCluster, type RemoteClusters } from '../remote/clusters.ts';
import { setCondition, truncate, type Reason } from '@syncline/runtime';
import { MAX_TIMER_MS, boundedInterval, type IntervalBounds } from '@syncline/runtime';
import { conditionsDiffer } from '@syncline/runtime';
import { createReconciler, type ShellEvent } from '@syncline/runtime';

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
  return createReconciler<RemoteCluster, RemoteClusterSpec, RemoteClusterStatus>({
    kind: 'RemoteCluster',
    plural: 'remoteclusters',
    rest: deps.rest,
    logger: deps.logger,
    events: deps.events,
    clock: deps.clock,
    read: deps.get,
    parse: (spec) => RemoteClusterSpec.safeParse(spec),
    // An invalid spec is an unusable kubeconfig: it waits for a change of the object or its Secret (both are watched).
    invalidReason: asReason(RemoteClusterReason.InvalidKubeconfig),
    invalid: (object, _reason, message, now) =>
      probed(object, { ok: false, reason: RemoteClusterReason.InvalidKubeconfig, message: truncate(message) }, now).status,
    run: async ({ object, spec }) => {
      const namespace = object.metadata.namespace ?? 'default';
      const now = deps.clock.now().toISOString();
      const probeMs = Math.min(boundedInterval('probeInterval', spec.probeInterval, deps.intervalBounds).ms, MAX_TIMER_MS);
      let found: Probe;
      try {
        const clients = await deps.remote.clients(namespace, object.metadata.name);
        const { version } = await probeCluster(clients, deps.probeTimeoutMs ?? 10_000);
        found = { ok: true, version, server: clients.server };
      } catch (error) {
        const reason = error instanceof RemoteClusterError ? error.reason : RemoteClusterReason.Unreachable;
        found = { ok: false, reason, message: truncate(error instanceof Error ? error.message : String(error)) };
      }
      const { status, event } = probed(object, found, now);
      return { status, events: [event], result: { kind: 'done', requeueAfterMs: probeMs } };
    },
  });
}

type Probe =
  | { readonly ok: true; readonly version: string; readonly server: string }
  | { readonly ok: false; readonly reason: RemoteClusterReason; readonly message: string };

/** What a probe found, as status and Event. */
function probed(object: RemoteCluster, found: Probe, now: string): { status: RemoteClusterStatus; event: ShellEvent } {
  const previous = object.status ?? {};
  const at = { generation: object.metadata.generation, now };
  let conditions: Condition[];
  let status: RemoteClusterStatus;
  let event: ShellEvent;
  if (found.ok) {
    const message = `Kubernetes ${found.version} at ${found.server}`;
    conditions = setCondition(previous.conditions ?? [], { type: 'Ready', status: 'True', reason: asReason(RemoteClusterReason.Connected), message }, at);
    status = {
      ...previous,
      observedGeneration: object.metadata.generation,
      conditions,
      serverVersion: found.version,
      server: found.server,
      lastProbeTime: now,
    };
    event = { type: 'Normal', reason: RemoteClusterReason.Connected, message };
  } else {
    conditions = setCondition(previous.conditions ?? [], { type: 'Ready', status: 'False', reason: asReason(found.reason), message: found.message }, at);
    status = { ...previous, observedGeneration: object.metadata.generation, conditions, lastProbeTime: now };
    event = { type: 'Warning', reason: found.reason, message: found.message };
  }
  // An unchanged probe writes nothing (zero writes at steady state): lastProbeTime is the last probe that
  // found something new, and the next probe is at most probeInterval away.
  const unchanged =
    !conditionsDiffer(previous.conditions, conditions) &&
    status.serverVersion === previous.serverVersion &&
    status.server === previous.server &&
    previous.lastProbeTime !== undefined;
  if (unchanged) status = { ...status, lastProbeTime: previous.lastProbeTime };
  return { status, event };
}

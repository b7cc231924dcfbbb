// Health of a live object, pure: the kstatus rules (sigs.k8s.io/cli-utils/pkg/kstatus/status) that Flux's
// `wait` and `kubectl` users know. Generic rules first (terminating, a generation the controller has not
// observed yet), then the rules of the built-in kinds, then the standard conditions of custom resources.
// An object with no status conventions is Current: there is nothing to wait for.
import { groupOf, type KubeObject } from './identity.ts';

export const HealthStatus = {
  /** Rolled out / complete / bound / established: nothing left to wait for. */
  Current: 'Current',
  /** Still converging (a rollout, a pending claim, a controller that has not seen the latest generation). */
  InProgress: 'InProgress',
  /** Will not converge without a change (ProgressDeadlineExceeded, a failed Job, Stalled=True). */
  Failed: 'Failed',
  /** The live object could not be read. */
  Unknown: 'Unknown',
} as const;
export type HealthStatus = (typeof HealthStatus)[keyof typeof HealthStatus];

export type Health = {
  readonly status: HealthStatus;
  /** CamelCase why, e.g. ProgressDeadlineExceeded, LessReady, JobFailed; absent when Current by default. */
  readonly reason?: string;
  /** For people: `Ready: 1/3`, the failing condition's message. */
  readonly message: string;
};

type Condition = { type?: unknown; status?: unknown; reason?: unknown; message?: unknown; observedGeneration?: unknown };

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

function field(object: unknown, path: readonly string[]): unknown {
  let at: unknown = object;
  for (const key of path) {
    if (!isRecord(at)) return undefined;
    at = at[key];
  }
  return at;
}

/** An integer field, or `fallback` when absent (the controllers' defaults, as kstatus reads them). */
function int(object: unknown, path: readonly string[], fallback: number): number {
  const value = field(object, path);
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function str(object: unknown, path: readonly string[]): string | undefined {
  const value = field(object, path);
  return typeof value === 'string' ? value : undefined;
}

function conditionsOf(object: KubeObject): Condition[] {
  const conditions = field(object, ['status', 'conditions']);
  return Array.isArray(conditions) ? conditions.filter(isRecord) : [];
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const current = (message: string): Health => ({ status: 'Current', message });
const inProgress = (reason: string, message: string): Health => ({ status: 'InProgress', reason, message });
const failed = (reason: string, message: string): Health => ({ status: 'Failed', reason, message });

/** The health of one live object (with its status). */
export function healthOf(object: KubeObject): Health {
  if (object.metadata['deletionTimestamp'] !== undefined) return inProgress('Terminating', 'being deleted');
  const generation = object.metadata['generation'];
  const observed = field(object, ['status', 'observedGeneration']);
  if (typeof generation === 'number' && typeof observed === 'number' && observed !== generation) {
    return inProgress('LatestGenerationNotObserved', `generation ${generation} not observed yet (observed ${observed})`);
  }
  const group = groupOf(object.apiVersion);
  const builtin = builtinHealth(group, object);
  if (builtin !== undefined) return builtin;
  return conditionHealth(object);
}

function builtinHealth(group: string, object: KubeObject): Health | undefined {
  switch (`${group}/${object.kind}`) {
    case 'apps/Deployment':
      return deploymentHealth(object);
    case 'apps/StatefulSet':
      return statefulSetHealth(object);
    case 'apps/DaemonSet':
      return daemonSetHealth(object);
    case 'apps/ReplicaSet':
      return replicaSetHealth(object);
    case 'batch/Job':
      return jobHealth(object);
    case '/PersistentVolumeClaim': {
      const phase = str(object, ['status', 'phase']);
      if (phase === 'Bound') return current('Bound');
      return inProgress('NotBound', phase === undefined ? 'not Bound yet' : `${phase}, not Bound`);
    }
    case '/Service': {
      if (str(object, ['spec', 'type']) !== 'LoadBalancer') return current('Service is ready');
      const ingress = field(object, ['status', 'loadBalancer', 'ingress']);
      return Array.isArray(ingress) && ingress.length > 0
        ? current('load balancer has an address')
        : inProgress('NoLoadBalancerAddress', 'waiting for a load balancer address');
    }
    case '/Pod':
      return podHealth(object);
    case 'policy/PodDisruptionBudget': {
      const currentHealthy = int(object, ['status', 'currentHealthy'], 0);
      const desiredHealthy = int(object, ['status', 'desiredHealthy'], 0);
      return currentHealthy < desiredHealthy
        ? inProgress('BudgetNotMet', `healthy: ${currentHealthy}/${desiredHealthy}`)
        : current(`healthy: ${currentHealthy}/${desiredHealthy}`);
    }
    case 'apiextensions.k8s.io/CustomResourceDefinition': {
      const conditions = conditionsOf(object);
      const names = conditions.find((c) => c.type === 'NamesAccepted');
      if (names?.status === 'False') return failed(text(names.reason) || 'NamesNotAccepted', text(names.message) || 'names not accepted');
      const established = conditions.find((c) => c.type === 'Established');
      return established?.status === 'True' ? current('CRD is established') : inProgress('NotEstablished', 'CRD is not established yet');
    }
    default:
      return undefined;
  }
}

function deploymentHealth(object: KubeObject): Health {
  // Without progressDeadlineSeconds the controller never sets Progressing: only the counts can tell.
  let progressing = field(object, ['spec', 'progressDeadlineSeconds']) === undefined;
  let available = false;
  for (const c of conditionsOf(object)) {
    if (c.type === 'Progressing') {
      if (c.reason === 'ProgressDeadlineExceeded') return failed('ProgressDeadlineExceeded', text(c.message) || 'progress deadline exceeded');
      if (c.status === 'True' && c.reason === 'NewReplicaSetAvailable') progressing = true;
    }
    if (c.type === 'Available' && c.status === 'True') available = true;
  }
  const spec = int(object, ['spec', 'replicas'], 1);
  const replicas = int(object, ['status', 'replicas'], 0);
  const updated = int(object, ['status', 'updatedReplicas'], 0);
  const ready = int(object, ['status', 'readyReplicas'], 0);
  const availableReplicas = int(object, ['status', 'availableReplicas'], 0);
  if (spec > replicas) return inProgress('LessReplicas', `replicas: ${replicas}/${spec}`);
  if (spec > updated) return inProgress('LessUpdated', `updated: ${updated}/${spec}`);
  if (replicas > spec) return inProgress('ExtraPods', `pending termination: ${replicas - spec}`);
  if (updated > availableReplicas) return inProgress('LessAvailable', `available: ${availableReplicas}/${updated}`);
  if (spec > ready) return inProgress('LessReady', `ready: ${ready}/${spec}`);
  if (!progressing) return inProgress('ReplicaSetNotAvailable', 'the new ReplicaSet is not available yet');
  if (!available) return inProgress('DeploymentNotAvailable', 'the Deployment is not Available');
  return current(`available, ${replicas} replica(s)`);
}

function statefulSetHealth(object: KubeObject): Health {
  if (str(object, ['spec', 'updateStrategy', 'type']) === 'OnDelete') return current('updateStrategy OnDelete: rolled out by hand');
  const spec = int(object, ['spec', 'replicas'], 1);
  const replicas = int(object, ['status', 'replicas'], 0);
  const ready = int(object, ['status', 'readyReplicas'], 0);
  const currentReplicas = int(object, ['status', 'currentReplicas'], 0);
  const updated = int(object, ['status', 'updatedReplicas'], 0);
  const partition = int(object, ['spec', 'updateStrategy', 'rollingUpdate', 'partition'], -1);
  if (spec > replicas) return inProgress('LessReplicas', `replicas: ${replicas}/${spec}`);
  if (spec > ready) return inProgress('LessReady', `ready: ${ready}/${spec}`);
  if (replicas > spec) return inProgress('ExtraPods', `pending termination: ${replicas - spec}`);
  if (partition !== -1) {
    return updated < spec - partition
      ? inProgress('PartitionRollout', `updated: ${updated}/${spec - partition}`)
      : current(`partition rollout complete, ${updated} updated`);
  }
  if (spec > currentReplicas) return inProgress('LessCurrent', `current: ${currentReplicas}/${spec}`);
  if (str(object, ['status', 'currentRevision']) !== str(object, ['status', 'updateRevision']))
    return inProgress('RevisionMismatch', 'waiting for the update revision to become current');
  return current(`rolled out, ${replicas} replica(s)`);
}

function daemonSetHealth(object: KubeObject): Health {
  const desired = int(object, ['status', 'desiredNumberScheduled'], -1);
  if (desired === -1) return inProgress('NoDesiredNumber', 'status.desiredNumberScheduled is not set yet');
  const scheduled = int(object, ['status', 'currentNumberScheduled'], 0);
  const updated = int(object, ['status', 'updatedNumberScheduled'], 0);
  const available = int(object, ['status', 'numberAvailable'], 0);
  const ready = int(object, ['status', 'numberReady'], 0);
  if (desired > scheduled) return inProgress('LessCurrent', `scheduled: ${scheduled}/${desired}`);
  if (desired > updated) return inProgress('LessUpdated', `updated: ${updated}/${desired}`);
  if (desired > available) return inProgress('LessAvailable', `available: ${available}/${desired}`);
  if (desired > ready) return inProgress('LessReady', `ready: ${ready}/${desired}`);
  return current(`rolled out on ${desired} node(s)`);
}

function replicaSetHealth(object: KubeObject): Health {
  const failure = conditionsOf(object).find((c) => c.type === 'ReplicaFailure' && c.status === 'True');
  if (failure !== undefined) return inProgress('ReplicaFailure', text(failure.message) || 'replica failure');
  const spec = int(object, ['spec', 'replicas'], 1);
  const labelled = int(object, ['status', 'fullyLabeledReplicas'], spec);
  const available = int(object, ['status', 'availableReplicas'], 0);
  const ready = int(object, ['status', 'readyReplicas'], 0);
  const replicas = int(object, ['status', 'replicas'], 0);
  if (spec > labelled) return inProgress('LessLabelled', `labelled: ${labelled}/${spec}`);
  if (spec > available) return inProgress('LessAvailable', `available: ${available}/${spec}`);
  if (spec > ready) return inProgress('LessReady', `ready: ${ready}/${spec}`);
  if (replicas > spec) return inProgress('ExtraPods', `pending termination: ${replicas - spec}`);
  return current(`${replicas} replica(s) available`);
}

/** Unlike kstatus (a started Job is Current), a Job is healthy once it completed: that is what waiting on it is for. */
function jobHealth(object: KubeObject): Health {
  const completions = int(object, ['spec', 'completions'], int(object, ['spec', 'parallelism'], 1));
  const succeeded = int(object, ['status', 'succeeded'], 0);
  for (const c of conditionsOf(object)) {
    if (c.status !== 'True') continue;
    if (c.type === 'Complete') return current(`complete, succeeded: ${succeeded}/${completions}`);
    if (c.type === 'Failed') return failed(text(c.reason) || 'JobFailed', text(c.message) || `failed: ${int(object, ['status', 'failed'], 0)}`);
  }
  if (field(object, ['spec', 'suspend']) === true) return inProgress('JobSuspended', 'suspended');
  if (str(object, ['status', 'startTime']) === undefined) return inProgress('JobNotStarted', 'not started');
  return inProgress('JobRunning', `running, succeeded: ${succeeded}/${completions}, active: ${int(object, ['status', 'active'], 0)}`);
}

function podHealth(object: KubeObject): Health {
  const phase = str(object, ['status', 'phase']);
  if (phase === 'Succeeded') return current('succeeded');
  if (phase === 'Failed') return failed('PodFailed', str(object, ['status', 'message']) ?? 'the Pod failed');
  const statuses = field(object, ['status', 'containerStatuses']);
  if (Array.isArray(statuses)) {
    for (const s of statuses) {
      const waiting = field(s, ['state', 'waiting', 'reason']);
      if (waiting === 'CrashLoopBackOff' || waiting === 'ImagePullBackOff' || waiting === 'ErrImagePull')
        return failed(waiting, `container ${text(field(s, ['name']))}: ${waiting}`);
    }
  }
  const ready = conditionsOf(object).find((c) => c.type === 'Ready');
  if (phase === 'Running' && ready?.status === 'True') return current('running and ready');
  return inProgress('PodNotReady', `${phase ?? 'Pending'}, not ready`);
}

/**
 * Custom resources: the standard conditions. Stalled=True fails, Reconciling=True is in progress, and a Ready
 * condition (of the current generation) decides; an object with none of them is Current (kstatus).
 */
function conditionHealth(object: KubeObject): Health {
  const conditions = conditionsOf(object);
  const find = (type: string): Condition | undefined => conditions.find((c) => c.type === type);
  const stalled = find('Stalled');
  if (stalled?.status === 'True') return failed(text(stalled.reason) || 'Stalled', text(stalled.message) || 'stalled');
  const reconciling = find('Reconciling');
  if (reconciling?.status === 'True') return inProgress(text(reconciling.reason) || 'Reconciling', text(reconciling.message) || 'reconciling');
  const ready = find('Ready');
  if (ready === undefined) return current('no status conventions: nothing to wait for');
  const generation = object.metadata['generation'];
  if (typeof generation === 'number' && typeof ready.observedGeneration === 'number' && ready.observedGeneration < generation) {
    return inProgress('LatestGenerationNotObserved', `Ready is of generation ${ready.observedGeneration}, not ${generation}`);
  }
  if (ready.status === 'True') return current(text(ready.message) || 'Ready');
  return inProgress(text(ready.reason) || 'NotReady', text(ready.message) || `Ready is ${text(ready.status) || 'not True'}`);
}

/**
 * Whether the health of an object just written can be told without reading it back: kinds with no status
 * conventions are Current as applied. Anything else (workloads, claims, custom resources) is read.
 */
export function healthNeedsLiveObject(object: KubeObject): boolean {
  const group = groupOf(object.apiVersion);
  if (group === '') {
    if (object.kind === 'Service') return field(object, ['spec', 'type']) === 'LoadBalancer';
    return !STATUSLESS_CORE.has(object.kind);
  }
  return !STATUSLESS_GROUPS.has(group);
}

const STATUSLESS_CORE = new Set(['ConfigMap', 'Secret', 'ServiceAccount', 'Namespace', 'LimitRange', 'ResourceQuota', 'Endpoints']);
const STATUSLESS_GROUPS = new Set([
  'rbac.authorization.k8s.io',
  'networking.k8s.io',
  'scheduling.k8s.io',
  'storage.k8s.io',
  'admissionregistration.k8s.io',
  'node.k8s.io',
  'coordination.k8s.io',
]);

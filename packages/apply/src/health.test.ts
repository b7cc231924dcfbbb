import { describe, expect, it } from 'vitest';
import { healthNeedsLiveObject, healthOf } from './health.ts';
import type { KubeObject } from './identity.ts';

const obj = (
  apiVersion: string,
  kind: string,
  rest: { spec?: unknown; status?: unknown; generation?: number; metadata?: Record<string, unknown> } = {},
): KubeObject => ({
  apiVersion,
  kind,
  metadata: { name: 'x', namespace: 'app', ...(rest.generation === undefined ? {} : { generation: rest.generation }), ...rest.metadata },
  ...(rest.spec === undefined ? {} : { spec: rest.spec }),
  ...(rest.status === undefined ? {} : { status: rest.status }),
});

const rolledOut = {
  observedGeneration: 2,
  replicas: 3,
  updatedReplicas: 3,
  readyReplicas: 3,
  availableReplicas: 3,
  conditions: [
    { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' },
    { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' },
  ],
};
const deployment = (status: unknown, spec: Record<string, unknown> = {}): KubeObject =>
  obj('apps/v1', 'Deployment', { generation: 2, spec: { replicas: 3, progressDeadlineSeconds: 600, ...spec }, status });

describe('healthOf: Deployment', () => {
  it('is Current when rolled out at the observed generation', () => {
    expect(healthOf(deployment(rolledOut))).toMatchObject({ status: 'Current' });
  });

  it('is InProgress while the controller has not observed the latest generation', () => {
    expect(healthOf(deployment({ ...rolledOut, observedGeneration: 1 }))).toMatchObject({ status: 'InProgress', reason: 'LatestGenerationNotObserved' });
  });

  it('is InProgress without any status (just created)', () => {
    expect(healthOf(deployment(undefined))).toMatchObject({ status: 'InProgress', reason: 'LessReplicas', message: 'replicas: 0/3' });
  });

  it('counts replicas in the kstatus order: updated, extra, available, ready', () => {
    expect(healthOf(deployment({ ...rolledOut, updatedReplicas: 1 }))).toMatchObject({ reason: 'LessUpdated', message: 'updated: 1/3' });
    expect(healthOf(deployment({ ...rolledOut, replicas: 4 }))).toMatchObject({ reason: 'ExtraPods' });
    expect(healthOf(deployment({ ...rolledOut, availableReplicas: 2 }))).toMatchObject({ reason: 'LessAvailable', message: 'available: 2/3' });
    expect(healthOf(deployment({ ...rolledOut, readyReplicas: 2, availableReplicas: 3 }))).toMatchObject({ reason: 'LessReady' });
  });

  it('waits for NewReplicaSetAvailable and Available', () => {
    const progressing = {
      ...rolledOut,
      conditions: [
        { type: 'Available', status: 'True' },
        { type: 'Progressing', status: 'True', reason: 'ReplicaSetUpdated' },
      ],
    };
    expect(healthOf(deployment(progressing))).toMatchObject({ status: 'InProgress', reason: 'ReplicaSetNotAvailable' });
    const unavailable = {
      ...rolledOut,
      conditions: [
        { type: 'Available', status: 'False' },
        { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' },
      ],
    };
    expect(healthOf(deployment(unavailable))).toMatchObject({ status: 'InProgress', reason: 'DeploymentNotAvailable' });
  });

  it('trusts the counts alone when progressDeadlineSeconds is unset (no Progressing condition then)', () => {
    const d = obj('apps/v1', 'Deployment', {
      generation: 2,
      spec: { replicas: 3 },
      status: { ...rolledOut, conditions: [{ type: 'Available', status: 'True' }] },
    });
    expect(healthOf(d)).toMatchObject({ status: 'Current' });
  });

  it('fails on ProgressDeadlineExceeded, with the condition message', () => {
    const stuck = {
      ...rolledOut,
      readyReplicas: 0,
      conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "web-1" has timed out progressing.' }],
    };
    expect(healthOf(deployment(stuck))).toEqual({
      status: 'Failed',
      reason: 'ProgressDeadlineExceeded',
      message: 'ReplicaSet "web-1" has timed out progressing.',
    });
  });

  it('is InProgress while terminating', () => {
    const d = deployment(rolledOut);
    d.metadata['deletionTimestamp'] = '2026-01-01T00:00:00Z';
    expect(healthOf(d)).toMatchObject({ status: 'InProgress', reason: 'Terminating' });
  });

  it('defaults spec.replicas to 1 and admits 0 replicas', () => {
    const one = obj('apps/v1', 'Deployment', {
      generation: 1,
      spec: {},
      status: {
        observedGeneration: 1,
        replicas: 1,
        updatedReplicas: 1,
        readyReplicas: 1,
        availableReplicas: 1,
        conditions: [{ type: 'Available', status: 'True' }],
      },
    });
    expect(healthOf(one)).toMatchObject({ status: 'Current' });
    const zero = obj('apps/v1', 'Deployment', {
      generation: 1,
      spec: { replicas: 0 },
      status: { observedGeneration: 1, conditions: [{ type: 'Available', status: 'True' }] },
    });
    expect(healthOf(zero)).toMatchObject({ status: 'Current' });
  });
});

describe('healthOf: StatefulSet and DaemonSet', () => {
  const sts = (status: Record<string, unknown>, spec: Record<string, unknown> = {}): KubeObject =>
    obj('apps/v1', 'StatefulSet', {
      generation: 1,
      spec: { replicas: 2, ...spec },
      status: {
        observedGeneration: 1,
        replicas: 2,
        readyReplicas: 2,
        currentReplicas: 2,
        updatedReplicas: 2,
        currentRevision: 'r1',
        updateRevision: 'r1',
        ...status,
      },
    });

  it('StatefulSet: Current when every replica is ready at the update revision', () => {
    expect(healthOf(sts({}))).toMatchObject({ status: 'Current' });
  });

  it('StatefulSet: InProgress while readiness or the revision lags', () => {
    expect(healthOf(sts({ readyReplicas: 1 }))).toMatchObject({ status: 'InProgress', reason: 'LessReady' });
    expect(healthOf(sts({ updateRevision: 'r2' }))).toMatchObject({ status: 'InProgress', reason: 'RevisionMismatch' });
    expect(healthOf(sts({ currentReplicas: 1 }))).toMatchObject({ status: 'InProgress', reason: 'LessCurrent' });
  });

  it('StatefulSet: a partitioned rollout is done when the replicas above the partition are updated', () => {
    const spec = { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 1 } } };
    expect(healthOf(sts({ updatedReplicas: 1, updateRevision: 'r2' }, spec))).toMatchObject({ status: 'Current' });
    expect(healthOf(sts({ updatedReplicas: 0, updateRevision: 'r2' }, spec))).toMatchObject({ status: 'InProgress', reason: 'PartitionRollout' });
  });

  it('StatefulSet: OnDelete is rolled out by hand, so Current', () => {
    expect(healthOf(sts({ updateRevision: 'r2' }, { updateStrategy: { type: 'OnDelete' } }))).toMatchObject({ status: 'Current' });
  });

  const ds = (status: Record<string, unknown>): KubeObject => obj('apps/v1', 'DaemonSet', { generation: 3, status: { observedGeneration: 3, ...status } });
  const all = { desiredNumberScheduled: 2, currentNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2, numberReady: 2 };

  it('DaemonSet: Current when every node runs an available, updated pod', () => {
    expect(healthOf(ds(all))).toMatchObject({ status: 'Current' });
  });

  it('DaemonSet: InProgress without desiredNumberScheduled or with fewer available', () => {
    expect(healthOf(ds({}))).toMatchObject({ status: 'InProgress', reason: 'NoDesiredNumber' });
    expect(healthOf(ds({ ...all, numberAvailable: 1 }))).toMatchObject({ status: 'InProgress', reason: 'LessAvailable' });
    expect(healthOf(ds({ ...all, updatedNumberScheduled: 1 }))).toMatchObject({ status: 'InProgress', reason: 'LessUpdated' });
    expect(healthOf(ds({ ...all, observedGeneration: 2 }))).toMatchObject({ status: 'InProgress', reason: 'LatestGenerationNotObserved' });
  });
});

describe('healthOf: Job, PVC, Service, CRD, Pod', () => {
  it('Job: Current once Complete, Failed on Failed, InProgress while it runs', () => {
    const job = (status: unknown): KubeObject => obj('batch/v1', 'Job', { spec: { completions: 1 }, status });
    expect(healthOf(job({ succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] }))).toMatchObject({ status: 'Current' });
    expect(
      healthOf(
        job({
          failed: 6,
          conditions: [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }],
        }),
      ),
    ).toEqual({
      status: 'Failed',
      reason: 'BackoffLimitExceeded',
      message: 'Job has reached the specified backoff limit',
    });
    expect(healthOf(job({ startTime: '2026-01-01T00:00:00Z', active: 1 }))).toMatchObject({ status: 'InProgress', reason: 'JobRunning' });
    expect(healthOf(job(undefined))).toMatchObject({ status: 'InProgress', reason: 'JobNotStarted' });
  });

  it('PVC: Current when Bound', () => {
    expect(healthOf(obj('v1', 'PersistentVolumeClaim', { status: { phase: 'Bound' } }))).toMatchObject({ status: 'Current' });
    expect(healthOf(obj('v1', 'PersistentVolumeClaim', { status: { phase: 'Pending' } }))).toMatchObject({
      status: 'InProgress',
      message: 'Pending, not Bound',
    });
  });

  it('Service: a LoadBalancer waits for an address; other types are Current', () => {
    expect(healthOf(obj('v1', 'Service', { spec: { type: 'ClusterIP' } }))).toMatchObject({ status: 'Current' });
    expect(healthOf(obj('v1', 'Service', { spec: { type: 'LoadBalancer' }, status: { loadBalancer: {} } }))).toMatchObject({
      status: 'InProgress',
      reason: 'NoLoadBalancerAddress',
    });
    expect(healthOf(obj('v1', 'Service', { spec: { type: 'LoadBalancer' }, status: { loadBalancer: { ingress: [{ ip: '10.0.0.1' }] } } }))).toMatchObject({
      status: 'Current',
    });
  });

  it('CRD: Current when Established, Failed when its names are not accepted', () => {
    const crd = (conditions: unknown[]): KubeObject =>
      obj('apiextensions.k8s.io/v1', 'CustomResourceDefinition', { metadata: { namespace: undefined }, status: { conditions } });
    expect(healthOf(crd([{ type: 'Established', status: 'True' }]))).toMatchObject({ status: 'Current' });
    expect(healthOf(crd([]))).toMatchObject({ status: 'InProgress', reason: 'NotEstablished' });
    expect(healthOf(crd([{ type: 'NamesAccepted', status: 'False', reason: 'MultipleNamesConflict', message: 'plural conflicts' }]))).toMatchObject({
      status: 'Failed',
      reason: 'MultipleNamesConflict',
    });
  });

  it('Pod: ready, crash-looping, succeeded', () => {
    expect(healthOf(obj('v1', 'Pod', { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } }))).toMatchObject({ status: 'Current' });
    expect(
      healthOf(obj('v1', 'Pod', { status: { phase: 'Running', containerStatuses: [{ name: 'app', state: { waiting: { reason: 'CrashLoopBackOff' } } }] } })),
    ).toMatchObject({ status: 'Failed', reason: 'CrashLoopBackOff' });
    expect(healthOf(obj('v1', 'Pod', { status: { phase: 'Succeeded' } }))).toMatchObject({ status: 'Current' });
  });
});

describe('healthOf: custom resources and objects without status', () => {
  const cr = (conditions: unknown[], generation = 1): KubeObject => obj('example.dev/v1', 'Widget', { generation, status: { conditions } });

  it('objects without status conventions are Current', () => {
    expect(healthOf(obj('v1', 'ConfigMap'))).toMatchObject({ status: 'Current' });
    expect(healthOf(cr([]))).toMatchObject({ status: 'Current' });
  });

  it('follows Ready, Reconciling and Stalled', () => {
    expect(healthOf(cr([{ type: 'Ready', status: 'True' }]))).toMatchObject({ status: 'Current' });
    expect(healthOf(cr([{ type: 'Ready', status: 'False', reason: 'Waiting', message: 'db not reachable' }]))).toEqual({
      status: 'InProgress',
      reason: 'Waiting',
      message: 'db not reachable',
    });
    expect(
      healthOf(
        cr([
          { type: 'Ready', status: 'True' },
          { type: 'Reconciling', status: 'True', reason: 'Progressing' },
        ]),
      ),
    ).toMatchObject({ status: 'InProgress', reason: 'Progressing' });
    expect(
      healthOf(
        cr([
          { type: 'Ready', status: 'False' },
          { type: 'Stalled', status: 'True', reason: 'InvalidSpec', message: 'bad' },
        ]),
      ),
    ).toEqual({ status: 'Failed', reason: 'InvalidSpec', message: 'bad' });
  });

  it('a Ready condition of an older generation is not the answer yet', () => {
    expect(healthOf(cr([{ type: 'Ready', status: 'True', observedGeneration: 1 }], 2))).toMatchObject({
      status: 'InProgress',
      reason: 'LatestGenerationNotObserved',
    });
  });
});

describe('healthNeedsLiveObject', () => {
  it('reads back workloads and custom resources, not ConfigMaps, RBAC or plain Services', () => {
    expect(healthNeedsLiveObject(obj('apps/v1', 'Deployment'))).toBe(true);
    expect(healthNeedsLiveObject(obj('example.dev/v1', 'Widget'))).toBe(true);
    expect(healthNeedsLiveObject(obj('v1', 'Service', { spec: { type: 'LoadBalancer' } }))).toBe(true);
    expect(healthNeedsLiveObject(obj('v1', 'Service', { spec: { type: 'ClusterIP' } }))).toBe(false);
    expect(healthNeedsLiveObject(obj('v1', 'ConfigMap'))).toBe(false);
    expect(healthNeedsLiveObject(obj('rbac.authorization.k8s.io/v1', 'Role'))).toBe(false);
  });
});

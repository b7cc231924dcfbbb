import { describe, expect, it } from 'vitest';
import type { KubeObject } from '@syncline/apply';
import { mirrorKeys } from '../mirror/index.ts';
import { ORIGINAL_REPLICAS_ANNOTATION, ORIGINAL_SUSPEND_ANNOTATION, parseResourceType, promoted, skipReason, standbyCopy } from './transform.ts';

const keys = mirrorKeys();
const options = { namespace: 'shop-dr', workloads: 'Zero' as const, keys };
const meta = (name: string, extra: Record<string, unknown> = {}): KubeObject['metadata'] => ({
  name,
  namespace: 'shop',
  uid: 'u-1',
  resourceVersion: '42',
  creationTimestamp: '2026-01-01T00:00:00Z',
  managedFields: [{ manager: 'kubectl' }],
  ...extra,
});

describe('standbyCopy', () => {
  it.each(['Deployment', 'StatefulSet'])('lands a %s with 0 replicas and the source count recorded', (kind) => {
    const source: KubeObject = { apiVersion: 'apps/v1', kind, metadata: meta('web'), spec: { replicas: 3, template: {} }, status: { readyReplicas: 3 } };
    const copy = standbyCopy(source, options);
    expect(copy).toMatchObject({
      metadata: { name: 'web', namespace: 'shop-dr', annotations: { [ORIGINAL_REPLICAS_ANNOTATION]: '3' } },
      spec: { replicas: 0 },
    });
    expect(copy['status']).toBeUndefined();
    expect(copy.metadata.uid).toBeUndefined();
    expect(copy.metadata.resourceVersion).toBeUndefined();
    expect(source.spec).toEqual({ replicas: 3, template: {} });
  });

  it('records a changed source count in the annotation while the replicas stay 0; Keep keeps them', () => {
    const source: KubeObject = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: meta('web'), spec: { replicas: 5 } };
    expect(standbyCopy(source, options)).toMatchObject({ metadata: { annotations: { [ORIGINAL_REPLICAS_ANNOTATION]: '5' } }, spec: { replicas: 0 } });
    expect(standbyCopy(source, { ...options, workloads: 'Keep' })).toMatchObject({ spec: { replicas: 5 } });
    // no replicas field means 1 (the API default)
    expect(standbyCopy({ ...source, spec: {} }, options).metadata.annotations?.[ORIGINAL_REPLICAS_ANNOTATION]).toBe('1');
  });

  it('suspends a CronJob and records whether the source was suspended', () => {
    const running: KubeObject = { apiVersion: 'batch/v1', kind: 'CronJob', metadata: meta('report'), spec: { schedule: '* * * * *', suspend: false } };
    expect(standbyCopy(running, options)).toMatchObject({ metadata: { annotations: { [ORIGINAL_SUSPEND_ANNOTATION]: 'false' } }, spec: { suspend: true } });
    expect(standbyCopy({ ...running, spec: { schedule: '* * * * *', suspend: true } }, options).metadata.annotations?.[ORIGINAL_SUSPEND_ANNOTATION]).toBe(
      'true',
    );
  });

  it("drops a Service's allocated addresses and nodePorts, keeps headless, and keeps nodePorts on request", () => {
    const service: KubeObject = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta('api'),
      spec: { type: 'NodePort', clusterIP: '10.0.0.7', clusterIPs: ['10.0.0.7'], healthCheckNodePort: 31000, ports: [{ port: 80, nodePort: 30080 }] },
      status: { loadBalancer: {} },
    };
    const copy = standbyCopy(service, options);
    expect(copy['spec']).toEqual({ type: 'NodePort', ports: [{ port: 80 }] });
    expect(copy['status']).toBeUndefined();
    expect((standbyCopy(service, { ...options, keepNodePorts: true })['spec'] as { ports: unknown[] }).ports).toEqual([{ port: 80, nodePort: 30080 }]);
    expect(standbyCopy({ ...service, spec: { clusterIP: 'None', clusterIPs: ['None'], ports: [{ port: 80 }] } }, options)['spec']).toEqual({
      clusterIP: 'None',
      clusterIPs: ['None'],
      ports: [{ port: 80 }],
    });
  });

  it('unbinds a claim and maps its storage class', () => {
    const claim: KubeObject = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: meta('data', { annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } }),
      spec: { volumeName: 'pv-1', storageClassName: 'fast', resources: {} },
    };
    const copy = standbyCopy(claim, { ...options, storageClassMap: { fast: 'dr-fast' } });
    expect(copy['spec']).toEqual({ storageClassName: 'dr-fast', resources: {} });
    expect(copy.metadata.annotations?.['pv.kubernetes.io/bind-completed']).toBeUndefined();
    expect((standbyCopy(claim, options)['spec'] as { storageClassName: string }).storageClassName).toBe('fast');
  });

  it('copies an HPA with a note that it is inert, and an Ingress without status', () => {
    expect(
      standbyCopy({ apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', metadata: meta('web'), spec: {} }, options).metadata.annotations?.[
        'syncline.dev/dr-note'
      ],
    ).toMatch(/inert/);
    expect(
      standbyCopy(
        { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: meta('web'), spec: {}, status: { loadBalancer: { ingress: [{ ip: '1.2.3.4' }] } } },
        options,
      )['status'],
    ).toBeUndefined();
  });
});

describe('skipReason', () => {
  const object = (apiVersion: string, kind: string, extra: Partial<KubeObject> = {}, metadata: Record<string, unknown> = {}): KubeObject => ({
    apiVersion,
    kind,
    metadata: meta('x', metadata),
    ...extra,
  });
  it.each([
    ['a Pod', object('v1', 'Pod'), /derived/],
    ['a ReplicaSet', object('apps/v1', 'ReplicaSet'), /derived/],
    ['a ControllerRevision', object('apps/v1', 'ControllerRevision'), /derived/],
    ['Endpoints', object('v1', 'Endpoints'), /derived/],
    ['an EndpointSlice', object('discovery.k8s.io/v1', 'EndpointSlice'), /derived/],
    ['an Event', object('v1', 'Event'), /derived/],
    ['a Lease', object('coordination.k8s.io/v1', 'Lease'), /derived/],
    ['a Job of a CronJob', object('batch/v1', 'Job', {}, { ownerReferences: [{ kind: 'CronJob', name: 'r', controller: true }] }), /controller owner/],
    ['a token Secret', object('v1', 'Secret', { type: 'kubernetes.io/service-account-token' }), /service-account token/],
    ['kube-root-ca.crt', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kube-root-ca.crt', namespace: 'shop' } }, /CA bundle/],
    ['the default ServiceAccount', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: 'shop' } }, /default account/],
    ['an object labelled syncline.dev/dr: exclude', object('v1', 'ConfigMap', {}, { labels: { 'syncline.dev/dr': 'exclude' } }), /labelled/],
  ])('never copies %s', (_what, obj, reason) => {
    expect(skipReason(obj, [])).toMatch(reason);
  });

  it('honours spec.exclude by kind, and by kind and name', () => {
    const cm: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'local-only', namespace: 'shop' } };
    expect(skipReason(cm, [{ kind: 'ConfigMap', name: 'local-only' }])).toMatch(/spec.exclude/);
    expect(skipReason(cm, [{ kind: 'ConfigMap' }])).toMatch(/spec.exclude/);
    expect(skipReason(cm, [{ kind: 'ConfigMap', name: 'other' }])).toBeUndefined();
    // a non-controller owner reference does not make an object derived
    expect(skipReason({ ...cm, metadata: { ...cm.metadata, ownerReferences: [{ kind: 'Thing', name: 't' }] } }, [])).toBeUndefined();
  });
});

describe('promoted (failover)', () => {
  it('restores the recorded replicas of a standby workload and the recorded suspend of a CronJob', () => {
    const standby: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'shop', resourceVersion: '9', annotations: { [ORIGINAL_REPLICAS_ANNOTATION]: '3' } },
      spec: { replicas: 0 },
      status: {},
    };
    expect(promoted(standby, keys)).toMatchObject({ spec: { replicas: 3 }, metadata: { annotations: { [ORIGINAL_REPLICAS_ANNOTATION]: '3' } } });
    expect(promoted(standby, keys)?.metadata.resourceVersion).toBeUndefined();
    const cron: KubeObject = {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'r', namespace: 'shop', annotations: { [ORIGINAL_SUSPEND_ANNOTATION]: 'false' } },
      spec: { suspend: true },
    };
    expect(promoted(cron, keys)).toMatchObject({ spec: { suspend: false } });
  });

  it('leaves objects without a record, and refuses a nonsense count', () => {
    expect(promoted({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }, keys)).toBeUndefined();
    expect(
      promoted({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', annotations: { [ORIGINAL_REPLICAS_ANNOTATION]: '-2' } }, spec: {} }, keys),
    ).toBeUndefined();
  });
});

describe('parseResourceType', () => {
  it.each([
    ['Deployment.apps', { group: 'apps', kind: 'Deployment' }],
    ['apps/Deployment', { group: 'apps', kind: 'Deployment' }],
    ['ConfigMap', { group: '', kind: 'ConfigMap' }],
    ['Widget.example.com', { group: 'example.com', kind: 'Widget' }],
  ])('reads %s', (text, type) => {
    expect(parseResourceType(text)).toEqual(type);
  });
});

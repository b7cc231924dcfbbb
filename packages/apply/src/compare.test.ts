import { describe, expect, it } from 'vitest';
import { differingPaths } from './compare.ts';
import type { KubeObject } from './identity.ts';

const deployment = (spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'ns' },
  spec,
});

describe('differingPaths', () => {
  it('accepts what the API server defaults and normalises', () => {
    const desired = deployment({
      replicas: 2,
      template: {
        metadata: { labels: {} },
        spec: { containers: [{ name: 'c', image: 'nginx', resources: { limits: { cpu: 0.5, memory: '1024Mi' } }, ports: [{ containerPort: 80 }] }] },
      },
    });
    const live = deployment({
      replicas: 2,
      progressDeadlineSeconds: 600,
      template: {
        metadata: {},
        spec: {
          containers: [{ name: 'c', image: 'nginx', resources: { limits: { cpu: '500m', memory: '1Gi' } }, ports: [{ containerPort: 80, protocol: 'TCP' }] }],
          restartPolicy: 'Always',
        },
      },
    });
    expect(differingPaths(desired, live)).toEqual([]);
  });

  it('names the fields someone changed', () => {
    const desired = deployment({ replicas: 2, template: { spec: { containers: [{ name: 'c', image: 'nginx', args: ['a', 'b'] }] } } });
    const live = deployment({ replicas: 5, template: { spec: { containers: [{ name: 'c', image: 'nginx', args: ['a'] }] } } });
    expect(differingPaths(desired, live)).toEqual(['spec.replicas', 'spec.template.spec.containers[0].args']);
  });

  it('compares Secret stringData with the stored base64 data and ignores status', () => {
    const desired: KubeObject = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { password: 'hunter2' }, status: { x: 1 } };
    const live: KubeObject = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { password: Buffer.from('hunter2').toString('base64') } };
    expect(differingPaths(desired, live)).toEqual([]);
    expect(differingPaths(desired, { ...live, data: { password: 'eA==' } })).toEqual(['stringData.password']);
  });
});

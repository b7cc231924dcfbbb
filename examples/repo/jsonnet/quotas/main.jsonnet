// A ResourceQuota and a LimitRange per environment, from one Jsonnet file and an ext var.
local sizes = import 'lib/sizes.libsonnet';
local size = sizes[std.extVar('size')];
[
  {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name: 'team-quota' },
    spec: { hard: { 'requests.cpu': size.cpu, 'requests.memory': size.memory, pods: std.toString(size.pods) } },
  },
  {
    apiVersion: 'v1',
    kind: 'LimitRange',
    metadata: { name: 'team-defaults' },
    spec: { limits: [{ type: 'Container', default: { cpu: '250m', memory: '256Mi' } }] },
  },
]

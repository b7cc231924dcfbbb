import { describe, expect, it } from 'vitest';
import type { KubeObject } from './identity.ts';
import { editManagersOf, planFieldTakeover, setBy, unionFields } from './takeover.ts';

type Entry = {
  manager: string;
  operation: string;
  apiVersion: string;
  time: string;
  fieldsType: string;
  fieldsV1: Record<string, unknown>;
  subresource?: string;
};

const port = (n: number): string => `k:{"port":${n},"protocol":"TCP"}`;
const portFields = (): Record<string, unknown> => ({ '.': {}, 'f:name': {}, 'f:port': {}, 'f:protocol': {}, 'f:targetPort': {} });
const entry = (manager: string, operation: string, fieldsV1: Record<string, unknown>, extra: Partial<Entry> = {}): Entry => ({
  manager,
  operation,
  apiVersion: 'v1',
  time: '2026-01-01T00:00:00Z',
  fieldsType: 'FieldsV1',
  fieldsV1,
  ...extra,
});
const ours = entry('syncline', 'Apply', { 'f:metadata': { 'f:labels': { 'f:app': {} } }, 'f:spec': { 'f:ports': { [port(8080)]: portFields() } } });
const service = (managedFields: Entry[], resourceVersion: string | null = '42'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: 'app', ...(resourceVersion === null ? {} : { resourceVersion }), managedFields },
});
const replaced = (object: KubeObject): Entry[] => {
  const op = planFieldTakeover(object, { fieldManager: 'syncline' })?.patch?.[1];
  if (op?.op !== 'replace') throw new Error('no replace operation');
  return op.value as Entry[];
};

describe('planFieldTakeover', () => {
  it('takes nothing when only appliers, controllers and subresources own fields (the steady state)', () => {
    const live = service([
      ours,
      entry('platform-tool', 'Apply', { 'f:metadata': { 'f:annotations': { 'f:team': {} } } }),
      entry('kubectl', 'Apply', { 'f:spec': { 'f:sessionAffinity': {} } }),
      entry('kube-controller-manager', 'Update', { 'f:metadata': { 'f:annotations': { 'f:revision': {} } } }),
      entry('kubectl-scale', 'Update', { 'f:spec': { 'f:replicas': {} } }, { subresource: 'scale' }),
      entry('kube-controller-manager', 'Update', { 'f:status': {} }, { subresource: 'status' }),
      entry('kubectl-rollout', 'Update', { 'f:spec': { 'f:template': {} } }),
    ]);
    expect(planFieldTakeover(live, { fieldManager: 'syncline' })).toBeUndefined();
    expect(editManagersOf(live, 'syncline')).toEqual([]);
    expect(planFieldTakeover({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } }, { fieldManager: 'syncline' })).toBeUndefined();
  });

  it('moves the port a kubectl patch renumbered into our Apply entry, guarded by the resourceVersion read', () => {
    // given a Service whose port kubectl-patch changed from 8080 to 9999 (the item's key changed with it)
    const patchEntry = entry('kubectl-patch', 'Update', { 'f:spec': { 'f:ports': { [port(9999)]: portFields() } } }, { time: '2026-01-02T00:00:00Z' });
    const controller = entry('kube-controller-manager', 'Update', { 'f:status': {} }, { subresource: 'status' });
    const live = service([ours, patchEntry, controller]);

    // when the takeover is planned
    const takeover = planFieldTakeover(live, { fieldManager: 'syncline' });

    // then it tests the resourceVersion first and replaces the managedFields
    expect(takeover?.managers).toEqual(['kubectl-patch']);
    expect(takeover?.patch?.[0]).toEqual({ op: 'test', path: '/metadata/resourceVersion', value: '42' });
    expect(takeover?.patch?.[1]).toMatchObject({ op: 'replace', path: '/metadata/managedFields' });
    // and our entry, still an Apply of our manager in its place, owns both ports; kubectl-patch has no entry left
    expect(replaced(live)).toEqual([
      {
        ...ours,
        fieldsV1: { 'f:metadata': { 'f:labels': { 'f:app': {} } }, 'f:spec': { 'f:ports': { [port(8080)]: portFields(), [port(9999)]: portFields() } } },
      },
      controller,
    ]);
    // and the live object is left as it was
    expect(live.metadata.managedFields).toEqual([ours, patchEntry, controller]);
  });

  it('merges every hand edit (edit, set, label, annotate, client-side apply, before-first-apply, our own Update) into one entry', () => {
    const edits = [
      entry('kubectl-edit', 'Update', { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { 'f:image': {} } } } } } }),
      entry('kubectl-set', 'Update', {
        'f:spec': {
          'f:template': {
            'f:spec': { 'f:containers': { 'k:{"name":"web"}': { 'f:env': { 'k:{"name":"DEBUG"}': { '.': {}, 'f:name': {}, 'f:value': {} } } } } },
          },
        },
      }),
      entry('kubectl-label', 'Update', { 'f:metadata': { 'f:labels': { 'f:extra': {} } } }),
      entry('kubectl-annotate', 'Update', { 'f:metadata': { 'f:annotations': { 'f:note': {} } } }),
      entry('kubectl-client-side-apply', 'Update', {
        'f:metadata': { 'f:annotations': { '.': {}, 'f:kubectl.kubernetes.io/last-applied-configuration': {} } },
      }),
      entry('before-first-apply', 'Update', { 'f:spec': { 'f:minReadySeconds': {} } }),
      entry('syncline', 'Update', { 'f:metadata': { 'f:labels': { 'f:stale': {} } } }),
    ];
    const other = entry('platform-tool', 'Apply', { 'f:metadata': { 'f:annotations': { 'f:team': {} } } });
    const live = service([...edits.slice(0, 3), other, ours, ...edits.slice(3)]);
    expect(planFieldTakeover(live, { fieldManager: 'syncline' })?.managers).toEqual([
      'kubectl-edit',
      'kubectl-set',
      'kubectl-label',
      'kubectl-annotate',
      'kubectl-client-side-apply',
      'before-first-apply',
      'syncline',
    ]);
    const after = replaced(live);
    // our entry takes the place of the first one it replaces; the other applier keeps its own
    expect(after.map((e) => `${e.manager}/${e.operation}`)).toEqual(['syncline/Apply', 'platform-tool/Apply']);
    const merged = after[0]?.fieldsV1 as { 'f:metadata': { 'f:labels': object; 'f:annotations': object }; 'f:spec': Record<string, unknown> };
    expect(merged['f:metadata']['f:labels']).toEqual({ 'f:app': {}, 'f:extra': {}, 'f:stale': {} });
    expect(merged['f:metadata']['f:annotations']).toEqual({ 'f:note': {}, '.': {}, 'f:kubectl.kubernetes.io/last-applied-configuration': {} });
    expect(Object.keys(merged['f:spec'])).toEqual(['f:ports', 'f:template', 'f:minReadySeconds']);
    expect(after[0]).toMatchObject({ manager: 'syncline', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', time: ours.time });
  });

  it('creates our Apply entry when the object has none (all our fields were taken by others)', () => {
    const live = service([
      entry('kubectl-replace', 'Update', { 'f:spec': { 'f:ports': {} } }, { time: '2026-01-03T00:00:00Z' }),
      entry('kubectl-edit', 'Update', { 'f:data': {} }, { time: '2026-01-05T00:00:00Z' }),
    ]);
    expect(replaced(live)).toEqual([
      {
        manager: 'syncline',
        operation: 'Apply',
        apiVersion: 'v1',
        fieldsType: 'FieldsV1',
        time: '2026-01-05T00:00:00Z',
        fieldsV1: { 'f:spec': { 'f:ports': {} }, 'f:data': {} },
      },
    ]);
  });

  it('clears an edit recorded at another apiVersion instead of moving paths of another schema', () => {
    const deployment = (managedFields: Entry[]): KubeObject => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', resourceVersion: '7', managedFields },
    });
    const mine = entry('syncline', 'Apply', { 'f:spec': { 'f:replicas': {} } }, { apiVersion: 'apps/v1' });
    const live = deployment([mine, entry('kubectl-edit', 'Update', { 'f:spec': { 'f:paused': {} } }, { apiVersion: 'apps/v1beta2' })]);
    expect(replaced(live)).toEqual([mine]);
    expect(planFieldTakeover(live, { fieldManager: 'syncline' })?.managers).toEqual(['kubectl-edit']);
  });

  it('names a manager once even when it edited at two apiVersions, and honours another field manager name', () => {
    const live = service([
      entry('deployer', 'Apply', {}),
      entry('kubectl-edit', 'Update', { 'f:a': {} }),
      entry('kubectl-edit', 'Update', { 'f:b': {} }, { apiVersion: 'v2' }),
      entry('syncline', 'Update', { 'f:c': {} }),
    ]);
    expect(planFieldTakeover(live, { fieldManager: 'deployer' })?.managers).toEqual(['kubectl-edit']);
    expect(editManagersOf(live, 'deployer')).toEqual(['kubectl-edit', 'kubectl-edit']);
  });

  it('never takes a replica count from an edit (where Git does not set it, its removal would scale the workload to one)', () => {
    const deployment = (managedFields: Entry[]): KubeObject => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', resourceVersion: '9', managedFields },
    });
    const mine = entry('syncline', 'Apply', { 'f:spec': { 'f:template': {} } }, { apiVersion: 'apps/v1' });
    // an edit of the replica count alone is no edit to take over
    expect(
      planFieldTakeover(deployment([mine, entry('kubectl-edit', 'Update', { 'f:spec': { 'f:replicas': {} } }, { apiVersion: 'apps/v1' })]), {
        fieldManager: 'syncline',
      }),
    ).toBeUndefined();
    // beside other fields, the editor keeps the count and gives up the rest
    const edit = entry(
      'kubectl-edit',
      'Update',
      { 'f:metadata': { 'f:labels': { 'f:team': {} } }, 'f:spec': { 'f:replicas': {}, 'f:paused': {} } },
      { apiVersion: 'apps/v1' },
    );
    expect(replaced(deployment([mine, edit]))).toEqual([
      { ...mine, fieldsV1: { 'f:spec': { 'f:template': {}, 'f:paused': {} }, 'f:metadata': { 'f:labels': { 'f:team': {} } } } },
      { ...edit, fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
    ]);
  });

  it('tests the managedFields themselves when the object carries no resourceVersion', () => {
    const live = service([ours, entry('kubectl-patch', 'Update', { 'f:spec': { 'f:type': {} } })], null);
    expect(planFieldTakeover(live, { fieldManager: 'syncline' })?.patch?.[0]).toEqual({
      op: 'test',
      path: '/metadata/managedFields',
      value: live.metadata.managedFields,
    });
  });
});

describe('planFieldTakeover with the desired object', () => {
  const desired: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', labels: { app: 'web' } },
    spec: {
      ports: [
        { name: 'http', port: 8080, protocol: 'TCP', targetPort: 8080 },
        { name: 'metrics', port: 9090 },
      ],
    },
  };

  it('sends no patch when the forced apply takes every field of the edits by itself (a changed value, one write)', () => {
    const live = service([
      ours,
      entry('kubectl-patch', 'Update', { 'f:metadata': { 'f:labels': { 'f:app': {} } }, 'f:spec': { 'f:ports': { [port(8080)]: { 'f:targetPort': {} } } } }),
    ]);
    expect(planFieldTakeover(live, { fieldManager: 'syncline', desired })).toEqual({ managers: ['kubectl-patch'] });
  });

  it('patches when an edit owns a field Git does not set: an added label, a renumbered port, a defaulted key field', () => {
    for (const fields of [
      { 'f:metadata': { 'f:labels': { 'f:team': {} } } },
      { 'f:spec': { 'f:ports': { [port(9999)]: portFields() } } },
      // the manifest leaves metrics' protocol to the server's default: not matched, so patched (safe, one write more)
      { 'f:spec': { 'f:ports': { [port(9090)]: { 'f:name': {} } } } },
    ]) {
      const live = service([
        ours,
        entry('kubectl-edit', 'Update', { 'f:metadata': { 'f:labels': { 'f:app': {} } } }),
        entry('kubectl-patch', 'Update', fields),
      ]);
      expect(planFieldTakeover(live, { fieldManager: 'syncline', desired })?.patch).toHaveLength(2);
    }
  });
});

describe('setBy', () => {
  const pod = { spec: { containers: [{ name: 'web', env: [{ name: 'A', value: '1' }], args: ['--x', '--y'] }], finalizers: ['a/b'] } };

  it('follows fields, keyed entries, set members and indices of the desired object', () => {
    expect(setBy({ 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { '.': {}, 'f:env': { 'k:{"name":"A"}': { 'f:value': {} } } } } } }, pod)).toBe(true);
    expect(setBy({ 'f:spec': { 'f:finalizers': { 'v:"a/b"': {} }, 'f:containers': { 'i:0': { 'f:args': {} } } } }, pod)).toBe(true);
    expect(setBy({}, pod)).toBe(true);
  });

  it('says no for whatever the desired object lacks, or a path it cannot read', () => {
    expect(setBy({ 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { 'f:env': { 'k:{"name":"B"}': {} } } } } }, pod)).toBe(false);
    expect(setBy({ 'f:spec': { 'f:containers': { 'k:{"name":"sidecar"}': {} } } }, pod)).toBe(false);
    expect(setBy({ 'f:spec': { 'f:finalizers': { 'v:"c/d"': {} } } }, pod)).toBe(false);
    expect(setBy({ 'f:spec': { 'f:containers': { 'i:1': {} } } }, pod)).toBe(false);
    expect(setBy({ 'f:spec': { 'f:replicas': {} } }, pod)).toBe(false);
    expect(setBy({ 'f:spec': { 'f:containers': { 'k:{broken': {} } } }, pod)).toBe(false);
    expect(setBy({ 'f:spec': { 'x:unknown': {} } }, pod)).toBe(false);
  });
});

describe('unionFields', () => {
  it('unions nested field sets without modifying either', () => {
    const a = { 'f:spec': { 'f:ports': { 'k:{"port":1}': { '.': {} } } }, 'f:data': {} };
    const b = { 'f:spec': { 'f:ports': { 'k:{"port":2}': { '.': {} } }, 'f:type': {} } };
    expect(unionFields(a, b)).toEqual({ 'f:spec': { 'f:ports': { 'k:{"port":1}': { '.': {} }, 'k:{"port":2}': { '.': {} } }, 'f:type': {} }, 'f:data': {} });
    expect(a).toEqual({ 'f:spec': { 'f:ports': { 'k:{"port":1}': { '.': {} } } }, 'f:data': {} });
    expect(b).toEqual({ 'f:spec': { 'f:ports': { 'k:{"port":2}': { '.': {} } }, 'f:type': {} } });
  });
});

import { describe, expect, it } from 'vitest';
import type { Discovery } from '@syncline/apply';
import type { ConfigSync } from '@syncline/api';
import { onlyStatusChanged, projectManaged, readDiscoveryAhead, sameButStatus, writtenLastBy } from './manager.ts';

const base = (patch: Partial<ConfigSync['metadata']> = {}, status: ConfigSync['status'] = {}): ConfigSync =>
  ({
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'ConfigSync',
    metadata: { name: 'a', namespace: 'n', generation: 1, resourceVersion: '1', ...patch },
    spec: {},
    status,
  }) as unknown as ConfigSync;

describe('onlyStatusChanged', () => {
  it('ignores updates that touched only status and resourceVersion (our own writes)', () => {
    expect(onlyStatusChanged(base(), base({ resourceVersion: '2' }, { sourceRevision: 'x' }))).toBe(true);
  });

  it.each([
    ['a spec change (generation)', { generation: 2 }],
    ['the reconcile-requested-at annotation', { annotations: { 'syncline.dev/reconcile-requested-at': 'now' } }],
    ["another controller's finalizer", { finalizers: ['someone.else/keep'] }],
    ['a deletion', { deletionTimestamp: '2026-01-01T00:00:00Z' }],
  ])('acts on %s', (_what, patch) => {
    expect(onlyStatusChanged(base(), base(patch))).toBe(false);
  });

  it('compares labels and annotations by what they say, not by the order the API server wrote their keys in', () => {
    const marks = { labels: { a: '1', b: '2' }, annotations: { x: '1', y: '2' } };
    expect(onlyStatusChanged(base(marks), base({ resourceVersion: '2', labels: { b: '2', a: '1' }, annotations: { y: '2', x: '1' } }))).toBe(true);
    expect(onlyStatusChanged(base(marks), base({ resourceVersion: '2', ...marks, labels: { a: '1' } }))).toBe(false);
    expect(onlyStatusChanged(base(marks), base({ resourceVersion: '2', ...marks, annotations: { x: '1', y: '3' } }))).toBe(false);
  });

  it('takes our finalizer, added, as no news (the run that added it went on), and its removal as news', () => {
    const added = base({ resourceVersion: '2', finalizers: ['syncline.dev/finalizer'] });
    expect(onlyStatusChanged(base(), added)).toBe(true);
    expect(onlyStatusChanged(base({ finalizers: ['someone.else/keep'] }), base({ finalizers: ['someone.else/keep', 'syncline.dev/finalizer'] }))).toBe(true);
    expect(onlyStatusChanged(added, base({ resourceVersion: '3' }))).toBe(false);
    expect(onlyStatusChanged(base(), base({ finalizers: ['syncline.dev/finalizer', 'someone.else/keep'] }))).toBe(false);
  });
});

describe('managed-object watches: status-only changes', () => {
  const deployment = (generation: number, readyReplicas: number, labels: Record<string, string> = {}) =>
    projectManaged({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'web',
        namespace: 'shop',
        resourceVersion: String(generation * 100 + readyReplicas),
        generation,
        labels,
        annotations: { 'syncline.dev/owned-by': 'ops/web/prod' },
      },
      spec: { replicas: 2 },
      status: {
        observedGeneration: generation,
        replicas: 2,
        updatedReplicas: 2,
        readyReplicas,
        availableReplicas: readyReplicas,
        conditions: [{ type: 'Available', status: 'True' }],
      },
    });

  it('sees a status-only change, and tells whether it changed the health', () => {
    expect(sameButStatus(deployment(1, 1), deployment(1, 2))).toBe(true);
    expect(deployment(1, 1)['health']).not.toBe(deployment(1, 2)['health']);
    expect(deployment(1, 2)['health']).toBe(deployment(1, 2)['health']);
  });

  it('treats a spec change (generation) or a label change as more than status: drift is looked at', () => {
    expect(sameButStatus(deployment(1, 2), deployment(2, 2))).toBe(false);
    expect(sameButStatus(deployment(1, 2), deployment(1, 2, { team: 'x' }))).toBe(false);
  });

  it('never treats a change of a kind without a generation as status-only', () => {
    const cm = (data: string) =>
      projectManaged({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'shop', resourceVersion: data }, data: { k: data } });
    expect(sameButStatus(cm('1'), cm('2'))).toBe(false);
  });
});

describe('writtenLastBy', () => {
  const object = (fields: unknown) => ({ metadata: { name: 'x', managedFields: fields } });
  const entry = (manager: string, time: string, subresource?: string) => ({
    manager,
    operation: 'Apply',
    time,
    ...(subresource === undefined ? {} : { subresource }),
  });

  it('is the time of our apply when it is the latest write, alone', () => {
    expect(writtenLastBy(object([entry('kubectl-edit', '2026-01-01T00:00:00Z'), entry('syncline', '2026-01-01T00:00:05Z')]), 'syncline')).toBe(
      '2026-01-01T00:00:05Z',
    );
  });

  it('is undefined after someone else wrote, in the same second, to status, or without managedFields', () => {
    expect(writtenLastBy(object([entry('syncline', '2026-01-01T00:00:00Z'), entry('kubectl-edit', '2026-01-01T00:00:05Z')]), 'syncline')).toBeUndefined();
    expect(writtenLastBy(object([entry('syncline', '2026-01-01T00:00:05Z'), entry('kubectl-edit', '2026-01-01T00:00:05Z')]), 'syncline')).toBeUndefined();
    expect(writtenLastBy(object([entry('kubectl-edit', '2026-01-01T00:00:05Z'), entry('syncline', '2026-01-01T00:00:05Z')]), 'syncline')).toBeUndefined();
    expect(writtenLastBy(object([entry('syncline', '2026-01-01T00:00:00Z'), entry('syncline', '2026-01-01T00:00:09Z', 'status')]), 'syncline')).toBeUndefined();
    expect(writtenLastBy(object(undefined), 'syncline')).toBeUndefined();
  });
});

describe('readDiscoveryAhead', () => {
  it('asks the client for its discovery once, at once; a failed read is left for the first render to read again', async () => {
    // given an apply client whose discovery read is counted
    let reads = 0;
    let settle: () => void = () => undefined;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const client = {
      discovery: (): Promise<Discovery> => {
        reads++;
        settle();
        return Promise.reject(new Error('connect ECONNREFUSED'));
      },
    };
    // when the manager starts, then discovery is read before any sync asks for it
    readDiscoveryAhead(() => Promise.resolve(client));
    await settled;
    expect(reads).toBe(1);
    // and its failure is swallowed (no unhandled rejection fails this test), as is a client that cannot be made
    readDiscoveryAhead(() => Promise.reject(new Error('no client')));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(reads).toBe(1);
  });
});

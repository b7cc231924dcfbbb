import { describe, expect, it } from 'vitest';
import type { ConfigSync } from './api/v1alpha1.ts';
import { onlyStatusChanged } from './manager.ts';

const base = (patch: Partial<ConfigSync['metadata']> = {}, status: ConfigSync['status'] = {}): ConfigSync =>
  ({ apiVersion: 'syncline.dev/v1alpha1', kind: 'ConfigSync', metadata: { name: 'a', namespace: 'n', generation: 1, resourceVersion: '1', ...patch }, spec: {}, status }) as unknown as ConfigSync;

describe('onlyStatusChanged', () => {
  it('ignores updates that touched only status and resourceVersion (our own writes)', () => {
    expect(onlyStatusChanged(base(), base({ resourceVersion: '2' }, { sourceRevision: 'x' }))).toBe(true);
  });

  it.each([
    ['a spec change (generation)', { generation: 2 }],
    ['the reconcile-requested-at annotation', { annotations: { 'syncline.dev/reconcile-requested-at': 'now' } }],
    ['a finalizer', { finalizers: ['syncline.dev/finalizer'] }],
    ['a deletion', { deletionTimestamp: '2026-01-01T00:00:00Z' }],
  ])('acts on %s', (_what, patch) => {
    expect(onlyStatusChanged(base(), base(patch))).toBe(false);
  });
});

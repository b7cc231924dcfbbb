import { describe, expect, it } from 'vitest';
import { digestRendered, recordHistory, rollbackTarget, type HistoryEntry } from './history.ts';

const entry = (revision: string, digest = `d-${revision}`): HistoryEntry => ({ revision, appliedAt: '2026-11-21T10:00:00Z', objects: 3, digest });

describe('history', () => {
  it('records newest first, trims to the limit and ignores a repeat of the newest', () => {
    let history: HistoryEntry[] = [];
    for (const r of ['a', 'b', 'c', 'd']) history = recordHistory(history, entry(r), 3);
    expect(history.map((h) => h.revision)).toEqual(['d', 'c', 'b']);
    const again = recordHistory(history, { ...entry('d'), appliedAt: '2026-11-22T00:00:00Z' }, 3);
    expect(again).toEqual(history);
  });

  it('finds the rollback target by steps or revision', () => {
    const history = [entry('c'), entry('b'), entry('a')];
    expect(rollbackTarget(history, { steps: 1 })?.revision).toBe('b');
    expect(rollbackTarget(history, { revision: 'a' })?.revision).toBe('a');
    expect(rollbackTarget(history, { steps: 3 })).toBeUndefined();
  });

  it('digests a rendered set independently of object and key order', () => {
    const a = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'n' }, data: { x: '1', y: '2' } };
    const b = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'n', name: 'b' } };
    const aReordered = { kind: 'ConfigMap', apiVersion: 'v1', data: { y: '2', x: '1' }, metadata: { namespace: 'n', name: 'a' } };
    expect(digestRendered([a, b])).toBe(digestRendered([b, aReordered]));
    expect(digestRendered([a, b])).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(digestRendered([a])).not.toBe(digestRendered([a, b]));
  });
});

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { changedFields, conditionsDiffer, sameAsStored, sameJson, writeStatus } from './object-status.ts';
import type { KubeRequest, KubeRest } from '@syncline/kube';

/** What sameJson stands for: the serializations with every object's keys sorted are equal. */
function sortedJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

/** The same value with every object's keys in reverse order. */
function reordered(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reordered);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>)
      .reverse()
      .map(([k, v]) => [k, reordered(v)]),
  );
}

describe('sameJson', () => {
  it('agrees with comparing key-sorted serializations, for values parsed from JSON', () => {
    const json = fc.jsonValue().map((v) => JSON.parse(JSON.stringify(v)) as unknown);
    fc.assert(fc.property(json, json, (a, b) => sameJson(a, b) === (sortedJson(a) === sortedJson(b))));
    fc.assert(fc.property(json, (a) => sameJson(a, reordered(a))));
  });

  it('tells a status that changed in depth from one that did not', () => {
    const status = { observedGeneration: 2, inventory: [{ target: 'a', entries: ['x', 'y'] }], conditions: [{ type: 'Ready', status: 'True' }] };
    expect(
      sameJson(status, { conditions: [{ status: 'True', type: 'Ready' }], inventory: [{ entries: ['x', 'y'], target: 'a' }], observedGeneration: 2 }),
    ).toBe(true);
    expect(sameJson(status, { ...status, inventory: [{ target: 'a', entries: ['y', 'x'] }] })).toBe(false);
    expect(sameJson(status, { ...status, lastSyncedTime: '2026-01-01T00:00:00Z' })).toBe(false);
    expect(sameJson({ a: 1 }, { b: 1 })).toBe(false);
    expect(sameJson([], {})).toBe(false);
    expect(sameJson(null, {})).toBe(false);
  });
});

describe('sameAsStored', () => {
  it('says the same only when the JSON of the value says what the stored value says', () => {
    const stored = fc.jsonValue().map((v) => JSON.parse(JSON.stringify(v)) as unknown);
    // values as a status is built: JSON values, fields left undefined, and things JSON rewrites (a Date, NaN, undefined in a list)
    const value = fc.letrec((tie) => ({
      any: fc.oneof(
        { depthSize: 'small' },
        fc.jsonValue(),
        fc.constant(undefined),
        fc.constant(Number.NaN),
        fc.date({ noInvalidDate: true }),
        fc.array(tie('any'), { maxLength: 3 }),
        fc.dictionary(fc.constantFrom('a', 'b', 'c'), tie('any'), { maxKeys: 3 }),
      ),
    })).any;
    const asJson = (v: unknown): unknown => (v === undefined ? undefined : (JSON.parse(JSON.stringify(v)) as unknown));
    fc.assert(fc.property(value, stored, (v, s) => !sameAsStored(v, s) || sameJson(asJson(v), s)));
    // a value is the same as its own JSON when JSON leaves it as it is (fields that are undefined apart)
    fc.assert(fc.property(fc.jsonValue(), (v) => sameAsStored(v, asJson(v))));
    // and what was stored as it is says the same, whatever the order of its keys
    fc.assert(fc.property(stored, (s) => sameAsStored(reordered(s), s)));
  });

  it('sees a status unchanged but for fields left undefined, and a changed one as changed', () => {
    const stored = { observedGeneration: 2, targets: [{ name: 'a', phase: 'Synced' }] };
    expect(sameAsStored({ observedGeneration: 2, targets: [{ name: 'a', phase: 'Synced', message: undefined }], chart: undefined }, stored)).toBe(true);
    expect(sameAsStored({ observedGeneration: 3, targets: [{ name: 'a', phase: 'Synced' }] }, stored)).toBe(false);
    expect(sameAsStored({ observedGeneration: 2, targets: [{ name: 'a', phase: 'Synced' }], at: new Date(0) }, { ...stored, at: {} })).toBe(false);
    expect(sameAsStored({ observedGeneration: 2, targets: [undefined] }, { observedGeneration: 2, targets: [null] })).toBe(false);
  });
});

describe('conditionsDiffer', () => {
  it('looks at type, status, reason and message only', () => {
    const ready = {
      type: 'Ready',
      status: 'True',
      reason: 'Synced',
      message: 'Applied revision abc',
      lastTransitionTime: '2026-01-01T00:00:00Z',
      observedGeneration: 1,
    } as const;
    expect(conditionsDiffer([ready], [{ ...ready, lastTransitionTime: '2026-01-02T00:00:00Z', observedGeneration: 2 }])).toBe(false);
    expect(conditionsDiffer([ready], [{ ...ready, message: 'Applied revision def' }])).toBe(true);
    expect(conditionsDiffer([ready], [])).toBe(true);
    expect(conditionsDiffer(undefined, [])).toBe(false);
  });

  it('says what comparing their type, status, reason and message as JSON says', () => {
    const condition = fc.record({
      type: fc.constantFrom('Ready', 'Synced'),
      status: fc.constantFrom('True', 'False'),
      reason: fc.constantFrom('A', 'B'),
      message: fc.constantFrom('x', 'y'),
      lastTransitionTime: fc.constantFrom('t1', 't2'),
    });
    const list = fc.option(fc.array(condition, { maxLength: 3 }), { nil: undefined });
    const said = (conditions: readonly { type: string; status: string; reason: string; message: string }[] | undefined) =>
      (conditions ?? []).map((c) => [c.type, c.status, c.reason, c.message]);
    fc.assert(fc.property(list, list, (a, b) => conditionsDiffer(a as never, b as never) === !sameJson(said(a), said(b))));
  });
});

describe('writeStatus', () => {
  it('writes nothing for a status that says what is stored, however often it comes, and writes a changed one', async () => {
    const writes: unknown[] = [];
    const rest = { request: (req: { body?: unknown }) => (writes.push(req.body), Promise.resolve({})) } as unknown as KubeRest;
    const stored = { observedGeneration: 1, targets: [{ name: 'a', phase: 'Synced' }] };
    const object = { metadata: { name: 'w', namespace: 'ns', resourceVersion: '5' }, status: stored };
    const same = { observedGeneration: 1, targets: [{ name: 'a', phase: 'Synced', message: undefined }] };
    expect(await writeStatus(rest, '/p', object, same)).toBe(false);
    expect(await writeStatus(rest, '/p', object, same)).toBe(false);
    expect(writes).toEqual([]);
    expect(await writeStatus(rest, '/p', object, { ...same, observedGeneration: 2 })).toBe(true);
    expect(writes).toHaveLength(1);
    // the same status against another stored one (the object changed) is compared again
    expect(await writeStatus(rest, '/p', { ...object, status: { ...stored, observedGeneration: 0 } }, same)).toBe(true);
    expect(writes).toHaveLength(2);
  });

  const recording = () => {
    const sent: KubeRequest[] = [];
    const rest: KubeRest = {
      server: 'https://fake',
      request: <T>(req: KubeRequest): Promise<T> => {
        sent.push(req);
        return Promise.resolve(undefined as T);
      },
      watch: () => Promise.resolve(),
    };
    return { rest, sent };
  };
  const object = (status: object) => ({ metadata: { name: 'w', namespace: 'team', resourceVersion: '7' }, status });
  const stored = { observedGeneration: 1, sourceRevision: 'abc', inventory: [{ target: 'a', entries: ['x'] }], shortRevision: 'abc' };

  it('writes nothing when the status says what is stored, whatever its key order and undefined fields', async () => {
    const { rest, sent } = recording();
    const same = {
      shortRevision: 'abc',
      inventory: [{ entries: ['x'], target: 'a' }],
      sourceRevision: 'abc',
      observedGeneration: 1,
      lastSyncedTime: undefined,
    };
    expect(await writeStatus(rest, '/p', object(stored), same, { ifUnchanged: true })).toBe(false);
    // An undefined array item is what JSON writes as null.
    expect(await writeStatus(rest, '/p', object({ ...stored, history: [null] }), { ...same, history: [undefined] }, { ifUnchanged: true })).toBe(false);
    expect(sent).toEqual([]);
  });

  it('sends the new status conditioned on the version read, and nulls what it no longer has, or has as undefined', async () => {
    const { rest, sent } = recording();
    const next = { observedGeneration: 2, sourceRevision: 'def', inventory: [{ target: 'a', entries: ['x', 'y'] }], shortRevision: undefined };
    expect(await writeStatus(rest, '/p', object(stored), next, { ifUnchanged: true })).toBe(true);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.path).toBe('/p/status');
    // As the API server reads it: JSON, where undefined fields are left out.
    expect(JSON.parse(JSON.stringify(sent[0]?.body))).toEqual({
      metadata: { resourceVersion: '7' },
      status: { observedGeneration: 2, sourceRevision: 'def', inventory: [{ target: 'a', entries: ['x', 'y'] }], shortRevision: null },
    });
    const { rest: rest2, sent: sent2 } = recording();
    await writeStatus(rest2, '/p', object(stored), { observedGeneration: 2 });
    expect(JSON.parse(JSON.stringify(sent2[0]?.body))).toEqual({
      status: { observedGeneration: 2, sourceRevision: null, inventory: null, shortRevision: null },
    });
  });

  it('sends, conditioned on the version read, only the fields that changed: an inventory that stays is not sent', async () => {
    const { rest, sent } = recording();
    const before = { ...stored, history: [{ revision: 'abc' }], conditions: [{ type: 'Ready', status: 'True', message: 'Applied revision abc' }] };
    const next = { ...before, sourceRevision: 'def', shortRevision: 'def', history: [{ revision: 'def' }, { revision: 'abc' }] };
    expect(
      await writeStatus(
        rest,
        '/p',
        object(before),
        { ...next, conditions: [{ message: 'Applied revision abc', status: 'True', type: 'Ready' }] },
        { ifUnchanged: true },
      ),
    ).toBe(true);
    expect(JSON.parse(JSON.stringify(sent[0]?.body))).toEqual({
      metadata: { resourceVersion: '7' },
      status: { sourceRevision: 'def', shortRevision: 'def', history: [{ revision: 'def' }, { revision: 'abc' }] },
    });
    // Not conditioned (a writer that may not have read the status it writes over): the whole status, as before.
    const { rest: rest2, sent: sent2 } = recording();
    await writeStatus(rest2, '/p', object(before), next);
    expect(JSON.parse(JSON.stringify(sent2[0]?.body))).toEqual({ status: next });
  });
});

/** RFC 7386 JSON merge patch, as the API server applies an application/merge-patch+json body. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

describe('changedFields', () => {
  it('patches the stored status into what the whole status would have made of it', () => {
    const json = (v: unknown): unknown => JSON.parse(JSON.stringify(v)) as unknown;
    // Values as a status holds them: JSON without null (the API server stores none; a merge patch's null deletes).
    const value = fc.letrec((tie) => ({
      any: fc.oneof(
        { depthSize: 'small' },
        fc.string({ maxLength: 3 }),
        fc.integer(),
        fc.boolean(),
        fc.array(tie('any'), { maxLength: 3 }),
        fc.dictionary(fc.constantFrom('x', 'y'), tie('any'), { maxKeys: 2 }),
      ),
    })).any;
    const field = fc.oneof(value, fc.constant(undefined));
    const status = fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd', 'e'), field, { maxKeys: 5 });
    fc.assert(
      fc.property(status, status, (storedValue, next) => {
        const stored = json(storedValue) as Record<string, unknown>;
        const whole = json({
          ...next,
          ...Object.fromEntries(
            Object.keys(stored)
              .filter((k) => next[k] === undefined)
              .map((k) => [k, null]),
          ),
        });
        const patch = changedFields(stored, next);
        if (patch === undefined) return sameJson(json(next), stored);
        // and it holds nothing the stored status already says (a null removes a field)
        const sent = json(patch) as Record<string, unknown>;
        return (
          sameJson(mergePatch(stored, sent), mergePatch(stored, whole)) && Object.keys(sent).every((k) => sent[k] === null || !sameJson(sent[k], stored[k]))
        );
      }),
    );
  });
});

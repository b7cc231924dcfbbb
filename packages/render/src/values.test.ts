import { describe, expect, it } from 'vitest';
import { RenderError, RenderErrorReason } from './errors.ts';
import { layerValues, parseValues } from './values.ts';

describe('layerValues', () => {
  it.each([
    { name: 'mappings deep-merge', layers: [{ a: { b: 1, c: 2 } }, { a: { c: 3, d: 4 } }], want: { a: { b: 1, c: 3, d: 4 } } },
    { name: 'lists replace', layers: [{ l: [1, 2, 3] }, { l: [9] }], want: { l: [9] } },
    { name: 'scalars replace mappings and back', layers: [{ a: { b: 1 } }, { a: 'x' }, { a: { c: 2 } }], want: { a: { c: 2 } } },
    { name: 'null removes a key', layers: [{ a: 1, b: 2 }, { a: null }], want: { b: 2 } },
    { name: 'later layers win, undefined layers are skipped', layers: [{ a: 1 }, undefined, { a: 2 }, { a: 3 }], want: { a: 3 } },
  ])('$name', ({ layers, want }) => {
    expect(layerValues(layers)).toEqual(want);
  });

  it('null removes a key at any depth, also under a mapping no lower layer had', () => {
    expect(layerValues([{ a: { b: 1, c: 2 } }, { a: { b: null } }])).toEqual({ a: { c: 2 } });
    expect(layerValues([{}, { a: { b: null, c: 1 } }])).toEqual({ a: { c: 1 } });
  });

  it('keepNulls: a null replaces the lower value and stays, as Helm merges -f files before it deletes chart defaults', () => {
    expect(
      layerValues(
        [
          { a: { b: 1, c: 2 }, d: 1 },
          { a: { b: null }, d: null },
        ],
        { keepNulls: true },
      ),
    ).toEqual({ a: { b: null, c: 2 }, d: null });
    expect(layerValues([{ a: { b: null } }, { a: { b: 3 } }], { keepNulls: true })).toEqual({ a: { b: 3 } });
  });

  it('does not modify its inputs', () => {
    const base = { a: { b: 1 } };
    layerValues([base, { a: { c: 2 } }]);
    expect(base).toEqual({ a: { b: 1 } });
  });

  it('refuses what is not plain data', () => {
    expect(() => layerValues([{ f: () => 1 }])).toThrow(RenderError);
    expect(() => layerValues([{ d: new Date(0) }])).toThrow(/not plain data/);
  });

  it('keeps a __proto__ key as data without touching prototypes', () => {
    const merged = layerValues([JSON.parse('{"__proto__": {"polluted": 1}}') as Record<string, unknown>]);
    expect(Object.keys(merged)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('parseValues', () => {
  it('parses one YAML mapping with the core schema (no dates)', () => {
    expect(parseValues('a: 1\nwhen: 2024-01-01\nlist: [x]\n', 'valuesFrom[0]')).toEqual({ a: 1, when: '2024-01-01', list: ['x'] });
    expect(parseValues('', 'valuesFrom[0]')).toEqual({});
  });

  it.each([
    { text: 'a: [1\n', detail: 'not valid YAML' },
    { text: '- 1\n- 2\n', detail: 'must be a mapping' },
    { text: 'a: 1\n---\nb: 2\n', detail: 'one YAML document' },
  ])('fails on $text without quoting it', ({ text, detail }) => {
    let error: unknown;
    try {
      parseValues(text, 'valuesFrom[1] Secret/app key values.yaml');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RenderError);
    const e = error as RenderError;
    expect(e.reason).toBe(RenderErrorReason.InvalidValues);
    expect(e.message).toContain('valuesFrom[1] Secret/app key values.yaml');
    expect(e.message).toContain(detail);
  });

  it('does not leak a secret from a broken values document', () => {
    try {
      parseValues('password: "hunter2-secret\n  other: [\n', 'valuesFrom[0] Secret/db');
      expect.unreachable();
    } catch (error) {
      expect(String(error)).not.toContain('hunter2');
    }
  });
});

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { canonicalJson, digestOf } from './canonical.ts';

/**
 * Canonical JSON as digests stored in status were computed (keys sorted by code unit, undefined fields left out,
 * pieces joined once): the reference the faster build must match byte for byte.
 */
function reference(value: unknown, out: string[] = []): string {
  if (value === null || typeof value !== 'object') out.push(JSON.stringify(value) ?? 'null');
  else if (Array.isArray(value)) {
    out.push('[');
    value.forEach((item, i) => {
      if (i > 0) out.push(',');
      reference(item, out);
    });
    out.push(']');
  } else {
    out.push('{');
    let first = true;
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v === undefined) continue;
      if (!first) out.push(',');
      first = false;
      out.push(JSON.stringify(key), ':');
      reference(v, out);
    }
    out.push('}');
  }
  return out.join('');
}

describe('canonicalJson', () => {
  it('is the canonical JSON digests were computed from, for any JSON value, and parses back to the same value', () => {
    fc.assert(fc.property(fc.jsonValue(), (value) => canonicalJson(value) === reference(value)));
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });

  it('leaves undefined fields out, writes undefined array items as null, and escapes keys and strings', () => {
    expect(canonicalJson({ b: [1, undefined, 'x"y'], a: undefined, 'k"\n': { z: null, y: true } })).toBe(
      '{"b":[1,null,"x\\"y"],"k\\"\\n":{"y":true,"z":null}}',
    );
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('gives the same digest whatever the key order', () => {
    expect(digestOf({ a: 1, b: { c: 2, d: 3 } })).toBe(digestOf({ b: { d: 3, c: 2 }, a: 1 }));
    expect(digestOf({ a: 1 })).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});

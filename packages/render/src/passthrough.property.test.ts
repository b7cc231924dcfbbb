// Property: a plain manifest (.yaml, .yml, .json) comes out exactly as it went in, whatever it holds,
// Handlebars-looking text included.
import fc from 'fast-check';
import jsyaml from 'js-yaml';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { render } from './test-support.ts';

const text = fc.oneof(
  fc.string(),
  fc.constantFrom('{{ $labels.instance }}', '{{values.x}}', '{{{raw}}}', '}}}', 'a: b', '- x', '#x', '\uE0000\uE001', 'true', '012', '1e3', '~'),
);
const key = fc.oneof(fc.string({ minLength: 1 }), fc.constantFrom('constructor', 'toString', '__proto__', '{{x}}', 'a b'));
const data = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    text,
    fc.integer(),
    fc.boolean(),
    fc.constant(null), // -0 is left out: Kubernetes objects are JSON, where -0 and 0 are the same number.
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
    tie('list'),
    tie('map'),
  ),
  list: fc.array(tie('value'), { maxLength: 4 }),
  map: fc.dictionary(key, tie('value'), { maxKeys: 4 }),
})).map;

function manifest(spec: unknown): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web', namespace: 'staging' }, spec };
}

describe('plain manifests pass through unchanged', () => {
  it('YAML written by js-yaml', () => {
    fc.assert(
      fc.property(data, (spec) => {
        const object = manifest(spec);
        const [out] = render({ files: { 'app/m.yaml': jsyaml.dump(object) } });
        expect(out).toEqual(JSON.parse(JSON.stringify(object)));
      }),
      { numRuns: 300 },
    );
  });

  it('YAML written by the yaml package (other quoting and flow choices), as .yml', () => {
    fc.assert(
      fc.property(data, (spec) => {
        const object = manifest(spec);
        const [out] = render({ files: { 'app/m.yml': stringify(object) } });
        expect(out).toEqual(JSON.parse(JSON.stringify(object)));
      }),
      { numRuns: 300 },
    );
  });

  it('JSON', () => {
    fc.assert(
      fc.property(data, (spec) => {
        const object = manifest(spec);
        const [out] = render({ files: { 'app/m.json': JSON.stringify(object, null, 2) } });
        expect(out).toEqual(JSON.parse(JSON.stringify(object)));
      }),
      { numRuns: 300 },
    );
  });
});

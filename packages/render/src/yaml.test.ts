import fc from 'fast-check';
import jsyaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { parseYamlDocuments } from './yaml.ts';

// The fast path's implicit types sit behind a first-character check; they must type scalars exactly as the
// YAML 1.2 core schema does.
/** The documents, or that the text is not YAML (both parsers must agree on that too). */
function outcome(parse: () => unknown): unknown {
  try {
    return parse();
  } catch {
    return 'invalid YAML';
  }
}

const core = (yaml: string): unknown => outcome(() => [jsyaml.load(yaml, { schema: jsyaml.CORE_SCHEMA })]);
const fast = (yaml: string): unknown => outcome(() => parseYamlDocuments(yaml));

describe('parseYamlDocuments types plain scalars as the core schema does', () => {
  const tricky = [
    '~', 'null', 'Null', 'NULL', 'nil', 'true', 'True', 'TRUE', 'false', 'FALSE', 'yes', 'no', 'on', '0', '-0', '+1', '0x1F', '0o17',
    '017', '1_000', '1.5', '-1.5e3', '.5', '.inf', '-.Inf', '.NaN', '1e400', 'nginx:1.27', '1.2.3', '+', '-', '.', 'n', 't', 'f', '<<x',
  ];
  it.each(tricky)('%s', (text) => {
    const yaml = `a: ${text}\n${text}: b\nlist: [${text}]\n`;
    expect(fast(yaml)).toEqual(core(yaml));
  });

  it('for arbitrary plain text', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[-+.~0-9a-zA-Z_][-+.0-9a-zA-Z_]{0,8}$/), (text) => {
        const yaml = `v: ${text}\n`;
        expect(fast(yaml)).toEqual(core(yaml));
      }),
      { numRuns: 2000 },
    );
  });
});

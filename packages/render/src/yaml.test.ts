import fc from 'fast-check';
import jsyaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { DuplicateKeyError, NodeLimitError, ParsedOutputs, materializeDocuments, parseYamlDocuments } from './yaml.ts';

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
    '~',
    'null',
    'Null',
    'NULL',
    'nil',
    'true',
    'True',
    'TRUE',
    'false',
    'FALSE',
    'yes',
    'no',
    'on',
    '0',
    '-0',
    '+1',
    '0x1F',
    '0o17',
    '017',
    '1_000',
    '1.5',
    '-1.5e3',
    '.5',
    '.inf',
    '-.Inf',
    '.NaN',
    '1e400',
    'nginx:1.27',
    '1.2.3',
    '+',
    '-',
    '.',
    'n',
    't',
    'f',
    '<<x',
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

describe('ParsedOutputs', () => {
  it('parses a text once while it is among the last texts, and keeps nothing for a text that does not parse', () => {
    // Given a memo of two texts
    const memo = new ParsedOutputs(2);
    const a = memo.parse('a: 1\n');
    // When the same text comes again after one other text, then a third and the first again
    expect(memo.parse('b: 2\n')).toEqual([{ b: 2 }]);
    expect(memo.parse('a: 1\n')).toBe(a);
    memo.parse('c: 3\n');
    memo.parse('b: 2\n');
    // Then the first was evicted and is parsed afresh (an equal, new result), and a bad text throws each time
    const again = memo.parse('a: 1\n');
    expect(again).toEqual([{ a: 1 }]);
    expect(again).not.toBe(a);
    expect(() => memo.parse('a: [\n')).toThrow();
    expect(() => memo.parse('a: [\n')).toThrow();
  });
});

describe('materializeDocuments on shared (memoized) documents', () => {
  it('builds fresh documents for every run, with its slots, aliases expanded and counted, and never writes into them', () => {
    // Given parsed documents with slots in values, in a key, in a plain scalar, and an aliased list
    const text = `a: \uE0000\uE001\nb: "x\uE0001\uE001"\n\uE0002\uE001: k\nl: &l [1, {m: n}]\nc: *l\n`;
    const documents = new ParsedOutputs().parse(text);
    // When they are materialized twice with different values and the first result is changed
    const first = materializeDocuments(documents, [5, 'y', 'key'], 100);
    ((first[0] as { l: unknown[] }).l[1] as Record<string, unknown>).m = 'changed';
    const second = materializeDocuments(documents, ['true', 'z', 'other'], 100);
    // Then each run has its own values and objects, the alias is two copies, and nodes are bounded
    expect(first[0]).toEqual({ a: 5, b: 'xy', key: 'k', l: [1, { m: 'changed' }], c: [1, { m: 'n' }] });
    expect(second[0]).toEqual({ a: true, b: 'xz', other: 'k', l: [1, { m: 'n' }], c: [1, { m: 'n' }] });
    expect(() => materializeDocuments(documents, [1, 'y', 'k'], 8)).toThrow(NodeLimitError);
    expect(() => materializeDocuments(parseYamlDocuments('\uE0000\uE001: 1\n\uE0001\uE001: 2\n'), ['same', 'same'], 100)).toThrow(DuplicateKeyError);
  });
});

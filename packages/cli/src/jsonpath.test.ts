// The template dialect's corners that need no cluster (test/e2e/cli-jsonpath.int.test.ts checks the output
// against kubectl itself): Go's printing of values, error positions, the tabwriter's layout.
import { describe, expect, it } from 'vitest';
import { formatCustomColumns, parseColumnsSpec, tabwriter } from './custom-columns.ts';
import { TemplateError, executeTemplate, goJson, goPrint, parseTemplate } from './jsonpath.ts';

const run = (template: string, data: unknown): string => executeTemplate(parseTemplate(template), data);

describe('jsonpath templates', () => {
  const list = {
    kind: 'List',
    items: [
      { metadata: { name: 'a', labels: { z: '1', a: '<&>' } }, n: 1.5, big: 1234567.5 },
      { metadata: { name: 'b' }, n: 2 },
    ],
  };

  it('prints values as Go does: maps as sorted, HTML-escaped JSON; floats as %v; results of one action joined by a space', () => {
    expect(run('{.items[*].metadata.name}', list)).toBe('a b');
    expect(run('{.items[0].metadata.labels}', list)).toBe('{"a":"\\u003c\\u0026\\u003e","z":"1"}');
    expect(run('{.items[*].n} {.items[0].big}', list)).toBe('1.5 2 1.2345675e+06');
    expect(run('{range .items[*]}[{.metadata.name}]{end}', list)).toBe('[a][b]');
    expect(run('{.items[?(@.big>1000.5)].metadata.name}', list)).toBe('a');
    // Go compares an int with a float no more than kubectl does
    expect(() => run('{.items[?(@.n>1.6)].metadata.name}', list)).toThrow('incompatible types for comparison');
    expect(goPrint({ b: [1, 'x'], a: null })).toBe('map[a:<nil> b:[1 x]]');
    expect(goJson({ b: [1], a: {} }, '    ', '')).toBe('{\n    "a": {},\n    "b": [\n        1\n    ]\n}');
  });

  it('names the character where a template breaks', () => {
    const error = (template: string): TemplateError => {
      try {
        parseTemplate(template);
      } catch (e) {
        if (e instanceof TemplateError) return e;
      }
      throw new Error(`${template} parsed`);
    };
    expect(error('{.items[').position).toBe(7);
    expect(error('x {.a}{.b').message).toBe('unclosed action at character 9: "x {.a}{.b" ← here');
    expect(error('{.items[?(@.a=="x)]}').problem).toBe('unterminated filter');
    expect(() => run('{.items[9]}', list)).toThrow('array index out of bounds: index 9, length 2 at character 8');
  });
});

describe('custom columns', () => {
  it("lays cells out as Go's tabwriter with kubectl's settings, <none> for nothing, values joined by commas", () => {
    const columns = parseColumnsSpec('NAME:.metadata.name,L:{.metadata.labels.z},NS:metadata.namespace');
    expect(formatCustomColumns(columns, [{ metadata: { name: 'a', labels: { z: '1' } } }, { metadata: { name: 'bb' } }])).toBe(
      'NAME   L        NS\na      1        <none>\nbb     <none>   <none>\n',
    );
    expect(tabwriter('a\tb\nlonger line\nc\td\n')).toBe('a     b\nlonger line\nc     d\n');
    expect(() => parseColumnsSpec('NAME')).toThrow('expected <header>:<json-path-expr>');
  });
});

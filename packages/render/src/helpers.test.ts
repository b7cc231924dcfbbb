import { describe, expect, it } from 'vitest';
import { RenderErrorReason } from './errors.ts';
import { render, renderError } from './test-support.ts';

const values = { s: '  Hello World  ', list: ['a', 'b'], m: { k: 'v', n: [1, 2] }, n: 5, yes: true, no: false, b64: 'aGk=', multi: 'l1\nl2' };

function data(expression: string): unknown {
  const [object] = render({ files: { 'app/cm.yaml.hbs': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  x: ${expression}\n` }, values });
  return (object?.data as Record<string, unknown>).x;
}

describe('helpers', () => {
  it('toYaml writes structure as it is, so a multi-line mapping needs nindent', () => {
    const source = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  x: {{toYaml values.m}}\n  y: 1\n';
    expect(renderError({ files: { 'app/cm.yaml.hbs': source }, values }).reason).toBe(RenderErrorReason.InvalidYaml);
  });

  it('toYaml and sha256 give the same text in every file of a render, and follow the values of each render', () => {
    // Given two files that dump the same mapping and hash the same value
    const file = (name: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  m: |{{nindent 4 (toYaml values.m)}}\n  h: {{sha256 values.s}}\n`;
    const files = { 'app/a.yaml.hbs': file('a'), 'app/b.yaml.hbs': file('b') };
    // When two renders with different values run one after the other
    const first = render({ files, values: { m: { k: 'v' }, s: 'one' } });
    const second = render({ files, values: { m: { k: 'w', l: [1] }, s: 'two' } });
    // Then within a render both files agree, and each render dumps and hashes its own values
    expect(first.map((o) => o.data)).toEqual([
      { m: 'k: v\n', h: '7692c3ad3540bb803c020b3aee66cd8887123234ea0c6e7143c0add73ff431ed' },
      { m: 'k: v\n', h: '7692c3ad3540bb803c020b3aee66cd8887123234ea0c6e7143c0add73ff431ed' },
    ]);
    expect(second.map((o) => o.data)).toEqual([
      { m: 'k: w\nl:\n  - 1\n', h: '3fc4ccfe745870e2c0d99f71f30ff0656c8dedd41cc1d7d3d376b0dbe685e2f3' },
      { m: 'k: w\nl:\n  - 1\n', h: '3fc4ccfe745870e2c0d99f71f30ff0656c8dedd41cc1d7d3d376b0dbe685e2f3' },
    ]);
  });

  it.each([
    ['{{nindent 4 (toYaml values.m)}}', { k: 'v', n: [1, 2] }],
    ['{{toJson values.list}}', ['a', 'b']],
    ['{{quote values.multi}}', 'l1\nl2'],
    ['{{squote values.s}}', '  Hello World  '],
    ['{{default "d" values.missing}}', 'd'],
    ['{{default "d" values.s}}', '  Hello World  '],
    ['{{b64enc "hi"}}', 'aGk='],
    ['{{b64dec values.b64}}', 'hi'],
    ['{{sha256 "abc"}}', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
    ['{{upper values.s}}', '  HELLO WORLD  '],
    ['{{lower "ABC"}}', 'abc'],
    ['{{trim values.s}}', 'Hello World'],
    ['{{replace " " "-" (trim values.s)}}', 'Hello-World'],
    ['{{join "," values.list}}', 'a,b'],
    ['{{eq values.n 5}}', true],
    ['{{ne values.n 5}}', false],
    ['{{lt values.n 6}}', true],
    ['{{le values.n 5}}', true],
    ['{{gt values.n 6}}', false],
    ['{{ge values.n 5}}', true],
    ['{{and values.yes values.n}}', true],
    ['{{or values.no values.missing}}', false],
    ['{{not values.no}}', true],
    ['{{empty values.list}}', false],
    ['"{{#if (and values.yes (eq values.n 5))}}on{{else}}off{{/if}}"', 'on'],
    ['"{{#unless values.no}}u{{/unless}}{{#with values.m}}{{k}}{{/with}}"', 'uv'],
    ['"{{#each values.list}}{{@index}}={{this}};{{/each}}"', '0=a;1=b;'],
    ['"<&>{{values.s}}"', '<&>  Hello World  '],
    ['{{required "need s" values.s}}', '  Hello World  '],
  ])('%s', (expression, want) => {
    expect(data(expression)).toEqual(want);
  });

  it.each([
    ['{{required "values.token is required" values.token}}', 'values.token is required'],
    ['{{lt values.n "x"}}', 'compares two numbers or two strings'],
    ['{{b64dec "not base64!"}}', 'not base64'],
    ['{{indent "x" values.s}}', 'width'],
    ['{{upper values.m}}', 'needs a string'],
    ['{{trim}}', 'takes 1 argument'],
  ])('%s fails with a helper error', (expression, says) => {
    const error = renderError({ files: { 'app/cm.yaml.hbs': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  x: ${expression}\n` }, values });
    expect(error.reason).toBe(RenderErrorReason.HelperFailed);
    expect(error.message).toContain(says);
    expect(error.line).toBe(6);
  });

  it('has no log helper (templates have no side effects)', () => {
    expect(renderError({ files: { 'app/a.yaml.hbs': '{{log "x"}}' } }).reason).toBe(RenderErrorReason.UnknownHelper);
  });
});

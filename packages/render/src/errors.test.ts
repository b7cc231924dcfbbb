// Bad input: every case is a fixture in testdata/bad/ and must fail with one RenderError that names
// file:line:column, never with a partial result.
import { describe, expect, it } from 'vitest';
import { RenderErrorReason } from './errors.ts';
import type { RenderErrorReason as Reason } from './errors.ts';
import { loadTree, renderError } from './test-support.ts';

const files = loadTree('bad');
const values = { name: 'web', image: 'nginx', labels: { a: 'b' }, items: Array.from({ length: 200 }, (_, i) => i) };

interface Case {
  readonly fixture: string;
  readonly reason: Reason;
  /** file:line:column the message must start with (file defaults to the fixture). */
  readonly at: string;
  readonly says: readonly string[];
  readonly limits?: { maxOperations?: number };
}

const cases: readonly Case[] = [
  {
    fixture: 'flow-mapping-gotcha.yaml.hbs',
    reason: RenderErrorReason.TemplateSyntax,
    at: 'bad/flow-mapping-gotcha.yaml.hbs:5:11',
    says: ['`{app: {{values.name}}}`', 'triple-stash', '`{ app: {{values.name}} }`'],
  },
  { fixture: 'invalid-yaml.yaml', reason: RenderErrorReason.InvalidYaml, at: 'bad/invalid-yaml.yaml:7:1', says: ['invalid YAML', 'same column'] },
  {
    fixture: 'invalid-yaml-output.yaml.hbs',
    reason: RenderErrorReason.InvalidYaml,
    at: 'bad/invalid-yaml-output.yaml.hbs:6:',
    says: ["template's output", 'Flow sequence'],
  },
  {
    fixture: 'unclosed-block.yaml.hbs',
    reason: RenderErrorReason.TemplateSyntax,
    at: 'bad/unclosed-block.yaml.hbs:5:1',
    says: ['`{{#if}}` is never closed', '{{/if}}'],
  },
  { fixture: 'mismatched-block.yaml.hbs', reason: RenderErrorReason.TemplateSyntax, at: 'bad/mismatched-block.yaml.hbs:1:', says: ["each doesn't match if"] },
  {
    fixture: 'unknown-helper.yaml.hbs',
    reason: RenderErrorReason.UnknownHelper,
    at: 'bad/unknown-helper.yaml.hbs:4:9',
    says: ['unknown helper `shout`', 'toYaml'],
  },
  {
    fixture: 'missing-partial.yaml.hbs',
    reason: RenderErrorReason.MissingPartial,
    at: 'bad/missing-partial.yaml.hbs:6:5',
    says: ['partial `nope` not found', '_partials/nope.hbs'],
  },
  {
    fixture: 'dynamic-partial.yaml.hbs',
    reason: RenderErrorReason.MissingPartial,
    at: 'bad/dynamic-partial.yaml.hbs:4:9',
    says: ['dynamic partial names are not supported'],
  },
  {
    fixture: 'recursive-partial.yaml.hbs',
    reason: RenderErrorReason.PartialDepth,
    at: 'bad/_partials/loop.hbs:2:1',
    says: ['deeper than 16 levels', '{{> loop}}'],
  },
  {
    fixture: 'missing-value.yaml.hbs',
    reason: RenderErrorReason.MissingValue,
    at: 'bad/missing-value.yaml.hbs:4:11',
    says: ['missing value `values.image.tag`', 'values.image is a string'],
  },
  { fixture: 'mapping-in-scalar.yaml.hbs', reason: RenderErrorReason.NotAScalar, at: 'bad/mapping-in-scalar.yaml.hbs:6:11', says: ['got a mapping', 'toYaml'] },
  { fixture: 'required.yaml.hbs', reason: RenderErrorReason.HelperFailed, at: 'bad/required.yaml.hbs:6:13', says: ['values.password is required'] },
  { fixture: 'alias-bomb.yaml', reason: RenderErrorReason.InvalidYaml, at: 'bad/alias-bomb.yaml:2:8', says: ['alias bomb'] },
  { fixture: 'invalid.json', reason: RenderErrorReason.InvalidJson, at: 'bad/invalid.json:3:29', says: ['invalid JSON'] },
  { fixture: 'no-name.yaml', reason: RenderErrorReason.InvalidObject, at: 'bad/no-name.yaml:1:1', says: ['ConfigMap has no metadata.name'] },
  {
    fixture: 'constructor.yaml.hbs',
    reason: RenderErrorReason.MissingValue,
    at: 'bad/constructor.yaml.hbs:4:11',
    says: ['missing value `values.constructor`'],
  },
  // lookup cannot reach the prototype either: it finds nothing, so the object has no name.
  { fixture: 'lookup-proto.yaml.hbs', reason: RenderErrorReason.InvalidObject, at: 'bad/lookup-proto.yaml.hbs:1:1', says: ['has no metadata.name'] },
  {
    fixture: 'too-much-work.yaml.hbs',
    reason: RenderErrorReason.LimitExceeded,
    at: 'bad/too-much-work.yaml.hbs:7:3',
    says: ['more than 10000 helper calls'],
    limits: { maxOperations: 10_000 },
  },
  {
    fixture: 'bad-wave.yaml',
    reason: RenderErrorReason.InvalidObject,
    at: 'bad/bad-wave.yaml:1:1',
    says: ['ConfigMap/web: annotation syncline.dev/apply-wave must be an integer', '"first"'],
  },
  { fixture: 'unknown-kind.yaml', reason: RenderErrorReason.UnknownKind, at: 'bad/unknown-kind.yaml:1:1', says: ['Widget/w', 'CustomResourceDefinition'] },
];

describe('bad input fails with a precise RenderError', () => {
  it.each(cases)('$fixture → $reason at $at', ({ fixture, reason, at, says, limits }) => {
    // given a fixture that is wrong in one way
    // when it is rendered
    const error = renderError({ files, path: `bad/${fixture}`, values, ...(limits === undefined ? {} : { limits }) });
    // then the error names the reason, the place and what to do
    expect(error.reason).toBe(reason);
    expect(error.message.startsWith(at)).toBe(true);
    for (const text of says) expect(error.message).toContain(text);
    expect(error.file).toBe(at.split(':')[0]);
  });

  it('reports the template line, not the output line, when a partial writes broken YAML', () => {
    const error = renderError({
      files: {
        'app/cm.yaml.hbs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels:\n    {{> labels}}\n',
        'app/_partials/labels.hbs': 'a: b\n  c: d: e\n',
      },
    });
    expect(error.reason).toBe(RenderErrorReason.InvalidYaml);
    expect(error.file).toBe('app/_partials/labels.hbs');
    expect(error.message).toContain('(from app/cm.yaml.hbs)');
  });

  it('maps output lines after a loop back to the template line', () => {
    const error = renderError({
      files: {
        'app/cm.yaml.hbs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n{{#each values.keys}}\n  k{{@index}}: v\n{{/each}}\n  bad: [\n',
      },
      values: { keys: [1, 2, 3, 4, 5] },
    });
    expect(error.reason).toBe(RenderErrorReason.InvalidYaml);
    // the output has 5 loop lines, so the output line is 11; the template line is 9
    expect(error.line).toBe(9);
  });

  it('fails on the output size limit', () => {
    const error = renderError({
      files: { 'app/a.yaml.hbs': '{{#each values.items}}{{toJson ../values.big}}{{/each}}' },
      values: { items: [1, 2, 3, 4], big: 'x'.repeat(400) },
      limits: { maxOutputBytes: 1000 },
    });
    expect(error.reason).toBe(RenderErrorReason.LimitExceeded);
    expect(error.message).toContain('more than 1000 bytes');
  });

  it('names both files when two documents describe the same object', () => {
    const cm = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: same\n';
    const error = renderError({ files: { 'app/a.yaml': cm, 'app/b.yaml': `---\n${cm}` } });
    expect(error.reason).toBe(RenderErrorReason.DuplicateObject);
    expect(error.message).toContain('in app/a.yaml:1 and in app/b.yaml:2');
  });

  it('rejects a cluster-scoped object that sets a namespace, and a namespaced one with nowhere to go', () => {
    const ns = renderError({ files: { 'app/ns.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  namespace: b\n' } });
    expect(ns.reason).toBe(RenderErrorReason.NamespaceMismatch);
    const cm = renderError({ files: { 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n' }, target: { name: 'nowhere' } });
    expect(cm.reason).toBe(RenderErrorReason.NamespaceMismatch);
    expect(cm.message).toContain('the target has none');
  });

  it('fails when the path holds nothing to render', () => {
    expect(renderError({ files: { 'other/a.yaml': 'a: b\n' } }).reason).toBe(RenderErrorReason.PathNotFound);
    expect(renderError({ files: { 'app/README.md': '# hi\n' } }).reason).toBe(RenderErrorReason.PathNotFound);
    expect(renderError({ files: { 'app/a.yaml': 'a: b\n' }, path: '../etc' }).reason).toBe(RenderErrorReason.PathNotFound);
  });

  it('fails when a target patch matches nothing', () => {
    const error = renderError({
      files: { 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n' },
      target: { name: 'staging', namespace: 'staging', patches: [{ target: { kind: 'ConfigMap', name: 'typo' }, patch: { data: { a: 'b' } } }] },
    });
    expect(error.reason).toBe(RenderErrorReason.InvalidPatch);
    expect(error.message).toContain('ConfigMap/typo');
  });
});

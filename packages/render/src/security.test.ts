// Values are data: they can never add keys or documents, reach prototypes, or show up in an error message.
import { describe, expect, it } from 'vitest';
import { RenderError } from './errors.ts';
import { render, renderError } from './test-support.ts';

const template =
  'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  plain: {{values.v}}\n  quoted: "{{values.v}}"\n  block: |\n    {{values.v}}\n';

describe('injection', () => {
  const attacks = [
    '\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: pwned\n',
    '\nfoo: bar',
    'x"\nfoo: "bar',
    "x'\nfoo: 'bar",
    'a: b',
    '{ "evil": true }',
    '[1, 2]',
    '&anchor value',
    '*alias',
    '!!binary aGk=',
    '# comment',
    '|\n  block',
    '\u2028foo: bar',
    '...\n---\nkind: Secret',
  ];

  it.each(attacks)('a value %j stays one string in every scalar position', (attack) => {
    // given a template that interpolates the value as a plain, a quoted and a block scalar
    // when the value is hostile
    const objects = render({ files: { 'app/cm.yaml.hbs': template }, values: { v: attack } });
    // then there is one object with exactly the keys the template wrote, each holding the value as text
    expect(objects).toHaveLength(1);
    const data = objects[0]?.data as Record<string, unknown>;
    expect(Object.keys(data)).toEqual(['plain', 'quoted', 'block']);
    expect(data.plain).toBe(attack);
    expect(data.quoted).toBe(attack);
    expect(data.block).toBe(`${attack}\n`);
  });

  it('a value in a key position stays one key', () => {
    const objects = render({
      files: { 'app/cm.yaml.hbs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  {{values.k}}: v\n' },
      values: { k: 'a: b\nc' },
    });
    expect(objects[0]?.data).toEqual({ 'a: b\nc': 'v' });
  });

  it('toYaml with nindent is the explicit way to emit structure', () => {
    const objects = render({
      files: {
        'app/cm.yaml.hbs':
          'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  labels: {{nindent 4 (toYaml values.labels)}}\ndata: {{toJson values.data}}\n',
      },
      values: { labels: { app: 'web', tier: 'front' }, data: { a: '1' } },
    });
    expect(objects[0]?.metadata.labels).toEqual({ app: 'web', tier: 'front' });
    expect(objects[0]?.data).toEqual({ a: '1' });
  });
});

describe('prototype tricks', () => {
  const probes = [
    'values.constructor',
    'values.__proto__',
    'values.toString',
    'values.list.constructor',
    'this.constructor',
    '@root.constructor',
    'values.s.length',
  ];

  it.each(probes)('{{%s}} is a missing value, not a way out', (probe) => {
    const error = renderError({
      files: { 'app/cm.yaml.hbs': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{${probe}}}\n` },
      values: { list: [1], s: 'str' },
    });
    expect(error.reason).toBe('MissingValue');
  });

  it('lookup and each only see own data', () => {
    const objects = render({
      files: {
        'app/cm.yaml.hbs':
          'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: "{{lookup values "constructor"}}"\n  b: "{{#each values.m}}{{@key}},{{/each}}"\n',
      },
      values: { m: { x: 1 } },
    });
    expect(objects[0]?.data).toEqual({ a: '', b: 'x,' });
  });

  it('a value key named __proto__ is plain data and pollutes nothing', () => {
    const objects = render({
      files: { 'app/cm.yaml.hbs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n__proto__:\n  polluted: {{values.v}}\n' },
      values: JSON.parse('{"v": "yes", "__proto__": {"polluted": true}}') as Record<string, unknown>,
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(objects[0], '__proto__')).toBe(true);
  });
});

describe('secrets never appear in errors', () => {
  const secret = 's3cr3t-Value-42';
  const templates = [
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  x: {{values.password.inner}}\n',
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  x: {{values.password}}\n  bad: [\n',
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  x: {{{values.password}}}: [\n',
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  x: {{b64dec values.password}}\n',
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: {{values.password}}\n  a: {{values.password}}\n',
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  {{values.password}}: 1\n  {{values.password}}: 2\n',
  ];

  it.each(templates.map((t, i) => [i, t] as const))('template %i fails without quoting the value', (_index, source) => {
    const error = renderError({ files: { 'app/cm.yaml.hbs': source }, values: { password: secret } });
    expect(error).toBeInstanceOf(RenderError);
    expect(error.message).not.toContain(secret);
    expect(error.message).not.toContain('s3cr3t');
    expect(error.message).toMatch(/^app\/cm\.yaml\.hbs(:\d+:\d+)?: /);
  });
});

describe('{{ }} is structure-safe; {{{ }}} is raw by design (README, "Templates and values")', () => {
  const extraDocument = '\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: pwned\n';
  const page = (mustache: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  x: ${mustache}\n`;

  it.each(['{{values.v}}', '"{{values.v}}"', '{{quote values.v}}', '{{squote values.v}}', '{{nindent 4 (toYaml values.v)}}', '{{toJson values.v}}'])(
    '%s cannot add a document or a key',
    (mustache) => {
      for (const v of [extraDocument, 'a\nextra: key', '...\n---\nkind: Secret']) {
        const objects = render({ files: { 'app/cm.yaml.hbs': page(mustache) }, values: { v } });
        expect(objects).toHaveLength(1);
        expect(objects[0]?.data).toEqual({ x: v });
      }
    },
  );

  it('{{{ }}} writes the value raw: a value can add a document through it', () => {
    // given a template that uses the documented raw escape hatch on a value
    // when the value holds a document separator
    const objects = render({ files: { 'app/cm.yaml.hbs': page('{{{values.v}}}') }, values: { v: `ok${extraDocument}` } });
    // then the value's text became YAML structure: that is what {{{ }}} is for, so it is only for trusted text
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['ConfigMap/web', 'ClusterRoleBinding/pwned']);
  });

  it('a render error in a template that uses {{{ }}} points at it, without the value', () => {
    const error = renderError({ files: { 'app/cm.yaml.hbs': page('{{{values.v}}}') }, values: { v: 'ok\n s3cr3t: [' } });
    expect(error.reason).toBe('InvalidYaml');
    expect(error.message).toContain('note: app/cm.yaml.hbs:6:6 writes a value raw with {{{ }}}');
    expect(error.message).not.toContain('s3cr3t');
  });

  it('the note names a {{{ }}} in a partial, and counts the others', () => {
    const error = renderError({
      files: {
        'app/cm.yaml.hbs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  {{> body}}\n',
        'app/_partials/body.hbs': 'a: {{{values.a}}}\nb: {{&values.b}}\n',
      },
      values: { a: 'x', b: 'y: [' },
    });
    expect(error.message).toContain('note: app/_partials/body.hbs:1:4 (and 1 more) writes a value raw');
  });

  it('an object made invalid by a raw value gets the note too; a template without {{{ }}} does not', () => {
    const raw = renderError({ files: { 'app/cm.yaml.hbs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  {{{values.v}}}\n' }, values: { v: 'labels: {}' } });
    expect(raw.reason).toBe('InvalidObject');
    expect(raw.message).toContain('writes a value raw with {{{ }}}');
    const escaped = renderError({ files: { 'app/cm.yaml.hbs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {{values.v}}\n' }, values: { v: 'x' } });
    expect(escaped.reason).toBe('InvalidObject');
    expect(escaped.message).not.toContain('note:');
  });
});

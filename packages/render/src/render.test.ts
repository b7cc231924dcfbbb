import { describe, expect, it } from 'vitest';
import { RenderError, RenderErrorReason } from './errors.ts';
import { TemplateCache } from './template.ts';
import { render, renderError } from './test-support.ts';

const cm = (body: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n${body}`;

describe('renderTarget', () => {
  it('gives templates values, target and source', () => {
    const [object] = render({
      files: {
        'app/cm.yaml.hbs': cm(
          'data:\n  who: "{{target.name}}/{{target.namespace}}/{{target.cluster}}"\n  repo: {{source.repo}}\n  rev: {{source.revision}}\n  path: {{source.path}}\n  image: {{values.image}}\n',
        ),
      },
      values: { image: 'nginx:1' },
      target: { name: 'prod', namespace: 'web-prod', cluster: 'east' },
    });
    expect(object?.data).toEqual({
      who: 'prod/web-prod/east',
      repo: 'https://git.example.com/org/configs.git',
      rev: '0123456789abcdef0123456789abcdef01234567',
      path: 'app',
      image: 'nginx:1',
    });
  });

  it('types plain interpolations like YAML would and keeps quoted ones strings', () => {
    const [object] = render({
      files: {
        'app/cm.yaml.hbs': cm(
          'spec:\n  n: {{values.n}}\n  s: "{{values.n}}"\n  t: {{values.t}}\n  f: {{values.f}}\n  z: {{values.e}}\n  joined: {{values.n}}{{values.n}}\n',
        ),
      },
      values: { n: 3, t: 'true', f: 1.5, e: '' },
    });
    expect(object?.spec).toEqual({ n: 3, s: '3', t: true, f: 1.5, z: null, joined: 33 });
  });

  it('passes .yaml, .yml and .json through untouched, {{ }} included, and reads multi-document YAML', () => {
    const objects = render({
      files: {
        'app/rules.yaml':
          'apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: r\nspec:\n  summary: "{{ $labels.instance }} is down"\n',
        'app/two.yml':
          '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# nothing\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n',
        'app/c.json': '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}',
        'app/notes.txt': 'ignored',
        'app/.hidden/x.yaml': 'ignored: true',
      },
    });
    expect(objects.map((o) => o.metadata.name)).toEqual(['c', 'a', 'b', 'r']);
    expect(objects[3]?.spec).toEqual({ summary: '{{ $labels.instance }} is down' });
  });

  it('expands kind: List', () => {
    const objects = render({
      files: {
        'app/list.yaml':
          'apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: b}\n',
      },
    });
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['Secret/b', 'ConfigMap/a']);
  });

  it('puts namespaced objects without a namespace in the target namespace and leaves cluster-scoped ones alone', () => {
    const objects = render({
      files: {
        'app/all.yaml':
          'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: r\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: other\n',
      },
    });
    expect(objects.map((o) => [o.metadata.name, o.metadata.namespace])).toEqual([
      ['a', 'staging'],
      ['b', 'other'],
      ['r', undefined],
    ]);
  });

  it('orders Namespaces and CRDs first, then by kind, keeping file order within a kind', () => {
    const doc = (apiVersion: string, kind: string, name: string) => `---\napiVersion: ${apiVersion}\nkind: ${kind}\nmetadata:\n  name: ${name}\n`;
    const objects = render({
      files: {
        'app/a.yaml': doc('apps/v1', 'Deployment', 'd') + doc('v1', 'Service', 's') + doc('example.com/v1', 'Widget', 'w'),
        'app/b.yaml':
          doc('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'widgets.example.com') + doc('v1', 'Namespace', 'n') + doc('v1', 'ConfigMap', 'c2'),
        'app/c.yaml': doc('v1', 'ConfigMap', 'c1'),
      },
      discovery: { isNamespaced: (_apiVersion, kind) => (kind === 'Widget' ? true : kind !== 'Namespace' && kind !== 'CustomResourceDefinition') },
    });
    expect(objects.map((o) => o.metadata.name)).toEqual(['n', 'widgets.example.com', 'c2', 'c1', 's', 'd', 'w']);
  });

  it('learns the scope of a kind from a CRD rendered in the same target', () => {
    const crd =
      'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets}\n';
    const objects = render({ files: { 'app/crd.yaml': crd, 'app/w.yaml': 'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n' } });
    expect(objects[1]?.metadata.namespace).toBe('staging');
  });

  it('applies target patches after rendering (JSON merge patch)', () => {
    const [object] = render({
      files: { 'app/cm.yaml': cm('data:\n  a: "1"\n  b: "2"\n') },
      target: {
        name: 'staging',
        namespace: 'staging',
        patches: [{ target: { kind: 'ConfigMap', name: 'web' }, patch: { data: { a: null, c: '3' }, metadata: { labels: { tier: 'web' } } } }],
      },
    });
    expect(object?.data).toEqual({ b: '2', c: '3' });
    expect(object?.metadata.labels).toEqual({ tier: 'web' });
  });

  it('holds a patched object to the scope rule: a patch that gives a cluster-scoped object a namespace is a render error naming it', () => {
    const role = 'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: wide\nrules: []\n';
    const error = renderError({
      files: { 'app/role.yaml': role },
      target: {
        name: 'staging',
        namespace: 'staging',
        patches: [{ target: { kind: 'ClusterRole', name: 'wide' }, patch: { metadata: { namespace: 'staging' } } }],
      },
    });
    expect(error.reason).toBe(RenderErrorReason.NamespaceMismatch);
    expect(error.message).toContain('ClusterRole/wide is cluster-scoped but sets metadata.namespace');
    // a patch that drops a namespaced object's namespace puts it back in the target's
    const [object] = render({
      files: { 'app/cm.yaml': cm('data: {}\n') },
      target: { name: 'staging', namespace: 'staging', patches: [{ target: { kind: 'ConfigMap', name: 'web' }, patch: { metadata: { namespace: null } } }] },
    });
    expect(object?.metadata.namespace).toBe('staging');
  });

  it('layers target values over the given values', () => {
    const [object] = render({
      files: { 'app/cm.yaml.hbs': cm('data:\n  a: {{values.a}}\n  b: {{values.b}}\n') },
      values: { a: 'base', b: 'base' },
      target: { name: 's', namespace: 's', values: { b: 'target' } },
    });
    expect(object?.data).toEqual({ a: 'base', b: 'target' });
  });

  it('renders partials from _partials/ with their indentation', () => {
    const [object] = render({
      files: {
        'app/cm.yaml.hbs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  labels:\n    {{> common/labels}}\n',
        'app/_partials/common/labels.hbs': 'app: {{values.app}}\nteam: {{values.team}}\n',
      },
      values: { app: 'web', team: 'core' },
    });
    expect(object?.metadata.labels).toEqual({ app: 'web', team: 'core' });
  });

  it('lets a missing value be tested with if and default, but not printed', () => {
    const [object] = render({
      files: { 'app/cm.yaml.hbs': cm('data:\n  a: {{#if values.nope}}yes{{else}}no{{/if}}\n  b: {{default "dflt" values.nope.deeper}}\n') },
    });
    expect(object?.data).toEqual({ a: 'no', b: 'dflt' });
    expect(renderError({ files: { 'app/cm.yaml.hbs': cm('data:\n  a: {{values.nope}}\n') } }).reason).toBe(RenderErrorReason.MissingValue);
  });

  it('reports a missing value inside a loop relative to the loop item', () => {
    const error = renderError({
      files: { 'app/cm.yaml.hbs': cm('data:\n{{#each values.items}}\n  {{name}}: {{port}}\n{{/each}}\n') },
      values: { items: [{ name: 'a' }] },
    });
    expect(error.message).toContain('missing value `port`');
    expect(error.message).toContain('enclosing block');
    expect(error.line).toBe(7);
  });

  it('runs the built-in block helpers, data variables and parent lookups as Handlebars does', () => {
    // Given blocks over a list and a mapping, with, each with @index/@key/else, block params and ../
    const body = [
      'a: "{{#values.list}}{{this}};{{/values.list}}"',
      'b: "{{#with values.m}}{{k}}-{{@root.values.n}}{{/with}}"',
      'c: "{{#each values.list}}{{@index}}{{@first}}{{this}}{{else}}none{{/each}}"',
      'd: "{{#each values.m}}{{@key}}={{this}}{{../values.n}}{{/each}}"',
      'e: "{{#each values.list as |item i|}}{{i}}:{{item}}{{/each}}{{#each values.empty}}x{{else}}none{{/each}}"',
      'f: "{{#values.off}}x{{else}}inverse{{/values.off}}{{#unless values.off}}!{{/unless}}"',
    ].join('\n  ');
    // When it renders
    const [object] = render({
      files: { 'app/cm.yaml.hbs': cm(`data:\n  ${body}\n`) },
      values: { list: ['a', 'b'], m: { k: 'v' }, n: 3, empty: [], off: false },
    });
    // Then every block gives what Handlebars gives
    expect(object?.data).toEqual({ a: 'a;b;', b: 'v-3', c: '0truea1falseb', d: 'k=v3', e: '0:a1:bnone', f: 'inverse!' });
  });

  it('is deterministic: the same input gives the same output', () => {
    const files = { 'app/cm.yaml.hbs': cm('data:\n  a: {{values.a}}\n'), 'app/x.yaml': 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n' };
    expect(render({ files, values: { a: '1' } })).toEqual(render({ files, values: { a: '1' } }));
  });
});

describe('TemplateCache', () => {
  const files = { 'app/cm.yaml.hbs': cm('data:\n  t: {{target.name}}\n'), 'app/_partials/p.hbs': 'x' };

  it('compiles each template once per snapshot and reuses it for every target', () => {
    const cache = new TemplateCache();
    for (const name of ['a', 'b', 'c']) render({ files, cache, target: { name, namespace: name } });
    expect(cache.stats).toEqual({ hits: 2, misses: 1 });
    expect(cache.size).toBe(1);
  });

  it('reuses a template across commits while its text is the same, and recompiles when the text changes', () => {
    const cache = new TemplateCache();
    render({ files, cache });
    render({ files, cache, source: { repo: 'r', revision: 'other' } });
    expect(cache.stats).toEqual({ hits: 1, misses: 1 });
    const changed = { ...files, 'app/cm.yaml.hbs': cm('data:\n  changed: "1"\n') };
    expect(render({ files: changed, cache, source: { repo: 'r', revision: 'third' } })[0]).toMatchObject({ data: { changed: '1' } });
    expect(cache.stats).toEqual({ hits: 1, misses: 2 });
    // Both versions stay: a sync pinned to the old commit does not evict the new one.
    render({ files, cache });
    render({ files: changed, cache });
    expect(cache.stats).toEqual({ hits: 3, misses: 2 });
    expect(cache.size).toBe(2);
  });

  it('evicts the least recently compiled file first and bounds the versions of one file', () => {
    const cache = new TemplateCache({ maxEntries: 1 });
    render({ files, cache });
    render({ files: { 'app/other.yaml.hbs': cm('data:\n  o: "1"\n') }, cache });
    expect(cache.size).toBe(1);
    render({ files, cache });
    expect(cache.stats).toEqual({ hits: 0, misses: 3 });
    const versions = new TemplateCache();
    for (let i = 0; i < 10; i++) render({ files: { 'app/cm.yaml.hbs': cm(`data:\n  v: "${i}"\n`) }, cache: versions });
    expect(versions.size).toBeLessThanOrEqual(4);
    cache.clear();
    expect(cache.size).toBe(0);
  });

  it('reuses the parsed output of a template across targets without sharing objects between their results', () => {
    // Given a template whose output text is the same for every target (its values are slots)
    const cache = new TemplateCache();
    const template = { 'app/cm.yaml.hbs': cm('data:\n  t: {{target.name}}\n  n: {{values.n}}\n  list: [{{values.n}}, "{{target.name}}"]\n') };
    // When two targets render it in turn and the first result is changed by its caller
    const first = render({ files: template, cache, values: { n: 1 }, target: { name: 'a', namespace: 'a' } });
    (first[0]?.data as Record<string, unknown>).t = 'changed by the caller';
    const second = render({ files: template, cache, values: { n: 2 }, target: { name: 'b', namespace: 'b' } });
    // Then each has its own values, typed as YAML types them, and the change did not leak into the second
    expect(second).toEqual(render({ files: template, values: { n: 2 }, target: { name: 'b', namespace: 'b' } }));
    expect(second[0]).toMatchObject({ metadata: { namespace: 'b' }, data: { t: 'b', n: 2, list: [2, 'b'] } });
    expect(render({ files: template, cache, values: { n: 1 }, target: { name: 'a', namespace: 'a' } })[0]).toMatchObject({ data: { t: 'a', n: 1 } });
  });

  it('gives the same objects with and without a cache', () => {
    expect(render({ files, cache: new TemplateCache() })).toEqual(render({ files }));
  });
});

describe('RenderError', () => {
  it('carries structured fields and formats file:line:column', () => {
    const error = new RenderError({ reason: RenderErrorReason.InvalidYaml, file: 'a.yaml', line: 3, column: 7, detail: 'broken' });
    expect(error).toMatchObject({
      name: 'RenderError',
      reason: 'InvalidYaml',
      file: 'a.yaml',
      line: 3,
      column: 7,
      detail: 'broken',
      message: 'a.yaml:3:7: broken',
    });
    expect(new RenderError({ reason: RenderErrorReason.InvalidPatch, detail: 'x' }).message).toBe('x');
  });
});

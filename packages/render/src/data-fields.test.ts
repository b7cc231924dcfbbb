// Secret and ConfigMap data the API server would refuse fail at render time, at the key's line, and the error
// never shows the value.
import { describe, expect, it } from 'vitest';
import { base64Problem, dataKeyProblem } from './data-fields.ts';
import { RenderErrorReason } from './errors.ts';
import { render, renderError } from './test-support.ts';

// Recognisable, so a leak is easy to spot; each variant below is built from it.
const secret = 'Sup3rSecret-P@ssw0rd-9f3k';
const secretB64 = Buffer.from(secret).toString('base64');
// 27 bytes, so the last four characters encode 0xfb 0xff 0xbf: '-_-_' in the URL-safe alphabet.
const secretB64Url = Buffer.concat([Buffer.from(secret.slice(0, 24)), Buffer.from([0xfb, 0xff, 0xbf])]).toString('base64url');

const secretYaml = (value: string, field = 'data'): string =>
  `apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n${field}:\n  user: YWRtaW4=\n  password: ${value}\n`;

function expectNoLeak(message: string, value: string): void {
  expect(message).not.toContain(secret);
  expect(message).not.toContain('P@ssw0rd');
  if (value.length >= 4) expect(message).not.toContain(value);
}

describe('Secret data must be what Kubernetes decodes (Go base64.StdEncoding)', () => {
  const refused: { name: string; yaml: string; value: string; says: string }[] = [
    { name: 'plain text', yaml: JSON.stringify(secret), value: secret, says: 'outside the base64 alphabet' },
    { name: 'the URL-safe alphabet', yaml: JSON.stringify(secretB64Url), value: secretB64Url, says: 'URL-safe' },
    { name: 'missing padding', yaml: JSON.stringify(secretB64.replace(/=+$/, '')), value: secretB64.replace(/=+$/, ''), says: 'multiple of 4' },
    { name: 'extra padding', yaml: JSON.stringify('YWJj='), value: 'YWJj=', says: 'multiple of 4' },
    { name: 'three = signs', yaml: JSON.stringify('cGE==='), value: 'cGE===', says: "'=' padding may only end it" },
    { name: 'padding in the middle', yaml: JSON.stringify(`${secretB64}${secretB64}`), value: `${secretB64}${secretB64}`, says: "'=' padding may only end it" },
    { name: 'a space inside', yaml: JSON.stringify(`${secretB64.slice(0, 8)} ${secretB64.slice(8)}`), value: secretB64.slice(8), says: 'spaces or tabs' },
    { name: 'a tab inside', yaml: JSON.stringify(`${secretB64.slice(0, 8)}\t${secretB64.slice(8)}`), value: secretB64.slice(8), says: 'spaces or tabs' },
    { name: 'a number', yaml: '12345678', value: '12345678', says: 'is a number, not a base64 string' },
    { name: 'a boolean', yaml: 'true', value: 'true-never-shown', says: 'is a boolean' },
    { name: 'null', yaml: '~', value: '~~~~', says: 'is null' },
    { name: 'a mapping', yaml: `{inner: ${JSON.stringify(secretB64)}}`, value: secretB64, says: 'is a mapping' },
    { name: 'a list', yaml: `[${JSON.stringify(secretB64)}]`, value: secretB64, says: 'is a list' },
  ];

  it.each(refused)('refuses $name at the key, naming object and key but not the value', ({ yaml, value, says }) => {
    // given a Secret whose data.password is not what the API server decodes
    // when it is rendered
    const error = renderError({ files: { 'app/secret.yaml': secretYaml(yaml) } });
    // then it fails at file:line of the key, with kind, name, namespace and key, and never the value
    expect(error.reason).toBe(RenderErrorReason.InvalidObject);
    expect(error.message.startsWith('app/secret.yaml:7:3: Secret/db in staging: ')).toBe(true);
    expect(error.file).toBe('app/secret.yaml');
    expect(error.line).toBe(7);
    expect(error.message).toContain('`data` key `password`');
    expect(error.message).toContain(says);
    expectNoLeak(error.message, value);
  });

  it.each([
    { name: 'canonical base64', yaml: JSON.stringify(secretB64) },
    { name: 'an empty value', yaml: '""' },
    { name: 'base64 wrapped over lines in a block scalar', yaml: `|\n    ${secretB64.slice(0, 12)}\n    ${secretB64.slice(12)}` },
    { name: 'CRLF line breaks', yaml: JSON.stringify(`${secretB64.slice(0, 12)}\r\n${secretB64.slice(12)}\r\n`) },
    { name: 'one = of padding', yaml: 'YWI=' },
    { name: 'non-zero trailing bits (Go is not strict)', yaml: 'YWJ=' },
  ])('accepts $name', ({ yaml }) => {
    const [object] = render({ files: { 'app/secret.yaml': secretYaml(yaml) } });
    expect(object?.kind).toBe('Secret');
  });

  it('refuses data that is not a mapping', () => {
    const error = renderError({ files: { 'app/secret.yaml': 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata: [a, b]\n' } });
    expect(error.reason).toBe(RenderErrorReason.InvalidObject);
    expect(error.message).toMatch(/^app\/secret\.yaml:5:1: Secret\/db in staging: `data` is a list/);
  });

  it('leaves Secrets of other API groups alone', () => {
    const files = { 'app/w.yaml': 'apiVersion: example.com/v1\nkind: Secret\nmetadata:\n  name: w\ndata:\n  x: 1\n' };
    expect(render({ files, discovery: { isNamespaced: () => true } })).toHaveLength(1);
  });
});

describe('stringData values must be strings', () => {
  it.each([
    { name: 'a number', yaml: '8080', says: 'is a number, not a string (quote it)' },
    { name: 'a boolean', yaml: 'false', says: 'is a boolean' },
    { name: 'null', yaml: 'null', says: 'is null' },
    { name: 'a mapping', yaml: `{a: ${JSON.stringify(secret)}}`, says: 'is a mapping, not a string' },
  ])('refuses $name', ({ yaml, says }) => {
    const error = renderError({ files: { 'app/secret.yaml': secretYaml(yaml, 'stringData') } });
    expect(error.reason).toBe(RenderErrorReason.InvalidObject);
    expect(error.message.startsWith('app/secret.yaml:7:3: Secret/db in staging: the value of `stringData` key `password`')).toBe(true);
    expect(error.message).toContain(says);
    expectNoLeak(error.message, secret);
  });

  it('takes any string, plain text included', () => {
    const [object] = render({ files: { 'app/secret.yaml': secretYaml(JSON.stringify(`${secret} with spaces\n`), 'stringData').replace('YWRtaW4=', 'admin') } });
    expect(object?.stringData).toEqual({ user: 'admin', password: `${secret} with spaces\n` });
  });
});

describe('data keys', () => {
  it.each(['a b', '.', '..', '..hidden', 'key/with/slash', 'ключ', 'k'.repeat(254), ''])('refuses the key %j in data, stringData and binaryData', (key) => {
    for (const [kind, field] of [
      ['Secret', 'data'],
      ['Secret', 'stringData'],
      ['ConfigMap', 'binaryData'],
    ] as const) {
      const error = renderError({
        files: { 'app/o.yaml': `apiVersion: v1\nkind: ${kind}\nmetadata:\n  name: o\n${field}:\n  ${JSON.stringify(key)}: YWI=\n` },
      });
      expect(error.reason, `${kind} ${field}`).toBe(RenderErrorReason.InvalidObject);
      expect(error.message).toContain(`\`${field}\` key`);
      expect(error.message).toContain('is not a valid key');
      expect(error.line).toBe(6);
    }
  });

  it.each(['tls.crt', '.dockerconfigjson', 'a_b-c.1', 'k'.repeat(253)])('accepts the key %j', (key) => {
    expect(dataKeyProblem(key)).toBeUndefined();
    expect(render({ files: { 'app/s.yaml': `apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  ${JSON.stringify(key)}: YWI=\n` } })).toHaveLength(1);
  });
});

describe('ConfigMap binaryData follows the Secret data rule', () => {
  it('refuses a value that is not base64, at its key', () => {
    const error = renderError({
      files: {
        'app/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: other\nbinaryData:\n  logo.png: ${JSON.stringify(secret)}\n`,
      },
    });
    expect(error.message.startsWith('app/cm.yaml:7:3: ConfigMap/cfg in other: the value of `binaryData` key `logo.png` is not valid base64')).toBe(true);
    expectNoLeak(error.message, secret);
  });

  it('refuses a key that is in both data and binaryData', () => {
    const error = renderError({ files: { 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: x\nbinaryData:\n  a: YWI=\n' } });
    expect(error.message).toMatch(/^app\/cm\.yaml:8:3: ConfigMap\/cfg in staging: key `a` is in both `data` and `binaryData`/);
  });

  it('leaves ConfigMap data alone (templates use it freely; the API server checks text itself)', () => {
    const [object] = render({ files: { 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  n: 1\nbinaryData:\n  b: YWI=\n' } });
    expect(object?.data).toEqual({ n: 1 });
  });
});

describe('where the error points', () => {
  it('a template: the template line that writes the key; b64enc is the fix', () => {
    const template = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{values.name}}\ndata:\n  user: YWRtaW4=\n  password: {{values.password}}\n';
    const error = renderError({ files: { 'app/secret.yaml.hbs': template }, values: { name: 'db', password: secret } });
    expect(error.message.startsWith('app/secret.yaml.hbs:7:3: Secret/db in staging: the value of `data` key `password` is not valid base64')).toBe(true);
    expect(error.message).toContain('b64enc');
    expectNoLeak(error.message, secret);

    const [object] = render({
      files: { 'app/secret.yaml.hbs': template.replace('{{values.password}}', '{{b64enc values.password}}') },
      values: { name: 'db', password: secret },
    });
    expect(object?.data).toEqual({ user: 'YWRtaW4=', password: secretB64 });
  });

  it('a key written in a partial: the partial line', () => {
    const error = renderError({
      files: {
        'app/secret.yaml.hbs': 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  {{> creds}}\n',
        'app/_partials/creds.hbs': 'user: YWRtaW4=\npassword: {{values.password}}\n',
      },
      values: { password: secret },
    });
    expect(error.file).toBe('app/_partials/creds.hbs');
    expect(error.line).toBe(2);
    expectNoLeak(error.message, secret);
  });

  it('an item of a kind: List: the key in that item', () => {
    const list = `apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: a}\n  data: {ok: YWI=}\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: b}\n  data:\n    ok: YWI=\n    bad: ${JSON.stringify(secret)}\n`;
    const error = renderError({ files: { 'app/list.yaml': list } });
    expect(error.message.startsWith('app/list.yaml:13:5: Secret/b in staging: ')).toBe(true);
  });

  it('the second document of a stream', () => {
    const error = renderError({ files: { 'app/two.yaml': `apiVersion: v1\nkind: Secret\nmetadata:\n  name: a\n---\n${secretYaml(JSON.stringify(secret))}` } });
    expect(error.message.startsWith('app/two.yaml:12:3: Secret/db in staging: ')).toBe(true);
  });

  it('a JSON manifest: the file', () => {
    const error = renderError({ files: { 'app/s.json': JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { k: secret } }) } });
    expect(error.message.startsWith('app/s.json: Secret/s in staging: the value of `data` key `k` is not valid base64')).toBe(true);
    expectNoLeak(error.message, secret);
  });

  it('a value a target patch put there: the document, saying so', () => {
    const error = renderError({
      files: { 'app/secret.yaml': secretYaml(JSON.stringify(secretB64)) },
      target: { name: 'staging', namespace: 'staging', patches: [{ target: { kind: 'Secret', name: 'db' }, patch: { data: { password: secret } } }] },
    });
    expect(error.message.startsWith('app/secret.yaml:1:1: Secret/db in staging: ')).toBe(true);
    expect(error.message).toContain('after targets[].patches');
    expectNoLeak(error.message, secret);
  });
});

describe('data mode stays valid', () => {
  const bytes = new Uint8Array([0xfb, 0xff, 0xbf, 0x00, 0x3e, 0x3f]);

  it('a Secret from text, a template and binary files is all canonical base64', () => {
    const [object] = render({
      files: new Map<string, string | Uint8Array>([
        ['app/a.txt', secret],
        ['app/b.bin', bytes],
        ['app/c.conf.hbs', 'pw={{values.pw}}\n'],
      ]),
      values: { pw: secret },
      target: { name: 's', namespace: 'ns', data: { type: 'Secret', name: 'creds' } },
    });
    const data = object?.data as Record<string, string>;
    expect(Object.keys(data)).toEqual(['a.txt', 'b.bin', 'c.conf']);
    for (const value of Object.values(data)) expect(base64Problem(value)).toBeUndefined();
    expect(Buffer.from(data['b.bin'] ?? '', 'base64')).toEqual(Buffer.from(bytes));
  });

  it('a ConfigMap keeps binary files in canonical binaryData', () => {
    const [object] = render({
      files: new Map<string, string | Uint8Array>([['app/b.bin', bytes]]),
      target: { name: 's', namespace: 'ns', data: { type: 'ConfigMap', name: 'cfg' } },
    });
    expect(base64Problem((object?.binaryData as Record<string, string>)['b.bin'] ?? 'x')).toBeUndefined();
  });

  it.each(['..x', '.'])('refuses the key %j', (key) => {
    const error = renderError({
      files: { 'app/a.txt': 'x' },
      path: 'app/a.txt',
      target: { name: 's', namespace: 'ns', data: { type: 'Secret', name: 'creds', key } },
    });
    expect(error.reason).toBe(RenderErrorReason.InvalidDataMode);
    expect(error.message).toContain('not a valid data key');
  });
});

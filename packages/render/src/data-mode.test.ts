import { describe, expect, it } from 'vitest';
import { RenderErrorReason } from './errors.ts';
import { render, renderError } from './test-support.ts';

describe('data mode', () => {
  it('turns one file into one key of a ConfigMap, rendering .hbs as text', () => {
    const [object] = render({
      files: { 'app/app.yaml.hbs': 'env: {{target.name}}\nmsg: {{values.msg}}\n' },
      path: 'app/app.yaml.hbs',
      values: { msg: 'a\nb: c' },
      target: { name: 'staging', namespace: 'staging', data: { type: 'ConfigMap', name: 'app-config' } },
    });
    expect(object).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'app-config', namespace: 'staging' },
      data: { 'app.yaml': 'env: staging\nmsg: a\nb: c\n' },
    });
  });

  it('uses the given key for a single file, and base64 for a Secret', () => {
    const [object] = render({
      files: { 'app/creds.txt': 'user=admin' },
      path: 'app/creds.txt',
      target: { name: 's', namespace: 'ns', data: { type: 'Secret', name: 'creds', key: 'credentials' } },
    });
    expect(object).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: { name: 'creds', namespace: 'ns' },
      data: { credentials: Buffer.from('user=admin').toString('base64') },
    });
  });

  it('makes every file of a directory a key; binary content goes to binaryData', () => {
    const [object] = render({
      files: new Map<string, string | Uint8Array>([
        ['app/b.conf', 'b'],
        ['app/a.properties', 'a=1'],
        ['app/logo.bin', new Uint8Array([0xff, 0xfe, 0x00])],
      ]),
      target: {
        name: 's',
        namespace: 'ns',
        data: { type: 'ConfigMap', name: 'cfg' },
        patches: [{ target: { kind: 'ConfigMap', name: 'cfg' }, patch: { metadata: { labels: { a: 'b' } } } }],
      },
    });
    expect(object?.data).toEqual({ 'a.properties': 'a=1', 'b.conf': 'b' });
    expect(object?.binaryData).toEqual({ 'logo.bin': Buffer.from([0xff, 0xfe, 0x00]).toString('base64') });
    expect(object?.metadata.labels).toEqual({ a: 'b' });
  });

  it.each([
    {
      name: 'key with several files',
      files: { 'app/a': '1', 'app/b': '2' },
      data: { type: 'ConfigMap' as const, name: 'x', key: 'k' },
      says: 'key only applies to one file',
    },
    {
      name: 'two files with one base name',
      files: { 'app/x/a': '1', 'app/y/a': '2' },
      data: { type: 'ConfigMap' as const, name: 'x' },
      says: 'two files give the data key `a`',
    },
    { name: 'a key Kubernetes refuses', files: { 'app/a b': '1' }, data: { type: 'Secret' as const, name: 'x' }, says: 'not a valid data key' },
  ])('fails on $name', ({ files, data, says }) => {
    const error = renderError({ files: files as unknown as Record<string, string>, target: { name: 's', namespace: 'ns', data } });
    expect(error.reason).toBe(RenderErrorReason.InvalidDataMode);
    expect(error.message).toContain(says);
  });
});

import { describe, expect, it } from 'vitest';
import type { KubernetesObject } from '@syncline/render';
import { DigestMemo, RenderMemo } from './render-memo.ts';

const configMap = (value: string): KubernetesObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns' }, data: { value } });

describe('RenderMemo', () => {
  it('renders again only when the files, the discovery or an input changed', () => {
    // given one target rendered once
    const memo = new RenderMemo();
    const file = { path: 'app/cm.yaml.hbs' };
    const files = [file];
    const discovery = {};
    let renders = 0;
    const render = (value: string) => (): KubernetesObject[] => {
      renders++;
      return [configMap(value)];
    };
    const first = memo.render({ slot: 'ns/s\u0000t', files, discovery, inputs: ['app', { v: 1 }] }, render('one'));
    // when the same inputs come again (a resync at the same commit), then the kept objects are handed out
    expect(memo.render({ slot: 'ns/s\u0000t', files, discovery, inputs: ['app', { v: 1 }] }, render('one'))).toBe(first);
    // (the list of files is new each run: its files are what counts)
    expect(memo.render({ slot: 'ns/s\u0000t', files: [file], discovery, inputs: ['app', { v: 1 }] }, render('one'))).toBe(first);
    expect(renders).toBe(1);
    // and a changed value, a new snapshot (files) or new discovery each render anew
    expect(memo.render({ slot: 'ns/s\u0000t', files, discovery, inputs: ['app', { v: 2 }] }, render('two'))[0]?.['data']).toEqual({ value: 'two' });
    expect(memo.render({ slot: 'ns/s\u0000t', files: [{ path: 'app/cm.yaml.hbs' }], discovery, inputs: ['app', { v: 2 }] }, render('two'))).not.toBe(first);
    expect(memo.render({ slot: 'ns/s\u0000t', files, discovery: {}, inputs: ['app', { v: 2 }] }, render('two'))).not.toBe(first);
    expect(renders).toBe(4);
    // and another target of the same inputs has its own
    memo.render({ slot: 'ns/s\u0000other', files, discovery, inputs: ['app', { v: 1 }] }, render('one'));
    expect(renders).toBe(5);
  });
});

describe('DigestMemo', () => {
  it('digests again unless it is the very same objects in the same order', () => {
    // given a digest of two kept objects
    const memo = new DigestMemo();
    let digests = 0;
    const digest = (objects: readonly KubernetesObject[]): string => {
      digests++;
      return objects.map((o) => JSON.stringify(o)).join('|');
    };
    const [a, b] = [configMap('a'), configMap('b')];
    const first = memo.digest([a, b], digest);
    // when the same objects come in a new list (a resync), then the digest is the kept one
    expect(memo.digest([a, b], digest)).toBe(first);
    expect(digests).toBe(1);
    // and another order, another object (even an equal one, rendered anew), one fewer or none digest afresh
    expect(memo.digest([b, a], digest)).not.toBe(first);
    expect(memo.digest([a, configMap('b')], digest)).toBe(first);
    expect(memo.digest([a], digest)).toBe(JSON.stringify(a));
    expect(memo.digest([], digest)).toBe('');
    expect(digests).toBe(5);
  });
});

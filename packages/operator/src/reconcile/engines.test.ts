import { describe, expect, it } from 'vitest';
import type { ConfigSyncSpec } from '@syncline/api';
import { engineSpecFor, readsWholeRepository } from './engines.ts';

const spec = { source: { git: { repo: 'https://example.com/r.git', path: 'app', revision: 'main' } }, targets: [{ name: 't' }] } as unknown as ConfigSyncSpec;
const target = spec.targets[0]!;
const file = (path: string) => ({ path, content: new Uint8Array() });

describe('the engine a path holds, asked at every resync', () => {
  it('answers for the files it is given: the same files the same, another list of files what that one holds', () => {
    const manifests = [file('app/cm.yaml'), file('app/kustomization.yaml.bak')];
    expect(engineSpecFor(spec, target, manifests)).toBeUndefined();
    expect(readsWholeRepository(spec, manifests)).toBe(false);
    // a resync: a new list of the very same files
    expect(engineSpecFor(spec, target, [...manifests])).toBeUndefined();
    // a new commit that adds a kustomization (new file objects, or one more in the list) is looked at again
    const kustomized = [...manifests, file('app/kustomization.yaml')];
    expect(engineSpecFor(spec, target, kustomized)?.engine).toBe('kustomize');
    expect(readsWholeRepository(spec, kustomized)).toBe(true);
    expect(engineSpecFor(spec, target, [file('app/cm.yaml'), file('app/Chart.yaml')])?.engine).toBe('helm');
    // and another path of the same files has its own answer
    expect(engineSpecFor({ ...spec, source: { ...spec.source, git: { ...spec.source.git, path: 'other' } } }, target, kustomized)).toBeUndefined();
    expect(engineSpecFor(spec, target, manifests)).toBeUndefined();
  });
});

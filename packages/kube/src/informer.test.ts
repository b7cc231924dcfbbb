import { describe, expect, it } from 'vitest';
import { Informer, withUnchangedSpec, withoutManagedFields, type KubeObject } from './informer.ts';
import type { KubeRequest, KubeRest } from './rest.ts';

const sync = (metadata: Partial<KubeObject['metadata']>, spec: object, status: object = {}): KubeObject => ({
  apiVersion: 'syncline.dev/v1alpha1',
  kind: 'ConfigSync',
  metadata: { name: 'app', namespace: 'team', uid: 'u1', generation: 1, resourceVersion: '1', ...metadata },
  spec: JSON.parse(JSON.stringify(spec)) as object,
  status,
});

describe('withUnchangedSpec', () => {
  it('keeps the cached spec for a change of status or metadata at the same generation of the same object', () => {
    const cached = sync({}, { path: 'a' });
    const statusWrite = sync({ resourceVersion: '2' }, { path: 'a' }, { sourceRevision: 'abc' });
    const kept = withUnchangedSpec(statusWrite, cached);
    expect(kept['spec']).toBe(cached['spec']);
    // everything else is the new object's
    expect(kept['status']).toEqual({ sourceRevision: 'abc' });
    expect(kept.metadata.resourceVersion).toBe('2');
    const labelled = withUnchangedSpec(sync({ resourceVersion: '3', labels: { tier: 'x' } }, { path: 'a' }), cached);
    expect(labelled['spec']).toBe(cached['spec']);
    expect(labelled.metadata['labels']).toEqual({ tier: 'x' });
  });

  it('takes the new spec at a new generation, for a new object under the same name, and when there is nothing cached', () => {
    const cached = sync({}, { path: 'a' });
    const edited = sync({ generation: 2, resourceVersion: '2' }, { path: 'b' });
    expect(withUnchangedSpec(edited, cached)['spec']).toEqual({ path: 'b' });
    const recreated = sync({ uid: 'u2', resourceVersion: '5' }, { path: 'c' });
    expect(withUnchangedSpec(recreated, cached)['spec']).toEqual({ path: 'c' });
    expect(withUnchangedSpec(edited, undefined)).toBe(edited);
    // without a generation or a uid nothing tells that the spec is the same
    const { generation: _g, ...noGeneration } = edited.metadata;
    expect(withUnchangedSpec({ ...edited, metadata: noGeneration }, { ...cached, metadata: { ...cached.metadata, generation: undefined } })['spec']).toEqual({
      path: 'b',
    });
  });
});

/** A fake API server: one list, then the given watch events, then a watch that stays open until stopped. */
function fakeRest(items: KubeObject[], events: { type: string; object: KubeObject }[]): KubeRest {
  let delivered = false;
  return {
    server: 'https://fake',
    request: <T>(_req: KubeRequest): Promise<T> => Promise.resolve({ metadata: { resourceVersion: '1' }, items } as T),
    watch: async (_path, _query, onEvent, signal) => {
      if (!delivered) {
        delivered = true;
        for (const event of events) onEvent(JSON.parse(JSON.stringify(event)));
      }
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    },
  };
}

describe('Informer', () => {
  it('hands a projection the object it replaces: a status write keeps the spec object, a spec change is seen', async () => {
    const listed = sync({}, { path: 'a' });
    const seen: { type: string; spec: unknown; status: unknown; previousSpec: unknown }[] = [];
    const informer = new Informer({
      rest: fakeRest(
        [listed],
        [
          { type: 'MODIFIED', object: sync({ resourceVersion: '2', managedFields: [{ manager: 'syncline' }] }, { path: 'a' }, { sourceRevision: 'abc' }) },
          { type: 'MODIFIED', object: sync({ resourceVersion: '3', generation: 2 }, { path: 'b' }, { sourceRevision: 'abc' }) },
          { type: 'MODIFIED', object: sync({ resourceVersion: '4', generation: 2 }, { path: 'b' }, { sourceRevision: 'def' }) },
        ],
      ),
      path: '/apis/syncline.dev/v1alpha1/configsyncs',
      project: (object, previous) => withUnchangedSpec(withoutManagedFields(object), previous),
      onEvent: (type, object, previous) => seen.push({ type, spec: object['spec'], status: object['status'], previousSpec: previous?.['spec'] }),
    });
    informer.start();
    try {
      await expect.poll(() => seen.length).toBe(4);
    } finally {
      await informer.stop();
    }
    const [added, statusWrite, specChange, secondWrite] = seen;
    expect(added?.type).toBe('ADDED');
    // our status coming back: the cached spec object itself, with the new status
    expect(statusWrite?.spec).toBe(added?.spec);
    expect(statusWrite?.status).toEqual({ sourceRevision: 'abc' });
    // someone's spec change (a new generation): the new spec
    expect(specChange?.spec).toEqual({ path: 'b' });
    expect(specChange?.spec).not.toBe(added?.spec);
    expect(secondWrite?.spec).toBe(specChange?.spec);
    expect(secondWrite?.status).toEqual({ sourceRevision: 'def' });
    expect(informer.get('team/app')?.metadata['managedFields']).toBeUndefined();
  });
});

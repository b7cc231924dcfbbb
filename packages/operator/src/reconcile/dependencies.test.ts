import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ConfigSync } from '@syncline/api';
import { DependentsIndex, dependencyNotReady, findCycle } from './dependencies.ts';

const graph = (edges: Record<string, string[]>) => (name: string) => edges[name];

describe('findCycle', () => {
  it('finds nothing in a chain or a diamond', () => {
    expect(findCycle('app', graph({ app: ['db', 'crds'], db: ['crds'], crds: [] }))).toBeUndefined();
  });

  it('finds a cycle through the start, naming it in order', () => {
    expect(findCycle('a', graph({ a: ['b'], b: ['c'], c: ['a'] }))).toEqual(['a', 'b', 'c', 'a']);
  });

  it('finds a sync that depends on itself', () => {
    expect(findCycle('a', graph({ a: ['a'] }))).toEqual(['a', 'a']);
  });

  it('leaves a cycle that does not pass through the start to its members, and terminates', () => {
    expect(findCycle('app', graph({ app: ['b'], b: ['c'], c: ['b'] }))).toBeUndefined();
  });

  it('treats unknown (missing) dependencies as leaves', () => {
    expect(findCycle('a', graph({ a: ['missing'] }))).toBeUndefined();
  });
});

describe('dependencyNotReady', () => {
  const sync = (status: ConfigSync['status'], generation = 2): ConfigSync => ({
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'ConfigSync',
    metadata: { name: 'crds', namespace: 'ops', generation },
    spec: {} as ConfigSync['spec'],
    status,
  });
  const ready = (status: 'True' | 'False', observedGeneration = 2) => ({
    type: 'Ready',
    status,
    observedGeneration,
    lastTransitionTime: 't',
    reason: status === 'True' ? 'ReconciliationSucceeded' : 'Progressing',
    message: 'm',
  });

  it('is ready when Ready=True at the current generation and the attempted revision is applied', () => {
    expect(
      dependencyNotReady(sync({ observedGeneration: 2, sourceRevision: 'abc', lastAttemptedRevision: 'abc', conditions: [ready('True')] })),
    ).toBeUndefined();
  });

  it('says why not: missing, not reconciled, stale generation, not Ready, revision pending', () => {
    expect(dependencyNotReady(undefined)).toBe('not found');
    expect(dependencyNotReady(sync(undefined))).toBe('not reconciled yet');
    expect(dependencyNotReady(sync({ observedGeneration: 1, conditions: [ready('True', 1)] }))).toBe('its latest spec is not reconciled yet');
    expect(dependencyNotReady(sync({ observedGeneration: 2, conditions: [ready('False')] }))).toBe('not Ready (Progressing: m)');
    expect(
      dependencyNotReady(sync({ observedGeneration: 2, sourceRevision: 'old', lastAttemptedRevision: 'newrevision1234', conditions: [ready('True')] })),
    ).toBe('revision newrevision1 is not applied yet');
  });
});

describe('DependentsIndex', () => {
  const sync = (namespace: string, name: string, dependsOn: string[]) =>
    ({ metadata: { namespace, name }, spec: { dependsOn: dependsOn.map((n) => ({ name: n })) } }) as unknown as ConfigSync;

  it('answers the dependents of a sync in its own namespace, following spec changes and deletions', () => {
    const index = new DependentsIndex();
    index.set('team/app', sync('team', 'app', ['db', 'crds']));
    index.set('team/web', sync('team', 'web', ['db', 'db']));
    index.set('other/app', sync('other', 'app', ['db']));
    expect([...index.of('team/db')].sort()).toEqual(['team/app', 'team/web']);
    expect([...index.of('team/crds')]).toEqual(['team/app']);
    expect([...index.of('other/db')]).toEqual(['other/app']);
    expect([...index.of('team/app')]).toEqual([]);
    // A spec that drops a dependency, and a sync that is gone.
    index.set('team/app', sync('team', 'app', ['crds']));
    index.set('team/web', undefined);
    expect([...index.of('team/db')]).toEqual([]);
    expect([...index.of('team/crds')]).toEqual(['team/app']);
  });

  it('agrees with a scan of every sync, whatever the order of events', () => {
    const names = ['a', 'b', 'c', 'd'];
    const events = fc.array(fc.record({ name: fc.constantFrom(...names), deps: fc.option(fc.subarray(names), { nil: undefined }) }), { maxLength: 40 });
    fc.assert(
      fc.property(events, (list) => {
        const index = new DependentsIndex();
        const live = new Map<string, string[]>();
        for (const { name, deps } of list) {
          if (deps === undefined) live.delete(name);
          else live.set(name, deps);
          index.set(`ns/${name}`, deps === undefined ? undefined : sync('ns', name, deps));
        }
        for (const name of names) {
          const scanned = [...live]
            .filter(([, deps]) => deps.includes(name))
            .map(([n]) => `ns/${n}`)
            .sort();
          expect([...index.of(`ns/${name}`)].sort()).toEqual(scanned);
        }
      }),
    );
  });
});

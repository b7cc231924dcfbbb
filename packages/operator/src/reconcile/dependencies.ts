// spec.dependsOn, pure: whether a dependency is Ready at its current revision, and whether the chain of
// dependencies leads back to the sync asking (a cycle is refused, never waited on).
import type { ConfigSync } from '@syncline/api';

/**
 * The cycle through `start`, as the names along it (`[a, b, a]`), or undefined. `dependsOn` answers a name's
 * dependencies (undefined: not known, e.g. not found). Cycles that do not pass through `start` are left to
 * their own members; `start` then merely waits on a dependency that is never Ready.
 */
export function findCycle(start: string, dependsOn: (name: string) => readonly string[] | undefined): string[] | undefined {
  const visited = new Set<string>();
  const path: string[] = [start];
  const visit = (name: string): string[] | undefined => {
    for (const next of dependsOn(name) ?? []) {
      if (next === start) return [...path, start];
      if (visited.has(next)) continue;
      visited.add(next);
      path.push(next);
      const found = visit(next);
      if (found !== undefined) return found;
      path.pop();
    }
    return undefined;
  };
  return visit(start);
}

/** Why a dependency does not let its dependents go on yet; undefined when it is Ready at its current revision. */
export function dependencyNotReady(dependency: ConfigSync | undefined): string | undefined {
  if (dependency === undefined) return 'not found';
  if (dependency.metadata.deletionTimestamp !== undefined) return 'being deleted';
  const ready = dependency.status?.conditions?.find((c) => c.type === 'Ready');
  const generation = dependency.metadata.generation;
  if (ready === undefined) return 'not reconciled yet';
  if (dependency.status?.observedGeneration !== generation || (ready.observedGeneration !== undefined && ready.observedGeneration !== generation))
    return 'its latest spec is not reconciled yet';
  if (ready.status !== 'True') return `not Ready (${ready.reason}${ready.message === '' ? '' : `: ${ready.message.slice(0, 200)}`})`;
  const attempted = dependency.status?.lastAttemptedRevision;
  if (attempted !== undefined && dependency.status?.sourceRevision !== attempted) return `revision ${attempted.slice(0, 12)} is not applied yet`;
  return undefined;
}

/**
 * spec.dependsOn, indexed by dependency: which syncs (`namespace/name`) depend on `namespace/name`, so an event
 * of one sync wakes its dependents without a scan of every ConfigSync (one scan per event made creating or
 * updating N syncs cost N² in the event handler).
 */
export class DependentsIndex {
  readonly #dependents = new Map<string, Set<string>>();
  readonly #dependsOn = new Map<string, readonly string[]>();

  /** `key` now depends on what `sync` names (none: it is gone or names nothing). */
  set(key: string, sync: Pick<ConfigSync, 'metadata' | 'spec'> | undefined): void {
    for (const dependency of this.#dependsOn.get(key) ?? []) {
      const keys = this.#dependents.get(dependency);
      keys?.delete(key);
      if (keys?.size === 0) this.#dependents.delete(dependency);
    }
    const namespace = sync?.metadata.namespace ?? 'default';
    const now = [...new Set((sync?.spec.dependsOn ?? []).map((d) => `${namespace}/${d.name}`))];
    if (now.length === 0) this.#dependsOn.delete(key);
    else this.#dependsOn.set(key, now);
    for (const dependency of now) this.#dependents.set(dependency, (this.#dependents.get(dependency) ?? new Set()).add(key));
  }

  /** The syncs that depend on `key` (`namespace/name`). */
  of(key: string): ReadonlySet<string> {
    return this.#dependents.get(key) ?? new Set();
  }
}

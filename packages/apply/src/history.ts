// Apply history: one entry per applied revision, newest first. Rollback = apply an older revision's render and
// prune what it does not hold; the history says which revision that is.
import { digestOf } from './canonical.ts';
import { objectId, type KubeObject } from './identity.ts';

export type HistoryEntry = {
  readonly revision: string;
  /** RFC 3339 time of the apply (the caller's clock). */
  readonly appliedAt: string;
  readonly objects: number;
  /** digestRendered of the applied set. */
  readonly digest: string;
};

/** sha256 over the canonical JSON of a rendered set, independent of object order and key order. */
export function digestRendered(objects: readonly KubeObject[]): string {
  return digestOf([...objects].sort((a, b) => (objectId(a) < objectId(b) ? -1 : objectId(a) > objectId(b) ? 1 : 0)));
}

/**
 * Adds `entry` as the newest and trims to `limit`. Re-applying what the newest entry already records (same
 * revision and digest) returns the history unchanged, so a no-op resync does not touch status.
 */
export function recordHistory(history: readonly HistoryEntry[], entry: HistoryEntry, limit: number): HistoryEntry[] {
  const newest = history[0];
  if (newest !== undefined && newest.revision === entry.revision && newest.digest === entry.digest) return history.slice(0, Math.max(1, limit));
  return [entry, ...history].slice(0, Math.max(1, limit));
}

/**
 * The entry a rollback applies: `steps` back from the newest (1 = the one before), or the newest entry of
 * revision `to`. undefined when the history does not reach that far.
 */
export function rollbackTarget(history: readonly HistoryEntry[], to: { steps: number } | { revision: string }): HistoryEntry | undefined {
  if ('steps' in to) return to.steps >= 1 ? history[to.steps] : undefined;
  return history.find((h) => h.revision === to.revision);
}

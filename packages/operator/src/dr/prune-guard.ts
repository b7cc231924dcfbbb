// Disaster recovery's prune guard, pure: whether the deletions one replication pass would make in the standby
// go ahead or are held for a person. A standby exists for the day the source is emptied by mistake (a
// `kubectl delete --all`, an uninstall, the namespace deleted): mirroring that within seconds would destroy
// the copy too. So a pass that would delete more than `maxDeletions` of the standby's objects, or any deletion
// while the source namespace is being deleted or is gone, is held until a person confirms exactly that held
// set (its token) or until `delay` has passed. Smaller deletions propagate as before, once the set has stopped
// changing for a moment (SETTLE_MS): a `kubectl delete --all` reaches the operator one object at a time, and
// its first deletions must not slip through one by one before the rest arrive. And the threshold counts every
// unconfirmed deletion within `window`, not one pass alone: a source emptied slowly (a script deleting an object
// every few seconds, a controller pruning in batches) reaches the threshold just the same and is held there.
import { createHash } from 'node:crypto';

/** Why a prune is held. */
export const PruneHoldReason = {
  /** More deletions within spec.pruneGuard.window than spec.pruneGuard.maxDeletions allows. */
  MassDeletion: 'MassDeletion',
  /** The source namespace is being deleted (Terminating) or no longer exists. */
  SourceNamespaceDeleted: 'SourceNamespaceDeleted',
} as const;
export type PruneHoldReason = (typeof PruneHoldReason)[keyof typeof PruneHoldReason];

/** A held prune as status records it: the token names exactly this set, since this time. */
export type PruneHold = {
  readonly token: string;
  readonly since: string;
  readonly objects: number;
  readonly reason: PruneHoldReason;
};

export type SourceNamespaceState = 'Active' | 'Terminating' | 'Absent';

export type PruneGuardPolicy = {
  /** A count ("10") or a percentage of the standby's replicated objects ("25%"). */
  readonly maxDeletions: string;
  /** How long a hold lasts before the prune goes ahead on its own; undefined: until confirmed. */
  readonly delayMs?: number | undefined;
  /** Deletions made within this long before now count toward maxDeletions with this pass's (0: this pass alone). */
  readonly windowMs?: number | undefined;
};

/** Deletions an earlier pass made without a confirmation: when, and how many (status.recentDeletions). */
export type RecentDeletion = { readonly at: string; readonly objects: number };

export type PruneGuardInput = {
  /** Ids of what the standby holds of ours (the inventory), the standby's Namespace included. */
  readonly inventory: readonly string[];
  /** Ids of what this pass replicates. */
  readonly desired: readonly string[];
  /** Stale ids whose deletion is never held (copies of objects that must not be in the standby at all). */
  readonly alwaysPrunable?: ReadonlySet<string>;
  readonly sourceNamespace: SourceNamespaceState;
  readonly policy: PruneGuardPolicy;
  /** Deletions earlier passes made (unconfirmed), oldest first; those older than the window are ignored. */
  readonly recent?: readonly RecentDeletion[] | undefined;
  /** The hold recorded by the previous pass, if any. */
  readonly previous?: PruneHold | undefined;
  /** spec.confirmPrune: the token a person confirmed. */
  readonly confirmed?: string | undefined;
  /** What the previous pass left settling (kept in memory between passes); settleMs 0 prunes at once. */
  readonly settling?: Settling | undefined;
  readonly settleMs?: number;
  readonly now: Date;
};

export type PruneDecision =
  /** Prune as usual; `released` says why a held set may now go. */
  | { readonly action: 'prune'; readonly stale: readonly string[]; readonly released?: 'confirmed' | 'delay' }
  /** Keep the standby's copies of `held`; `retryAfterMs` is when the delay releases them, if one is set. */
  | { readonly action: 'hold'; readonly held: readonly string[]; readonly hold: PruneHold; readonly earlier: number; readonly retryAfterMs?: number }
  /** Deletions within the threshold, still changing: kept this pass, looked at again after retryAfterMs. */
  | { readonly action: 'settle'; readonly held: readonly string[]; readonly settling: Settling; readonly retryAfterMs: number };

/** How long a set of deletions under the threshold must stay the same before it reaches the standby. */
export const SETTLE_MS = 5000;

/** A set of deletions seen and not applied yet because it was still changing: its token and when it was first seen. */
export type Settling = { readonly token: string; readonly at: number };

const isNamespaceId = (id: string): boolean => id.startsWith('/Namespace/');

/** How many deletions one pass may make unconfirmed, out of `total` replicated objects; never below 1 for a percentage. */
export function allowedDeletions(maxDeletions: string, total: number): number {
  const text = maxDeletions.trim();
  const percent = /^([0-9]{1,3})%$/.exec(text);
  if (percent !== null) {
    const share = Math.min(Number(percent[1]), 100);
    // Rounded down, as Kubernetes rounds maxUnavailable; one deletion at a time is never a mass deletion.
    return Math.max(1, Math.floor((share * total) / 100));
  }
  if (/^[0-9]{1,9}$/.test(text)) return Number(text);
  throw new Error(`spec.pruneGuard.maxDeletions ${JSON.stringify(maxDeletions)}: a count such as "10" or a percentage such as "25%"`);
}

/** The token of a held set: it changes with the set and with the hold's start, so an old confirmation never matches a new hold. */
export function holdToken(since: string, held: readonly string[]): string {
  return createHash('sha256')
    .update(`${since}\n${[...held].sort().join('\n')}`)
    .digest('hex')
    .slice(0, 12);
}

/** The deletions of `recent` made within the window before `now`, oldest first. */
export function withinWindow(recent: readonly RecentDeletion[] | undefined, windowMs: number | undefined, now: Date): RecentDeletion[] {
  if (recent === undefined || windowMs === undefined || windowMs <= 0) return [];
  return recent.filter((r) => now.getTime() - Date.parse(r.at) < windowMs);
}

/** How many objects the unconfirmed deletions within the window removed. */
export function earlierDeletions(input: Pick<PruneGuardInput, 'recent' | 'policy' | 'now'>): number {
  return withinWindow(input.recent, input.policy.windowMs, input.now).reduce((sum, r) => sum + r.objects, 0);
}

export function decidePrune(input: PruneGuardInput): PruneDecision {
  const desired = new Set(input.desired);
  const stale = input.inventory.filter((id) => !desired.has(id));
  const guarded = stale.filter((id) => input.alwaysPrunable?.has(id) !== true).sort();
  if (guarded.length === 0) return { action: 'prune', stale };
  // The share is of what the standby held when the window began: what it holds now plus what the window removed.
  const earlier = earlierDeletions(input);
  const total = input.inventory.filter((id) => !isNamespaceId(id) && input.alwaysPrunable?.has(id) !== true).length + earlier;
  const reason: PruneHoldReason | undefined =
    input.sourceNamespace !== 'Active'
      ? PruneHoldReason.SourceNamespaceDeleted
      : guarded.length + earlier > allowedDeletions(input.policy.maxDeletions, total)
        ? PruneHoldReason.MassDeletion
        : undefined;
  if (reason === undefined) return settle(input, stale, guarded);

  // The same set as the recorded hold keeps its start (and token); any other set is a new hold.
  const previous = input.previous;
  const since = previous !== undefined && holdToken(previous.since, guarded) === previous.token ? previous.since : input.now.toISOString();
  const token = holdToken(since, guarded);
  if (input.confirmed !== undefined && input.confirmed === token) return { action: 'prune', stale, released: 'confirmed' };
  const hold: PruneHold = { token, since, objects: guarded.length, reason };
  const { delayMs } = input.policy;
  if (delayMs === undefined) return { action: 'hold', held: guarded, hold, earlier };
  const remaining = Date.parse(since) + delayMs - input.now.getTime();
  if (remaining <= 0) return { action: 'prune', stale, released: 'delay' };
  return { action: 'hold', held: guarded, hold, earlier, retryAfterMs: remaining };
}

/** Deletions under the threshold go ahead once the same set has been seen for settleMs. */
function settle(input: PruneGuardInput, stale: readonly string[], guarded: readonly string[]): PruneDecision {
  const settleMs = input.settleMs ?? 0;
  if (settleMs <= 0) return { action: 'prune', stale };
  const token = holdToken('', guarded);
  const now = input.now.getTime();
  const at = input.settling?.token === token ? input.settling.at : now;
  if (now - at >= settleMs) return { action: 'prune', stale };
  return { action: 'settle', held: guarded, settling: { token, at }, retryAfterMs: at + settleMs - now };
}

/** At most this many entries in status.recentDeletions: older passes merge into the oldest kept one. */
const MAX_RECENT = 20;

/**
 * status.recentDeletions after a pass that pruned `deleted` objects: the window's entries plus this one. A
 * released hold (confirmed by a person, or past its delay) starts the count afresh: what it deleted was decided.
 */
export function recordDeletions(input: {
  readonly recent: readonly RecentDeletion[] | undefined;
  readonly windowMs: number | undefined;
  readonly now: Date;
  readonly deleted: number;
  readonly released: boolean;
}): RecentDeletion[] {
  if (input.released) return [];
  const kept = withinWindow(input.recent, input.windowMs, input.now);
  if (input.deleted > 0 && input.windowMs !== undefined && input.windowMs > 0) kept.push({ at: input.now.toISOString(), objects: input.deleted });
  while (kept.length > MAX_RECENT) {
    const [first, second, ...rest] = kept;
    if (first === undefined || second === undefined) break;
    kept.splice(0, kept.length, { at: second.at, objects: first.objects + second.objects }, ...rest);
  }
  return kept;
}

// Who may write a target object: is the object there a replica of this source, of another one, or someone
// else's; and when several sources want the same (namespace, name), which one has it, stably.
import type { KubeObject } from '@syncline/apply';
import { formatSourceRef, isMirrorReplica, isMirrorSource, parseSourceRef, type MirrorKeys, type SourceRef } from './labels.ts';

export type ExistingObject =
  /** Nothing there: the target is free. */
  | { readonly kind: 'absent' }
  /** A replica of this source: update it. */
  | { readonly kind: 'ours' }
  /** A replica of another source (`namespace/name`). */
  | { readonly kind: 'other-replica'; readonly source: string }
  /** Not a replica (or a mirroring source itself): never overwritten, only reported. */
  | { readonly kind: 'foreign' };

/**
 * What the object at a target is, for `source`. A replica is recognised by the `<prefix>/sync-replica: "true"`
 * label AND a well-formed `<prefix>/source: namespace/name` annotation; the source is read from the annotation
 * (the `source-hash` label is only an index for selectors, rewritten on every update). An object labelled as a
 * replica without a readable annotation, or labelled as a source, is foreign: when in doubt, leave it alone.
 */
export function classifyExisting(input: { readonly existing: KubeObject | undefined; readonly source: SourceRef; readonly keys: MirrorKeys }): ExistingObject {
  const { existing, keys } = input;
  if (existing === undefined) return { kind: 'absent' };
  if (isMirrorSource(existing, keys) || !isMirrorReplica(existing, keys)) return { kind: 'foreign' };
  const ref = parseSourceRef(existing.metadata.annotations?.[keys.source]);
  if (ref === undefined) return { kind: 'foreign' };
  if (ref.namespace === input.source.namespace && ref.name === input.source.name) return { kind: 'ours' };
  return { kind: 'other-replica', source: formatSourceRef(ref) };
}

/** A source that wants a target (its metadata is enough). */
export interface SourceClaim {
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string | undefined;
  /** RFC 3339, as metadata.creationTimestamp. */
  readonly creationTimestamp?: string | undefined;
}

export function claimOf(object: KubeObject): SourceClaim {
  const { metadata } = object;
  return {
    namespace: metadata.namespace ?? '',
    name: metadata.name,
    uid: metadata.uid,
    creationTimestamp: typeof metadata.creationTimestamp === 'string' ? metadata.creationTimestamp : undefined,
  };
}

function createdAt(claim: SourceClaim): number {
  const ms = claim.creationTimestamp === undefined ? Number.NaN : Date.parse(claim.creationTimestamp);
  // Unknown creation time sorts last: a claim we cannot date never displaces one we can.
  return Number.isNaN(ms) ? Number.POSITIVE_INFINITY : ms;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The total order "who came first": older creationTimestamp, then uid, then `namespace/name`. Total, so the
 * winner does not depend on the order events or list results arrive in.
 */
export function compareClaims(a: SourceClaim, b: SourceClaim): number {
  const time = createdAt(a) - createdAt(b);
  if (time !== 0 && !Number.isNaN(time)) return time < 0 ? -1 : 1;
  return compareText(a.uid ?? '', b.uid ?? '') || compareText(formatSourceRef(a), formatSourceRef(b));
}

export type TargetOwner =
  /** No source claims the target. */
  | { readonly kind: 'none' }
  /** A foreign object holds the name: nobody writes; every claimant reports it. */
  | { readonly kind: 'foreign'; readonly blocked: readonly SourceClaim[] }
  /** `owner` writes the target; `losers` report that it is held (sorted by {@link compareClaims}). */
  | { readonly kind: 'owner'; readonly owner: SourceClaim; readonly incumbent: boolean; readonly losers: readonly SourceClaim[] };

/**
 * Which of the sources that want one (namespace, name) writes it. "The first wins, stably":
 *
 * 1. a foreign object there blocks everyone;
 * 2. a replica of a claimant stays that claimant's (incumbency: an existing replica is never taken over by a
 *    source that shows up or is labelled later, even an older object, so consumers never see it switch);
 * 3. otherwise (free, or a replica of a source that no longer claims it) the first claimant by
 *    {@link compareClaims}.
 *
 * A function of the current state only, so two reconcilers that see the same state decide the same, and one
 * that saw a claim late agrees once the winner's replica exists (rule 2): no flip-flopping.
 */
export function decideTargetOwner(input: {
  readonly claimants: readonly SourceClaim[];
  readonly existing: KubeObject | undefined;
  readonly keys: MirrorKeys;
}): TargetOwner {
  const unique = new Map<string, SourceClaim>();
  for (const claim of [...input.claimants].sort(compareClaims)) {
    const key = formatSourceRef(claim);
    if (!unique.has(key)) unique.set(key, claim);
  }
  const claimants = [...unique.values()];
  if (claimants.length === 0) return { kind: 'none' };
  const first = claimants[0] as SourceClaim;
  const found = classifyExisting({ existing: input.existing, source: first, keys: input.keys });
  if (found.kind === 'foreign') return { kind: 'foreign', blocked: claimants };
  const incumbent = found.kind === 'ours' ? first : found.kind === 'other-replica' ? unique.get(found.source) : undefined;
  const owner = incumbent ?? first;
  return { kind: 'owner', owner, incumbent: incumbent !== undefined, losers: claimants.filter((claim) => claim !== owner) };
}

export type ReplicaWrite =
  | { readonly action: 'create' }
  /**
   * `takeover`: the object is a replica of a source that no longer claims it. Build the replica without
   * `existingReplica` (makeReplica refuses another source's replica; its keys are not this source's to keep).
   */
  | { readonly action: 'update'; readonly takeover: boolean }
  /** Leave the target: `Foreign` (not a replica) or `HeldByOtherSource` (`holder` has it). */
  | { readonly action: 'skip'; readonly reason: 'Foreign' | 'HeldByOtherSource'; readonly holder?: string };

/**
 * {@link decideTargetOwner} from one source's side: what its reconciler does with one target.
 * `claimants` are all sources that want this (namespace, name), `source` among them or not.
 */
export function decideReplicaWrite(input: {
  readonly source: SourceClaim;
  readonly claimants: readonly SourceClaim[];
  readonly existing: KubeObject | undefined;
  readonly keys: MirrorKeys;
}): ReplicaWrite {
  const decision = decideTargetOwner({ claimants: [input.source, ...input.claimants], existing: input.existing, keys: input.keys });
  switch (decision.kind) {
    case 'foreign':
      return { action: 'skip', reason: 'Foreign' };
    case 'none':
      // Unreachable (the source claims), kept for the exhaustive switch.
      return { action: 'skip', reason: 'HeldByOtherSource' };
    case 'owner':
      if (formatSourceRef(decision.owner) !== formatSourceRef(input.source))
        return { action: 'skip', reason: 'HeldByOtherSource', holder: formatSourceRef(decision.owner) };
      if (input.existing === undefined) return { action: 'create' };
      return { action: 'update', takeover: classifyExisting({ existing: input.existing, source: input.source, keys: input.keys }).kind !== 'ours' };
  }
}

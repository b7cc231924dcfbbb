// Replicas that should no longer be there: their source is gone (deleted, un-labelled, its namespace no longer
// allowed to be a source) or no longer targets their namespace. Pure: replicas, sources, now and options in;
// actions out. The controller executes them and only then forgets the replica.
import type { KubeObject } from '@syncline/apply';
import { formatSourceRef, parseSourceRef, type MirrorKeys } from './labels.ts';
import { SkipReason, type TargetResolution } from './targets.ts';

/** What happens to replicas whose source is gone (`--mirror-stale`). */
export const StalePolicy = {
  /** Delete them (the default: orphaned copies nobody cleans up are what replicator users complain about). */
  Delete: 'Delete',
  /** Label them `<prefix>/stale: "true"` with a stale-since time and leave them (deleted after the TTL, if one is set). */
  Mark: 'Mark',
} as const;
export type StalePolicy = (typeof StalePolicy)[keyof typeof StalePolicy];

export const CleanupReason = {
  /** The source was deleted, un-labelled, or its namespace may no longer be a source. */
  SourceGone: 'SourceGone',
  /** Stale for longer than the TTL. */
  StaleExpired: 'StaleExpired',
  /** The source no longer targets the namespace (its targets/exclude changed, the namespace's labels changed). */
  NoLongerTargeted: 'NoLongerTargeted',
  /** The namespace is labelled `<prefix>/mirror: disabled`. */
  MirrorDisabled: 'MirrorDisabled',
} as const;
export type CleanupReason = (typeof CleanupReason)[keyof typeof CleanupReason];

/** A JSON merge patch on metadata (`null` removes a key). */
export type MetadataPatch = { readonly metadata: { readonly labels: Record<string, string | null>; readonly annotations: Record<string, string | null> } };

interface ReplicaId {
  readonly namespace: string;
  readonly name: string;
  /** `namespace/name` of the source. */
  readonly source: string;
}

export type ReplicaAction =
  /** Delete with these preconditions, so an object recreated meanwhile (maybe someone else's) survives. */
  | (ReplicaId & {
      readonly type: 'delete';
      readonly reason: CleanupReason;
      readonly preconditions: { readonly uid?: string; readonly resourceVersion?: string };
    })
  | (ReplicaId & { readonly type: 'mark-stale'; readonly patch: MetadataPatch })
  /** The source is back and targets the namespace again: the replica is mirrored again. */
  | (ReplicaId & { readonly type: 'unmark-stale'; readonly patch: MetadataPatch });

/** The state of one source, as the source cache knows it. */
export type SourceState =
  | { readonly kind: 'active'; readonly resolution: TargetResolution }
  /** Its spec does not parse: its replicas are left exactly as they are until it is fixed. */
  | { readonly kind: 'invalid' };

export interface PlanReplicaCleanupInput {
  /** Replicas (the `<prefix>/sync-replica=true` watch), of one kind. */
  readonly replicas: readonly KubeObject[];
  /**
   * The sources of that kind by `namespace/name`. A replica whose source is not here has lost it. Pass this only
   * once the source cache has synced (after its first LIST): an empty map marks or deletes every replica.
   */
  readonly sources: ReadonlyMap<string, SourceState>;
  readonly now: Date;
  readonly policy: StalePolicy;
  /** With policy Mark: delete replicas stale for longer than this. Undefined: keep them. */
  readonly staleTtlMs?: number | undefined;
  readonly keys: MirrorKeys;
}

export interface ReplicaCleanupPlan {
  readonly actions: readonly ReplicaAction[];
  /**
   * Objects labelled as replicas that are left alone, worth a report: `UnreadableSource` (no readable
   * `<prefix>/source` annotation), `NameMismatch` (named unlike its source: not a replica mirroring made).
   */
  readonly ignored: readonly { readonly namespace: string; readonly name: string; readonly reason: 'UnreadableSource' | 'NameMismatch' }[];
  /** When the next stale replica's TTL runs out (ms from now), to requeue; undefined when none will. */
  readonly requeueAfterMs?: number | undefined;
}

/** RFC 3339 in UTC with second precision, as Kubernetes writes times. */
export function formatTime(time: Date): string {
  return time.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function markStalePatch(keys: MirrorKeys, now: Date): MetadataPatch {
  return { metadata: { labels: { [keys.stale]: 'true' }, annotations: { [keys.staleSince]: formatTime(now) } } };
}

export function unmarkStalePatch(keys: MirrorKeys): MetadataPatch {
  return { metadata: { labels: { [keys.stale]: null }, annotations: { [keys.staleSince]: null } } };
}

/**
 * What to do with each replica that should no longer be (or no longer be stale). Replicas that are fine get no
 * action; the output is sorted by (namespace, name) whatever order the inputs came in.
 *
 * - source invalid: nothing (see parseMirrorSpec);
 * - source gone: Delete → delete; Mark → mark stale once (stale-since = now), then with a TTL delete once
 *   stale-since is older than the TTL (a stale replica without a readable stale-since is stamped again rather
 *   than deleted: the clock starts when we know it started); a replica already stale when the policy is
 *   Delete is deleted;
 * - source active and the namespace targeted: unmark if it was stale;
 * - source active and the namespace no longer targeted: delete, except in a terminating namespace (it goes
 *   with the namespace).
 */
export function planReplicaCleanup(input: PlanReplicaCleanupInput): ReplicaCleanupPlan {
  const { keys, now } = input;
  const actions: ReplicaAction[] = [];
  const ignored: { namespace: string; name: string; reason: 'UnreadableSource' | 'NameMismatch' }[] = [];
  let requeueAfterMs: number | undefined;
  const requeueIn = (ms: number) => {
    requeueAfterMs = requeueAfterMs === undefined ? ms : Math.min(requeueAfterMs, ms);
  };

  const replicas = [...input.replicas].sort((a, b) => {
    const x = `${a.metadata.namespace ?? ''}/${a.metadata.name}`;
    const y = `${b.metadata.namespace ?? ''}/${b.metadata.name}`;
    return x < y ? -1 : x > y ? 1 : 0;
  });
  for (const replica of replicas) {
    const namespace = replica.metadata.namespace ?? '';
    const name = replica.metadata.name;
    const ref = parseSourceRef(replica.metadata.annotations?.[keys.source]);
    if (ref === undefined) {
      ignored.push({ namespace, name, reason: 'UnreadableSource' });
      continue;
    }
    if (ref.name !== name) {
      ignored.push({ namespace, name, reason: 'NameMismatch' });
      continue;
    }
    const id: ReplicaId = { namespace, name, source: formatSourceRef(ref) };
    const preconditions = {
      ...(replica.metadata.uid === undefined ? {} : { uid: replica.metadata.uid }),
      ...(replica.metadata.resourceVersion === undefined ? {} : { resourceVersion: replica.metadata.resourceVersion }),
    };
    const stale = replica.metadata.labels?.[keys.stale] === 'true';
    const state = input.sources.get(id.source);
    if (state?.kind === 'invalid') continue;

    if (state === undefined || !state.resolution.sourceAllowed) {
      if (input.policy === StalePolicy.Delete) {
        actions.push({ ...id, type: 'delete', reason: CleanupReason.SourceGone, preconditions });
        continue;
      }
      const since = Date.parse(replica.metadata.annotations?.[keys.staleSince] ?? '');
      if (!stale || Number.isNaN(since)) {
        actions.push({ ...id, type: 'mark-stale', patch: markStalePatch(keys, now) });
        if (input.staleTtlMs !== undefined) requeueIn(input.staleTtlMs);
        continue;
      }
      if (input.staleTtlMs === undefined) continue;
      const left = since + input.staleTtlMs - now.getTime();
      if (left <= 0) actions.push({ ...id, type: 'delete', reason: CleanupReason.StaleExpired, preconditions });
      else requeueIn(left);
      continue;
    }

    const { resolution } = state;
    if (resolution.namespaces.includes(namespace)) {
      if (stale || replica.metadata.annotations?.[keys.staleSince] !== undefined) actions.push({ ...id, type: 'unmark-stale', patch: unmarkStalePatch(keys) });
      continue;
    }
    const skipped = resolution.skipped.find((entry) => entry.namespace === namespace);
    // Terminating: it goes with the namespace. NotAccepted: a source that may not write there may not delete there.
    if (skipped?.reason === SkipReason.Terminating || skipped?.reason === SkipReason.NotAccepted) continue;
    actions.push({
      ...id,
      type: 'delete',
      reason: skipped?.reason === SkipReason.MirrorDisabled ? CleanupReason.MirrorDisabled : CleanupReason.NoLongerTargeted,
      preconditions,
    });
  }
  return { actions, ignored, ...(requeueAfterMs === undefined ? {} : { requeueAfterMs }) };
}

// A no-op resync without a single API request. After an apply that found every object as desired (nothing
// written, nothing pruned, nothing held back), we remember what it was given (a fingerprint of the desired
// objects, the inventory and the options) and the resourceVersion of every object it read. The next time the
// same target is applied with the same fingerprint, a watch cache that still holds those very versions proves
// nobody touched the objects since: the apply would plan "unchanged" for all of them, so it is skipped. Any
// edit, delete or label removal changes (or drops) a version in the watch and the next apply is a full one;
// so does a watch that is not synced or not healthy, or an object no watch covers.
//
// When the inputs did change (a new commit), the record still proves every object whose watched version is the
// recorded one: ours, without drift, carrying the recorded digest. provenObjects hands those to readLive, which
// then reads only what is not proven, and the plan is the one a full read would give.
import { createHash } from 'node:crypto';
import type { ChangeSet } from './execute.ts';
import { APPLIED_DIGEST_ANNOTATION, objectId, ownerHash, type KubeObject, type Owner } from './identity.ts';
import type { Inventory } from './inventory.ts';
import type { LiveState, ProvenObject } from './plan.ts';

/** What a clean no-op apply saw. */
export type NoopRecord = {
  readonly fingerprint: string;
  /** resourceVersion of every desired object, by object id. */
  readonly versions: ReadonlyMap<string, string>;
  /** The applied digest each desired object carried, by object id (all of them were unchanged, so ours). */
  readonly digests: ReadonlyMap<string, string>;
  /** ownerHash of the owner they were ours for. */
  readonly owner: string;
};

/**
 * A watch cache's view of one object id: its resourceVersion; `null` when the watch is synced and healthy and
 * the object is not there; `undefined` when no synced, healthy watch covers it (then nothing can be proven).
 */
export type WatchedVersion = (id: string) => string | null | undefined;

/** Everything an apply's plan depends on besides the live objects. */
export type FingerprintInput = {
  readonly desired: readonly KubeObject[];
  readonly inventory: readonly string[] | undefined;
  readonly owner: Owner;
  readonly options: Readonly<Record<string, string | boolean | undefined>>;
};

/**
 * sha256 over plain JSON, not canonical JSON: the fingerprint is computed on every resync, and for 1,000 objects
 * sorting their keys took 10–40 ms where plain JSON takes about 1 ms (the whole of a warm no-op). A render is
 * deterministic, so the same inputs serialise the same way; inputs whose keys merely moved give another
 * fingerprint, which costs one full apply (reads, no writes), never a wrongly skipped one.
 */
export function applyFingerprint(input: FingerprintInput): string {
  const json = JSON.stringify({ desired: input.desired, inventory: input.inventory ?? [], owner: input.owner, options: input.options });
  return `sha256:${createHash('sha256').update(json).digest('base64url')}`;
}

/**
 * The record to keep after a full apply, or undefined when the apply was not a clean no-op (something was
 * written, pruned, skipped or failed, the inventory moved, or a live object had no resourceVersion).
 */
export function recordNoop(fingerprint: string, input: { desired: readonly KubeObject[]; inventory: Inventory; live: LiveState; changes: ChangeSet; owner: Owner }): NoopRecord | undefined {
  const { changes } = input;
  if (changes.blocked !== undefined || (input.live.unknownScopes?.size ?? 0) > 0 || (input.live.unresolved?.size ?? 0) > 0) return undefined;
  if (changes.entries.length !== input.desired.length || changes.entries.some((e) => e.action !== 'unchanged')) return undefined;
  if (!sameInventory(changes.inventory, input.inventory)) return undefined;
  const versions = new Map<string, string>();
  const digests = new Map<string, string>();
  for (const object of input.desired) {
    const id = objectId(object);
    const live = input.live.objects.get(id);
    const proven = live === undefined ? input.live.proven?.get(id) : undefined;
    const version = live?.metadata.resourceVersion ?? proven?.version;
    const digest = live?.metadata.annotations?.[APPLIED_DIGEST_ANNOTATION] ?? proven?.digest;
    if (typeof version !== 'string' || version === '' || typeof digest !== 'string') return undefined;
    versions.set(id, version);
    digests.set(id, digest);
  }
  return { fingerprint, versions, digests, owner: ownerHash(input.owner) };
}

function sameInventory(a: Inventory, b: Inventory): boolean {
  if (a.length !== b.length) return false;
  const before = new Map(b.map((e) => [e.id, e.created === true]));
  return a.every((e) => before.get(e.id) === (e.created === true));
}

/** Whether the recorded no-op still holds: same inputs, and the watch cache holds exactly the recorded versions. */
export function stillUnchanged(record: NoopRecord | undefined, fingerprint: string, watched: WatchedVersion): boolean {
  if (record === undefined || record.fingerprint !== fingerprint) return false;
  for (const [id, version] of record.versions) {
    if (watched(id) !== version) return false;
  }
  return true;
}

/**
 * The objects of a record that the watch still proves (exactly the recorded version), for readLive and the plan
 * of an apply whose inputs changed. None for another owner: the record proves the objects were ours for its own.
 */
export function provenObjects(record: NoopRecord | undefined, owner: Owner, watched: WatchedVersion): Map<string, ProvenObject> {
  const proven = new Map<string, ProvenObject>();
  if (record === undefined || record.owner !== ownerHash(owner)) return proven;
  for (const [id, version] of record.versions) {
    const digest = record.digests.get(id);
    if (digest !== undefined && watched(id) === version) proven.set(id, { version, digest });
  }
  return proven;
}

/** The change set a full apply would have produced for a target whose no-op still holds. */
export function unchangedChangeSet(desired: readonly KubeObject[], inventory: Inventory): ChangeSet {
  return { entries: desired.map((object) => ({ id: objectId(object), action: 'unchanged' as const })), inventory, pruned: true };
}

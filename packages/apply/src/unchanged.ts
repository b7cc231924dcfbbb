// A no-op resync without a single API request. After an apply that left every desired object proven as it wants
// it (read unchanged, or written and read back from the apply's response holding what was applied; nothing
// pruned, skipped or held back), we remember what it was given (a fingerprint of the desired objects, the
// inventory and the options) and the resourceVersion of every object. The next time the same target is applied
// with the same fingerprint, a watch cache that still holds those very versions proves nobody touched the
// objects since: the apply would plan "unchanged" for all of them, so it is skipped. Any edit, delete or label
// removal changes (or drops) a version in the watch and the next apply is a full one; so does a watch that is
// not synced or not healthy, or an object no watch covers.
//
// When the inputs did change (a new commit), the record still proves every object whose watched version is the
// recorded one: ours, without drift, carrying the recorded digest. provenObjects hands those to readLive, which
// then reads only what is not proven, and the plan is the one a full read would give. Such proofs are kept even
// when the apply was not clean (for the objects it did prove), without a fingerprint.
import { hash } from 'node:crypto';
import type { ChangeSet } from './execute.ts';
import { APPLIED_DIGEST_ANNOTATION, objectId, ownerHash, type KubeObject, type Owner } from './identity.ts';
import type { Inventory } from './inventory.ts';
import type { LiveState, ProvenObject } from './plan.ts';

/** What an apply proved. */
export type NoopRecord = {
  /** The inputs, when the apply proved every desired object and nothing else was left to do; else undefined. */
  readonly fingerprint: string | undefined;
  /** resourceVersion of each proven desired object, by object id. */
  readonly versions: ReadonlyMap<string, string>;
  /** The applied digest each proven object carries, by object id (all of them ours, without drift). */
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
  return `sha256:${hash('sha256', json, 'base64url')}`;
}

/**
 * applyFingerprint, remembered for the desired list it was computed for. A resync at the same commit with the same
 * inputs gets the very list the render memo kept (the operator's reconcile/render-memo.ts), so its fingerprint is
 * looked up instead of serialising and hashing every object again. Served only when every input is the one it was
 * computed from: the same list holding the same objects (by identity: nothing changes a desired object after its
 * render, see that memo; a list rendered anew, or filtered anew, is another list), an inventory with the same
 * lines, and the same owner and options (by value). Anything else computes it afresh and remembers that instead.
 */
export class FingerprintMemo {
  readonly #known = new WeakMap<readonly KubeObject[], RememberedFingerprint>();

  fingerprint(input: FingerprintInput): string {
    const known = this.#known.get(input.desired);
    if (
      known !== undefined &&
      sameItems(known.desired, input.desired) &&
      sameItems(known.inventory, input.inventory ?? []) &&
      sameFlat(known.owner, input.owner) &&
      sameFlat(known.options, input.options)
    )
      return known.fingerprint;
    const fingerprint = applyFingerprint(input);
    this.#known.set(input.desired, {
      desired: [...input.desired],
      inventory: [...(input.inventory ?? [])],
      owner: { ...input.owner },
      options: { ...input.options },
      fingerprint,
    });
    return fingerprint;
  }
}

type RememberedFingerprint = {
  readonly desired: readonly KubeObject[];
  readonly inventory: readonly string[];
  readonly owner: Owner;
  readonly options: Readonly<Record<string, string | boolean | undefined>>;
  readonly fingerprint: string;
};

function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Two records of plain values (strings, booleans, undefined) with the same keys and values. */
function sameFlat(a: object, b: object): boolean {
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  let count = 0;
  for (const key in left) {
    if (!Object.hasOwn(left, key)) continue;
    count++;
    if (!Object.hasOwn(right, key) || left[key] !== right[key]) return false;
  }
  for (const key in right) if (Object.hasOwn(right, key)) count--;
  return count === 0;
}

/**
 * The record to keep after a full apply: the versions of the desired objects it read unchanged (from `live`) or
 * wrote and proved (ChangeSet.written), with the fingerprint when that covers every desired object and the
 * apply was otherwise clean (nothing failed, skipped, pruned or unreadable, the inventory did not move).
 * Undefined when it proved nothing.
 */
export function recordNoop(
  fingerprint: string,
  input: { desired: readonly KubeObject[]; inventory: Inventory; live: LiveState; changes: ChangeSet; owner: Owner },
): NoopRecord | undefined {
  const { changes, live } = input;
  const actions = new Map(changes.entries.map((e) => [e.id, e.action]));
  const versions = new Map<string, string>();
  const digests = new Map<string, string>();
  for (const object of input.desired) {
    const id = objectId(object);
    const action = actions.get(id);
    let proof: ProvenObject | undefined;
    if (action === 'created' || action === 'configured') proof = changes.written?.get(id);
    else if (action === 'unchanged') {
      const read = live.objects.get(id);
      const version = read?.metadata.resourceVersion;
      const digest = read?.metadata.annotations?.[APPLIED_DIGEST_ANNOTATION];
      proof =
        read === undefined
          ? live.proven?.get(id)
          : typeof version === 'string' && version !== '' && typeof digest === 'string'
            ? { version, digest }
            : undefined;
    }
    if (proof === undefined) continue;
    versions.set(id, proof.version);
    digests.set(id, proof.digest);
  }
  if (versions.size === 0) return undefined;
  const clean =
    changes.blocked === undefined &&
    (live.unknownScopes?.size ?? 0) === 0 &&
    (live.unresolved?.size ?? 0) === 0 &&
    changes.entries.length === input.desired.length &&
    versions.size === input.desired.length &&
    sameInventory(changes.inventory, input.inventory);
  return { fingerprint: clean ? fingerprint : undefined, versions, digests, owner: ownerHash(input.owner) };
}

function sameInventory(a: Inventory, b: Inventory): boolean {
  if (a.length !== b.length) return false;
  const before = new Map(b.map((e) => [e.id, e.created === true]));
  return a.every((e) => before.get(e.id) === (e.created === true));
}

/** Whether the recorded no-op still holds: same inputs, and the watch cache holds exactly the recorded versions. */
export function stillUnchanged(record: NoopRecord | undefined, fingerprint: string, watched: WatchedVersion): boolean {
  if (record?.fingerprint === undefined || record.fingerprint !== fingerprint) return false;
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

// The last Handlebars render of each target, kept: a render is a pure function of the snapshot's files, the path,
// the values, the target and the cluster's discovery, and a resync at the same commit with the same inputs (the
// common case: nothing changed) would make the very same objects again. It gets the kept ones instead, so the
// render (the templates run, the YAML parsed, namespaces placed) is not paid once per target per refresh.
// The files and the discovery are told apart by identity: the files one by one (the snapshot reader keeps the file
// objects it read; each run filters and decrypts them into a new list, and a file decrypted again, or discovery
// read again, is a new object and renders anew); everything else by value. Every resync shares the objects, so no
// step may change them (none does: the apply marks copies, see @syncline/apply's withOwnership). They are not
// frozen: V8 serialises and walks frozen objects several times slower (measured: the digest and fingerprint of a
// no-op resync took 8–20× as long), which ate more than the render saved.
import type { KubernetesObject } from '@syncline/render';

/** At most this many targets are remembered (the longest unused go first; a deleted sync's go that way too). */
const MAX_ENTRIES = 10_000;

type Entry = { readonly files: readonly object[]; readonly discovery: object; readonly inputs: string; readonly objects: KubernetesObject[] };

export class RenderMemo {
  readonly #entries = new Map<string, Entry>();

  /** `slot`: the sync and target (one entry each); `inputs`: everything but files and discovery, as the render takes it. */
  render(input: { slot: string; files: readonly object[]; discovery: object; inputs: unknown }, render: () => KubernetesObject[]): KubernetesObject[] {
    const inputs = JSON.stringify(input.inputs);
    const known = this.#entries.get(input.slot);
    this.#entries.delete(input.slot);
    if (known !== undefined && sameItems(known.files, input.files) && known.discovery === input.discovery && known.inputs === inputs) {
      this.#entries.set(input.slot, known); // the most recently used last
      return known.objects;
    }
    const objects = render();
    this.#entries.set(input.slot, { files: input.files, discovery: input.discovery, inputs, objects });
    if (this.#entries.size > MAX_ENTRIES) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    return objects;
  }
}

function sameItems(a: readonly object[], b: readonly object[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The digest of a sync's rendered objects (the history entry's), remembered for the objects it was computed from:
 * a resync that got every target's kept render hands the very same objects, in the same order, and gets the
 * digest without serialising them again. Told apart by identity, as the render memo tells its renders apart (no
 * step changes a rendered object); any other list, or an object rendered anew, digests afresh.
 */
export class DigestMemo {
  readonly #known = new WeakMap<object, { readonly objects: readonly object[]; readonly digest: string }>();

  digest<T extends object>(objects: readonly T[], digest: (objects: readonly T[]) => string): string {
    const first = objects[0];
    if (first === undefined) return digest(objects);
    const known = this.#known.get(first);
    if (known !== undefined && sameItems(known.objects, objects)) return known.digest;
    const value = digest(objects);
    this.#known.set(first, { objects: [...objects], digest: value });
    return value;
  }
}

// What every SOPS file format loads into (the tree branches and the sops metadata), the error a file that
// does not parse raises, and the unflattening of sops' flat metadata keys shared by dotenv and INI.
import { SopsMap } from './tree.ts';
import type { SopsValue } from './tree.ts';

/** Where and why a file does not parse: a 1-based line and a reason that quotes none of the text. */
export class FormatError extends Error {
  readonly line: number | undefined;
  /** True when the file is well formed but in a form Syncline does not read (an option this decrypter does not implement), rather than malformed. */
  readonly unsupported: boolean;

  constructor(message: string, line?: number, options: { unsupported?: boolean } = {}) {
    super(message);
    this.line = line;
    this.unsupported = options.unsupported === true;
  }
}

export interface LoadedFile {
  readonly branches: SopsMap[];
  /** The `sops` mapping (for dotenv, unflattened). */
  readonly metadata: SopsValue;
  /**
   * YAML and JSON: the committed text, the range of every leaf scalar in tree walk order, and the ranges of
   * the `sops` entries. Undefined when the text cannot be written back in place (aliases).
   */
  readonly source?:
    | { readonly text: string; readonly leaves: ReadonlyArray<readonly [number, number]>; readonly removed: ReadonlyArray<readonly [number, number]> }
    | undefined;
}

/** sops' unflattenTreeBranch: `a__map_b` is a.b, `a__list_0` is a[0]; keys sorted as sops sorts them. */
export function unflatten(flat: ReadonlyArray<[string, string]>): SopsValue {
  type Slot = { value?: string; keys?: Map<string, Slot>; indices?: Map<number, Slot> };
  const root: Slot = {};
  for (const [path, value] of flat) {
    let slot = root;
    for (const token of path.split(/(?=__map_|__list_)/)) {
      if (token.startsWith('__list_')) {
        const position = Number(token.slice('__list_'.length));
        slot.indices ??= new Map();
        slot = slot.indices.get(position) ?? slot.indices.set(position, {}).get(position)!;
      } else {
        const name = token.startsWith('__map_') ? token.slice('__map_'.length) : token;
        slot.keys ??= new Map();
        slot = slot.keys.get(name) ?? slot.keys.set(name, {}).get(name)!;
      }
    }
    if (slot.value !== undefined) throw new FormatError('sops metadata has a duplicate key');
    slot.value = value;
  }
  const convert = (slot: Slot): SopsValue => {
    if (slot.value !== undefined) return slot.value;
    if (slot.indices !== undefined) {
      const length = slot.indices.size;
      return Array.from({ length }, (_, i) => {
        const item = slot.indices?.get(i);
        if (item === undefined) throw new FormatError('sops metadata has an incomplete list');
        return convert(item);
      });
    }
    return new SopsMap([...(slot.keys ?? new Map<string, Slot>())].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, item]) => [key, convert(item)]));
  };
  return convert(root);
}

// The inventory: the exact set of objects a target applied, kept in status and used for pruning.
import { parseObjectId, scopeOf } from './identity.ts';

export type InventoryEntry = {
  /** `group/Kind/namespace/name`, see objectId. */
  readonly id: string;
  /** Set on Namespaces this sync created: only those are ever deleted by a prune. */
  readonly created?: boolean;
};

/** The objects one target applied, in apply order. */
export type Inventory = ReadonlyArray<InventoryEntry>;

/**
 * The status form of an inventory: one string per (group, Kind, namespace) holding all its names,
 * `group/Kind/namespace/name1,name2`; a Namespace this sync created is written `+name`. About 1 byte of
 * overhead per object beyond its name, so thousands of objects fit easily in status.
 */
export type EncodedInventory = string[];

const isNamespaceKind = (id: string): boolean => id.startsWith('/Namespace/');

// Names cannot contain '%' (nor '/'), so percent-encoding the separator characters is unambiguous.
const escapeName = (name: string): string => name.replaceAll('%', '%25').replaceAll(',', '%2C').replaceAll('+', '%2B');
const unescapeName = (name: string): string => name.replaceAll('%2B', '+').replaceAll('%2C', ',').replaceAll('%25', '%');

/**
 * Every resync of every target decodes its inventory from status and encodes it back, unchanged: both are
 * remembered by the array they were given (a status array lives as long as the cached object that holds it, and is
 * replaced, never changed, when the object changes; the inventory decoded from it is the array the next encode
 * gets), so a no-op resync does neither again. A decoded inventory is frozen and an encoded one handed out as a
 * copy: no caller can change what the next one reads.
 */
const decoded = new WeakMap<ReadonlyArray<string>, Inventory>();
const encoded = new WeakMap<Inventory, EncodedInventory>();

export function encodeInventory(inventory: Inventory): EncodedInventory {
  // Only a frozen inventory (a decoded one) is remembered: an array a caller built may still change.
  if (!Object.isFrozen(inventory)) return encodeEntries(inventory);
  const known = encoded.get(inventory);
  if (known !== undefined) return [...known];
  const lines = encodeEntries(inventory);
  encoded.set(inventory, lines);
  return [...lines];
}

function encodeEntries(inventory: Inventory): EncodedInventory {
  const groups = new Map<string, string[]>();
  for (const entry of inventory) {
    const scope = scopeOf(entry.id);
    const name = escapeName(parseObjectId(entry.id).name);
    const names = groups.get(scope) ?? [];
    names.push(entry.created === true && isNamespaceKind(entry.id) ? `+${name}` : name);
    groups.set(scope, names);
  }
  return [...groups].map(([scope, names]) => `${scope}/${names.join(',')}`);
}

export function decodeInventory(lines: ReadonlyArray<string> | undefined): Inventory {
  if (lines === undefined) return [];
  const known = decoded.get(lines);
  if (known !== undefined) return known;
  const entries = Object.freeze(decodeEntries(lines));
  decoded.set(lines, entries);
  return entries;
}

function decodeEntries(lines: ReadonlyArray<string>): InventoryEntry[] {
  const entries: InventoryEntry[] = [];
  for (const line of lines) {
    const slash = line.lastIndexOf('/');
    const scope = line.slice(0, slash);
    if (scope.split('/').length !== 3) throw new Error(`not an inventory entry (group/Kind/namespace/names): ${JSON.stringify(line)}`);
    for (const raw of line.slice(slash + 1).split(',')) {
      if (raw === '') continue;
      const created = raw.startsWith('+');
      const id = `${scope}/${unescapeName(created ? raw.slice(1) : raw)}`;
      entries.push(Object.freeze(created ? { id, created: true } : { id }));
    }
  }
  return entries;
}

/** The ids in `previous` that `next` no longer holds: what a prune would delete, in reverse apply order. */
export function diffInventory(previous: Inventory, next: Inventory | ReadonlyArray<string>): string[] {
  const keep = new Set(next.map((e) => (typeof e === 'string' ? e : e.id)));
  return previous
    .filter((e) => !keep.has(e.id))
    .map((e) => e.id)
    .reverse();
}

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

export function encodeInventory(inventory: Inventory): EncodedInventory {
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

export function decodeInventory(encoded: ReadonlyArray<string> | undefined): Inventory {
  const entries: InventoryEntry[] = [];
  for (const line of encoded ?? []) {
    const slash = line.lastIndexOf('/');
    const scope = line.slice(0, slash);
    if (scope.split('/').length !== 3) throw new Error(`not an inventory entry (group/Kind/namespace/names): ${JSON.stringify(line)}`);
    for (const raw of line.slice(slash + 1).split(',')) {
      if (raw === '') continue;
      const created = raw.startsWith('+');
      const id = `${scope}/${unescapeName(created ? raw.slice(1) : raw)}`;
      entries.push(created ? { id, created: true } : { id });
    }
  }
  return entries;
}

/** The ids in `previous` that `next` no longer holds: what a prune would delete, in reverse apply order. */
export function diffInventory(previous: Inventory, next: Inventory | ReadonlyArray<string>): string[] {
  const keep = new Set(next.map((e) => (typeof e === 'string' ? e : e.id)));
  return previous.filter((e) => !keep.has(e.id)).map((e) => e.id).reverse();
}

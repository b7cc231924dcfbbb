// What every reconciler does to its own object, whatever the kind: the finalizer, a status written only
// when it changed, and Events that are news once.
import { KubeApiError, type KubeRest } from '@syncline/kube';
import type { Condition } from '@syncline/api';

/** A Syncline object as the reconcilers read it: enough to patch it and its status. */
export type OwnObject = {
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly resourceVersion?: string; readonly finalizers?: readonly string[] };
  readonly status?: object;
};

/** The REST path of a namespaced syncline.dev object. */
export const objectPath = (plural: string, namespace: string, name: string): string => `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/${plural}/${name}`;

/**
 * Sets the object's finalizers, conditioned on the resourceVersion read. With `read`, returns the resourceVersion
 * the patch left the object at (undefined when the answer names none).
 */
export async function patchFinalizers(
  rest: KubeRest,
  path: string,
  object: OwnObject,
  finalizers: readonly string[],
  options: { readonly read?: boolean } = {},
): Promise<string | undefined> {
  const stored = await rest.request<{ metadata?: { resourceVersion?: unknown } } | undefined>({
    method: 'PATCH',
    path,
    contentType: 'application/merge-patch+json',
    discardBody: options.read !== true,
    // resourceVersion makes this an optimistic update: a concurrent change fails it and we retry fresh.
    body: { metadata: { finalizers, resourceVersion: object.metadata.resourceVersion } },
  });
  const version = stored?.metadata?.resourceVersion;
  return typeof version === 'string' && version !== '' ? version : undefined;
}

/** Stored statuses (as the cache holds them) and the status object last found to say the same: neither is ever changed. */
const provenSame = new WeakMap<object, object>();

/**
 * Writes status only when it differs from what is stored: a no-op resync writes nothing. With `ifUnchanged`,
 * the write is conditioned on the resourceVersion that was read: a run that started from a cache that had not
 * yet seen the previous run's status write gets 409 Conflict (and runs again) instead of overwriting that status
 * with one computed from the older one (a second lastSyncedTime, a second Event). Only for a reconciler that
 * writes nothing else to its own object between reading it and this write. Such a write sends only the fields
 * that changed: the server merges them into the very status that was read (any other is refused), so what it
 * stores is the whole status all the same, and a field that stays (an inventory on a new commit of the same
 * objects) is neither serialised nor sent nor merged again.
 */
export async function writeStatus(
  rest: KubeRest,
  path: string,
  object: OwnObject,
  status: object,
  options: { readonly ifUnchanged?: boolean } = {},
): Promise<boolean> {
  // The common case, a no-op resync, serialises nothing: see sameAsStored. A status object already found to say
  // what this very stored status says (a reconciler that kept its no-op outcome hands the same one) is not walked again.
  const stored = object.status ?? {};
  if (provenSame.get(stored) === status) return false;
  if (sameAsStored(status, stored)) {
    provenSame.set(stored, status);
    return false;
  }
  // Otherwise compared as it will be sent (sameJson skips undefined fields, which JSON leaves out), not through
  // a JSON copy of it: a status holds the inventory and history.
  if (sameJson(status, stored)) return false;
  const conditioned = options.ifUnchanged === true && object.metadata.resourceVersion !== undefined;
  try {
    await rest.request({
      method: 'PATCH',
      path: `${path}/status`,
      contentType: 'application/merge-patch+json',
      // The stored object comes back through the informer; parsing it here too is CPU for nothing.
      discardBody: true,
      body: conditioned
        ? { metadata: { resourceVersion: object.metadata.resourceVersion }, status: changedFields(stored, status) ?? {} }
        : { status: { ...status, ...nullOut(stored, status) } },
    });
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404) return false;
    throw error;
  }
  return true;
}

/**
 * The merge patch that turns `stored` into `status`: each field that may differ (a list or an object whole), and
 * null for each field `status` no longer has; undefined when every field is the one stored. A field is left out
 * only when sameAsStored proves it the same (a walk that builds nothing, at the cost of sending now and then a
 * field that says the same in a way it does not prove, e.g. a Date: the server stores what it would have).
 */
export function changedFields(stored: object, status: object): Record<string, unknown> | undefined {
  const before = stored as Record<string, unknown>;
  const after = status as Record<string, unknown>;
  const patch: Record<string, unknown> = {};
  let any = false;
  for (const key of Object.keys(after)) {
    const value = after[key];
    if (value === undefined || (Object.hasOwn(before, key) && sameAsStored(value, before[key]))) continue;
    patch[key] = value;
    any = true;
  }
  for (const key of Object.keys(before)) {
    if (after[key] !== undefined || before[key] === undefined) continue;
    patch[key] = null;
    any = true;
  }
  return any ? patch : undefined;
}

/**
 * Whether `value`, as JSON would write it, says what `stored` (parsed from JSON) says. Only for plain objects,
 * arrays and primitives, where JSON changes nothing but dropping a field that is undefined: anything else (a Date,
 * a Map, a function, an array holding undefined) answers false, and the caller compares the JSON itself.
 */
export function sameAsStored(value: unknown, stored: unknown): boolean {
  if (value === stored) return value !== undefined;
  if (value === null || stored === null || typeof value !== 'object' || typeof stored !== 'object') return false;
  if (Array.isArray(value)) {
    if (!Array.isArray(stored) || value.length !== stored.length) return false;
    for (let i = 0; i < value.length; i++) if (!sameAsStored(value[i], stored[i])) return false;
    return true;
  }
  if (Array.isArray(stored)) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return false;
  const left = value as Record<string, unknown>;
  const right = stored as Record<string, unknown>;
  let fields = 0;
  for (const key in left) {
    if (!Object.hasOwn(left, key) || left[key] === undefined) continue;
    fields++;
    if (!Object.hasOwn(right, key) || !sameAsStored(left[key], right[key])) return false;
  }
  for (const key in right) if (Object.hasOwn(right, key) && right[key] !== undefined) fields--;
  return fields === 0;
}

/** Whether two condition lists say something different (times and generations aside). */
export function conditionsDiffer(before: readonly Condition[] | undefined, after: readonly Condition[] | undefined): boolean {
  // Compared in place, not through copies: every status write asks.
  const was = before ?? [];
  const now = after ?? [];
  if (was.length !== now.length) return true;
  return was.some((c, i) => {
    const d = now[i];
    return (
      d === undefined || c.type !== d.type || c.status !== d.status || (c.reason ?? null) !== (d.reason ?? null) || (c.message ?? null) !== (d.message ?? null)
    );
  });
}

/** Merge patch deletes a field only when told to: null out what the new status no longer has (or has as undefined, which JSON leaves out). */
function nullOut(before: object, after: object): Record<string, null> {
  const out: Record<string, null> = {};
  const next = after as Record<string, unknown>;
  for (const key of Object.keys(before)) if (next[key] === undefined) out[key] = null;
  return out;
}

/**
 * Whether two values parsed from JSON say the same, whatever the order of their keys: what comparing their
 * key-sorted serializations tells, without building them (a status holds the inventory and history; every
 * reconcile compares one).
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  // An undefined item is written as null in JSON.
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item: unknown, i) => sameJson(item ?? null, b[i] ?? null));
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left).filter((k) => left[k] !== undefined);
  if (keys.length !== Object.keys(right).filter((k) => right[k] !== undefined).length) return false;
  return keys.every((k) => Object.hasOwn(right, k) && sameJson(left[k], right[k]));
}

// Taking back an object of ours from kubectl's edits, before a correcting apply. Server-side apply removes only
// fields the applying manager owned and no longer applies: a port `kubectl patch` renumbered or an env var
// `kubectl set env` added belongs to the kubectl manager, so no apply of ours ever removes it (and a renumbered
// port that keeps its name makes every later apply fail with "Duplicate value"). Moving those managers' fields
// into our own apply entry first makes the next apply drop whatever Git does not hold. Pure: the live object in,
// a JSON patch of its managedFields out; the executor sends it.
import type { KubeObject } from './identity.ts';

/** One RFC 6902 operation, as the API server takes it with `application/json-patch+json`. */
export type JsonPatchOperation =
  { readonly op: 'test'; readonly path: string; readonly value: unknown } | { readonly op: 'replace'; readonly path: string; readonly value: unknown };

/** The managedFields patch that moves the fields of edit managers to ours. */
export type FieldTakeover = {
  /** The managers whose fields are moved (or cleared), in the object's order. */
  readonly managers: readonly string[];
  /**
   * Tests the resourceVersion read (or the managedFields, if it has none), then replaces the managedFields.
   * Undefined when the forced apply takes every field of the edits by itself.
   */
  readonly patch?: readonly JsonPatchOperation[];
};

type ManagedFieldsEntry = {
  readonly manager?: string;
  readonly operation?: string;
  readonly apiVersion?: string;
  readonly time?: string;
  readonly fieldsType?: string;
  readonly fieldsV1?: unknown;
  readonly subresource?: string;
};

/**
 * kubectl's own managers (`kubectl-edit`, `kubectl-patch`, `kubectl-label`, `kubectl-annotate`, `kubectl-set`,
 * `kubectl-scale`, `kubectl-replace`, `kubectl-client-side-apply`; a plain `kubectl` from older clients).
 */
const KUBECTL_MANAGER = /^kubectl(?:$|[-.])/u;

/**
 * `kubectl rollout restart` writes a timestamp into the pod template: an operation, not configuration. Taking it
 * would remove it and restart every pod a second time.
 */
const KUBECTL_ROLLOUT_MANAGER = 'kubectl-rollout';

/** What the API server names the owner of fields a client-side `kubectl apply` set before any server-side apply. */
const BEFORE_FIRST_APPLY_MANAGER = 'before-first-apply';

/**
 * Whether an entry records a hand edit whose fields an apply of ours may take: an Update (not an Apply: another
 * applier keeps its fields, whatever policy) of the object itself (not of `status` or `scale`, where controllers
 * and autoscalers write), by kubectl or by our own manager outside an apply. Updates of other managers are
 * controllers' (a PVC's bound volume, an injected CA bundle, a Deployment's revision annotation, finalizers):
 * taking theirs would delete them at the next apply.
 */
function isEdit(entry: ManagedFieldsEntry, fieldManager: string): boolean {
  if (entry.operation !== 'Update' || (entry.subresource !== undefined && entry.subresource !== '')) return false;
  const manager = entry.manager ?? '';
  const editor = manager === fieldManager || manager === BEFORE_FIRST_APPLY_MANAGER || (KUBECTL_MANAGER.test(manager) && manager !== KUBECTL_ROLLOUT_MANAGER);
  return editor && ownsMoreThanReplicas(entry.fieldsV1);
}

/**
 * A replica count is never taken from an edit: where Git does not set it (an autoscaler or a person scales the
 * workload), taking it would remove it and the server would scale the workload down to its default of one;
 * where Git sets it, the forced apply takes it back anyway. An edit of nothing else is no edit to take over.
 */
function ownsMoreThanReplicas(fields: unknown): boolean {
  if (!isRecord(fields)) return false;
  for (const key in fields) {
    if (key !== 'f:spec') return true;
    const spec = fields[key];
    if (!isRecord(spec)) return true;
    for (const field in spec) if (field !== 'f:replicas') return true;
  }
  return false;
}

/** An edit's fields split into those to take and the replica count it keeps (see ownsMoreThanReplicas). */
function splitReplicas(fields: Record<string, unknown>): { readonly taken: Record<string, unknown>; readonly kept?: Record<string, unknown> } {
  const spec = fields['f:spec'];
  if (!isRecord(spec) || !Object.hasOwn(spec, 'f:replicas')) return { taken: fields };
  const { 'f:replicas': replicas, ...otherSpec } = spec;
  const { 'f:spec': _spec, ...other } = fields;
  return { taken: Object.keys(otherSpec).length === 0 ? other : { ...other, 'f:spec': otherSpec }, kept: { 'f:spec': { 'f:replicas': replicas } } };
}

function isOurApply(entry: ManagedFieldsEntry, fieldManager: string): boolean {
  return entry.manager === fieldManager && entry.operation === 'Apply' && (entry.subresource === undefined || entry.subresource === '');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The union of two FieldsV1 trees (nested maps whose leaves are `{}`). Neither input is modified. */
export function unionFields(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [key, value] of Object.entries(b)) {
    const mine = out[key];
    out[key] = isRecord(mine) && isRecord(value) ? unionFields(mine, value) : mine === undefined ? value : mine;
  }
  return out;
}

/** The managers of `live` whose fields an apply of ours would take over (empty: none). Allocates nothing when none. */
export function editManagersOf(live: KubeObject, fieldManager: string): readonly string[] {
  const entries: readonly ManagedFieldsEntry[] | undefined = live.metadata.managedFields;
  if (entries === undefined) return NONE;
  let found: string[] | undefined;
  for (const entry of entries) if (isEdit(entry, fieldManager)) (found ??= []).push(entry.manager ?? '');
  return found ?? NONE;
}
const NONE: readonly string[] = [];

/**
 * What to do about kubectl's edits (see isEdit) of an object of ours before a forced apply of `desired`; undefined
 * when no such manager owns a field. When every field they own is one `desired` sets, the forced apply takes them
 * all and `patch` is undefined (a changed value costs one write, as before). Otherwise `patch` moves all their
 * fields into our manager's Apply entry (created if the object has none), so that the apply drops those Git does
 * not hold. An edit recorded at another apiVersion than our entry's is cleared instead of moved (its field paths
 * are of another schema): its fields stay and are owned by no one. A replica count stays its editor's (see
 * ownsMoreThanReplicas); every other entry (other appliers, controllers, subresources) is kept as it is. The patch tests the resourceVersion it was computed from, so it
 * fails rather than overwrite the ownership of a write it did not see.
 */
export function planFieldTakeover(live: KubeObject, options: { readonly fieldManager: string; readonly desired?: KubeObject }): FieldTakeover | undefined {
  const { fieldManager } = options;
  const edits = editManagersOf(live, fieldManager);
  if (edits.length === 0) return undefined;
  const managers = [...new Set(edits)];
  const entries = (live.metadata.managedFields ?? []) as readonly ManagedFieldsEntry[];
  const ours = entries.filter((e) => isOurApply(e, fieldManager));
  const taken = entries.filter((e) => isEdit(e, fieldManager));
  const split = new Map(taken.map((e) => [e, splitReplicas(isRecord(e.fieldsV1) ? e.fieldsV1 : {})]));
  const desired = options.desired;
  if (desired !== undefined && taken.every((e) => setBy(split.get(e)?.taken ?? {}, desired))) return { managers };
  const apiVersion = ours[0]?.apiVersion ?? live.apiVersion;
  let fields: Record<string, unknown> = {};
  for (const entry of ours) if (entry.apiVersion === apiVersion && isRecord(entry.fieldsV1)) fields = unionFields(fields, entry.fieldsV1);
  for (const entry of taken) if (entry.apiVersion === apiVersion) fields = unionFields(fields, split.get(entry)?.taken ?? {});
  // The API server keys entries by manager and operation: two entries of ours would collapse into the last one.
  const merged: ManagedFieldsEntry = {
    ...(ours[0] ?? { manager: fieldManager, operation: 'Apply', time: latestTime(taken) }),
    apiVersion,
    fieldsType: 'FieldsV1',
    fieldsV1: fields,
  };
  const managedFields: ManagedFieldsEntry[] = [];
  let placed = false;
  for (const entry of entries) {
    const kept = split.get(entry)?.kept;
    if (!isOurApply(entry, fieldManager) && !isEdit(entry, fieldManager)) managedFields.push(entry);
    else if (!placed) {
      managedFields.push(merged);
      placed = true;
    }
    if (kept !== undefined) managedFields.push({ ...entry, fieldsV1: kept });
  }
  const version = live.metadata.resourceVersion;
  const guard: JsonPatchOperation =
    typeof version === 'string' && version !== ''
      ? { op: 'test', path: '/metadata/resourceVersion', value: version }
      : { op: 'test', path: '/metadata/managedFields', value: entries };
  return { managers, patch: [guard, { op: 'replace', path: '/metadata/managedFields', value: managedFields }] };
}

/**
 * Whether `value` (a desired object or a part of it) sets every field of a FieldsV1 tree: `f:name` a key,
 * `k:{...}` a list entry holding exactly those key values, `v:...` a set member, `i:N` a list index, `.` the node
 * itself. A key field the manifest leaves to the server's default (a Service port's protocol) does not match:
 * the answer errs towards "not set", which costs a managedFields patch, never a field left behind.
 */
export function setBy(fields: Record<string, unknown>, value: unknown): boolean {
  for (const [key, child] of Object.entries(fields)) {
    if (key === '.') continue;
    const node = isRecord(child) ? child : {};
    const prefix = key.slice(0, 2);
    const rest = key.slice(2);
    if (prefix === 'f:') {
      if (!isRecord(value) || !Object.hasOwn(value, rest) || !setBy(node, value[rest])) return false;
      continue;
    }
    if (!Array.isArray(value)) return false;
    const items: readonly unknown[] = value;
    if (prefix === 'i:') {
      const index = Number(rest);
      if (!Number.isInteger(index) || index < 0 || index >= items.length || !setBy(node, items[index])) return false;
      continue;
    }
    let wanted: unknown;
    try {
      wanted = JSON.parse(rest);
    } catch {
      return false;
    }
    if (prefix === 'v:') {
      const json = JSON.stringify(wanted);
      if (!items.some((item) => JSON.stringify(item) === json)) return false;
      continue;
    }
    if (prefix !== 'k:' || !isRecord(wanted)) return false;
    const keys = Object.entries(wanted);
    const entry = items.find((item) => isRecord(item) && keys.every(([k, v]) => JSON.stringify(item[k]) === JSON.stringify(v)));
    if (entry === undefined || !setBy(node, entry)) return false;
  }
  return true;
}

function latestTime(entries: readonly ManagedFieldsEntry[]): string | undefined {
  let latest: string | undefined;
  for (const entry of entries) if (entry.time !== undefined && (latest === undefined || entry.time > latest)) latest = entry.time;
  return latest;
}

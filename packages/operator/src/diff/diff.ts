// What `syncline diff` prints per object: a unified diff of the live object and the object a sync would
// apply, limited to the fields Syncline writes, with Secret values masked. Pure functions.
import { diffArrays } from 'diff';
import { stringify } from 'yaml';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** Shown instead of a Secret value; a value that would change shows CHANGED on the desired side. */
export const MASK = '***';
export const MASK_CHANGED = '*** (changed)';

/**
 * The live object as far as the desired one reaches: only keys the desired object sets (what a server-side
 * apply by Syncline owns and would change), so server-populated fields (status, uid, managedFields, defaults)
 * are not reported. Lists of objects with `name` are matched by name (containers, ports, env), others by
 * position (a list whose length differs is kept whole).
 */
export function projectLive(live: unknown, desired: unknown): unknown {
  if (isObject(desired) && isObject(live)) {
    const out: JsonObject = {};
    for (const key of Object.keys(desired)) if (key in live) out[key] = projectLive(live[key], desired[key]) as Json;
    return out;
  }
  if (Array.isArray(desired) && Array.isArray(live)) {
    return projectList(live as unknown[], desired as unknown[]);
  }
  return live;
}

function projectList(live: unknown[], desired: unknown[]): unknown {
  const nameOf = (item: unknown): string | undefined => (isObject(item) && typeof item['name'] === 'string' ? item['name'] : undefined);
  if (desired.every((d) => nameOf(d) !== undefined) && live.every((l) => nameOf(l) !== undefined)) {
    const byName = new Map(live.map((l) => [nameOf(l), l]));
    const matched = desired.flatMap((d) => {
      const found = byName.get(nameOf(d));
      return found === undefined ? [] : [projectLive(found, d)];
    });
    // Entries only the live list has are left out: server-side apply keeps what other managers added (an
    // injected sidecar), as it keeps fields the desired object does not set.
    return matched;
  }
  if (desired.length === live.length) return live.map((l, i) => projectLive(l, desired[i]));
  return live;
}

/**
 * Secret values never reach the output: each value of data and stringData becomes MASK, or MASK_CHANGED on
 * the desired side when it differs from the live one. stringData is compared as the base64 data it becomes.
 * Returns both sides; a non-Secret passes through.
 */
export function maskSecrets(live: unknown, desired: unknown): { live: unknown; desired: unknown } {
  const kindOf = (o: unknown): unknown => (isObject(o) ? o['kind'] : undefined);
  if (kindOf(desired ?? live) !== 'Secret') return { live, desired };
  const valuesOf = (o: unknown): Map<string, string> => {
    const values = new Map<string, string>();
    if (!isObject(o)) return values;
    const data = o['data'];
    if (isObject(data)) for (const [k, v] of Object.entries(data)) values.set(k, scalar(v));
    const stringData = o['stringData'];
    if (isObject(stringData)) for (const [k, v] of Object.entries(stringData)) values.set(k, Buffer.from(scalar(v)).toString('base64'));
    return values;
  };
  const liveValues = valuesOf(live);
  const desiredValues = valuesOf(desired);
  const masked = (o: unknown, side: 'live' | 'desired'): unknown => {
    if (!isObject(o)) return o;
    const { data: _data, stringData: _stringData, ...rest } = o;
    const own = side === 'live' ? liveValues : desiredValues;
    // Only the keys the other side has are compared; on the live side the projection already dropped the rest.
    if (own.size === 0) return rest;
    const data: JsonObject = {};
    for (const [key, value] of [...own.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      const other = side === 'live' ? desiredValues.get(key) : liveValues.get(key);
      data[key] = side === 'desired' && other !== undefined && other !== value ? MASK_CHANGED : MASK;
    }
    return { ...rest, data };
  };
  return { live: masked(live, 'live'), desired: masked(desired, 'desired') };
}

/**
 * A Secret as the API server stores it: stringData folded into data (base64; stringData wins), so desired and
 * live compare key by key. Anything else is returned as it is.
 */
export function normalizeSecret(object: unknown): unknown {
  if (!isObject(object) || object['kind'] !== 'Secret' || !isObject(object['stringData'])) return object;
  const { stringData, ...rest } = object;
  const data: JsonObject = isObject(rest['data']) ? { ...rest['data'] } : {};
  for (const [key, value] of Object.entries(stringData)) data[key] = Buffer.from(scalar(value)).toString('base64');
  return { ...rest, data };
}

/** YAML of an object for diffing: keys in a stable order, so only real differences show. */
export function diffYaml(object: unknown): string {
  if (object === undefined) return '';
  return stringify(sortKeys(object), { lineWidth: 0 });
}

/**
 * A unified diff (as `diff -u`) of two texts, line by line, with `context` lines around each change.
 * Returns '' when they are equal.
 */
export function unifiedDiff(a: string, b: string, labels: { from: string; to: string }, context = 3): string {
  const x = splitLines(a);
  const y = splitLines(b);
  const ops = lineOps(x, y);
  if (ops.every((op) => op.type === ' ')) return '';
  const out = [`--- ${labels.from}`, `+++ ${labels.to}`];
  // Group changes whose context overlaps into hunks.
  let i = 0;
  while (i < ops.length) {
    if (ops[i]?.type === ' ') {
      i++;
      continue;
    }
    const start = Math.max(0, i - context);
    let end = i;
    for (let j = i; j < ops.length; j++) {
      if (ops[j]?.type !== ' ') end = j;
      else if (j - end > 2 * context) break;
    }
    const stop = Math.min(ops.length, end + context + 1);
    const hunk = ops.slice(start, stop);
    const first = ops[start];
    const aStart = (first?.a ?? 0) + 1;
    const bStart = (first?.b ?? 0) + 1;
    const aLen = hunk.filter((op) => op.type !== '+').length;
    const bLen = hunk.filter((op) => op.type !== '-').length;
    out.push(`@@ -${aLen === 0 ? aStart - 1 : aStart},${aLen} +${bLen === 0 ? bStart - 1 : bStart},${bLen} @@`);
    for (const op of hunk) out.push(`${op.type}${op.line}`);
    i = stop;
  }
  return out.join('\n') + '\n';
}

type Op = { type: ' ' | '-' | '+'; line: string; a: number; b: number };

/**
 * Above this many inserted plus deleted lines, the search for the shortest edit script stops and the changed
 * middle is shown removed, then added, whole: still a correct diff, only not the smallest. Myers' search costs
 * about D² steps for D changed lines; at 2,000 the search gives up after about 0.4 s (`pnpm bench diff`, two
 * 20,000-line objects that differ in every line), where 4,000 took 1.5 s.
 */
const MAX_EDIT_LENGTH = 2_000;

/** Shortest edit script (Myers' O(ND) diff); `a`/`b` are the 0-based line positions where each op stands. */
function lineOps(x: readonly string[], y: readonly string[]): Op[] {
  // Trim the common prefix and suffix: objects differ in a few lines, and the search only sees the middle.
  let prefix = 0;
  while (prefix < x.length && prefix < y.length && x[prefix] === y[prefix]) prefix++;
  let suffix = 0;
  while (suffix < x.length - prefix && suffix < y.length - prefix && x[x.length - 1 - suffix] === y[y.length - 1 - suffix]) suffix++;
  const xs = x.slice(prefix, x.length - suffix);
  const ys = y.slice(prefix, y.length - suffix);
  const changes = xs.length === 0 || ys.length === 0 ? undefined : diffArrays(xs, ys, { maxEditLength: MAX_EDIT_LENGTH });
  const script: { type: Op['type']; line: string }[] = x.slice(0, prefix).map((line) => ({ type: ' ', line }));
  // Within one run of changes, deletions before insertions, as diff -u prints them.
  let removed: string[] = [];
  let added: string[] = [];
  const flush = (): void => {
    for (const line of removed) script.push({ type: '-', line });
    for (const line of added) script.push({ type: '+', line });
    removed = [];
    added = [];
  };
  for (const change of changes ?? [
    { value: xs, removed: true, added: false },
    { value: ys, removed: false, added: true },
  ]) {
    // Loops, not push(...lines): a spread of a whole object's lines can exceed the call stack's argument limit.
    if (change.removed) for (const line of change.value) removed.push(line);
    else if (change.added) for (const line of change.value) added.push(line);
    else {
      flush();
      for (const line of change.value) script.push({ type: ' ', line });
    }
  }
  flush();
  for (const line of x.slice(x.length - suffix)) script.push({ type: ' ', line });
  let a = 0;
  let b = 0;
  return script.map((op) => {
    const placed = { ...op, a, b };
    if (op.type !== '+') a++;
    if (op.type !== '-') b++;
    return placed;
  });
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (isObject(value))
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys(value[k])]),
    );
  return value;
}

function scalar(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

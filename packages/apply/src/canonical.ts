// Canonical JSON (sorted keys) and digests over it: the same objects give the same digest whatever the key order.
import { hash } from 'node:crypto';

/** Built by concatenation (V8 joins the pieces once, when the string is hashed): no array of pieces per value. */
function write(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + write(value[i]);
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let out = '{';
  let first = true;
  for (const key of keys) {
    const v = record[key];
    if (v === undefined) continue;
    out += (first ? '' : ',') + JSON.stringify(key) + ':' + write(v);
    first = false;
  }
  return `${out}}`;
}

export function canonicalJson(value: unknown): string {
  return write(value);
}

/** sha256 over canonical JSON, as `sha256:<hex>`. */
export function digestOf(value: unknown): string {
  return `sha256:${hash('sha256', canonicalJson(value), 'hex')}`;
}

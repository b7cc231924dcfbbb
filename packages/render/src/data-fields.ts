// Secret and ConfigMap data as the API server will decode it, checked at render time so that a bad value fails
// with file and line instead of an API error that names no file.
//
// Kubernetes reads `Secret.data` and `ConfigMap.binaryData` as Go `[]byte`, which encoding/json decodes with
// `base64.StdEncoding`: the standard alphabet (`+`, `/`), `=` padding to a multiple of 4 characters, and CR
// and LF skipped anywhere (so a YAML block scalar of base64 lines is fine); spaces, tabs, the URL-safe
// alphabet (`-`, `_`) and missing padding are refused. `Secret.stringData` is `map[string]string`. Keys follow
// apimachinery's IsConfigMapKey. `ConfigMap.data` is left alone: its values are text the API server checks
// itself, and templates use it freely.
//
// Messages name the field and the key, never the value: these are secrets.
import { RenderError, RenderErrorReason } from './errors.ts';
import type { Locate, PlacedObject } from './objects.ts';

/** What the API server would refuse, for `field` (and `key`), without the value. */
export interface DataProblem {
  readonly field: string;
  readonly key?: string;
  readonly detail: string;
}

const maxKeyLength = 253;
const keyPattern = /^[-._a-zA-Z0-9]+$/;

/** Why `key` cannot be a ConfigMap or Secret data key, or undefined when it can. */
export function dataKeyProblem(key: string): string | undefined {
  if (key.length > maxKeyLength) return `is longer than ${maxKeyLength} characters`;
  if (!keyPattern.test(key)) return "may only hold letters, digits, '-', '_' and '.'";
  if (key === '.' || key.startsWith('..')) return "must not be '.' or '..' or start with '..'";
  return undefined;
}

const canonicalBase64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Why Go's base64.StdEncoding would refuse `value`, or undefined when it decodes. */
export function base64Problem(value: string): string | undefined {
  const text = value.replace(/[\r\n]/g, '');
  if (canonicalBase64.test(text)) return undefined;
  if (/[ \t]/.test(text)) return 'is not valid base64: it holds spaces or tabs (only line breaks may separate base64 characters)';
  if (/[-_]/.test(text) && /^[-_A-Za-z0-9+/=]*$/.test(text))
    return "is not valid base64: it uses the URL-safe alphabet ('-', '_'); Kubernetes decodes standard base64 ('+', '/')";
  if (/[^A-Za-z0-9+/=]/.test(text))
    return 'is not valid base64: it holds characters outside the base64 alphabet (for plain text use stringData, or b64enc in a template)';
  if (/=[^=]/.test(text) || /={3}/.test(text)) return "is not valid base64: '=' padding may only end it, at most twice";
  // What is left: the right characters, but not a multiple of 4 of them.
  return "is not valid base64: its length is not a multiple of 4 (missing or extra '=' padding?)";
}

function kindOfValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'a mapping' : `a ${typeof value}`;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A key as shown in a message: quoted when it holds odd characters, shortened when long. */
function shownKey(key: string): string {
  const short = key.length > 64 ? `${key.slice(0, 64)}…` : key;
  return /^[\x21-\x7e]+$/.test(short) ? `\`${short}\`` : JSON.stringify(short);
}

type ValueRule = (value: unknown) => string | undefined;

const base64Value: ValueRule = (value) => {
  if (typeof value === 'string') return base64Problem(value);
  if (value === null) return 'is null (write "" for an empty value)';
  return `is ${kindOfValue(value)}, not a base64 string (for plain text use stringData, or b64enc in a template)`;
};

const stringValue: ValueRule = (value) => {
  if (typeof value === 'string') return undefined;
  if (value === null) return 'is null (write "" for an empty value)';
  return `is ${kindOfValue(value)}, not a string${typeof value === 'object' ? '' : ' (quote it)'}`;
};

function fieldProblem(object: Record<string, unknown>, field: string, rule: ValueRule): DataProblem | undefined {
  const data = object[field];
  if (data === undefined || data === null) return undefined;
  if (!isMapping(data)) return { field, detail: `\`${field}\` is ${kindOfValue(data)}, not a mapping of keys to values` };
  for (const key of Object.keys(data)) {
    const badKey = dataKeyProblem(key);
    if (badKey !== undefined) return { field, key, detail: `\`${field}\` key ${shownKey(key)} is not a valid key: it ${badKey}` };
    const badValue = rule(data[key]);
    if (badValue !== undefined) return { field, key, detail: `the value of \`${field}\` key ${shownKey(key)} ${badValue}` };
  }
  return undefined;
}

/** The first thing the API server would refuse in a Secret's or ConfigMap's data, or undefined. */
export function dataFieldProblem(object: { apiVersion: string; kind: string; [key: string]: unknown }): DataProblem | undefined {
  if (object.apiVersion !== 'v1') return undefined;
  if (object.kind === 'Secret') return fieldProblem(object, 'data', base64Value) ?? fieldProblem(object, 'stringData', stringValue);
  if (object.kind !== 'ConfigMap') return undefined;
  const problem = fieldProblem(object, 'binaryData', base64Value);
  if (problem !== undefined) return problem;
  const { data, binaryData } = object;
  if (isMapping(data) && isMapping(binaryData)) {
    const both = Object.keys(binaryData).find((key) => Object.hasOwn(data, key));
    if (both !== undefined) return { field: 'binaryData', key: both, detail: `key ${shownKey(both)} is in both \`data\` and \`binaryData\`` };
  }
  return undefined;
}

/** Fail on the first Secret or ConfigMap whose data the API server would refuse (after patches: what is applied). */
export function checkDataFields(objects: readonly PlacedObject[], locate: Locate): void {
  for (const placed of objects) {
    const { object } = placed;
    const problem = dataFieldProblem(object);
    if (problem === undefined) continue;
    const id = `${object.kind}/${object.metadata.name}${object.metadata.namespace === undefined ? '' : ` in ${object.metadata.namespace}`}`;
    // A patched object's key may come from the patch, so point at the document, not at a line of it.
    const where =
      placed.patched === true ? locate(placed.origin) : locate(placed.origin, problem.key === undefined ? [problem.field] : [problem.field, problem.key]);
    throw new RenderError({
      reason: RenderErrorReason.InvalidObject,
      ...where,
      detail: `${id}: ${problem.detail}${placed.patched === true ? ' (after targets[].patches)' : ''}`,
    });
  }
}

// Values layering: spec.values, then each valuesFrom source in order, then the target's values. Mappings
// deep-merge, everything else (lists included) replaces, and `null` removes a key (as in Helm), so an
// environment can unset a default.
import { RenderError, RenderErrorReason } from './errors.ts';
import { parseYamlDocuments, yamlErrorPosition } from './yaml.ts';

/**
 * Plain data: what YAML or JSON can express. Templates only ever read own properties (see template.ts), so the
 * ordinary Object prototype is unreachable from them; a `__proto__` key is kept as an own data property.
 */
export type Values = { [key: string]: unknown };

/**
 * Parse one values document (the content of a valuesFrom ConfigMap/Secret key). `origin` names the source in
 * errors, e.g. `valuesFrom[0] Secret/app-values key values.yaml`; the content itself never appears in one.
 */
export function parseValues(yamlText: string, origin: string): Values {
  let documents: unknown[];
  try {
    documents = parseYamlDocuments(yamlText);
  } catch (error) {
    const position = yamlErrorPosition(yamlText, error);
    throw new RenderError({
      reason: RenderErrorReason.InvalidValues,
      file: origin,
      line: position.line,
      column: position.column,
      detail: `values are not valid YAML: ${position.reason}`,
    });
  }
  const present = documents.filter((d) => d !== null && d !== undefined);
  if (present.length > 1) {
    throw new RenderError({ reason: RenderErrorReason.InvalidValues, file: origin, detail: 'values must be one YAML document' });
  }
  const [document] = present;
  if (document === undefined) return {};
  if (!isPlainMapping(document)) {
    throw new RenderError({ reason: RenderErrorReason.InvalidValues, file: origin, detail: `values must be a mapping, not ${describeKind(document)}` });
  }
  return toPlainValues(document, origin);
}

/**
 * Deep-merge values layers, lowest precedence first. Returns a fresh copy of plain data; inputs are not
 * modified. `undefined` layers are skipped so optional sources can be passed as they are.
 *
 * A `null` removes the key at any depth. With `keepNulls` it stays, as a null that replaces the lower layers'
 * value: Helm merges user values files this way (`-f a.yaml -f b.yaml`) and then deletes the chart's own default
 * for every key that is null when it coalesces them with the chart's values.yaml, so Helm renders need the nulls.
 */
export function layerValues(layers: readonly (Values | undefined)[], options: { keepNulls?: boolean } = {}): Values {
  const keepNulls = options.keepNulls === true;
  let result: Values = {};
  layers.forEach((layer, index) => {
    if (layer === undefined) return;
    if (!isPlainMapping(layer)) {
      throw new RenderError({
        reason: RenderErrorReason.InvalidValues,
        file: `values layer ${index}`,
        detail: `values must be a mapping, not ${describeKind(layer)}`,
      });
    }
    result = mergeMapping(result, toPlainValues(layer, `values layer ${index}`), keepNulls);
  });
  return result;
}

function mergeMapping(base: Values, over: Values, keepNulls: boolean): Values {
  const out = {} as Values;
  for (const key of Object.keys(base)) defineValue(out, key, base[key]);
  for (const key of Object.keys(over)) {
    const value = over[key];
    if (value === null && !keepNulls) {
      delete out[key];
      continue;
    }
    const previous = Object.hasOwn(out, key) ? out[key] : undefined;
    // A mapping with nothing under it merges over an empty one, so its own nested nulls are handled alike.
    defineValue(out, key, isPlainMapping(value) ? mergeMapping(isPlainMapping(previous) ? previous : {}, value, keepNulls) : value);
  }
  return out;
}

/** Copy plain data into fresh ordinary objects, refusing anything that is not data (functions, class instances). */
export function toPlainValues(input: Values, origin: string): Values {
  return copyPlain(input, origin, '', 0) as Values;
}

const maxValuesDepth = 200;

function copyPlain(value: unknown, origin: string, path: string, depth: number): unknown {
  if (depth > maxValuesDepth) {
    throw new RenderError({
      reason: RenderErrorReason.InvalidValues,
      file: origin,
      detail: `values nest deeper than ${maxValuesDepth} levels at ${path || '(root)'}`,
    });
  }
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return value;
  if (Array.isArray(value)) return value.map((item, i) => copyPlain(item, origin, `${path}[${i}]`, depth + 1));
  if (isPlainMapping(value)) {
    const out = {} as Values;
    for (const key of Object.keys(value)) defineValue(out, key, copyPlain(value[key], origin, path === '' ? key : `${path}.${key}`, depth + 1));
    return out;
  }
  throw new RenderError({
    reason: RenderErrorReason.InvalidValues,
    file: origin,
    detail: `value at ${path || '(root)'} is ${describeKind(value)}, not plain data`,
  });
}

/** Sets own data properties, including a key named `__proto__`, without touching any prototype. */
function defineValue(target: Values, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

export function isPlainMapping(value: unknown): value is Values {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === null || proto === Object.prototype;
}

export function describeKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (isPlainMapping(value)) return 'a mapping';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

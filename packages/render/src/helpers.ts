// The Helm-style helpers templates may call. Helpers return data (which `{{ }}` then places as one scalar, so
// it cannot add keys or documents) except the ones whose job is to emit YAML structure: `toYaml`, `toJson`,
// `indent`, `nindent` and `quote` return a SafeString that is written as it is.
import { createHash } from 'node:crypto';
import { dumpYaml } from './yaml.ts';

/** What helpers need from the engine: raw output, unwrapping, and a way to fail at the call site. */
export interface HelperRuntime {
  raw: (text: string) => unknown;
  /** A SafeString (or anything else) back to what the template meant. */
  unwrap: (value: unknown) => unknown;
  fail: (options: unknown, message: string) => never;
  /** The current render's memo of pure helper results, when it keeps one. */
  memo: () => HelperMemo | undefined;
}

/**
 * Results of the pure helpers `toYaml` and `sha256` within one render. Every file of a fleet tends to call
 * `toYaml values.resources` or `sha256 values.image.tag` on the same values, once per file and target; a
 * render's values are its own fresh copy that nothing writes to while it runs (see layerValues), so a mapping
 * or list is keyed by identity.
 */
export class HelperMemo {
  readonly yaml = new WeakMap<object, string>();
  readonly sha256 = new Map<string, string>();
}

/** The names templates may use, besides Handlebars' if, unless, each, with and lookup. */
export const helperNames = [
  'toYaml',
  'toJson',
  'indent',
  'nindent',
  'quote',
  'squote',
  'default',
  'required',
  'b64enc',
  'b64dec',
  'sha256',
  'upper',
  'lower',
  'trim',
  'replace',
  'join',
  'eq',
  'ne',
  'lt',
  'le',
  'gt',
  'ge',
  'and',
  'or',
  'not',
  'empty',
] as const;

type Helper = (...args: unknown[]) => unknown;

export function createHelpers(runtime: HelperRuntime): Record<(typeof helperNames)[number], Helper> {
  const { raw, unwrap, fail, memo } = runtime;
  /** Splits Handlebars' trailing options argument from the template's arguments. */
  const split = (args: unknown[]): { params: unknown[]; options: unknown } => {
    const options = args[args.length - 1];
    return { params: args.slice(0, -1).map(unwrap), options };
  };
  const arity = (name: string, args: unknown[], count: number): { params: unknown[]; options: unknown } => {
    const { params, options } = split(args);
    if (params.length !== count) fail(options, `${name} takes ${count} argument${count === 1 ? '' : 's'}, got ${params.length}`);
    return { params, options };
  };
  const text = (name: string, value: unknown, options: unknown): string => {
    if (value === null || value === undefined) return '';
    if (typeof value === 'object') fail(options, `${name} needs a string, got ${Array.isArray(value) ? 'a list' : 'a mapping'}`);
    return `${value as string | number | boolean}`;
  };
  const indentLines = (width: unknown, value: unknown, options: unknown, name: string): string => {
    if (typeof width !== 'number' || !Number.isInteger(width) || width < 0 || width > 1000) fail(options, `${name} needs a width between 0 and 1000 first`);
    const pad = ' '.repeat(width as number);
    return text(name, value, options)
      .split('\n')
      .map((line) => (line === '' ? line : pad + line))
      .join('\n');
  };
  const compare =
    (name: string, test: (a: number | string, b: number | string) => boolean): Helper =>
    (...args) => {
      const {
        params: [a, b],
        options,
      } = arity(name, args, 2);
      const comparable = (v: unknown): v is number | string => typeof v === 'number' || typeof v === 'string';
      if (!comparable(a) || !comparable(b) || typeof a !== typeof b) fail(options, `${name} compares two numbers or two strings`);
      return test(a as number | string, b as number | string);
    };
  return {
    toYaml: (...args) => {
      const {
        params: [value],
      } = arity('toYaml', args, 1);
      if (value === undefined) return raw('');
      const remembered = value !== null && typeof value === 'object' ? memo() : undefined;
      let yaml = remembered?.yaml.get(value as object);
      if (yaml === undefined) {
        yaml = dumpYaml(value);
        remembered?.yaml.set(value as object, yaml);
      }
      return raw(yaml);
    },
    toJson: (...args) => {
      const {
        params: [value],
      } = arity('toJson', args, 1);
      return raw(value === undefined ? 'null' : JSON.stringify(value));
    },
    indent: (...args) => {
      const {
        params: [width, value],
        options,
      } = arity('indent', args, 2);
      return raw(indentLines(width, value, options, 'indent'));
    },
    nindent: (...args) => {
      const {
        params: [width, value],
        options,
      } = arity('nindent', args, 2);
      return raw(`\n${indentLines(width, value, options, 'nindent')}`);
    },
    quote: (...args) => {
      const {
        params: [value],
        options,
      } = arity('quote', args, 1);
      return raw(doubleQuoted(text('quote', value, options)));
    },
    squote: (...args) => {
      const {
        params: [value],
        options,
      } = arity('squote', args, 1);
      const s = text('squote', value, options);
      // A single-quoted YAML scalar cannot hold line breaks or non-printable characters faithfully.
      return raw(/[\p{Cc}]/u.test(s) ? doubleQuoted(s) : `'${s.replaceAll("'", "''")}'`);
    },
    default: (...args) => {
      const {
        params: [fallback, value],
      } = arity('default', args, 2);
      return isEmpty(value) ? fallback : value;
    },
    required: (...args) => {
      const {
        params: [message, value],
        options,
      } = arity('required', args, 2);
      if (isEmpty(value)) fail(options, typeof message === 'string' ? message : 'a required value is not set');
      return value;
    },
    b64enc: (...args) => {
      const {
        params: [value],
        options,
      } = arity('b64enc', args, 1);
      return Buffer.from(text('b64enc', value, options), 'utf8').toString('base64');
    },
    b64dec: (...args) => {
      const {
        params: [value],
        options,
      } = arity('b64dec', args, 1);
      const s = text('b64dec', value, options);
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) fail(options, 'b64dec got a string that is not base64');
      return Buffer.from(s, 'base64').toString('utf8');
    },
    sha256: (...args) => {
      const {
        params: [value],
        options,
      } = arity('sha256', args, 1);
      const input = text('sha256', value, options);
      const remembered = memo();
      let digest = remembered?.sha256.get(input);
      if (digest === undefined) {
        digest = createHash('sha256').update(input, 'utf8').digest('hex');
        remembered?.sha256.set(input, digest);
      }
      return digest;
    },
    upper: (...args) => {
      const {
        params: [value],
        options,
      } = arity('upper', args, 1);
      return text('upper', value, options).toUpperCase();
    },
    lower: (...args) => {
      const {
        params: [value],
        options,
      } = arity('lower', args, 1);
      return text('lower', value, options).toLowerCase();
    },
    trim: (...args) => {
      const {
        params: [value],
        options,
      } = arity('trim', args, 1);
      return text('trim', value, options).trim();
    },
    // Helm's argument order: replace OLD NEW STRING. Literal, not a regular expression.
    replace: (...args) => {
      const {
        params: [from, to, value],
        options,
      } = arity('replace', args, 3);
      return text('replace', value, options).replaceAll(text('replace', from, options), text('replace', to, options));
    },
    // Helm's argument order: join SEPARATOR LIST.
    join: (...args) => {
      const {
        params: [separator, list],
        options,
      } = arity('join', args, 2);
      if (!Array.isArray(list)) fail(options, 'join needs a list second');
      return (list as unknown[]).map((item) => text('join', unwrap(item), options)).join(text('join', separator, options));
    },
    eq: (...args) => {
      const {
        params: [a, b],
      } = arity('eq', args, 2);
      return a === b;
    },
    ne: (...args) => {
      const {
        params: [a, b],
      } = arity('ne', args, 2);
      return a !== b;
    },
    lt: compare('lt', (a, b) => a < b),
    le: compare('le', (a, b) => a <= b),
    gt: compare('gt', (a, b) => a > b),
    ge: compare('ge', (a, b) => a >= b),
    and: (...args) => {
      const { params, options } = split(args);
      if (params.length < 2) fail(options, 'and takes at least 2 arguments');
      return params.every((p) => !isFalsy(p));
    },
    or: (...args) => {
      const { params, options } = split(args);
      if (params.length < 2) fail(options, 'or takes at least 2 arguments');
      return params.some((p) => !isFalsy(p));
    },
    not: (...args) => {
      const {
        params: [value],
      } = arity('not', args, 1);
      return isFalsy(value);
    },
    empty: (...args) => {
      const {
        params: [value],
      } = arity('empty', args, 1);
      return isFalsy(value);
    },
  };
}

/** `default` and `required`: only a missing value, null or "" counts as empty (not 0 or false, unlike Helm). */
function isEmpty(value: unknown): boolean {
  return value === undefined || value === null || value === '';
}

/** Handlebars' notion of false for `if`: also empty lists; we add empty mappings. */
function isFalsy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length === 0;
  if (value !== null && typeof value === 'object') return Object.keys(value).length === 0;
  return !value;
}

/** A YAML double-quoted scalar: JSON escaping, plus the C1 controls YAML refuses raw. */
export function doubleQuoted(value: string): string {
  return JSON.stringify(value).replace(/[\u007f-\u009f\u2028\u2029\ufeff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

// YAML in and out. Parsing is the render hot path (js-yaml's `load` is about 11x faster than `yaml.parse`
// on manifests), so documents are parsed with js-yaml, and only when that fails is the text parsed again with
// the `yaml` package, whose positions and messages are precise.
//
// Template output is parsed in "slot" form: every `{{value}}` interpolation was written as a placeholder
// (U+E000 index U+E001, private-use characters that carry no YAML meaning) and the value is put back into the
// parsed scalar afterwards. A value can therefore never add a key or a document, whatever it contains; a plain
// (unquoted) scalar is typed after substitution exactly as YAML would type the text (`replicas: {{n}}` is
// an integer), a quoted or block scalar stays a string.
import jsyaml from 'js-yaml';
import { isMap, isScalar, isSeq, parseAllDocuments, visit } from 'yaml';

const slotOpen = '\uE000';
const slotPattern = /\uE000(\d+)\uE001/g;

export function slotToken(index: number): string {
  return `${slotOpen}${index}\uE001`;
}

// A plain scalar that contains at least one slot is tagged with this prefix and typed once the values are
// substituted. A string rather than an object, because js-yaml turns object keys into '[object Object]'.
const plainMark = '\uE004';

const jsyamlTypes = (jsyaml as unknown as { types: Record<'merge' | 'null' | 'bool' | 'int' | 'float', jsyaml.Type> }).types;

const plainSlotType = new jsyaml.Type('tag:syncline.dev,2026:plain-slot', {
  kind: 'scalar',
  resolve: (data: unknown) => typeof data === 'string' && data.includes(slotOpen),
  construct: (data: string) => plainMark + data,
});

/**
 * js-yaml tries every implicit type on every plain scalar and key (`apiVersion`, `app`, `nginx:1.27`), and
 * its float test is a regular expression: a tenth of a large render. A type only resolves text that starts
 * with one of a few characters, so the same type behind a first-character check resolves exactly as before.
 */
function startingWith(type: jsyaml.Type, first: string): jsyaml.Type {
  const original = type as unknown as { tag: string; resolve: (data: unknown) => boolean; construct: (data: unknown) => unknown };
  const starts = new Uint8Array(128);
  for (const c of first) starts[c.charCodeAt(0)] = 1;
  return new jsyaml.Type(original.tag, {
    kind: 'scalar',
    resolve: (data: unknown) => (typeof data !== 'string' || data === '' || starts[data.charCodeAt(0)] === 1) && original.resolve(data),
    construct: (data: unknown) => original.construct(data),
  });
}

// YAML 1.2 core schema (no timestamps turning into Dates, no !!binary), plus `<<` merge keys that Kubernetes'
// own YAML decoder accepts, plus slot scalars.
const coreImplicit = [
  startingWith(jsyamlTypes.null, '~nN'),
  startingWith(jsyamlTypes.bool, 'tTfF'),
  startingWith(jsyamlTypes.int, '-+0123456789'),
  startingWith(jsyamlTypes.float, '-+.0123456789'),
];
const schema = jsyaml.FAILSAFE_SCHEMA.extend({ implicit: [...coreImplicit, startingWith(jsyamlTypes.merge, '<'), plainSlotType] });

/** Parse every document of a YAML stream (fast path). Throws js-yaml's error on bad input. */
export function parseYamlDocuments(text: string): unknown[] {
  const documents: unknown[] = [];
  jsyaml.loadAll(text, (doc) => documents.push(doc), { schema });
  return documents;
}

/**
 * The parsed documents of a template's last few outputs, by text. A template's output differs between targets
 * and commits far less than its values do: every `{{ }}` value is a slot token (numbered in output order), so
 * two runs that take the same branches and write the same raw text give the same text whatever the values are.
 * Parsing that text again was a quarter of a render; on a hit the documents are only copied (materializeDocuments
 * never writes into them). Parsing is a pure function of the text, so a hit can never be stale.
 */
export class ParsedOutputs {
  readonly #entries: { readonly text: string; readonly documents: readonly unknown[] }[] = [];
  readonly #max: number;

  /** `max` texts are kept: a few targets that take different branches do not evict each other. */
  constructor(max = 2) {
    this.#max = max;
  }

  /** The documents of `text`, parsed on a miss (js-yaml's error is thrown as it is, and nothing is kept). */
  parse(text: string): readonly unknown[] {
    for (const entry of this.#entries) {
      if (entry.text === text) return entry.documents;
    }
    const documents = parseYamlDocuments(text);
    this.#entries.unshift({ text, documents });
    if (this.#entries.length > this.#max) this.#entries.pop();
    return documents;
  }
}

export class NodeLimitError extends Error {
  override readonly name = 'NodeLimitError';
}

/**
 * Turn parsed documents into plain data: substitute slots, type plain slot scalars, and copy every node so that
 * aliases do not leave shared objects behind. Counting nodes while copying bounds alias bombs (billion laughs):
 * js-yaml shares aliased nodes, so the bomb only explodes here, where we stop it.
 */
export function materializeDocuments(
  documents: readonly unknown[],
  slots: readonly unknown[] | undefined,
  maxNodes: number,
  /** `inPlace`: the documents are the caller's alone and share no node (no alias), so they may be filled in place. */
  options: { readonly inPlace?: boolean } = {},
): unknown[] {
  const state = { nodes: 0, maxNodes, slots, inPlace: options.inPlace === true };
  return documents.map((doc) => materialize(doc, state));
}

interface MaterializeState {
  nodes: number;
  readonly maxNodes: number;
  readonly slots: readonly unknown[] | undefined;
  /**
   * The text has no anchors, so every node is js-yaml's own fresh object: values are substituted in place
   * instead of copying every node (a large share of a render's garbage). Nodes are still counted.
   */
  readonly inPlace: boolean;
}

function materialize(node: unknown, state: MaterializeState): unknown {
  if (++state.nodes > state.maxNodes) throw new NodeLimitError(`more than ${state.maxNodes} YAML nodes`);
  if (typeof node === 'string') {
    if (node.startsWith(plainMark)) return resolvePlainSlot(node.slice(1), state.slots);
    return state.slots !== undefined && node.includes(slotOpen) ? substitute(node, state.slots) : node;
  }
  if (node === null || typeof node !== 'object') return node;
  if (Array.isArray(node)) {
    const out: unknown[] = state.inPlace ? node : new Array<unknown>(node.length);
    for (let i = 0; i < node.length; i++) out[i] = materialize(node[i], state);
    return out;
  }
  const source = node as Record<string, unknown>;
  if (state.inPlace && Object.keys(source).every((key) => !key.startsWith(plainMark) && !key.includes(slotOpen))) {
    for (const key of Object.keys(source)) {
      const value = source[key];
      const next = materialize(value, state);
      if (next !== value) setOwn(source, key, next);
    }
    return source;
  }
  const out: Record<string, unknown> = {};
  for (const rawKey of Object.keys(source)) {
    const unmarked = rawKey.startsWith(plainMark) ? rawKey.slice(1) : rawKey;
    const key = state.slots !== undefined && unmarked.includes(slotOpen) ? substitute(unmarked, state.slots) : unmarked;
    if (Object.prototype.hasOwnProperty.call(out, key)) throw new DuplicateKeyError(key);
    setOwn(out, key, materialize(source[rawKey], state));
  }
  return out;
}

/** Two keys that differ in the template became the same key once the values were substituted. */
export class DuplicateKeyError extends Error {
  override readonly name = 'DuplicateKeyError';
  readonly key: string;
  constructor(key: string) {
    super('duplicated mapping key after substituting values');
    this.key = key;
  }
}

export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

function slotText(value: unknown): string {
  return value === null || value === undefined ? '' : `${value as string | number | boolean}`;
}

function substitute(text: string, slots: readonly unknown[]): string {
  return text.replace(slotPattern, (token, index: string) => {
    const i = Number(index);
    return i < slots.length ? slotText(slots[i]) : token;
  });
}

function resolvePlainSlot(text: string, slots: readonly unknown[] | undefined): unknown {
  if (slots === undefined) return resolvePlainScalar(text);
  // A scalar that is exactly one slot keeps a number, boolean or null value as it is.
  const whole = /^\uE000(\d+)\uE001$/.exec(text);
  if (whole !== null) {
    const i = Number(whole[1]);
    if (i < slots.length) {
      const value = slots[i];
      if (value === null || value === undefined) return null;
      if (typeof value === 'number' || typeof value === 'boolean') return value;
    }
  }
  return resolvePlainScalar(substitute(text, slots));
}

/** Type a plain scalar's text with the YAML 1.2 core schema (null, bool, int, float, else string). */
export function resolvePlainScalar(text: string): unknown {
  if (text === '') return null;
  for (const type of coreImplicit) {
    if (type.resolve(text)) return type.construct(text);
  }
  return text;
}

export interface YamlErrorPosition {
  readonly line: number | undefined;
  readonly column: number | undefined;
  /** A short reason without any of the text. */
  readonly reason: string;
}

/** Where a YAML text is broken: re-parse with `yaml` (precise), fall back on js-yaml's mark. */
export function yamlErrorPosition(text: string, fastError: unknown): YamlErrorPosition {
  try {
    for (const doc of parseAllDocuments(text, { prettyErrors: false, uniqueKeys: true, version: '1.2', merge: true })) {
      const first = doc.errors[0];
      if (first !== undefined) {
        const { line, column } = offsetToPosition(text, first.pos[0]);
        return { line, column, reason: firstLine(first.message) };
      }
    }
  } catch {
    // Fall through to the fast parser's own position.
  }
  if (fastError instanceof jsyaml.YAMLException) {
    const mark = (fastError as { mark?: { line: number; column: number } }).mark;
    return { line: mark === undefined ? undefined : mark.line + 1, column: mark === undefined ? undefined : mark.column + 1, reason: fastError.reason };
  }
  return { line: undefined, column: undefined, reason: 'unreadable YAML' };
}

/** Position of the first alias in a YAML text (to point at an alias bomb). */
export function firstAliasPosition(text: string): { line: number; column: number } | undefined {
  try {
    for (const doc of parseAllDocuments(text, { prettyErrors: false })) {
      let offset: number | undefined;
      visit(doc, {
        Alias(_key, node) {
          offset = node.range?.[0];
          return visit.BREAK;
        },
      });
      if (offset !== undefined) return offsetToPosition(text, offset);
    }
  } catch {
    return undefined;
  }
  return undefined;
}

/**
 * Where the node at `path` starts (for a mapping key: the key) in the `index`-th non-empty document of a YAML
 * stream, or undefined when it cannot be found (a key from a merge, an alias or a substituted value). Error
 * path only: it parses the text again with the precise parser.
 */
export function nodePosition(text: string, index: number, path: readonly (string | number)[]): { line: number; column: number } | undefined {
  try {
    let current = -1;
    for (const doc of parseAllDocuments(text, { prettyErrors: false, version: '1.2', merge: true })) {
      const contents = doc.contents;
      // Empty and null documents are dropped when rendering, so they do not count (see renderManifests).
      if (contents === null || (isScalar(contents) && contents.value === null)) continue;
      if (++current !== index) continue;
      let node: unknown = contents;
      let offset: number | undefined = contents.range?.[0];
      for (const part of path) {
        if (isMap(node)) {
          const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(part));
          if (pair === undefined || !isScalar(pair.key)) return undefined;
          offset = pair.key.range?.[0];
          node = pair.value;
        } else if (isSeq(node) && typeof part === 'number') {
          node = node.items[part];
          offset = (node as { range?: [number, number, number] } | undefined)?.range?.[0];
        } else {
          return undefined;
        }
      }
      return offset === undefined ? undefined : offsetToPosition(text, offset);
    }
  } catch {
    return undefined;
  }
  return undefined;
}

export function offsetToPosition(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(offset, text.length);
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: end - lineStart + 1 };
}

function firstLine(message: string): string {
  const newline = message.indexOf('\n');
  return newline === -1 ? message : message.slice(0, newline);
}

/** YAML for `toYaml`: block style, no line folding, no anchors, trailing newline trimmed (as Helm does). */
export function dumpYaml(value: unknown): string {
  return jsyaml.dump(value, { lineWidth: -1, noRefs: true, schema: jsyaml.CORE_SCHEMA }).replace(/\n$/, '');
}

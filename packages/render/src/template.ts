// The Handlebars engine: compile (cached by snapshot and file), run with strict, prototype-free lookups and
// YAML-safe interpolation, within limits, and turn every failure into a RenderError at file:line:column.
import Handlebars from 'handlebars';
import { RenderError, RenderErrorReason } from './errors.ts';
import { createHelpers, helperNames } from './helpers.ts';
import type { HelperMemo } from './helpers.ts';
import { ParsedOutputs, slotToken } from './yaml.ts';

const hb = Handlebars.create();
hb.unregisterHelper('log');

type Loc = { start: { line: number; column: number } } | null | undefined;

// Handlebars' JavaScriptCompiler is designed to be subclassed per environment (its docs override nameLookup
// this way). We replace two code paths:
// - every path lookup becomes `helpers.__syncline.path(base, parts, strict, loc)`: own properties of plain data only
//   (no prototype, no constructor, no `__proto__`), and a missing value in a `{{ }}` is an error that names
//   the whole path; helper arguments (`{{#if values.x}}`, `{{default "a" values.x}}`) may be missing;
// - every `{{ }}` output goes through `helpers.__syncline.scalar(value, loc)` instead of HTML escaping, which places a
//   slot for the value (see yaml.ts), so a value can never add a key or a document.
// `{{{ }}}` (and `{{& }}`) stay Handlebars' raw output on purpose: the documented escape hatch for trusted text,
// as in Helm. compileTemplate records where they are, so that a malformed output can point at them (render.ts).
interface CompilerInternals {
  popStack(): unknown;
  push(expression: unknown): unknown;
  pushSource(source: unknown): void;
  appendToBuffer(source: unknown, location?: unknown, explicit?: boolean): unknown;
  source: { currentLocation?: unknown };
}
const BaseCompiler = (hb as unknown as { JavaScriptCompiler: unknown }).JavaScriptCompiler as new () => CompilerInternals;

class SynclineCompiler extends BaseCompiler {
  resolvePath(type: string, parts: string[], startPartIndex: number, _falsy: boolean, strict: boolean): void {
    const base = this.popStack();
    const rest = parts.slice(startPartIndex);
    const prefix = type === 'data' ? '@' : '';
    this.push([
      'helpers.__syncline.path(',
      base,
      ', ',
      JSON.stringify(rest),
      ', ',
      strict ? 'true' : 'false',
      ', ',
      this.position(),
      ', ',
      JSON.stringify(prefix),
      ')',
    ]);
  }

  appendEscaped(): void {
    this.pushSource(this.appendToBuffer(['helpers.__syncline.scalar(', this.popStack(), ', ', this.position(), ')']));
  }

  /** The position of the statement being compiled as one number (line * 2^16 + column): no object per call. */
  position(): string {
    const loc = this.source.currentLocation as Loc;
    return loc ? String(packPosition(loc.start.line, loc.start.column)) : '0';
  }
}
(SynclineCompiler.prototype as unknown as { compiler: unknown }).compiler = SynclineCompiler;
(hb as unknown as { JavaScriptCompiler: unknown }).JavaScriptCompiler = SynclineCompiler;

const builtinHelpers = ['if', 'unless', 'each', 'with', 'lookup'] as const;
const compileOptions: CompileOptions = {
  knownHelpers: {
    ...Object.fromEntries([...builtinHelpers, ...helperNames].map((name) => [name, true])),
    log: false,
    helperMissing: false,
    blockHelperMissing: false,
  },
  knownHelpersOnly: true,
  strict: false,
  data: true,
};

export interface PartialReference {
  readonly name: string;
  readonly line: number;
  readonly column: number;
}

export interface CompiledTemplate {
  readonly file: string;
  readonly source: string;
  readonly run: HandlebarsTemplateDelegate;
  readonly partials: readonly PartialReference[];
  /** Where the template writes a value raw (`{{{ }}}` or `{{& }}`), for the hint on a malformed output. */
  readonly raw: readonly { readonly line: number; readonly column: number }[];
  /** Its recent YAML outputs, parsed: cached with the template, so targets and commits share them. */
  readonly outputs: ParsedOutputs;
}

/**
 * Compiled templates by file and text. The caller owns it (one per operator, shared across targets, syncs and
 * commits): the second and later targets of a snapshot do not recompile, and neither does a new commit for the
 * files it did not change. Keyed by content, not by commit, so a stale entry can never be served; a file keeps
 * a few versions (two syncs pinned to different commits of one repo do not evict each other). The least
 * recently compiled files go first (a hit does not reorder: at 10,000 lookups per render, moving the entry
 * cost more than the occasional recompile of a file that was evicted while still in use).
 */
export class TemplateCache {
  readonly #files = new Map<string, CompiledTemplate[]>();
  readonly #maxEntries: number;
  #size = 0;
  #hits = 0;
  #misses = 0;

  constructor(options: { readonly maxEntries?: number } = {}) {
    this.#maxEntries = options.maxEntries ?? 10_000;
  }

  /** Compiled templates held (all versions of all files). */
  get size(): number {
    return this.#size;
  }

  /** Lookups served from the cache and lookups that compiled, since creation. */
  get stats(): { readonly hits: number; readonly misses: number } {
    return { hits: this.#hits, misses: this.#misses };
  }

  clear(): void {
    this.#files.clear();
    this.#size = 0;
  }

  /** The compiled template for `file` with this text, compiling on a miss. */
  compile(file: string, source: string): CompiledTemplate {
    const versions = this.#files.get(file);
    const cached = versions?.find((v) => v.source === source);
    if (cached !== undefined) {
      this.#hits++;
      return cached;
    }
    this.#misses++;
    if (versions !== undefined) this.#files.delete(file); // re-inserted below: the newest file last
    const compiled = compileTemplate(file, source);
    const kept = [compiled, ...(versions ?? [])].slice(0, VERSIONS_PER_FILE);
    this.#size += kept.length - (versions?.length ?? 0);
    this.#files.set(file, kept);
    for (const [oldest, dropped] of this.#files) {
      if (this.#size <= this.#maxEntries) break;
      this.#files.delete(oldest);
      this.#size -= dropped.length;
    }
    return compiled;
  }
}

/** Versions of one file kept at once: the current commit, the previous one, and pinned syncs'. */
const VERSIONS_PER_FILE = 4;

export function compileTemplate(file: string, source: string): CompiledTemplate {
  let ast: hbs.AST.Program;
  try {
    ast = hb.parse(source);
  } catch (error) {
    throw templateSyntaxError(file, source, error);
  }
  const partials = collectPartials(file, ast);
  return { file, source, run: hb.compile(ast, compileOptions), partials, raw: collectRawWrites(ast), outputs: new ParsedOutputs() };
}

type AstNode = { type?: unknown; loc?: Loc; [key: string]: unknown };

function walkAst(node: unknown, visit: (node: AstNode) => void): void {
  if (Array.isArray(node)) {
    for (const child of node) walkAst(child, visit);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const n = node as AstNode;
  if (typeof n.type === 'string') visit(n);
  for (const key of Object.keys(n)) {
    if (key !== 'loc') walkAst(n[key], visit);
  }
}

function collectPartials(file: string, ast: hbs.AST.Program): PartialReference[] {
  const found: PartialReference[] = [];
  walkAst(ast, (node) => {
    if (node.type !== 'PartialStatement' && node.type !== 'PartialBlockStatement') return;
    const name = node.name as AstNode & { original?: unknown; data?: unknown };
    const position = locPosition(node.loc);
    if (name.type === 'PathExpression' && name.data === true) return; // {{> @partial-block}}
    if ((name.type === 'PathExpression' || name.type === 'StringLiteral') && typeof name.original === 'string') {
      found.push({ name: name.original, ...position });
      return;
    }
    throw new RenderError({
      reason: RenderErrorReason.MissingPartial,
      file,
      ...position,
      detail: 'partial names must be written out ({{> name}}); dynamic partial names are not supported',
    });
  });
  return found;
}

function collectRawWrites(ast: hbs.AST.Program): { line: number; column: number }[] {
  const found: { line: number; column: number }[] = [];
  walkAst(ast, (node) => {
    if (node.type === 'MustacheStatement' && node.escaped === false) found.push(locPosition(node.loc));
  });
  return found;
}

const POSITION_BASE = 65_536;

function packPosition(line: number, column: number): number {
  return line * POSITION_BASE + Math.min(column, POSITION_BASE - 1);
}

/** A packed position (see SynclineCompiler.position) back to the Loc shape errors take. */
function unpackPosition(packed: number): Loc {
  return packed === 0 ? undefined : { start: { line: Math.floor(packed / POSITION_BASE), column: packed % POSITION_BASE } };
}

function locPosition(loc: Loc): { line: number; column: number } {
  return loc ? { line: loc.start.line, column: loc.start.column + 1 } : { line: 1, column: 1 };
}

// --- syntax errors -----------------------------------------------------------------------------------------

const tokenNames: Record<string, string> = {
  CLOSE: "'}}'",
  CLOSE_UNESCAPED: "'}}}'",
  EOF: 'the end of the template',
  OPEN_ENDBLOCK: "'{{/'",
  INVALID: 'text that is not a name, string or number',
  CLOSE_RAW_BLOCK: "'}}}}'",
};

function templateSyntaxError(file: string, source: string, error: unknown): RenderError {
  const gotcha = findTripleCloseGotcha(source);
  if (gotcha !== undefined) {
    return new RenderError({
      reason: RenderErrorReason.TemplateSyntax,
      file,
      line: gotcha.line,
      column: gotcha.column,
      detail:
        `\`${gotcha.token}\` does not compile: Handlebars reads \`}}}\` as the end of a triple-stash \`{{{ }}}\`. ` +
        `In a YAML flow mapping put spaces inside the braces: \`${gotcha.fix}\``,
    });
  }
  // Handlebars' own message quotes the template around the error; we only keep its location and token.
  if (error instanceof Error && typeof (error as { lineNumber?: unknown }).lineNumber === 'number') {
    const e = error as Error & { lineNumber: number; column?: number };
    return new RenderError({
      reason: RenderErrorReason.TemplateSyntax,
      file,
      line: e.lineNumber,
      column: (e.column ?? 0) + 1,
      detail: stripLocationSuffix(firstLine(e.message)),
    });
  }
  const detail = describeParseFailure(source);
  if (detail.token === 'EOF') {
    const open = findUnclosedBlock(source);
    if (open !== undefined) {
      return new RenderError({
        reason: RenderErrorReason.TemplateSyntax,
        file,
        line: open.line,
        column: open.column,
        detail: `\`{{#${open.name}}}\` is never closed (add \`{{/${open.name}}}\`)`,
      });
    }
  }
  return new RenderError({
    reason: RenderErrorReason.TemplateSyntax,
    file,
    line: detail.line,
    column: detail.column,
    detail: detail.token === undefined ? 'the template does not parse' : `unexpected ${tokenNames[detail.token] ?? detail.token}`,
  });
}

/**
 * Re-run the parser with our own error hook to learn where it stopped. We use a throw-away object whose
 * prototype is Handlebars' parser, so the shared parser is never modified.
 */
function describeParseFailure(source: string): { line?: number; column?: number; token?: string } {
  const shared = (hb as unknown as { Parser: unknown }).Parser as { yy: object; lexer: { yylloc?: { first_line: number; first_column: number } } };
  const parser = Object.create(shared) as { yy: Record<string, unknown>; parse(input: string): unknown };
  let found: { line?: number; column?: number; token?: string } = {};
  parser.yy = Object.create(shared.yy) as Record<string, unknown>;
  parser.yy.parseError = (_message: string, hash: { token?: unknown; line?: number }) => {
    const where = shared.lexer.yylloc;
    found = {
      line: where === undefined ? (hash.line ?? 0) + 1 : where.first_line,
      column: where === undefined ? 1 : where.first_column + 1,
      ...(typeof hash.token === 'string' ? { token: hash.token } : {}),
    };
    throw new Error('parse failed');
  };
  try {
    parser.parse(source);
  } catch {
    // expected: the hook throws
  }
  return found;
}

/** `{{name}}}`: a double-stash closed by `}}}` (usually `{app: {{name}}}`, a YAML flow mapping). */
function findTripleCloseGotcha(source: string): { line: number; column: number; token: string; fix: string } | undefined {
  const pattern = /(^|[^{])(\{\{[^{}]*\}\}\})/g;
  for (let match = pattern.exec(source); match !== null; match = pattern.exec(source)) {
    const token = match[2] ?? '';
    const start = match.index + (match[1] ?? '').length;
    const lineStart = source.lastIndexOf('\n', start - 1) + 1;
    const line = source.slice(0, start).split('\n').length;
    // The flow mapping that holds it: the last single `{` before the mustache on the same line.
    const before = source.slice(lineStart, start);
    const brace = before.lastIndexOf('{');
    const inner = brace === -1 ? undefined : before.slice(brace + 1) + token.slice(0, -1);
    const fix = inner === undefined ? `${token.slice(0, -1)} }` : `{ ${inner.trim()} }`;
    const shown = inner === undefined ? token : `{${inner}}`;
    return { line, column: (brace === -1 ? start - lineStart : brace) + 1, token: shown, fix };
  }
  return undefined;
}

function findUnclosedBlock(source: string): { name: string; line: number; column: number } | undefined {
  const stack: { name: string; index: number }[] = [];
  const pattern = /\{\{~?\s*([#^/])\s*(?:>\s*)?([^\s}~]+)/g;
  for (let match = pattern.exec(source); match !== null; match = pattern.exec(source)) {
    const [, sigil, name = ''] = match;
    if (sigil === '/') stack.pop();
    else stack.push({ name, index: match.index });
  }
  const open = stack.at(-1);
  if (open === undefined) return undefined;
  const lines = source.slice(0, open.index).split('\n');
  return { name: open.name, line: lines.length, column: (lines.at(-1)?.length ?? 0) + 1 };
}

function firstLine(message: string): string {
  const newline = message.indexOf('\n');
  return newline === -1 ? message : message.slice(0, newline);
}

function stripLocationSuffix(message: string): string {
  return message.replace(/ - \d+:\d+$/, '');
}

// --- running --------------------------------------------------------------------------------------------------

export const OutputMode = {
  /** Output is YAML: `{{ }}` values become slots, substituted after parsing. */
  Yaml: 'Yaml',
  /** Output is the data itself (data mode): `{{ }}` values are written as text. */
  Text: 'Text',
} as const;
export type OutputMode = (typeof OutputMode)[keyof typeof OutputMode];

export interface TemplateLimits {
  /** Output a template may produce, in UTF-16 code units (loop, partial and helper output counted as it is made). */
  readonly maxOutputBytes: number;
  /** Helper calls, loop iterations and partial calls per template: a deterministic stand-in for a timeout. */
  readonly maxOperations: number;
  /** How deep partials may include partials. */
  readonly maxPartialDepth: number;
}

export interface TemplateRun {
  readonly text: string;
  readonly slots: readonly unknown[];
}

export interface RunTemplateOptions {
  readonly template: CompiledTemplate;
  readonly context: object;
  readonly mode: OutputMode;
  readonly limits: TemplateLimits;
  /** Compiled partial by name, or undefined when `_partials/` has none of that name. */
  readonly partial: (name: string) => CompiledTemplate | undefined;
  /** The render's memo of pure helper results, shared by all its runs; without one, nothing is remembered. */
  readonly memo?: HelperMemo;
  /** Source for the error path: rebuilds a template with line markers. Defaults to `template`. */
  readonly markLines?: boolean;
}

const markerOpen = '\uE002';
const markerClose = '\uE003';

class Session {
  readonly files: string[];
  /** Compiled templates by file (the main one and its partials), to locate partial calls. */
  readonly templates = new Map<string, CompiledTemplate>();
  readonly slots: unknown[] = [];
  operations = 0;
  output = 0;
  depth = 0;
  readonly options: RunTemplateOptions;

  constructor(options: RunTemplateOptions) {
    this.options = options;
    this.files = [options.template.file];
    this.templates.set(options.template.file, options.template);
  }

  get file(): string {
    return this.files[this.files.length - 1] ?? this.options.template.file;
  }

  error(reason: RenderErrorReason, loc: Loc, detail: string): RenderError {
    return new RenderError({ reason, file: this.file, ...locPosition(loc), detail });
  }

  tick(loc: Loc): void {
    if (++this.operations > this.options.limits.maxOperations) {
      throw this.error(
        RenderErrorReason.LimitExceeded,
        loc,
        `the template does more than ${this.options.limits.maxOperations} helper calls, loop iterations and partial calls`,
      );
    }
  }

  produced(length: number, loc: Loc): void {
    this.output += length;
    if (this.output > this.options.limits.maxOutputBytes) {
      throw this.error(RenderErrorReason.LimitExceeded, loc, `the template produces more than ${this.options.limits.maxOutputBytes} bytes`);
    }
  }
}

function optionsLoc(options: unknown): Loc {
  return options !== null && typeof options === 'object' ? (options as { loc?: Loc }).loc : undefined;
}

function unwrap(value: unknown): unknown {
  return value instanceof hb.SafeString ? value.toString() : value;
}

function describePath(prefix: string, parts: readonly string[], upTo: number): string {
  return prefix + parts.slice(0, upTo + 1).join('.');
}

function kindOf(value: unknown): string {
  if (value === null || value === undefined) return 'not set';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'a mapping' : `a ${typeof value}`;
}

/**
 * The run in progress. Templates run synchronously and one at a time, so the helpers (built once, below) find
 * their session here instead of being rebuilt for every run: a render calls runTemplate once per file and
 * target, and rebuilding ~30 closures each time was a measurable share of a 10,000-object render.
 */
let active: Session | undefined;

function activeSession(): Session {
  if (active === undefined) throw new Error('a template helper ran outside a template run');
  return active;
}

function buildHelpers(): Record<string, unknown> {
  const user = createHelpers({
    raw: (text) => new hb.SafeString(text),
    unwrap,
    fail: (options, message) => {
      throw activeSession().error(RenderErrorReason.HelperFailed, optionsLoc(options), message);
    },
    memo: () => activeSession().options.memo,
  });
  const helpers: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [name, helper] of Object.entries(user)) {
    helpers[name] = (...args: unknown[]) => {
      const loc = optionsLoc(args[args.length - 1]);
      const current = activeSession();
      current.tick(loc);
      const result = helper(...args);
      if (typeof result === 'string' || result instanceof hb.SafeString) current.produced(result.toString().length, loc);
      return result;
    };
  }
  const builtinEach = hb.helpers.each as (this: unknown, context: unknown, options: Record<string, unknown>) => string;
  helpers.each = function each(this: unknown, context: unknown, options: Record<string, unknown>) {
    const loc = optionsLoc(options);
    const current = activeSession();
    const fn = options.fn as (ctx: unknown, opts: unknown) => string;
    const counting = Object.assign((ctx: unknown, opts: unknown) => {
      current.tick(loc);
      const out = fn(ctx, opts);
      current.produced(out.length, loc);
      return out;
    }, fn);
    return builtinEach.call(this, context, { ...options, fn: counting });
  };
  helpers.lookup = (object: unknown, field: unknown) => {
    const key = String(unwrap(field));
    return object !== null && typeof object === 'object' && Object.hasOwn(object, key) ? (object as Record<string, unknown>)[key] : undefined;
  };
  const path = (base: unknown, parts: readonly string[], strict: boolean, position: number, prefix: string) => {
    let current = base;
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i] as string;
      if (current !== null && typeof current === 'object' && Object.hasOwn(current, part)) {
        current = (current as Record<string, unknown>)[part];
        continue;
      }
      if (!strict) return undefined;
      const missing = describePath(prefix, parts, i);
      const parent = i === 0 ? undefined : describePath(prefix, parts, i - 1);
      const where = base === activeSession().options.context || prefix !== '' ? '' : ' (looked up in the enclosing block, e.g. the current {{#each}} item)';
      const why = parent !== undefined && !(current !== null && typeof current === 'object') ? ` (${parent} is ${kindOf(current)})` : '';
      throw activeSession().error(RenderErrorReason.MissingValue, unpackPosition(position), `missing value \`${missing}\`${why}${where}`);
    }
    return current;
  };
  const scalar = (value: unknown, position: number): string => {
    if (value instanceof hb.SafeString) return value.toString();
    const current = activeSession();
    if (value !== null && typeof value === 'object') {
      throw current.error(
        RenderErrorReason.NotAScalar,
        unpackPosition(position),
        `{{ }} got ${kindOf(value)}; write {{toYaml ...}} (with nindent) or {{toJson ...}} to emit structure`,
      );
    }
    if (current.options.mode === OutputMode.Text) return value === null || value === undefined ? '' : `${value as string | number | boolean}`;
    current.slots.push(value);
    return slotToken(current.slots.length - 1);
  };
  // An object, not a function, so Handlebars does not wrap it as a helper (its wrapper writes into the last
  // argument); templates cannot reach it because it is not a known helper.
  helpers.__syncline = { path, scalar };
  return helpers;
}

const sharedHelpers = buildHelpers();

/**
 * What Handlebars' runtime would set up for every top-level call, built once. A top-level call merges the
 * environment's helpers with ours and wraps every one of them in a new closure (~40 per run, then a copy of
 * the options on every helper call), 10,000 times in a 10,000-object render, for the sake of the `lookup`
 * helper's `options.lookupProperty`, which we replace. Calling the compiled template the way Handlebars calls
 * a partial (`partial: true`) takes these as they are. Same contents as the runtime's own setup (runtime.js
 * `ret._setup`, handlebars 4.7): the environment's helpers with ours over them, helperMissing and
 * blockHelperMissing moved to hooks, the environment's decorators, and no prototype access at all.
 */
const runHelpers: Record<string, unknown> = Object.assign(Object.create(null) as Record<string, unknown>, hb.helpers, sharedHelpers);
const runHooks = { helperMissing: runHelpers.helperMissing, blockHelperMissing: runHelpers.blockHelperMissing };
delete runHelpers.helperMissing;
delete runHelpers.blockHelperMissing;
const runDecorators = Object.assign(Object.create(null) as Record<string, unknown>, hb.decorators);
const noPrototypeAccess = {
  properties: { whitelist: Object.assign(Object.create(null) as Record<string, boolean>, { ['__proto__']: false }), defaultValue: false },
  methods: {
    whitelist: Object.assign(Object.create(null) as Record<string, boolean>, {
      constructor: false,
      __defineGetter__: false,
      __defineSetter__: false,
      __lookupGetter__: false,
      __lookupSetter__: false,
    }),
    defaultValue: false,
  },
};

function sessionPartials(session: Session, compiledFor: (name: string) => CompiledTemplate | undefined): Record<string, unknown> {
  const partials: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  const seen = new Set<string>();
  const addAll = (template: CompiledTemplate): void => {
    for (const reference of template.partials) {
      if (seen.has(reference.name)) continue;
      const partial = compiledFor(reference.name);
      if (partial === undefined) {
        throw new RenderError({
          reason: RenderErrorReason.MissingPartial,
          file: template.file,
          line: reference.line,
          column: reference.column,
          detail: `partial \`${reference.name}\` not found (partials live in _partials/, e.g. _partials/${reference.name}.hbs)`,
        });
      }
      seen.add(reference.name);
      session.templates.set(partial.file, partial);
      partials[reference.name] = (context: unknown, options: unknown) => {
        const loc = referenceLoc(session, reference.name);
        if (session.depth >= session.options.limits.maxPartialDepth) {
          throw new RenderError({
            reason: RenderErrorReason.PartialDepth,
            file: session.file,
            ...(loc ?? {}),
            detail: `partials nest deeper than ${session.options.limits.maxPartialDepth} levels at \`{{> ${reference.name}}}\` (does a partial include itself?)`,
          });
        }
        session.tick(undefined);
        session.depth++;
        session.files.push(partial.file);
        try {
          const out = partial.run(context, options as RuntimeOptions);
          session.produced(out.length, undefined);
          return out;
        } finally {
          session.files.pop();
          session.depth--;
        }
      };
      addAll(partial);
    }
  };
  addAll(session.options.template);
  return partials;
}

function referenceLoc(session: Session, name: string): { line: number; column: number } | undefined {
  const reference = session.templates.get(session.file)?.partials.find((r) => r.name === name);
  return reference === undefined ? undefined : { line: reference.line, column: reference.column };
}

/** Run a compiled template. Throws RenderError on any failure, with the file and position where it happened. */
export function runTemplate(options: RunTemplateOptions): TemplateRun {
  const session = new Session(options);
  const partials = sessionPartials(session, options.partial);
  const outer = active;
  active = session;
  let text: string;
  try {
    const run = options.template.run as (context: unknown, options: Record<string, unknown>) => string;
    text = run(options.context, {
      partial: true,
      helpers: runHelpers,
      partials,
      decorators: runDecorators,
      hooks: runHooks,
      protoAccessControl: noPrototypeAccess,
      data: { root: options.context },
    });
  } catch (error) {
    throw runtimeError(session, error);
  } finally {
    active = outer;
  }
  if (text.length > options.limits.maxOutputBytes) {
    throw new RenderError({
      reason: RenderErrorReason.LimitExceeded,
      file: options.template.file,
      detail: `the template produces more than ${options.limits.maxOutputBytes} bytes`,
    });
  }
  return { text, slots: session.slots };
}

function runtimeError(session: Session, error: unknown): RenderError {
  if (error instanceof RenderError) return error;
  if (error instanceof RangeError) {
    return new RenderError({ reason: RenderErrorReason.LimitExceeded, file: session.file, detail: 'the template recurses too deeply' });
  }
  if (error instanceof Error && typeof (error as { lineNumber?: unknown }).lineNumber === 'number') {
    const e = error as Error & { lineNumber: number; column?: number };
    const message = stripLocationSuffix(firstLine(e.message));
    const unknownHelper = /unknown helper (\S+)/.exec(message);
    if (unknownHelper !== null) {
      return new RenderError({
        reason: RenderErrorReason.UnknownHelper,
        file: session.file,
        line: e.lineNumber,
        column: (e.column ?? 0) + 1,
        detail: `unknown helper \`${unknownHelper[1] ?? ''}\` (available: ${[...builtinHelpers, ...helperNames].join(', ')})`,
      });
    }
    return new RenderError({ reason: RenderErrorReason.TemplateSyntax, file: session.file, line: e.lineNumber, column: (e.column ?? 0) + 1, detail: message });
  }
  // Handlebars' location-less messages name helpers and partials only; anything else may quote data, so we
  // keep just its class.
  if (error instanceof Error && error.constructor.name === 'Exception') {
    return new RenderError({ reason: RenderErrorReason.TemplateSyntax, file: session.file, detail: firstLine(error.message) });
  }
  return new RenderError({
    reason: RenderErrorReason.TemplateSyntax,
    file: session.file,
    detail: `the template failed (${error instanceof Error ? error.name : 'unknown error'})`,
  });
}

// --- mapping output lines back to template lines (error path only) ---------------------------------------------

/**
 * Compile a template so that every line of its output ends with a marker naming the template file and line it
 * came from. Used only after the output failed to parse, to point at the template line instead of the output
 * line. Markers go before the line break so that partial indentation and trailing lines stay as they were.
 */
export function compileWithLineMarkers(file: string, source: string, fileIndex: number): CompiledTemplate {
  const compiled = compileTemplate(file, source);
  const ast = hb.parse(source);
  walkAst(ast, (node) => {
    if (node.type !== 'ContentStatement') return;
    const value = node.value as string;
    const original = (node.original as string | undefined) ?? value;
    let offset = 0;
    while (offset < original.length && !original.startsWith(value, offset) && /\s/.test(original[offset] ?? '')) offset++;
    let line = (node.loc?.start.line ?? 1) + countNewlines(original, 0, offset);
    let marked = '';
    for (const c of value) {
      if (c === '\n') {
        marked += `${markerOpen}${fileIndex}:${line}${markerClose}`;
        line++;
      }
      marked += c;
    }
    node.value = marked;
  });
  return { ...compiled, run: hb.compile(ast, compileOptions), outputs: new ParsedOutputs() };
}

function countNewlines(text: string, from: number, to: number): number {
  let count = 0;
  for (let i = from; i < to; i++) if (text.charCodeAt(i) === 10) count++;
  return count;
}

export interface LineOrigin {
  readonly fileIndex: number;
  readonly line: number;
}

/**
 * Strip line markers. A line's origin is the first marker on it or after it (a multi-line helper output belongs
 * to the template line that called the helper); the last lines, without a marker after them, take the last one.
 */
export function readLineMarkers(marked: string): { text: string; origins: (LineOrigin | undefined)[] } {
  const pattern = /\uE002(\d+):(\d+)\uE003/g;
  const lines = marked.split('\n');
  const firstMarker = lines.map((line): LineOrigin | undefined => {
    const match = /\uE002(\d+):(\d+)\uE003/.exec(line);
    return match === null ? undefined : { fileIndex: Number(match[1]), line: Number(match[2]) };
  });
  const origins: (LineOrigin | undefined)[] = new Array<LineOrigin | undefined>(lines.length + 1);
  let next: LineOrigin | undefined;
  for (let i = lines.length - 1; i >= 0; i--) {
    next = firstMarker[i] ?? next;
    origins[i + 1] = next;
  }
  let previous: LineOrigin | undefined;
  for (let i = 1; i < origins.length; i++) {
    if (origins[i] === undefined) origins[i] = previous;
    previous = origins[i];
  }
  return { text: marked.replace(pattern, ''), origins };
}

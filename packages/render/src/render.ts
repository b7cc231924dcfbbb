// renderTarget: the files at a snapshot path + values + one target → the target's Kubernetes objects, or one
// RenderError. Pure: no network, clock or cluster; API discovery and the template cache come from the caller.
import { checkDataFields, dataKeyProblem } from './data-fields.ts';
import { HelperMemo } from './helpers.ts';
import { RenderError, RenderErrorReason } from './errors.ts';
import { FileKind, baseName, contentBytes, contentText, fileKind, selectFiles } from './files.ts';
import type { Selection, SelectedFile, SourceFiles } from './files.ts';
import { applyPatches, checkObject, expandLists, orderObjects, placeNamespaces, rejectDuplicates } from './objects.ts';
import type { ApiDiscovery, DocumentOrigin, KubernetesObject, Locate, PlacedObject, TargetPatch } from './objects.ts';
import { OutputMode, TemplateCache, compileWithLineMarkers, readLineMarkers, runTemplate } from './template.ts';
import type { CompiledTemplate, TemplateLimits } from './template.ts';
import { layerValues } from './values.ts';
import type { Values } from './values.ts';
import { DuplicateKeyError, NodeLimitError, firstAliasPosition, materializeDocuments, nodePosition, parseYamlDocuments, yamlErrorPosition } from './yaml.ts';
import type { ParsedOutputs } from './yaml.ts';

export const DataType = { ConfigMap: 'ConfigMap', Secret: 'Secret' } as const;
export type DataType = (typeof DataType)[keyof typeof DataType];

/** Data mode: the file(s) at the path become the data of one ConfigMap or Secret instead of manifests. */
export interface DataModeSpec {
  readonly type: DataType;
  /** The object's name. */
  readonly name: string;
  /** The data key when the path is one file (default: the file's base name without `.hbs`). */
  readonly key?: string;
}

export interface RenderTarget {
  /** Stable id of the target (`targets[].name`). */
  readonly name: string;
  /** Namespace for namespaced objects that name none. */
  readonly namespace?: string;
  /** The RemoteCluster name; omitted = the operator's own cluster (templates see ''). */
  readonly cluster?: string;
  /** Per-target values, deep-merged over `values`. */
  readonly values?: Values;
  /** JSON merge patches applied after rendering. */
  readonly patches?: readonly TargetPatch[];
  /** Data mode instead of manifests. */
  readonly data?: DataModeSpec;
}

export interface RenderSource {
  readonly repo: string;
  /** The resolved commit SHA, shown to templates as `source.revision`. */
  readonly revision: string;
  /** Shown to templates as `source.path`; defaults to the rendered path. */
  readonly path?: string;
}

export interface RenderLimits extends TemplateLimits {
  /** YAML nodes per file after expanding aliases (alias bombs stop here). */
  readonly maxYamlNodes: number;
}

export const defaultRenderLimits: RenderLimits = {
  maxOutputBytes: 8 * 1024 * 1024,
  maxOperations: 1_000_000,
  maxPartialDepth: 16,
  maxYamlNodes: 1_000_000,
};

export interface RenderTargetOptions {
  /** What source-git read at the snapshot: at least the files under `path`. */
  readonly files: SourceFiles;
  /** Repo-relative directory or file to render. */
  readonly path: string;
  /** spec.values layered with the valuesFrom sources (see layerValues); the target's values go over these. */
  readonly values?: Values;
  readonly target: RenderTarget;
  readonly source: RenderSource;
  readonly discovery: ApiDiscovery;
  /** Compiled templates by file and text; without one, this call compiles each template (and partial) once. */
  readonly cache?: TemplateCache;
  readonly limits?: Partial<RenderLimits>;
}

interface RenderState {
  readonly options: RenderTargetOptions;
  readonly selection: Selection;
  readonly limits: RenderLimits;
  readonly context: object;
  readonly compile: (file: string, source: string) => CompiledTemplate;
  readonly memo: HelperMemo;
  /** Rendered YAML text by file, for locating documents on the error path. */
  readonly outputs: Map<string, { text: string; template?: CompiledTemplate; mode: OutputMode }>;
}

/** Render one target. Returns its objects in apply order, or throws a RenderError (never a partial result). */
export function renderTarget(options: RenderTargetOptions): KubernetesObject[] {
  const selection = selectFiles(options.files, options.path);
  const limits = { ...defaultRenderLimits, ...options.limits };
  const values = layerValues([options.values, options.target.values]);
  // Without the caller's cache, one for this render: a partial compiles once, not once per file including it.
  const templates = options.cache ?? new TemplateCache();
  const state: RenderState = {
    options,
    selection,
    limits,
    context: plain({
      values,
      target: plain({ name: options.target.name, namespace: options.target.namespace ?? '', cluster: options.target.cluster ?? '' }),
      source: plain({ repo: options.source.repo, revision: options.source.revision, path: options.source.path ?? selection.root }),
    }),
    compile: (file, source) => templates.compile(file, source),
    outputs: new Map(),
    memo: new HelperMemo(),
  };
  const locate: Locate = (origin, path) => locateDocument(state, origin, path);
  try {
    if (options.target.data !== undefined) {
      const placed = [{ object: renderData(state, options.target.data), origin: { file: selection.root, document: 0 } }];
      return finishObjects(placed, { discovery: options.discovery, target: options.target, locate, manifests: false });
    }
    const placed = renderManifests(state).map(({ document, origin }) => ({ object: checkObject(document, origin, locate), origin }));
    return finishObjects(placed, { discovery: options.discovery, target: options.target, locate, manifests: true });
  } catch (error) {
    throw withRawOutputNote(state, error);
  }
}

/**
 * What every render's objects go through, whichever engine made them: namespaces placed by the cluster's
 * discovery, the target's patches, Secret and ConfigMap data checked, duplicates refused, apply order.
 */
export function finishObjects(
  placed: PlacedObject[],
  options: { discovery: ApiDiscovery; target: RenderTarget; locate: Locate; manifests: boolean },
): KubernetesObject[] {
  const { discovery, target, locate } = options;
  if (options.manifests) placeNamespaces(placed, { discovery, namespace: target.namespace, locate });
  if (target.patches !== undefined && target.patches.length > 0) {
    applyPatches(placed, target.patches, locate);
    // A patch may set a namespace (or a kind): the scope rule holds for the patched object too, or a
    // cluster-scoped object would carry a namespace its write never lands in.
    if (options.manifests) placeNamespaces(placed, { discovery, namespace: target.namespace, locate });
  }
  checkDataFields(placed, locate);
  rejectDuplicates(placed, locate);
  return orderObjects(placed).map(({ object }) => object);
}

function plain(fields: Record<string, unknown>): object {
  return { ...fields };
}

function renderManifests(state: RenderState): { document: unknown; origin: DocumentOrigin }[] {
  const renderable = state.selection.files.filter((file) => fileKind(file.path) !== undefined);
  if (renderable.length === 0) {
    throw new RenderError({
      reason: RenderErrorReason.PathNotFound,
      file: state.selection.root === '' ? '.' : state.selection.root,
      detail: 'no manifest here: expected .yaml, .yml, .json or .hbs files',
    });
  }
  const out: { document: unknown; origin: DocumentOrigin }[] = [];
  for (const file of renderable) {
    let index = 0;
    for (const document of readManifestFile(state, file)) {
      const items = expandLists(document);
      const listed = items.length !== 1 || items[0] !== document;
      items.forEach((item, i) => out.push({ document: item, origin: { file: file.path, document: index, ...(listed ? { item: i } : {}) } }));
      index++;
    }
  }
  return out;
}

function textOf(file: SelectedFile): string {
  const text = contentText(file.content);
  if (text === undefined) throw new RenderError({ reason: RenderErrorReason.InvalidYaml, file: file.path, detail: 'the file is not UTF-8 text' });
  return text;
}

/** The documents of one manifest file (empty documents dropped, indexes kept for locating). */
function readManifestFile(state: RenderState, file: SelectedFile): unknown[] {
  const kind = fileKind(file.path);
  const source = textOf(file);
  switch (kind) {
    case FileKind.Json:
      return parseJson(file.path, source);
    case FileKind.Yaml:
      state.outputs.set(file.path, { text: source, mode: OutputMode.Yaml });
      return parseYaml(state, file.path, source, {});
    case FileKind.Template: {
      const template = state.compile(file.path, source);
      const run = runTemplate({
        template,
        context: state.context,
        memo: state.memo,
        mode: OutputMode.Yaml,
        limits: state.limits,
        partial: (name) => compiledPartial(state, name),
      });
      state.outputs.set(file.path, { text: run.text, template, mode: OutputMode.Yaml });
      return parseYaml(state, file.path, run.text, { slots: run.slots, parsed: template.outputs });
    }
    case undefined:
      return [];
  }
}

function compiledPartial(state: RenderState, name: string): CompiledTemplate | undefined {
  const file = state.selection.partials.get(name);
  return file === undefined ? undefined : state.compile(file.path, textOf(file));
}

function parseJson(path: string, source: string): unknown[] {
  try {
    const value = JSON.parse(source) as unknown;
    return Array.isArray(value) ? value : [value];
  } catch (error) {
    // V8 says "... in JSON at position N (line L column C)"; we keep the position, never the quoted text.
    const message = error instanceof Error ? error.message : '';
    const at = /line (\d+) column (\d+)/.exec(message);
    return fail({
      reason: RenderErrorReason.InvalidJson,
      file: path,
      line: at === null ? undefined : Number(at[1]),
      column: at === null ? undefined : Number(at[2]),
      detail: 'invalid JSON',
    });
  }
}

function fail(init: ConstructorParameters<typeof RenderError>[0]): never {
  throw new RenderError(init);
}

function parseYaml(state: RenderState, path: string, text: string, from: { readonly slots?: readonly unknown[]; readonly parsed?: ParsedOutputs }): unknown[] {
  let documents: readonly unknown[];
  try {
    documents = from.parsed === undefined ? parseYamlDocuments(text) : from.parsed.parse(text);
  } catch (error) {
    const position = yamlErrorPosition(text, error);
    const where = position.line === undefined ? { file: path } : mapOutputLine(state, path, position.line, position.column);
    throw new RenderError({ reason: RenderErrorReason.InvalidYaml, ...where, detail: `invalid YAML${outputNote(state, path, where)}: ${position.reason}` });
  }
  try {
    // Documents parsed for this call alone, without an anchor (`&`) in the text (so no alias and no shared node),
    // can be filled in place; memoized ones are shared with later runs and are copied.
    const inPlace = from.parsed === undefined && !text.includes('&');
    return materializeDocuments(documents, from.slots, state.limits.maxYamlNodes, { inPlace }).filter((d) => d !== null && d !== undefined);
  } catch (error) {
    if (error instanceof NodeLimitError) {
      const alias = firstAliasPosition(text);
      const where = alias === undefined ? { file: path } : mapOutputLine(state, path, alias.line, alias.column);
      throw new RenderError({
        reason: RenderErrorReason.InvalidYaml,
        ...where,
        detail: `YAML aliases expand to more than ${state.limits.maxYamlNodes} nodes (an alias bomb?)`,
      });
    }
    if (error instanceof DuplicateKeyError) {
      throw new RenderError({ reason: RenderErrorReason.InvalidYaml, file: path, detail: 'two mapping keys are equal once values are substituted' });
    }
    throw error;
  }
}

function outputNote(state: RenderState, path: string, where: { file: string }): string {
  return state.outputs.get(path)?.template !== undefined || fileKind(path) === FileKind.Template
    ? ` in the template's output` + (where.file === path ? '' : ` (from ${path})`)
    : '';
}

/**
 * A line of a template's output → the template (or partial) line that wrote it. Re-renders once with line
 * markers; this only happens on the error path, so the fast path never pays for it.
 */
function mapOutputLine(state: RenderState, path: string, line: number, column: number | undefined): { file: string; line: number; column?: number } {
  const fallback = { file: path, line, ...(column === undefined ? {} : { column }) };
  if (fileKind(path) !== FileKind.Template) return fallback;
  const main = state.selection.files.find((f) => f.path === path);
  if (main === undefined) return fallback;
  try {
    const files: string[] = [path];
    const marked = new Map<string, CompiledTemplate>();
    const partial = (name: string): CompiledTemplate | undefined => {
      const file = state.selection.partials.get(name);
      if (file === undefined) return undefined;
      let compiled = marked.get(file.path);
      if (compiled === undefined) {
        files.push(file.path);
        compiled = compileWithLineMarkers(file.path, textOf(file), files.length - 1);
        marked.set(file.path, compiled);
      }
      return compiled;
    };
    const template = compileWithLineMarkers(path, textOf(main), 0);
    const limits = { ...state.limits, maxOutputBytes: state.limits.maxOutputBytes * 4 };
    const run = runTemplate({ template, context: state.context, memo: state.memo, mode: OutputMode.Yaml, limits, partial });
    const { text, origins } = readLineMarkers(run.text);
    const expected = state.outputs.get(path)?.text;
    const origin = origins[line];
    if ((expected !== undefined && text !== expected) || origin === undefined) return fallback;
    return { file: files[origin.fileIndex] ?? path, line: origin.line, ...(column === undefined ? {} : { column }) };
  } catch {
    return fallback;
  }
}

/** file:line of a document (or of the key at `path` in it, when it can be found), computed on the error path only. */
function locateDocument(state: RenderState, origin: DocumentOrigin, path: readonly (string | number)[] = []): { file: string; line?: number; column?: number } {
  const output = state.outputs.get(origin.file);
  if (output === undefined) return { file: origin.file };
  const inDocument = origin.item === undefined ? path : ['items', origin.item, ...path];
  const at =
    inDocument.length === 0
      ? undefined
      : (nodePosition(output.text, origin.document, inDocument) ??
        (origin.item === undefined ? undefined : nodePosition(output.text, origin.document, ['items', origin.item])));
  if (at !== undefined) return mapOutputLine(state, origin.file, at.line, at.column);
  const line = documentStartLine(output.text, origin.document);
  return line === undefined ? { file: origin.file } : mapOutputLine(state, origin.file, line, 1);
}

// Errors about the shape of the output: what a raw `{{{ }}}` value can cause.
const outputShapeReasons: ReadonlySet<RenderErrorReason> = new Set([
  RenderErrorReason.InvalidYaml,
  RenderErrorReason.InvalidObject,
  RenderErrorReason.UnknownKind,
  RenderErrorReason.NamespaceMismatch,
  RenderErrorReason.DuplicateObject,
]);

/**
 * `{{{ }}}` writes a value's text raw, so the value can add keys or documents or break the YAML (README,
 * "Templates and values"). When the output of a template that does so is malformed, say where it does: the
 * template line the error points at may be innocent. Positions only, never the value.
 */
function withRawOutputNote(state: RenderState, error: unknown): unknown {
  if (!(error instanceof RenderError) || error.file === undefined || !outputShapeReasons.has(error.reason)) return error;
  const file = error.file.split(' after ')[0] ?? error.file;
  for (const [path, output] of state.outputs) {
    if (output.template === undefined) continue;
    const { files, raw } = rawWrites(state, output.template);
    if (path !== file && !files.has(file)) continue;
    const first = raw[0];
    if (first === undefined) continue;
    const more = raw.length > 1 ? ` (and ${raw.length - 1} more)` : '';
    return new RenderError({
      reason: error.reason,
      file: error.file,
      line: error.line,
      column: error.column,
      detail: `${error.detail}; note: ${first.file}:${first.line}:${first.column}${more} writes a value raw with {{{ }}}, which can change the YAML structure ({{ }} keeps a value one scalar)`,
    });
  }
  return error;
}

/** The `{{{ }}}` of a template and of the partials it includes, and the files involved. */
function rawWrites(state: RenderState, template: CompiledTemplate): { files: Set<string>; raw: { file: string; line: number; column: number }[] } {
  const files = new Set<string>();
  const raw: { file: string; line: number; column: number }[] = [];
  const visit = (t: CompiledTemplate): void => {
    if (files.has(t.file)) return;
    files.add(t.file);
    for (const at of t.raw) raw.push({ file: t.file, ...at });
    for (const reference of t.partials) {
      const partial = compiledPartial(state, reference.name);
      if (partial !== undefined) visit(partial);
    }
  };
  visit(template);
  return { files, raw };
}

function documentStartLine(text: string, index: number): number | undefined {
  // Index counts non-empty documents; walk the stream's documents the same way.
  const lines = text.split('\n');
  let current = -1;
  let inDocument = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (/^---(\s|$)/.test(line)) {
      inDocument = false;
      const rest = line.slice(3).trim();
      if (rest !== '' && !rest.startsWith('#')) {
        current++;
        inDocument = true;
        if (current === index) return i + 1;
      }
      continue;
    }
    if (line.startsWith('...')) {
      inDocument = false;
      continue;
    }
    if (!inDocument && line.trim() !== '' && !line.trimStart().startsWith('#') && !line.startsWith('%')) {
      current++;
      inDocument = true;
      if (current === index) return i + 1;
    }
  }
  return undefined;
}

// --- data mode ---------------------------------------------------------------------------------------------------

function renderData(state: RenderState, spec: DataModeSpec): KubernetesObject {
  const { selection, options } = state;
  const namespace = options.target.namespace;
  const fail = (detail: string): never => {
    throw new RenderError({ reason: RenderErrorReason.InvalidDataMode, file: selection.root === '' ? '.' : selection.root, detail });
  };
  if (spec.type !== DataType.ConfigMap && spec.type !== DataType.Secret) fail(`data mode type must be ConfigMap or Secret`);
  if (spec.name === '') fail('data mode needs an object name');
  if (namespace === undefined || namespace === '') fail(`a ${spec.type} needs a namespace and the target has none`);
  if (spec.key !== undefined && selection.files.length !== 1)
    fail(`key is set but the path holds ${selection.files.length} files; key only applies to one file`);
  if (selection.files.length === 0) fail('the path holds no file');
  const text = new Map<string, string>();
  const binary = new Map<string, string>();
  for (const file of selection.files) {
    const key = spec.key ?? baseName(file.path).replace(/\.hbs$/, '');
    const badKey = dataKeyProblem(key);
    if (badKey !== undefined) fail(`\`${key}\` is not a valid data key: it ${badKey}`);
    if (text.has(key) || binary.has(key)) fail(`two files give the data key \`${key}\``);
    let content: Uint8Array | string = file.content;
    if (fileKind(file.path) === FileKind.Template) {
      const template = state.compile(file.path, textOf(file));
      content = runTemplate({
        template,
        context: state.context,
        memo: state.memo,
        mode: OutputMode.Text,
        limits: state.limits,
        partial: (name) => compiledPartial(state, name),
      }).text;
    }
    if (spec.type === DataType.Secret) {
      binary.set(key, Buffer.from(contentBytes(content)).toString('base64'));
      continue;
    }
    const asText = contentText(content);
    if (asText === undefined) binary.set(key, Buffer.from(contentBytes(content)).toString('base64'));
    else text.set(key, asText);
  }
  const metadata = { name: spec.name, namespace: namespace ?? '' };
  if (spec.type === DataType.Secret) return { apiVersion: 'v1', kind: 'Secret', metadata, type: 'Opaque', data: sortKeys(binary) };
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata,
    ...(text.size > 0 ? { data: sortKeys(text) } : {}),
    ...(binary.size > 0 ? { binaryData: sortKeys(binary) } : {}),
  };
}

function sortKeys(record: ReadonlyMap<string, string>): Record<string, string> {
  return Object.fromEntries([...record].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

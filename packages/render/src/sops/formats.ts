// The file formats sops writes (getsops/sops stores/): which format a path has, how its encrypted form is
// read into a tree plus metadata, and how the decrypted tree is written back out. The format comes from the
// file name as sops chooses it: .yaml/.yml, .json, .env, .ini, anything else binary (a JSON envelope whose
// `data` value holds the whole file).
import { Document, isAlias, isMap, isScalar, isSeq, parseAllDocuments } from 'yaml';
import type { Node as YamlNode } from 'yaml';
import { loadIni } from './ini.ts';
import type { LoadedIni } from './ini.ts';
import { SopsMap } from './tree.ts';
import type { SopsValue } from './tree.ts';
import { formatFloat } from './tree.ts';
import { FormatError, unflatten, type LoadedFile } from './loaded.ts';

export { FormatError, unflatten, type LoadedFile };

export const SopsFormat = { Yaml: 'yaml', Json: 'json', Dotenv: 'dotenv', Ini: 'ini', Binary: 'binary' } as const;
export type SopsFormat = (typeof SopsFormat)[keyof typeof SopsFormat];

export function sopsFormatOf(path: string): SopsFormat {
  if (/\.ya?ml$/.test(path)) return SopsFormat.Yaml;
  if (path.endsWith('.json')) return SopsFormat.Json;
  if (path.endsWith('.env')) return SopsFormat.Dotenv;
  if (path.endsWith('.ini')) return SopsFormat.Ini;
  return SopsFormat.Binary;
}

/** A cheap look at the text before any parse: most files of a repository are not encrypted. */
export function mayBeEncrypted(format: SopsFormat, text: string): boolean {
  switch (format) {
    case SopsFormat.Yaml:
      return /(^|\n)sops:/.test(text) || /(^|\n)\s*"sops"\s*:/.test(text);
    case SopsFormat.Json:
    case SopsFormat.Binary:
      return /"sops"\s*:/.test(text);
    case SopsFormat.Dotenv:
      return /(^|\n)sops_(version|mac|lastmodified)=/.test(text);
    case SopsFormat.Ini:
      return /(^|\n)\[sops\]/.test(text);
  }
}

/** At most this many tree nodes per file, aliases expanded (an alias bomb stops here). */
const MAX_NODES = 1_000_000;

/** What a tree walk meets, in walk order: the text range of every leaf scalar (for writing values back in place). */
interface Positions {
  readonly leaves: Array<readonly [number, number]>;
  aliased: boolean;
}

function fromYamlNode(node: unknown, doc: Document, budget: { left: number }, positions: Positions): SopsValue {
  if (--budget.left < 0) throw new FormatError('the file expands to more values than allowed (aliases?)');
  if (node === null || node === undefined) return null;
  if (isAlias(node)) {
    positions.aliased = true;
    return fromYamlNode(node.resolve(doc), doc, budget, positions);
  }
  if (isMap(node)) {
    return new SopsMap(
      node.items.map((pair) => {
        const key = isScalar(pair.key) ? pair.key.value : pair.key;
        if (typeof key !== 'string') throw new FormatError('a mapping key is not a string', lineOf(doc, pair.key));
        return [key, fromYamlNode(pair.value, doc, budget, positions)];
      }),
    );
  }
  if (isSeq(node)) return node.items.map((item) => fromYamlNode(item, doc, budget, positions));
  if (isScalar(node)) {
    const value = node.value;
    if (value !== null && node.range !== undefined && node.range !== null) positions.leaves.push([node.range[0], node.range[1]]);
    if (value === null || typeof value === 'string' || typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean') return value;
    return value instanceof Date ? value.toISOString() : (JSON.stringify(value) ?? '');
  }
  throw new FormatError('unexpected YAML node');
}

function lineOf(doc: Document, node: unknown): number | undefined {
  const offset = (node as YamlNode | undefined)?.range?.[0];
  if (offset === undefined) return undefined;
  const text = (doc as unknown as { __source?: string }).__source;
  return text === undefined ? undefined : text.slice(0, offset).split('\n').length;
}

function lineAt(text: string, offset: number): number {
  return text.slice(0, offset).split('\n').length;
}

/**
 * YAML (every document) or JSON (one document): documents must be mappings; `sops` is taken from the first.
 * Also returns where each leaf and each document's `sops` entry is in the text, so the plaintext can be the
 * committed text with values written back in place (every line where it was in the file).
 */
function loadTreeFormat(text: string, json: boolean): LoadedFile {
  const docs = parseAllDocuments(text, { version: '1.2', intAsBigInt: true, merge: false, uniqueKeys: true, prettyErrors: false });
  const budget = { left: MAX_NODES };
  const branches: SopsMap[] = [];
  const positions: Positions = { leaves: [], aliased: false };
  const removed: Array<readonly [number, number]> = [];
  let metadata: SopsValue | undefined;
  const list = Array.isArray(docs) ? docs : [];
  if (json && list.length !== 1) throw new FormatError('a JSON file holds one value');
  for (const [index, doc] of list.entries()) {
    const error = doc.errors[0];
    if (error !== undefined) throw new FormatError(`does not parse (${error.code})`, lineAt(text, error.pos[0]));
    (doc as unknown as { __source?: string }).__source = text;
    const leavesBefore = positions.leaves.length;
    const root = fromYamlNode(doc.contents, doc, budget, positions);
    if (root === null) {
      branches.push(new SopsMap([]));
      continue;
    }
    if (!(root instanceof SopsMap)) throw new FormatError('a document is not a mapping', lineOf(doc, doc.contents));
    const own = root.items.filter(([key]) => key === 'sops');
    if (index === 0 && own[0] !== undefined) metadata = own[0][1];
    branches.push(new SopsMap(root.items.filter(([key]) => key !== 'sops')));
    if (own.length > 0 && isMap(doc.contents)) {
      const span = sopsEntrySpan(doc.contents.items, json);
      if (span === undefined) positions.aliased = true;
      else {
        removed.push(span);
        // The metadata's own scalars are not leaves of the tree.
        const kept = positions.leaves.splice(leavesBefore).filter(([start]) => start < span[0] || start >= span[1]);
        positions.leaves.push(...kept);
      }
    }
  }
  if (metadata === undefined) throw new FormatError('has no sops metadata');
  return { branches, metadata, source: positions.aliased ? undefined : { text, leaves: positions.leaves, removed } };
}

type YamlPair = { key: unknown; value: unknown };
const rangeOf = (node: unknown): readonly [number, number, number] | undefined => (node as YamlNode | null | undefined)?.range ?? undefined;

/** The text of the top-level `sops` entry, with the comma that joins it to its neighbour in JSON. */
function sopsEntrySpan(items: readonly YamlPair[], json: boolean): readonly [number, number] | undefined {
  const at = items.findIndex((pair) => isScalar(pair.key) && pair.key.value === 'sops');
  const key = rangeOf(items[at]?.key);
  const value = rangeOf(items[at]?.value);
  if (key === undefined || value === undefined) return undefined;
  if (!json) return [key[0], value[1]];
  const next = rangeOf(items[at + 1]?.key);
  if (next !== undefined) return [key[0], next[0]];
  const previous = rangeOf(items[at - 1]?.value);
  return previous === undefined ? [key[0], value[1]] : [previous[1], value[1]];
}

/** dotenv: KEY=value lines (`\n` escapes a newline), `#` comments, metadata flattened into `sops_…` keys. */
function loadDotenv(text: string): LoadedFile & { comments: Map<number, string> } {
  const items: Array<[string, SopsValue]> = [];
  const flat: Array<[string, string]> = [];
  const comments = new Map<number, string>();
  for (const [index, line] of text.split('\n').entries()) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      comments.set(items.length, line.slice(1));
      items.push([`\0comment${index}`, null]);
      continue;
    }
    const equals = line.indexOf('=');
    if (equals === -1) throw new FormatError('a line is neither KEY=value nor a comment', index + 1);
    const key = line.slice(0, equals);
    const value = line.slice(equals + 1).replaceAll('\\n', '\n');
    if (key.startsWith('sops_')) flat.push([key.slice('sops_'.length), value]);
    else items.push([key, value]);
  }
  if (flat.length === 0) throw new FormatError('has no sops metadata');
  return { branches: [new SopsMap(items)], metadata: unflatten(flat), comments };
}

export type LoadedAny = LoadedFile & {
  readonly format: SopsFormat;
  readonly comments?: Map<number, string>;
  readonly ini?: Pick<LoadedIni, 'lines' | 'kinds'>;
};

export function loadEncrypted(format: SopsFormat, text: string): LoadedAny {
  switch (format) {
    case SopsFormat.Yaml:
      return { format, ...loadTreeFormat(text, false) };
    case SopsFormat.Json:
    case SopsFormat.Binary:
      return { format, ...loadTreeFormat(text, true) };
    case SopsFormat.Dotenv:
      return { format, ...loadDotenv(text) };
    case SopsFormat.Ini: {
      const ini = loadIni(text);
      return { format, branches: ini.branches, metadata: ini.metadata, ini };
    }
  }
}

/**
 * The committed YAML or JSON text with each decrypted value written over its `ENC[…]` scalar (a string as a
 * one-line double-quoted scalar, valid in both) and the `sops` entries blanked to their line breaks: the same
 * documents `sops decrypt` prints, with every line where it is in the committed file, so an error in a
 * decrypted file points at the line a user can open. Undefined when a value has no one-line form here.
 */
export function emitInPlace(
  source: NonNullable<LoadedFile['source']>,
  opened: ReadonlyArray<string | bigint | number | boolean | undefined>,
  json: boolean,
): string | undefined {
  if (opened.length !== source.leaves.length) return undefined;
  const edits: Array<readonly [number, number, string]> = [];
  for (const [index, value] of opened.entries()) {
    if (value === undefined) continue;
    const range = source.leaves[index];
    const written = scalarText(value, json);
    if (range === undefined || written === undefined) return undefined;
    edits.push([range[0], range[1], written]);
  }
  for (const [start, end] of source.removed) edits.push([start, end, source.text.slice(start, end).replace(/[^\n]/g, '')]);
  edits.sort((a, b) => a[0] - b[0]);
  const parts: string[] = [];
  let at = 0;
  for (const [start, end, written] of edits) {
    if (start < at) return undefined;
    parts.push(source.text.slice(at, start), written);
    at = end;
  }
  parts.push(source.text.slice(at));
  // The metadata is last in a file as sops writes it: its blanked lines are not kept at the end.
  return `${parts.join('').replace(/\s+$/, '')}\n`;
}

/** A string that reads back as the same string when written plain, in YAML 1.1 and 1.2 alike. */
const PLAIN = /^[A-Za-z][\w./@+-]*$/;
const YAML11_SPECIAL = /^(y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL)$/;

function scalarText(value: string | bigint | number | boolean, json: boolean): string | undefined {
  if (typeof value === 'string' && !json && PLAIN.test(value) && !YAML11_SPECIAL.test(value)) return value;
  // JSON's escapes are YAML's; the few characters YAML readers refuse raw in a stream are escaped too.
  if (typeof value === 'string')
    return JSON.stringify(value).replace(/[\u007f-\u009f\ufeff\ufffe\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (Number.isFinite(value)) return String(value);
  if (json) return undefined;
  return Number.isNaN(value) ? '.nan' : value > 0 ? '.inf' : '-.inf';
}

/** A tree as plain data for `yaml`'s writer: Maps keep the file's key order. */
function toPlain(value: SopsValue): unknown {
  if (value instanceof SopsMap) return new Map(value.items.map(([key, item]) => [key, toPlain(item)]));
  if (Array.isArray(value)) return value.map(toPlain);
  return value;
}

export function emitYaml(branches: readonly SopsMap[]): string {
  return branches.map((branch) => new Document(toPlain(branch), { version: '1.2' }).toString({ lineWidth: 0 })).join('---\n');
}

export function emitJson(value: SopsValue, indent = ''): string {
  const inner = `${indent}    `;
  if (value instanceof SopsMap) {
    if (value.items.length === 0) return '{}';
    return `{\n${value.items.map(([key, item]) => `${inner}${JSON.stringify(key)}: ${emitJson(item, inner)}`).join(',\n')}\n${indent}}`;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return `[\n${value.map((item) => `${inner}${emitJson(item, inner)}`).join(',\n')}\n${indent}]`;
  }
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') return Number.isFinite(value) ? JSON.stringify(value) : JSON.stringify(formatFloat(value));
  return JSON.stringify(value);
}

/** sops' dotenv writer: `#comment` lines, KEY=value with newlines escaped as `\n`. */
export function emitDotenv(branch: SopsMap, comments: ReadonlyMap<number, string>): string {
  return branch.items
    .map(([key, value], index) => {
      const comment = comments.get(index);
      if (comment !== undefined) return `#${comment}\n`;
      const text =
        typeof value === 'string'
          ? value.replaceAll('\n', '\\n')
          : typeof value === 'number'
            ? formatFloat(value)
            : typeof value === 'bigint' || typeof value === 'boolean'
              ? String(value)
              : '';
      return `${key}=${text}\n`;
    })
    .join('');
}

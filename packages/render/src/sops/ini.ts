// INI files as sops reads and writes them (getsops/sops stores/ini over gopkg.in/ini.v1): every section is a
// mapping of string values, so a value's path is [section, key] (the keys before any header are in
// `DEFAULT`); a comment belongs to the section or key it is written before and is encrypted with its
// section's path. The metadata is the `[sops]` section, flattened like dotenv's. An encrypted file is the
// output of go-ini's writer, so its plaintext is that same text with each value and comment written back as
// go-ini writes them (the key alignment depends only on the key names) and the `[sops]` section left out:
// exactly what `sops decrypt` prints, every line where it is in the committed file.
import { decryptValue } from './cipher.ts';
import { FormatError, unflatten } from './loaded.ts';
import type { LoadedFile } from './loaded.ts';
import { SopsMap } from './tree.ts';
import type { SopsValue } from './tree.ts';

const DEFAULT_SECTION = 'DEFAULT';

type IniLine =
  | { readonly kind: 'text' }
  | { readonly kind: 'section'; readonly name: string }
  | { readonly kind: 'comment'; readonly body: string }
  | { readonly kind: 'key'; readonly prefix: string; readonly last: number };

export interface LoadedIni extends LoadedFile {
  readonly lines: readonly string[];
  /** What each line is; a multi-line value's key line says where the value ends. */
  readonly kinds: readonly IniLine[];
}

/** A key as go-ini writes it: plain, in backticks (it holds `"`, `=` or `:`), or in triple quotes (it holds a backtick). */
function readKey(line: string, number: number): { name: string; rest: string } {
  const quoted = line.startsWith('"""') ? '"""' : line.startsWith('`') ? '`' : undefined;
  if (quoted !== undefined) {
    const end = line.indexOf(quoted, quoted.length);
    if (end === -1) throw new FormatError('a key is not closed', number);
    return { name: line.slice(quoted.length, end), rest: line.slice(end + quoted.length) };
  }
  const end = line.search(/\s*[=:]/);
  if (end <= 0) throw new FormatError('a line is neither a section, a comment nor key = value', number);
  return { name: line.slice(0, end), rest: line.slice(end) };
}

/** A value as go-ini writes it: in triple quotes (it holds a newline or backtick, and may span lines), backticks (`#`, `;`), double quotes (outer spaces), or plain. */
function readValue(lines: readonly string[], at: number, text: string): { value: string; last: number } {
  if (text.startsWith('"""')) {
    const body = [text.slice(3)];
    for (let i = at; i < lines.length; i++) {
      const current = body[body.length - 1] ?? '';
      const close = current.indexOf('"""');
      if (close !== -1) return { value: [...body.slice(0, -1), current.slice(0, close)].join('\n'), last: i };
      body.push(lines[i + 1] ?? '');
      if (i + 1 >= lines.length) break;
    }
    throw new FormatError('a """ value is not closed', at + 1);
  }
  const quote = text.length >= 2 && ((text.startsWith('`') && text.endsWith('`')) || (text.startsWith('"') && text.endsWith('"')));
  return { value: quote ? text.slice(1, -1) : text, last: at };
}

export function loadIni(text: string): LoadedIni {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const kinds: IniLine[] = [];
  const sections: Array<[string, SopsValue]> = [];
  let current: Array<[string, SopsValue]> = [];
  let currentName = DEFAULT_SECTION;
  const flat: Array<[string, string]> = [];
  const startSection = (name: string): void => {
    if (currentName !== 'sops' && (currentName !== DEFAULT_SECTION || current.length > 0 || sections.length > 0))
      sections.push([currentName, new SopsMap(current)]);
    current = [];
    currentName = name;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').replace(/\r$/, '');
    if (line.trim() === '') {
      kinds.push({ kind: 'text' });
    } else if (/^[;#]/.test(line)) {
      kinds.push({ kind: 'comment', body: line.slice(1).trim() });
    } else if (line.startsWith('[')) {
      const name = /^\[(.*)\]\s*$/.exec(line)?.[1];
      if (name === undefined) throw new FormatError('a section header is not closed', i + 1);
      startSection(name.trim());
      kinds.push({ kind: 'section', name: name.trim() });
    } else {
      const { name, rest } = readKey(line, i + 1);
      const delimiter = /^\s*[=:] ?/.exec(rest)?.[0] ?? '';
      const prefix = line.slice(0, line.length - rest.length + delimiter.length);
      const { value, last } = readValue(lines, i, rest.slice(delimiter.length));
      kinds.push({ kind: 'key', prefix, last });
      for (let skipped = i + 1; skipped <= last; skipped++) kinds.push({ kind: 'text' });
      if (currentName === 'sops') flat.push([name, value.replaceAll('\\n', '\n')]);
      else current.push([name, value]);
      i = last;
    }
  }
  startSection('');
  if (flat.length === 0) throw new FormatError('has no [sops] section');
  return { branches: [new SopsMap(sections)], metadata: unflatten(flat), lines, kinds };
}

/** go-ini's writer for a value. */
function writeValue(value: string): string {
  if (/[\n`]/.test(value)) return `"""${value}"""`;
  if (/[#;]/.test(value)) return `\`${value}\``;
  if (value.trim().length !== value.length) return `"${value}"`;
  return value;
}

/** go-ini's writer for a comment: `; ` before each line, or the line's own `;`/`#` and one space. */
function writeComment(comment: string, ofKey: boolean): string {
  return comment
    .split('\n')
    .map((line) => {
      if (line.startsWith('#') || line.startsWith(';')) return `${line.slice(0, 1)} ${line.slice(1).trim()}`;
      return `; ${ofKey ? line.trim() : line}`;
    })
    .join('\n');
}

/** The plaintext: the committed lines with values and comments decrypted, the `[sops]` section left out. */
export function emitIni(loaded: Pick<LoadedIni, 'lines' | 'kinds'>, opened: ReadonlyArray<SopsValue | undefined>, dataKey: Uint8Array): string {
  const out: string[] = [];
  let leaf = 0;
  let section = DEFAULT_SECTION;
  for (const [index, kind] of loaded.kinds.entries()) {
    const line = loaded.lines[index] ?? '';
    if (kind.kind === 'section') section = kind.name;
    if (section === 'sops') continue;
    if (kind.kind === 'key') {
      const value = opened[leaf++];
      if (typeof value === 'string') {
        out.push(`${kind.prefix}${writeValue(value)}`);
        // The lines of a multi-line value that is now on one line are not written again.
        for (let skipped = index + 1; skipped <= kind.last; skipped++) out.push('\0');
      } else out.push(line);
    } else if (kind.kind === 'comment') {
      // A comment before a section header is that section's; any other, the key after it's.
      const next = loaded.kinds.slice(index + 1).find((k) => k.kind !== 'comment');
      const path = next?.kind === 'section' ? next.name : section;
      const plain = decryptValue(kind.body, dataKey, `${path}:`);
      // A comment that does not open is kept as written, as sops does.
      out.push(typeof plain === 'object' ? writeComment(Buffer.from(plain.raw).toString('utf8'), next?.kind !== 'section') : line);
    } else out.push(line);
  }
  const kept = out.filter((line) => line !== '\0');
  // The line that separated the last section from [sops] is go-ini's, not the file's.
  while (kept.length > 0 && kept.at(-1)?.trim() === '') kept.pop();
  return kept.length === 0 ? '' : `${kept.join('\n')}\n`;
}

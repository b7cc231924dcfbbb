// The files a render reads: what source-git hands over for the requested path, as repo-relative paths.
import { RenderError, RenderErrorReason } from './errors.ts';

export interface SourceFile {
  /** Repo-relative, '/'-separated, no leading './' or '/'. */
  readonly path: string;
  readonly content: Uint8Array | string;
}

/** A list of files, or a map from repo-relative path to content. Files outside the requested path are ignored. */
export type SourceFiles = readonly SourceFile[] | ReadonlyMap<string, Uint8Array | string>;

export const FileKind = {
  /** `.hbs`: a Handlebars template whose output is YAML. */
  Template: 'Template',
  /** `.yaml` / `.yml`: passed through untouched. */
  Yaml: 'Yaml',
  /** `.json`: passed through untouched. */
  Json: 'Json',
} as const;
export type FileKind = (typeof FileKind)[keyof typeof FileKind];

export interface SelectedFile {
  readonly path: string;
  /** Path relative to the requested path ('' for a single-file path: then it is the base name). */
  readonly relative: string;
  readonly content: Uint8Array | string;
}

export interface Selection {
  /** The requested path, normalized ('' = repository root). */
  readonly root: string;
  /** True when the requested path names one file. */
  readonly singleFile: boolean;
  /** Files to render (or, in data mode, to turn into data), sorted by path. Partials excluded. */
  readonly files: readonly SelectedFile[];
  /** Partials by name (`_partials/common/labels.hbs` → `common/labels`). */
  readonly partials: ReadonlyMap<string, SelectedFile>;
}

export const partialsDirectory = '_partials';

export function normalizePath(path: string): string {
  const parts = path.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) {
    throw new RenderError({ reason: RenderErrorReason.PathNotFound, file: path, detail: "path must not contain '..'" });
  }
  return parts.join('/');
}

function entries(files: SourceFiles): SourceFile[] {
  if (files instanceof Map) return [...(files as ReadonlyMap<string, Uint8Array | string>)].map(([path, content]) => ({ path, content }));
  return files as readonly SourceFile[] as SourceFile[];
}

/** Pick the files under `path` (a directory or one file), split into renderable files and partials. */
export function selectFiles(files: SourceFiles, path: string): Selection {
  const root = normalizePath(path);
  const all = entries(files).map((file) => ({ path: normalizePath(file.path), content: file.content }));
  const exact = all.find((file) => file.path === root && root !== '');
  if (exact !== undefined) {
    // One file: partials come from the `_partials/` beside it.
    const directory = root.includes('/') ? `${root.slice(0, root.lastIndexOf('/'))}/` : '';
    return { root, singleFile: true, files: [{ ...exact, relative: baseName(exact.path) }], partials: collectPartials(all, directory) };
  }
  const prefix = root === '' ? '' : `${root}/`;
  const under = all.filter((file) => file.path.startsWith(prefix)).map((file) => ({ ...file, relative: file.path.slice(prefix.length) }));
  if (under.length === 0) {
    throw new RenderError({ reason: RenderErrorReason.PathNotFound, file: root === '' ? '.' : root, detail: 'the source holds no file at this path' });
  }
  const rendered = under.filter((file) => !isHidden(file.relative) && !file.relative.startsWith(`${partialsDirectory}/`));
  rendered.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { root, singleFile: false, files: rendered, partials: collectPartials(all, prefix) };
}

function collectPartials(all: readonly SourceFile[], prefix: string): Map<string, SelectedFile> {
  const partials = new Map<string, SelectedFile>();
  const directory = `${prefix}${partialsDirectory}/`;
  for (const file of all) {
    if (!file.path.startsWith(directory) || !file.path.endsWith('.hbs')) continue;
    const relative = file.path.slice(prefix.length);
    if (isHidden(relative)) continue;
    partials.set(file.path.slice(directory.length, -'.hbs'.length), { ...file, relative });
  }
  return partials;
}

/** Dot-files and dot-directories (`.github/`, `.gitkeep`) are never rendered. */
function isHidden(relative: string): boolean {
  return relative.split('/').some((part) => part.startsWith('.'));
}

export function fileKind(path: string): FileKind | undefined {
  if (path.endsWith('.hbs')) return FileKind.Template;
  if (path.endsWith('.yaml') || path.endsWith('.yml')) return FileKind.Yaml;
  if (path.endsWith('.json')) return FileKind.Json;
  return undefined;
}

export function baseName(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash === -1 ? path : path.slice(slash + 1);
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** File content as text; `undefined` when the bytes are not UTF-8. */
export function contentText(content: Uint8Array | string): string | undefined {
  if (typeof content === 'string') return content;
  try {
    return decoder.decode(content);
  } catch {
    return undefined;
  }
}

export function contentBytes(content: Uint8Array | string): Uint8Array {
  return typeof content === 'string' ? new TextEncoder().encode(content) : content;
}

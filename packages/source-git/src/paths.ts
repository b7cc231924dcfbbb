// Path safety: what a user may ask for (`spec.path`), which tree entry names we accept, and where a symlink
// may point. All of it is lexical: a snapshot is never a directory on disk that the OS could resolve for us.
import { GitSourceError, GitSourceErrorCode } from './errors.ts';

/** True when `name` is acceptable as one tree entry name (one path segment). */
export function isSafeEntryName(name: string): boolean {
  return (
    name.length > 0 && name !== '.' && name !== '..' && name.toLowerCase() !== '.git' && !name.includes('/') && !name.includes('\\') && !name.includes('\0')
  );
}

function unsafe(what: string): GitSourceError {
  return new GitSourceError(GitSourceErrorCode.UnsafePath, what);
}

/**
 * Turns `spec.path` into repo-relative segments. `''`, `.` and `/`-free forms of the root are the root (`[]`).
 * Refused: absolute paths, `..`, backslashes, NUL, `.git`, and percent-encoded separators or dots (a path in
 * a Git tree is never URL-encoded, so `%2e%2e` can only be an attempt to smuggle `..` past a later decoder).
 */
export function parseRequestPath(path: string): string[] {
  const shown = JSON.stringify(path.length > 200 ? `${path.slice(0, 200)}…` : path);
  if (path.startsWith('/')) throw unsafe(`path ${shown} is absolute; give a path relative to the repository root`);
  if (/^[a-z]:/i.test(path)) throw unsafe(`path ${shown} is absolute; give a path relative to the repository root`);
  if (path.includes('\\')) throw unsafe(`path ${shown} contains a backslash; use '/' between directories`);
  if (path.includes('\0')) throw unsafe(`path ${shown} contains a NUL byte`);
  if (/%(2e|2f|5c|00)/i.test(path)) throw unsafe(`path ${shown} contains a percent-encoded '.', '/' or '\\'`);
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') throw unsafe(`path ${shown} contains '..'; paths may not leave the repository`);
    if (!isSafeEntryName(segment)) throw unsafe(`path ${shown} names '${segment}', which is not allowed`);
    segments.push(segment);
  }
  return segments;
}

/**
 * Where a symlink at `linkDir/<name>` pointing at `target` leads, as repo-relative segments; throws when the
 * target is absolute or leaves the repository root (a link to `/etc/passwd` or `../..`).
 */
export function resolveSymlinkTarget(linkDir: readonly string[], target: string, shownLink: string): string[] {
  if (target.startsWith('/') || /^[a-z]:/i.test(target) || target.includes('\\') || target.includes('\0')) {
    throw unsafe(`symlink ${shownLink} points outside the repository`);
  }
  const out = [...linkDir];
  for (const segment of target.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (out.length === 0) throw unsafe(`symlink ${shownLink} points outside the repository`);
      out.pop();
      continue;
    }
    if (!isSafeEntryName(segment)) throw unsafe(`symlink ${shownLink} points at a name that is not allowed`);
    out.push(segment);
  }
  return out;
}

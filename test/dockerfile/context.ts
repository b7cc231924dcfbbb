// The Docker build context: the files of the checkout that .dockerignore lets into `docker build .`, read
// by Docker's rules, so the tests can copy it (dockerfile.test.ts) or hash it (image.ts) without a daemon.
import { readFile, readdir } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';

export const repositoryRoot = join(import.meta.dirname, '..', '..');

type IgnoreRule = { pattern: string; exclude: boolean };

/** .dockerignore rules in order; the last one that matches a path or one of its parents decides. */
async function readDockerignore(root: string): Promise<IgnoreRule[]> {
  const lines = (await readFile(join(root, '.dockerignore'), 'utf8')).split('\n').map((l) => l.trim());
  return lines
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => (l.startsWith('!') ? { pattern: l.slice(1), exclude: false } : { pattern: l, exclude: true }));
}

/** Docker's matching (Go's filepath.Match plus `**`): unlike shell globs, `*` matches dotfiles too. */
function matchesPattern(path: string, pattern: string): boolean {
  const tokens: Record<string, string> = { '**/': '(?:.*/)?', '**': '.*', '*': '[^/]*', '?': '[^/]' };
  const source = pattern
    .split(/(\*\*\/|\*\*|\*|\?)/)
    .map((part) => tokens[part] ?? part.replace(/[.+^${}()|[\]\\]/g, '\\$&'))
    .join('');
  return new RegExp(`^${source}$`).test(path);
}

function excluded(path: string, rules: readonly IgnoreRule[]): boolean {
  const parts = path.split('/');
  const ancestors = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let result = false;
  for (const rule of rules) if (ancestors.some((a) => matchesPattern(a, rule.pattern))) result = rule.exclude;
  return result;
}

/** The build context's files, as sorted '/'-separated paths relative to the root. */
export async function buildContextFiles(root: string = repositoryRoot): Promise<string[]> {
  const rules = await readDockerignore(root);
  const files: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      const path = relative(root, full).split(sep).join('/');
      if (entry.isDirectory()) {
        // A directory excluded with no exception below it is skipped whole (node_modules, .git).
        if (excluded(path, rules) && !rules.some((r) => !r.exclude && r.pattern.startsWith(`${path}/`))) continue;
        await walk(full);
      } else if (entry.isFile() && !excluded(path, rules)) {
        files.push(path);
      }
    }
  };
  await walk(root);
  return files.sort();
}

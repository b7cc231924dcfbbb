// The `syncline` binary as the image runs it: bundled into JavaScript by the CLI package's build/bundle.ts. A
// bench runs that script (the CLI package sits above the operator, so a bench does not import it) and starts
// the operator from the entry it prints.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** Builds (or rebuilds over) the bundle; returns its entry, `dist/syncline/syncline.mjs`. */
export function buildOperatorBundle(): string {
  const script = join(import.meta.dirname, '..', '..', 'cli', 'build', 'bundle.ts');
  return execFileSync(process.execPath, [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

// `pnpm bench <name>`: runs one benchmark, packages/*/bench/<name>.ts; its figures are on the last lines.
import { existsSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const name = process.argv[2];
const candidates = readdirSync(join(root, 'packages')).map((pkg) => join(root, 'packages', pkg, 'bench', `${name ?? ''}.ts`));
const file = candidates.find((f) => existsSync(f));
if (name === undefined || file === undefined) {
  const known = readdirSync(join(root, 'packages')).flatMap((pkg) => {
    const dir = join(root, 'packages', pkg, 'bench');
    return existsSync(dir)
      ? readdirSync(dir)
          .filter((f) => f.endsWith('.ts') && !f.startsWith('_'))
          .map((f) => f.slice(0, -3))
      : [];
  });
  console.error(`usage: pnpm bench <name>; benchmarks: ${known.join(', ') || '(none yet)'}`);
  process.exit(2);
}
const result = spawnSync(process.execPath, ['--expose-gc', file, ...process.argv.slice(3)], { stdio: 'inherit' });
process.exit(result.status ?? 1);

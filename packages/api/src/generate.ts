// `pnpm generate [--check]`: writes crds/*.yaml and docs/api.md from the zod API; --check fails when
// the committed files differ (CI runs it through the test suite).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { apiReference, customResourceDefinitions } from './crd.ts';

export function generatedFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const crd of customResourceDefinitions()) {
    const name = (crd['metadata'] as { name: string }).name;
    const text = `# Generated from packages/api/src/v1alpha1.ts by \`pnpm generate\`. Do not edit.\n${stringify(crd, { lineWidth: 0 })}`;
    // The chart carries the same files (Helm installs a chart's crds/ on first install).
    for (const dir of ['crds', join('charts', 'syncline', 'crds')]) files.set(join(dir, `${name}.yaml`), text);
  }
  files.set(join('docs', 'api.md'), `${apiReference()}\n`);
  return files;
}

export function staleFiles(root: string): string[] {
  const stale: string[] = [];
  for (const [path, content] of generatedFiles()) {
    let current: string | undefined;
    try {
      current = readFileSync(join(root, path), 'utf8');
    } catch {
      current = undefined;
    }
    if (current !== content) stale.push(path);
  }
  return stale;
}

if (import.meta.main) {
  const root = join(import.meta.dirname, '..', '..', '..');
  if (process.argv.includes('--check')) {
    const stale = staleFiles(root);
    if (stale.length > 0) {
      console.error(`stale generated files (run pnpm generate): ${stale.join(', ')}`);
      process.exit(1);
    }
  } else {
    for (const [path, content] of generatedFiles()) {
      mkdirSync(join(root, path, '..'), { recursive: true });
      writeFileSync(join(root, path), content);
      console.log(`wrote ${path}`);
    }
  }
}

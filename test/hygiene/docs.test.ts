// What the documents say about the API must be what the code says: the kinds they list, the condition
// reasons they name, and the one namespace every install command uses. Pure reading of files; the commands
// themselves run in test/e2e/cli.int.test.ts (syncline) and test/docs/kinds.int.test.ts (kubectl).
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { crdDefinitions } from '@syncline/operator';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const read = (file: string): string => readFileSync(join(root, file), 'utf8');
/** The documents users follow: the README, every guide in docs/ (api.md is generated), the chart's README. */
const DOCS = [
  'README.md',
  'charts/syncline/README.md',
  'examples/README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md') && f !== 'api.md')
    .map((f) => `docs/${f}`),
];
/** The upgrade guide's section on the renamed kinds names the old ones on purpose. */
const withoutRenameNotes = (file: string, text: string): string => (file === 'docs/upgrade.md' ? text.replace(/^## Renamed kinds[\s\S]*?(?=^## )/m, '') : text);

const plurals: readonly string[] = crdDefinitions.map((d) => d.plural);
const NUMBERS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];

/** Every CamelCase string literal of the operator's sources (tests apart): the reasons are among them. */
function codeLiterals(): Set<string> {
  const literals = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
        for (const m of readFileSync(path, 'utf8').matchAll(/'([A-Z][A-Za-z]+)'/g)) literals.add(m[1] ?? '');
      }
    }
  };
  for (const pkg of ['api', 'runtime', 'operator', 'notify', 'ui', 'cli', 'apply', 'source-git', 'render', 'kube']) walk(join(root, 'packages', pkg, 'src'));
  return literals;
}

/**
 * Condition types that are never a reason, which a document must not pass off as one (`Ready=False`,
 * `InvalidSource` was one). Healthy, Suspended, PruneHeld and others are both.
 */
const CONDITION_TYPES = new Set(['Ready', 'Synced', 'Reconciling', 'Stalled', 'InvalidSource', 'Failed']);

describe('docs match the code', () => {
  it('a line that lists Syncline kinds lists all of them, and no other plural of syncline.dev', () => {
    const problems: string[] = [];
    for (const file of DOCS) {
      const text = withoutRenameNotes(file, read(file));
      text.split('\n').forEach((line, i) => {
        const named = plurals.filter((p) => new RegExp(`\\b${p}\\b`).test(line));
        if (named.length >= 3 && named.length < plurals.length)
          problems.push(`${file}:${i + 1}: lists ${named.join(', ')}; missing ${plurals.filter((p) => !named.includes(p)).join(', ')}`);
        for (const m of line.matchAll(/\b([a-z]+)\.syncline\.dev\b/g)) {
          const name = m[1] ?? '';
          if (/s$/.test(name) && !plurals.includes(name)) problems.push(`${file}:${i + 1}: ${name}.syncline.dev is not a kind`);
        }
        for (const m of line.matchAll(/\b([a-z]+|\d+) (?:Syncline )?(?:kinds|CRDs)\b/gi)) {
          const word = (m[1] ?? '').toLowerCase();
          const count = NUMBERS.indexOf(word) >= 0 ? NUMBERS.indexOf(word) : Number(word);
          if (Number.isInteger(count) && count !== plurals.length && /syncline|crd/i.test(line))
            problems.push(`${file}:${i + 1}: "${m[0]}" (there are ${plurals.length})`);
        }
      });
    }
    expect(problems).toEqual([]);
  });

  it('every reason a document names is one the code sets, and no condition type is called a reason', () => {
    const literals = codeLiterals();
    const problems: string[] = [];
    for (const file of DOCS) {
      const text = read(file);
      const asReason = [
        ...text.matchAll(/reason `([A-Z][A-Za-z]+)`/g),
        ...text.matchAll(/`Ready=False`(?:,| with reason) `([A-Z][A-Za-z]+)`/g),
        ...text.matchAll(/`Ready=False ([A-Z][A-Za-z]+)`/g),
      ].map((m) => m[1] ?? '');
      for (const reason of asReason) {
        if (CONDITION_TYPES.has(reason) || !literals.has(reason)) problems.push(`${file}: reason ${reason}`);
      }
      // Tables of reasons (troubleshooting.md): the first cell of each row.
      if (file === 'docs/troubleshooting.md') {
        for (const m of text.matchAll(/^\| `([A-Z][A-Za-z]+)`(?: \/ `([A-Z][A-Za-z]+)`)? \|/gm)) {
          for (const reason of [m[1], m[2]]) if (reason !== undefined && !literals.has(reason)) problems.push(`${file}: table row ${reason}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('every install, upgrade and removal command uses the one namespace the chart README installs into', () => {
    const chartReadme = read('charts/syncline/README.md');
    const namespace = /helm install syncline charts\/syncline (?:--namespace|-n) (\S+)/.exec(chartReadme)?.[1];
    expect(namespace).toBe('syncline-system');
    const problems: string[] = [];
    for (const file of DOCS) {
      read(file)
        .split('\n')
        .forEach((line, i) => {
          const commands = [
            ...line.matchAll(/helm (?:install|upgrade|uninstall|rollback) syncline\b.*?(?:--namespace|-n) ([a-z0-9-]+)/g),
            ...line.matchAll(/kubectl -n ([a-z0-9-]+) (?:rollout status|logs|get pods)[^\n]*/g),
            ...line.matchAll(/syncline version -n ([a-z0-9-]+)/g),
          ];
          for (const m of commands) if (m[1] !== namespace) problems.push(`${file}:${i + 1}: ${m[0].trim()}`);
        });
    }
    expect(problems).toEqual([]);
  });
});

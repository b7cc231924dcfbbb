// Comments, docs and messages must stand on what the repository holds: a reader of these files has no
// project tracker, no design document or style guide next to them. An upstream report may be cited with its
// repository (owner/repo, then its number) or its URL.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const self = relative(root, import.meta.filename);

/** What may not be cited; the words are split so that this file does not cite them itself. */
const FORBIDDEN: ReadonlyArray<{ what: string; pattern: RegExp }> = [
  // A bare tracker number, with or without "#"; one that follows owner/repo, or sits in a URL, is allowed.
  { what: 'a project issue number', pattern: new RegExp(String.raw`(?<![\w.-]+/[\w.-]+ )\b${'iss'}${'ues?'} #?[0-9]+`, 'i') },
  { what: 'the design document', pattern: new RegExp(`\\b${'DES'}IGN(\\.md)?\\b`) },
  { what: 'the style guide', pattern: new RegExp(`\\b${'STY'}LE\\.md\\b|\\bstyle ${'gu'}ide\\b`, 'i') },
  { what: 'design notes', pattern: new RegExp(`\\b${'se'}eds?/|\\bdesign ${'no'}tes?\\b|\\bdesign ${'doc'}(ument)?s?\\b`, 'i') },
  { what: 'a path outside the repository', pattern: new RegExp(`\\b${'sha'}red/(DESIGN|STYLE)`) },
];

const TEXT = /\.(ts|js|mjs|json|ya?ml|tpl|md|txt|sh)$|(^|\/)(Dockerfile|LICENSE|NOTES\.txt)$/;

function trackedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' });
  return out.split('\n').filter((f) => f !== '' && f !== self && TEXT.test(f) && !f.includes('node_modules/') && f !== 'pnpm-lock.yaml');
}

/** `file:line: text` of every citation found in `text`. */
export function citations(file: string, text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, index) => {
    for (const { what, pattern } of FORBIDDEN) if (pattern.test(line)) found.push(`${file}:${index + 1}: ${what}: ${line.trim().slice(0, 160)}`);
  });
  return found;
}

describe('citations', () => {
  it('no file cites a project issue number, the design document, the style guide or design notes', () => {
    const files = trackedFiles();
    expect(files.length).toBeGreaterThan(100);
    const found = files.flatMap((file) => {
      try {
        return citations(file, readFileSync(join(root, file), 'utf8'));
      } catch {
        return []; // deleted in the working tree
      }
    });
    expect(found).toEqual([]);
  });

  it('catches what it is there for, and lets upstream issues and URLs through', () => {
    const hits = (line: string): number => citations('x.ts', line).length;
    for (const line of [
      `// a pack cut short (${'iss'}ue 15)`,
      `// ${'Iss'}ue #16, part 2`,
      `// per ${'DES'}IGN.md's measurements`,
      `// (house rules in ${'STY'}LE.md)`,
      `// names from the replicator design ${'no'}te`,
      `// see ${'se'}eds/replicator.md`,
    ]) {
      expect(hits(line), line).toBe(1);
    }
    for (const line of [
      `// Flux lost track of objects (fluxcd/kustomize-controller ${'iss'}ue 1664)`,
      '// https://github.com/kubernetes/kubernetes/issues/12345',
      "'shared/base.yaml': 'base: 1'",
      '// by design: it restarts as a follower',
    ]) {
      expect(hits(line), line).toBe(0);
    }
  });
});

import { applyPatch } from 'diff';
import { describe, expect, it } from 'vitest';
import { MASK, MASK_CHANGED, diffYaml, maskSecrets, normalizeSecret, projectLive, unifiedDiff } from './diff.ts';

describe('unifiedDiff', () => {
  it('is empty for equal texts', () => {
    expect(unifiedDiff('a\nb\n', 'a\nb\n', { from: 'x', to: 'y' })).toBe('');
  });

  it('prints a hunk with three lines of context, deletions before insertions', () => {
    const a = ['1', '2', '3', '4', '5', '6', '7', '8'].join('\n') + '\n';
    const b = ['1', '2', '3', '4', 'five', '6', '7', '8'].join('\n') + '\n';
    expect(unifiedDiff(a, b, { from: 'live', to: 'desired' })).toBe(
      ['--- live', '+++ desired', '@@ -2,7 +2,7 @@', ' 2', ' 3', ' 4', '-5', '+five', ' 6', ' 7', ' 8', ''].join('\n'),
    );
  });

  it('splits far-apart changes into hunks and counts lines as diff -u does', () => {
    const a = Array.from({ length: 20 }, (_, i) => `l${i}`);
    const b = [...a];
    b[1] = 'changed1';
    b.splice(18, 0, 'inserted');
    const text = unifiedDiff(a.join('\n') + '\n', b.join('\n') + '\n', { from: 'a', to: 'b' });
    expect(text.match(/^@@.*@@$/gm)).toEqual(['@@ -1,5 +1,5 @@', '@@ -16,5 +16,6 @@']);
    expect(text).toContain('-l1\n+changed1\n');
    expect(text).toContain(' l17\n+inserted\n l18\n');
  });

  it('diffs against nothing (a created or a deleted object)', () => {
    expect(unifiedDiff('', 'a\nb\n', { from: '/dev/null', to: 'd' })).toBe('--- /dev/null\n+++ d\n@@ -0,0 +1,2 @@\n+a\n+b\n');
    expect(unifiedDiff('a\n', '', { from: 'l', to: '/dev/null' })).toBe('--- l\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-a\n');
  });
});

describe('unifiedDiff of large objects', () => {
  const LINES = 20_000;
  const configMap = (kind: string, edited: (i: number) => boolean): Record<string, unknown> => ({
    apiVersion: 'v1',
    kind,
    metadata: { name: 'big', namespace: 'app' },
    data: Object.fromEntries(Array.from({ length: LINES }, (_, i) => [`key-${String(i).padStart(6, '0')}`, edited(i) ? `edited value ${i}` : `value ${i}`])),
  });
  const changedLines = (text: string): { removed: string[]; added: string[] } => {
    const lines = text.split('\n').filter((l) => !l.startsWith('--- ') && !l.startsWith('+++ '));
    return { removed: lines.filter((l) => l.startsWith('-')), added: lines.filter((l) => l.startsWith('+')) };
  };

  it.each([
    ['a few edits', (i: number) => i === 3 || i === 9_999 || i === 19_998],
    ['an edit every 97 lines', (i: number) => i % 97 === 0],
  ])('diffs two 20,000-line objects exactly: %s (the patch turns one into the other, one line out and in per edit)', (_, edited) => {
    // given a live object and a desired one of 20,000 data lines each, some values edited
    const live = diffYaml(configMap('ConfigMap', () => false));
    const desired = diffYaml(configMap('ConfigMap', edited));
    expect(live.split('\n').length).toBeGreaterThan(LINES);
    // when they are diffed
    const text = unifiedDiff(live, desired, { from: 'live', to: 'desired' });
    // then applying the diff to the live text gives the desired one
    expect(applyPatch(live, text)).toBe(desired);
    // and it is the smallest diff: each edited value is one line removed and one added, nothing else
    const edits = Array.from({ length: LINES }, (_, i) => i).filter(edited);
    const { removed, added } = changedLines(text);
    expect(removed).toEqual(edits.map((i) => `-  key-${String(i).padStart(6, '0')}: value ${i}`));
    expect(added).toEqual(edits.map((i) => `+  key-${String(i).padStart(6, '0')}: edited value ${i}`));
  });

  it('diffs two 20,000-line objects that differ in every line: a correct diff, the middle removed then added', () => {
    const live = diffYaml(configMap('ConfigMap', () => false));
    const desired = diffYaml(configMap('ConfigMap', () => true));
    const text = unifiedDiff(live, desired, { from: 'live', to: 'desired' });
    expect(applyPatch(live, text)).toBe(desired);
    const { removed, added } = changedLines(text);
    expect([removed.length, added.length]).toEqual([LINES, LINES]);
    expect(text.indexOf('\n+  key-')).toBeGreaterThan(text.lastIndexOf('\n-  key-'));
  });

  it('never shows a value of a 20,000-key Secret', () => {
    const live = configMap('Secret', () => false);
    const desired = normalizeSecret(configMap('Secret', (i) => i % 100 === 0));
    const masked = maskSecrets(projectLive(live, desired), desired);
    const text = unifiedDiff(diffYaml(masked.live), diffYaml(masked.desired), { from: 'l', to: 'd' });
    expect(text).not.toMatch(/value \d/);
    expect(changedLines(text).added).toHaveLength(LINES / 100);
    expect(text).toContain(`-  key-000000: "${MASK}"\n+  key-000000: "${MASK_CHANGED}"\n`);
  });
});

describe('projectLive', () => {
  it('keeps only the fields the desired object sets (no status, uid, managedFields, defaults)', () => {
    const live = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'a', uid: 'u', resourceVersion: '9', labels: { x: '1', other: 'y' } },
      data: { k: 'old' },
      status: {},
    };
    const desired = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', labels: { x: '1' } }, data: { k: 'new' } };
    expect(projectLive(live, desired)).toEqual({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', labels: { x: '1' } }, data: { k: 'old' } });
  });

  it('matches named list entries by name and leaves out entries other managers added', () => {
    const live = {
      containers: [
        { name: 'sidecar', image: 's' },
        { name: 'app', image: 'v1', terminationMessagePath: '/dev/x' },
      ],
    };
    const desired = { containers: [{ name: 'app', image: 'v2' }] };
    expect(projectLive(live, desired)).toEqual({ containers: [{ name: 'app', image: 'v1' }] });
  });
});

describe('maskSecrets', () => {
  it('never shows a Secret value; a changed one is marked on the desired side; stringData compares as data', () => {
    const live = { kind: 'Secret', data: { password: Buffer.from('hunter2').toString('base64'), user: Buffer.from('admin').toString('base64') } };
    const desired = { kind: 'Secret', stringData: { password: 'correct horse', user: 'admin', token: 'new' } };
    const masked = maskSecrets(live, desired);
    expect(masked).toEqual({
      live: { kind: 'Secret', data: { password: MASK, user: MASK } },
      desired: { kind: 'Secret', data: { password: MASK_CHANGED, token: MASK, user: MASK } },
    });
    const text = unifiedDiff(diffYaml(masked.live), diffYaml(masked.desired), { from: 'l', to: 'd' });
    expect(text).not.toMatch(/hunter2|aHVudGVyMg|correct horse|admin|YWRtaW4/);
    expect(text).toContain('-  password: "***"\n+  password: "*** (changed)"\n+  token: "***"\n');
  });

  it('folds stringData into data as the API server stores it, so the live data projects onto it', () => {
    const desired = normalizeSecret({ kind: 'Secret', data: { a: 'eA==', b: 'eA==' }, stringData: { b: 'y' } });
    expect(desired).toEqual({ kind: 'Secret', data: { a: 'eA==', b: 'eQ==' } });
    expect(projectLive({ kind: 'Secret', data: { a: 'eA==', b: 'eA==', c: 'eg==' }, type: 'Opaque' }, desired)).toEqual({
      kind: 'Secret',
      data: { a: 'eA==', b: 'eA==' },
    });
  });

  it('passes other kinds through', () => {
    const cm = { kind: 'ConfigMap', data: { a: 'b' } };
    expect(maskSecrets(cm, cm)).toEqual({ live: cm, desired: cm });
  });
});

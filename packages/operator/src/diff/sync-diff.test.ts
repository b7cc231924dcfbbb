import { describe, expect, it } from 'vitest';
import { diffRenders, objectLabel } from './sync-diff.ts';

const configMap = (name: string, data: Record<string, string>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team' }, data });
const secret = (name: string, data: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'team' }, stringData: data });

describe('diffRenders (what changed between two deploys)', () => {
  it('shows changed, added and removed objects per target, and only those', () => {
    // given two renders of one target
    const from = [{ name: 'dev', objects: [configMap('same', { a: '1' }), configMap('changed', { a: '1' }), configMap('gone', { a: '1' })] }];
    const to = [{ name: 'dev', objects: [configMap('same', { a: '1' }), configMap('changed', { a: '2' }), configMap('new', { a: '1' })] }];
    // when they are compared
    const diffs = diffRenders(from, to, { from: 'aaaa', to: 'bbbb' });
    // then the unchanged object is left out, and each other one is a unified diff with the deploys as labels
    expect(diffs.map((d) => d.label)).toEqual(['core/ConfigMap/team/changed', 'core/ConfigMap/team/gone', 'core/ConfigMap/team/new']);
    expect(diffs[0]?.diff).toContain('--- aaaa/core/ConfigMap/team/changed\n+++ bbbb/core/ConfigMap/team/changed');
    expect(diffs[0]?.diff).toContain('-  a: "1"\n+  a: "2"');
    expect(diffs[1]?.diff).toContain('+++ /dev/null');
    expect(diffs[2]?.diff).toContain('--- /dev/null');
    expect(diffs.every((d) => d.target === 'dev')).toBe(true);
  });

  it('never shows a Secret value on either side: a changed one reads as changed', () => {
    // given a Secret whose password changed between two deploys, and one added with a value
    const from = [{ name: 'dev', objects: [secret('db', { password: 'old-hunter2', user: 'app' })] }];
    const to = [{ name: 'dev', objects: [secret('db', { password: 'new-hunter2', user: 'app' }), secret('api', { token: 'token-hunter2' })] }];
    // when compared
    const text = diffRenders(from, to, { from: 'a', to: 'b' })
      .map((d) => d.diff)
      .join('\n');
    // then no value (nor its base64) is in the output, and the change is visible
    for (const value of ['old-hunter2', 'new-hunter2', 'token-hunter2', 'app']) {
      expect(text).not.toContain(value);
      expect(text).not.toContain(Buffer.from(value).toString('base64'));
    }
    expect(text).toContain('*** (changed)');
    expect(text).toContain('core/Secret/team/api');
  });

  it('labels object ids as syncline diff does', () => {
    expect(objectLabel('apps/Deployment/ns/web')).toBe('apps/Deployment/ns/web');
    expect(objectLabel('/Namespace//team')).toBe('core/Namespace/team');
  });
});

// Which runs build Gitea (only those whose file filters select a test that starts it) and which download every
// tool's modules ahead (only a run of every test).
import { describe, expect, it } from 'vitest';
import { needsGitea, selectsAll } from './global-setup.ts';

const root = '/repo';
const project = (filters: readonly string[] | undefined) => ({ vitest: { filenamePattern: filters } as never, config: { root } });

describe('needsGitea', () => {
  it('builds for a full run and for filters that reach the Gitea test', () => {
    expect(needsGitea(project(undefined))).toBe(true);
    expect(needsGitea(project([]))).toBe(true);
    for (const filter of [
      'gitea',
      'test/e2e',
      'test/e2e/gitea.int.test.ts',
      './test/e2e/gitea.int.test.ts',
      '/repo/test/e2e/gitea.int.test.ts',
      '/repo/test',
    ]) {
      expect(needsGitea(project([filter])), filter).toBe(true);
    }
  });

  it('does not build for a run of unrelated files', () => {
    for (const filters of [['test/docs/kinds.int.test.ts'], ['packages/kube'], ['/repo/test/e2e/cli.int.test.ts', 'notifications']]) {
      expect(needsGitea(project(filters)), filters.join(' ')).toBe(false);
    }
  });
});

describe('selectsAll', () => {
  it('is a run without file filters only', () => {
    expect(selectsAll(project(undefined))).toBe(true);
    expect(selectsAll(project([]))).toBe(true);
    expect(selectsAll(project(['test/e2e']))).toBe(false);
    expect(selectsAll(project(['/repo/test/e2e/gitea.int.test.ts']))).toBe(false);
  });
});

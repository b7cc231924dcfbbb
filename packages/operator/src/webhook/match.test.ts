import { describe, expect, it } from 'vitest';
import type { ConfigSync } from '@syncline/api';
import { followersOf } from './match.ts';
import type { Push } from './providers.ts';

const cs = (name: string, repo: string, revision: string): ConfigSync =>
  ({
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'ConfigSync',
    metadata: { name, namespace: 'ns' },
    spec: { source: { git: { repo, revision, path: '' } }, targets: [] },
  }) as unknown as ConfigSync;

const push = (refs: string[], extra: Partial<Push> = {}): Push => ({ kind: 'push', repos: ['git.example.com/acme/configs'], repoSuffixes: [], refs, ...extra });

describe('followersOf', () => {
  const syncs = [
    cs('main', 'https://git.example.com/acme/configs.git', 'main'),
    cs('main-upper', 'https://GIT.example.com/Acme/configs', 'main'),
    cs('full-ref', 'https://git.example.com/acme/configs', 'refs/heads/main'),
    cs('dev', 'https://git.example.com/acme/configs.git', 'dev'),
    cs('tag', 'https://git.example.com/acme/configs.git', 'v1.0.0'),
    cs('pinned', 'https://git.example.com/acme/configs.git', '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c'),
    cs('head', 'https://git.example.com/acme/configs.git', 'HEAD'),
    cs('other-repo', 'https://git.example.com/acme/other.git', 'main'),
  ];

  it('wakes the syncs that follow the pushed branch, never a pinned one', () => {
    expect(followersOf(push(['refs/heads/main'], { defaultBranch: 'main' }), syncs)).toEqual(['ns/main', 'ns/main-upper', 'ns/full-ref', 'ns/head']);
  });

  it('wakes tag followers on a tag push and HEAD only for the default branch', () => {
    expect(followersOf(push(['refs/tags/v1.0.0'], { defaultBranch: 'main' }), syncs)).toEqual(['ns/tag']);
    expect(followersOf(push(['refs/heads/dev'], { defaultBranch: 'main' }), syncs)).toEqual(['ns/dev']);
    expect(followersOf(push(['refs/heads/dev']), syncs)).toEqual(['ns/dev', 'ns/head']);
  });

  it('matches Bitbucket Data Center by path suffix and wakes nothing for an unfollowed repository', () => {
    const dc = [cs('dc', 'https://bitbucket.acme.example/scm/ops/configs.git', 'main')];
    expect(followersOf({ kind: 'push', repos: [], repoSuffixes: ['scm/ops/configs'], refs: ['refs/heads/main'] }, dc)).toEqual(['ns/dc']);
    expect(followersOf(push(['refs/heads/main'], { repos: ['git.example.com/acme/nobody'] }), syncs)).toEqual([]);
  });
});

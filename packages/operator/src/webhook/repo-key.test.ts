import { describe, expect, it } from 'vitest';
import { repoKey } from './repo-key.ts';

describe('repoKey', () => {
  it('maps every spelling of one repository to one key', () => {
    const spellings = [
      'https://github.com/acme/configs.git',
      'https://github.com/acme/configs',
      'https://GitHub.com/Acme/Configs.git/',
      'https://user:token@github.com/acme/configs.git',
      'http://github.com/acme/configs',
      'git@github.com:acme/configs.git',
      'git@github.com:acme/configs',
      'ssh://git@github.com/acme/configs.git',
      'ssh://git@github.com:22/acme/configs.git',
      'git://github.com/acme/configs.git',
      'https://github.com:443/acme/configs.git',
    ];
    expect(new Set(spellings.map(repoKey))).toEqual(new Set(['github.com/acme/configs']));
  });

  it('keeps a non-default web port and nested paths', () => {
    expect(repoKey('http://127.0.0.1:8123/configs.git')).toBe('127.0.0.1:8123/configs');
    expect(repoKey('https://gitlab.example.com/group/sub/configs.git')).toBe('gitlab.example.com/group/sub/configs');
    expect(repoKey('ssh://git@bitbucket.acme.example:7999/ops/configs.git')).toBe('bitbucket.acme.example/ops/configs');
  });

  it('distinguishes different repositories', () => {
    expect(repoKey('https://github.com/acme/configs')).not.toBe(repoKey('https://github.com/acme/configs-prod'));
    expect(repoKey('https://github.com/acme/configs')).not.toBe(repoKey('https://gitlab.com/acme/configs'));
  });

  it('refuses text that is no repository address', () => {
    for (const text of ['', '   ', 'not a url', 'https://github.com', 'https://github.com/', 'https://', '/just/a/path'])
      expect(repoKey(text), text).toBeUndefined();
  });
});

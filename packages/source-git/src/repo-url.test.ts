import { describe, expect, it } from 'vitest';
import { GitSourceError } from './errors.ts';
import { parseRepoUrl } from './repo-url.ts';

describe('parseRepoUrl', () => {
  it.each([
    ['ssh://git@github.com/org/repo.git', { url: 'ssh://git@github.com/org/repo.git', user: 'git', host: 'github.com', port: 22, path: '/org/repo.git' }],
    ['ssh://github.com/org/repo.git', { url: 'ssh://git@github.com/org/repo.git', user: 'git', host: 'github.com', port: 22, path: '/org/repo.git' }],
    [
      'ssh://deploy@127.0.0.1:2222/srv/configs.git',
      { url: 'ssh://deploy@127.0.0.1:2222/srv/configs.git', user: 'deploy', host: '127.0.0.1', port: 2222, path: '/srv/configs.git' },
    ],
    ['ssh://git@[::1]:2222/r.git', { url: 'ssh://git@[::1]:2222/r.git', user: 'git', host: '::1', port: 2222, path: '/r.git' }],
    ['ssh://git@host/~alice/r.git', { user: 'git', host: 'host', port: 22, path: '~alice/r.git' }],
    ['git+ssh://git@host/r.git', { user: 'git', host: 'host', port: 22, path: '/r.git' }],
    ['git@github.com:org/repo.git', { url: 'git@github.com:org/repo.git', user: 'git', host: 'github.com', port: 22, path: 'org/repo.git' }],
    ['deploy@git.example.com:/srv/repo.git', { user: 'deploy', host: 'git.example.com', port: 22, path: '/srv/repo.git' }],
    ['github.com:org/repo.git', { url: 'git@github.com:org/repo.git', user: 'git', host: 'github.com', port: 22, path: 'org/repo.git' }],
  ])('reads the SSH address %s', (input, expected) => {
    expect(parseRepoUrl(input, false)).toMatchObject({ kind: 'ssh', ...expected });
  });

  it('keeps https as it was: credentials out of the URL', () => {
    expect(parseRepoUrl('https://u:p@git.example.com/org/r.git/', false)).toEqual({
      kind: 'http',
      url: 'https://git.example.com/org/r.git',
      origin: 'https://git.example.com',
      embedded: { username: 'u', password: 'p' },
    });
  });

  it.each([
    ['git://github.com/org/repo.git', /git protocol/],
    ['file:///etc', /file protocol/],
    ['ext::sh -c touch% /tmp/pwned', /ext:: transport/],
    ['not a url', /whitespace/],
    ['http://git.example.com/r.git', /plain http/],
    ['ssh://git:secret@host/r.git', /carries a password/],
    ['ssh://git@host/', /no repository path/],
    ['ssh://-oProxyCommand=x@host/r.git', /not a valid name/],
    ['git@-oProxyCommand=x:r.git', /not a valid name/],
    ['git@host:', /no repository path/],
  ])('refuses %s, saying what is supported', (input, message) => {
    let err: unknown;
    try {
      parseRepoUrl(input, false);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GitSourceError);
    expect((err as GitSourceError).code).toBe('InvalidRepoUrl');
    expect((err as GitSourceError).message).toMatch(message);
    expect((err as GitSourceError).message).toMatch(/supported are https:\/\/ and ssh:\/\/ URLs and the scp-like user@host:path/);
    expect((err as GitSourceError).message).not.toContain('secret');
  });
});

import { describe, expect, it } from 'vitest';
import { bitbucketKey, commitStates, commitStatusRequest, forgeRepository } from './forge.ts';

const SHA = '0123456789abcdef0123456789abcdef01234567';

describe('forgeRepository: the forge API from the repository URL', () => {
  it.each([
    ['github', 'https://github.com/org/configs.git', 'https://api.github.com', 'org', 'configs'],
    ['github', 'git@github.com:org/configs.git', 'https://api.github.com', 'org', 'configs'],
    ['github', 'https://ghe.example.com/org/configs', 'https://ghe.example.com/api/v3', 'org', 'configs'],
    ['gitea', 'https://git.example.com/org/configs.git', 'https://git.example.com/api/v1', 'org', 'configs'],
    ['gitea', 'http://127.0.0.1:3000/org/configs.git', 'http://127.0.0.1:3000/api/v1', 'org', 'configs'],
    ['forgejo', 'https://example.com/forge/org/configs.git', 'https://example.com/forge/api/v1', 'org', 'configs'],
    ['gitea', 'ssh://git@git.example.com:2222/org/configs.git', 'https://git.example.com/api/v1', 'org', 'configs'],
    ['gitlab', 'https://gitlab.com/group/sub/configs.git', 'https://gitlab.com/api/v4', 'sub', 'configs'],
    ['bitbucket', 'https://bitbucket.org/team/configs.git', 'https://api.bitbucket.org/2.0', 'team', 'configs'],
  ] as const)('%s %s → %s', (type, repo, api, owner, name) => {
    const repository = forgeRepository(type, repo);
    expect(repository).toMatchObject({ api, owner, repo: name });
  });

  it('keeps GitLab subgroups in the project path', () => {
    expect(forgeRepository('gitlab', 'https://gitlab.com/group/sub/configs.git').project).toBe('group/sub/configs');
  });

  it("uses the NotificationProvider's address as the API base when given", () => {
    expect(forgeRepository('github', 'https://github.com/org/configs', 'http://127.0.0.1:8080/').api).toBe('http://127.0.0.1:8080');
  });

  it('refuses a URL without owner/repository', () => {
    expect(() => forgeRepository('gitea', 'https://git.example.com/configs')).toThrow(/owner\/repository/);
  });
});

describe('commitStatusRequest: each forge as it documents it', () => {
  const status = { sha: SHA, state: 'success' as const, context: 'syncline/apps/web/prod', description: 'applied' };
  it('GitHub: POST /repos/{owner}/{repo}/statuses/{sha}, Bearer token, state/context/description', () => {
    const request = commitStatusRequest('github', forgeRepository('github', 'https://github.com/org/configs'), { token: 't0k' }, status);
    expect(request.url).toBe(`https://api.github.com/repos/org/configs/statuses/${SHA}`);
    expect(request.headers).toMatchObject({ authorization: 'Bearer t0k', accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' });
    expect(JSON.parse(request.body)).toEqual({ state: 'success', context: 'syncline/apps/web/prod', description: 'applied' });
  });

  it('Gitea/Forgejo: POST /api/v1/repos/{owner}/{repo}/statuses/{sha} with Authorization: token', () => {
    const request = commitStatusRequest(
      'gitea',
      forgeRepository('gitea', 'https://git.example.com/org/configs.git'),
      { token: 't0k' },
      { ...status, state: 'pending' },
    );
    expect(request.url).toBe(`https://git.example.com/api/v1/repos/org/configs/statuses/${SHA}`);
    expect(request.headers['authorization']).toBe('token t0k');
    expect(JSON.parse(request.body)).toEqual({ state: 'pending', context: 'syncline/apps/web/prod', description: 'applied' });
  });

  it('GitLab: the project path URL-encoded, PRIVATE-TOKEN, name for the context and failed for failure/error', () => {
    const request = commitStatusRequest(
      'gitlab',
      forgeRepository('gitlab', 'https://gitlab.com/group/sub/configs.git'),
      { token: 't0k' },
      { ...status, state: 'error' },
    );
    expect(request.url).toBe(`https://gitlab.com/api/v4/projects/group%2Fsub%2Fconfigs/statuses/${SHA}`);
    expect(request.headers['private-token']).toBe('t0k');
    expect(JSON.parse(request.body)).toEqual({ state: 'failed', name: 'syncline/apps/web/prod', description: 'applied' });
  });

  it('Bitbucket: statuses/build with key, INPROGRESS/SUCCESSFUL/FAILED, a url, Basic with an app password', () => {
    const repository = forgeRepository('bitbucket', 'https://bitbucket.org/team/configs.git');
    const request = commitStatusRequest('bitbucket', repository, { username: 'bot', password: 'app-pass' }, { ...status, state: 'pending' });
    expect(request.url).toBe(`https://api.bitbucket.org/2.0/repositories/team/configs/commit/${SHA}/statuses/build`);
    expect(request.headers['authorization']).toBe(`Basic ${Buffer.from('bot:app-pass').toString('base64')}`);
    expect(JSON.parse(request.body)).toEqual({
      key: 'syncline/apps/web/prod',
      state: 'INPROGRESS',
      name: 'syncline/apps/web/prod',
      url: 'https://bitbucket.org/team/configs',
      description: 'applied',
    });
  });

  it('Bitbucket keys stay within 40 characters and distinct', () => {
    const a = bitbucketKey('syncline/a-very-long-namespace/a-very-long-name/target-one');
    const b = bitbucketKey('syncline/a-very-long-namespace/a-very-long-name/target-two');
    expect(a.length).toBeLessThanOrEqual(40);
    expect(a).not.toBe(b);
  });

  it('a description over 140 characters is cut (GitHub refuses longer)', () => {
    const request = commitStatusRequest(
      'github',
      forgeRepository('github', 'https://github.com/org/configs'),
      { token: 't' },
      { ...status, description: 'x'.repeat(300) },
    );
    expect((JSON.parse(request.body) as { description: string }).description).toHaveLength(140);
  });

  it('without a token: an error that names no secret', () => {
    expect(() => commitStatusRequest('github', forgeRepository('github', 'https://github.com/org/configs'), {}, status)).toThrow(/need a token/);
  });
});

describe('commitStates: per target, from the ConfigSync status', () => {
  const cs = (status: Record<string, unknown>) =>
    ({ metadata: { name: 'web', namespace: 'apps' }, spec: { targets: [{ name: 'prod' }, { name: 'stage' }] }, status }) as unknown as Parameters<
      typeof commitStates
    >[0];
  it('success per Synced target, failure per Failed target', () => {
    const states = commitStates(
      cs({
        lastAttemptedRevision: SHA,
        conditions: [],
        targets: [
          { name: 'prod', phase: 'Synced', objects: 3 },
          { name: 'stage', phase: 'Failed', objects: 0, message: 'apply failed' },
        ],
      }),
    );
    expect(states.map((s) => [s.target, s.state])).toEqual([
      ['prod', 'success'],
      ['stage', 'failure'],
    ]);
  });
  it('a render failure fails every target at the commit tried', () => {
    const states = commitStates(
      cs({ lastAttemptedRevision: SHA, conditions: [{ type: 'Stalled', status: 'True', reason: 'RenderFailed', message: 'app/x.yaml.hbs:3: missing value' }] }),
    );
    expect(states.every((s) => s.state === 'failure' && s.description.includes('x.yaml.hbs:3'))).toBe(true);
  });
  it('waiting for health is pending; nothing before a commit was tried', () => {
    expect(
      commitStates(
        cs({
          lastAttemptedRevision: SHA,
          conditions: [{ type: 'Reconciling', status: 'True', reason: 'Progressing', message: '' }],
          targets: [
            { name: 'prod', phase: 'Synced', objects: 1 },
            { name: 'stage', phase: 'Synced', objects: 1 },
          ],
        }),
      ).map((s) => s.state),
    ).toEqual(['pending', 'pending']);
    expect(commitStates(cs({}))).toEqual([]);
  });
});

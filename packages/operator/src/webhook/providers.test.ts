import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PayloadError, providerSpecs, type Provider } from './providers.ts';
import { hmacSha256Hex, verifyHmacSha256, verifyToken } from './signature.ts';

const fixture = (name: string): Buffer => readFileSync(join(import.meta.dirname, 'testdata', name));

describe('signatures', () => {
  const body = Buffer.from('{"ref":"refs/heads/main"}');
  const good = hmacSha256Hex('s3cret', body);

  it('accepts the HMAC of the body under any configured secret', () => {
    expect(verifyHmacSha256({ body, signature: `sha256=${good}`, secrets: ['s3cret'], prefix: 'sha256=' })).toBe(true);
    expect(verifyHmacSha256({ body, signature: `sha256=${good.toUpperCase()}`, secrets: ['old', 's3cret'], prefix: 'sha256=' })).toBe(true);
    expect(verifyHmacSha256({ body, signature: good, secrets: ['s3cret'] })).toBe(true);
  });

  it('refuses wrong, missing, empty, truncated or unprefixed signatures and empty secrets', () => {
    const cases: [string | undefined, readonly string[]][] = [
      [`sha256=${hmacSha256Hex('other', body)}`, ['s3cret']],
      [undefined, ['s3cret']],
      ['', ['s3cret']],
      ['sha256=', ['s3cret']],
      [`sha256=${good.slice(0, 63)}`, ['s3cret']],
      [good, ['s3cret']],
      [`sha1=${good}`, ['s3cret']],
      [`sha256=${hmacSha256Hex('', body)}`, ['']],
      [`sha256=${good}`, []],
    ];
    for (const [signature, secrets] of cases) expect(verifyHmacSha256({ body, signature, secrets, prefix: 'sha256=' }), String(signature)).toBe(false);
  });

  it('compares tokens whatever their length', () => {
    expect(verifyToken('tok', ['tok'])).toBe(true);
    expect(verifyToken('tok', ['other', 'tok'])).toBe(true);
    expect(verifyToken('to', ['tok'])).toBe(false);
    expect(verifyToken('', [''])).toBe(false);
    expect(verifyToken(undefined, ['tok'])).toBe(false);
  });
});

describe('push payloads', () => {
  const parse = (provider: Provider, headers: Record<string, string>, body: Buffer | string) =>
    providerSpecs[provider].parse(headers, Buffer.isBuffer(body) ? body : Buffer.from(body));

  it('GitHub push (JSON and form-encoded), ping and other events', () => {
    const body = fixture('github-push.json');
    const expected = { kind: 'push', refs: ['refs/heads/main'], defaultBranch: 'main', repos: ['github.com/acme/configs'], repoSuffixes: [] };
    expect(parse('github', { 'x-github-event': 'push' }, body)).toEqual(expected);
    const form = `payload=${encodeURIComponent(body.toString())}`;
    expect(parse('github', { 'x-github-event': 'push', 'content-type': 'application/x-www-form-urlencoded' }, form)).toEqual(expected);
    expect(parse('github', { 'x-github-event': 'ping' }, fixture('github-ping.json'))).toEqual({ kind: 'ping' });
    expect(parse('github', { 'x-github-event': 'issues' }, '{}')).toEqual({ kind: 'ignored', event: 'issues' });
  });

  it('GitLab push and tag push', () => {
    expect(parse('gitlab', { 'x-gitlab-event': 'Push Hook' }, fixture('gitlab-push.json'))).toEqual({
      kind: 'push',
      refs: ['refs/heads/main'],
      defaultBranch: 'main',
      repos: ['gitlab.example.com/acme/configs'],
      repoSuffixes: [],
    });
    expect(parse('gitlab', { 'x-gitlab-event': 'Tag Push Hook' }, fixture('gitlab-tag-push.json'))).toMatchObject({ kind: 'push', refs: ['refs/tags/v1.0.0'] });
    expect(parse('gitlab', { 'x-gitlab-event': 'System Hook' }, fixture('gitlab-push.json'))).toMatchObject({ kind: 'push' });
    expect(parse('gitlab', { 'x-gitlab-event': 'System Hook' }, '{"object_kind":"project_create"}')).toMatchObject({ kind: 'ignored' });
    expect(parse('gitlab', { 'x-gitlab-event': 'Merge Request Hook' }, '{}')).toMatchObject({ kind: 'ignored' });
  });

  it('Gitea and Forgejo push', () => {
    const expected = { kind: 'push', refs: ['refs/heads/main'], defaultBranch: 'main', repos: ['gitea.example.com/acme/configs'], repoSuffixes: [] };
    expect(parse('gitea', { 'x-gitea-event': 'push' }, fixture('gitea-push.json'))).toEqual(expected);
    expect(parse('gitea', { 'x-forgejo-event': 'push' }, fixture('gitea-push.json'))).toEqual(expected);
    expect(parse('gitea', { 'x-gitea-event': 'create' }, '{}')).toMatchObject({ kind: 'ignored' });
  });

  it('a delivery captured from Gitea 1.26: its signature verifies with the hook secret and its push parses', () => {
    // given the exact bytes and headers Gitea sent for a push to a repository webhook with secret
    // `gitea-fixture-secret` (the test forge of test support, on 127.0.0.1:46005, SSH off)
    const body = fixture('gitea-1.26-push.json');
    const headers = JSON.parse(fixture('gitea-1.26-push.headers.json').toString()) as Record<string, string>;

    // then the signature is accepted under that secret only, the delivery id is Gitea's, and the push names
    // the HTTP clone address (and the SSH one Gitea reports anyway) and the ref
    expect(providerSpecs.gitea.verify(headers, body, ['gitea-fixture-secret'])).toBe(true);
    expect(providerSpecs.gitea.verify(headers, body, ['another-secret'])).toBe(false);
    expect(providerSpecs.gitea.verify(headers, Buffer.concat([body, Buffer.from(' ')]), ['gitea-fixture-secret'])).toBe(false);
    expect(providerSpecs.gitea.deliveryId(headers)).toBe(headers['x-gitea-delivery']);
    expect(parse('gitea', headers, body)).toEqual({
      kind: 'push',
      refs: ['refs/heads/main'],
      defaultBranch: 'main',
      repos: ['127.0.0.1:46005/syncline-admin/configs', '127.0.0.1/syncline-admin/configs'],
      repoSuffixes: [],
    });
    // Gitea signs for GitHub's receivers too (X-Hub-Signature-256): the /hooks/github route would accept it.
    expect(providerSpecs.github.verify(headers, body, ['gitea-fixture-secret'])).toBe(true);
  });

  it('Bitbucket Cloud push, Data Center refs_changed and ping', () => {
    expect(parse('bitbucket', { 'x-event-key': 'repo:push' }, fixture('bitbucket-cloud-push.json'))).toEqual({
      kind: 'push',
      refs: ['refs/heads/main'],
      repos: ['bitbucket.org/acme/configs'],
      repoSuffixes: [],
    });
    expect(parse('bitbucket', { 'x-event-key': 'repo:refs_changed' }, fixture('bitbucket-server-push.json'))).toEqual({
      kind: 'push',
      refs: ['refs/heads/main'],
      repos: ['bitbucket.acme.example/ops/configs', 'bitbucket.acme.example/scm/ops/configs'],
      repoSuffixes: ['scm/ops/configs'],
    });
    expect(parse('bitbucket', { 'x-event-key': 'diagnostics:ping' }, fixture('bitbucket-server-ping.json'))).toEqual({ kind: 'ping' });
  });

  it('generic push', () => {
    expect(parse('generic', {}, '{"repo":"git@github.com:acme/configs.git","ref":"refs/tags/v2"}')).toEqual({
      kind: 'push',
      refs: ['refs/tags/v2'],
      repos: ['github.com/acme/configs'],
      repoSuffixes: [],
    });
    expect(parse('generic', { 'x-syncline-event': 'ping' }, '')).toEqual({ kind: 'ping' });
  });

  // Every provider, every shape of bad input: a PayloadError, never a crash or a TypeError.
  const pushHeaders: Record<Provider, Record<string, string>> = {
    github: { 'x-github-event': 'push' },
    gitlab: { 'x-gitlab-event': 'Push Hook' },
    gitea: { 'x-gitea-event': 'push' },
    bitbucket: { 'x-event-key': 'repo:push' },
    generic: {},
  };
  const valid: Record<Provider, unknown> = {
    github: JSON.parse(fixture('github-push.json').toString()),
    gitlab: JSON.parse(fixture('gitlab-push.json').toString()),
    gitea: JSON.parse(fixture('gitea-push.json').toString()),
    bitbucket: JSON.parse(fixture('bitbucket-cloud-push.json').toString()),
    generic: { repo: 'https://github.com/acme/configs.git', ref: 'refs/heads/main' },
  };
  const mutations: [string, (payload: Record<string, unknown>) => unknown][] = [
    ['null body', () => null],
    ['array body', () => []],
    ['string body', () => 'push'],
    ['number body', () => 42],
    ['empty object', () => ({})],
    ['ref null', (p) => ({ ...p, ref: null })],
    ['ref a number', (p) => ({ ...p, ref: 7 })],
    ['ref not a ref', (p) => ({ ...p, ref: 'main' })],
    ['repository null', (p) => ({ ...p, repository: null, project: null, repo: null })],
    ['repository a string', (p) => ({ ...p, repository: 'acme/configs', project: 'acme/configs', repo: 17 })],
    ['no repository address', (p) => ({ ...p, repository: {}, project: {}, repo: 'not a url' })],
    ['push.changes wrong type', (p) => ({ ...p, push: { changes: 'main' } })],
  ];

  for (const provider of Object.keys(pushHeaders) as Provider[]) {
    it(`${provider}: malformed JSON, nulls, missing fields and wrong types are a PayloadError`, () => {
      const bad = ['', '{', 'not json', '{"ref": "refs/heads/main",}', '\u0000'];
      for (const body of bad) expect(() => parse(provider, pushHeaders[provider], body), JSON.stringify(body)).toThrow(PayloadError);
      let refused = 0;
      for (const [what, mutate] of mutations) {
        const body = JSON.stringify(mutate(valid[provider] as Record<string, unknown>));
        try {
          parse(provider, pushHeaders[provider], body);
        } catch (error) {
          expect(error, `${provider}: ${what}`).toBeInstanceOf(PayloadError);
          refused++;
        }
      }
      // Mutations of fields a provider does not use are fine; the rest must be refused.
      expect(refused).toBeGreaterThanOrEqual(8);
    });
  }

  it('missing event headers are a PayloadError', () => {
    for (const provider of ['github', 'gitlab', 'gitea', 'bitbucket'] as const) expect(() => parse(provider, {}, '{}'), provider).toThrow(PayloadError);
  });
});

describe('delivery ids', () => {
  it("GitLab's is Idempotency-Key (same across retries), never the recursion-detection X-Gitlab-Event-UUID", () => {
    const uuid = 'f3b6a8c2-0d1e-4f5a-9b7c-2e4d6f8a0b1c';
    expect(providerSpecs.gitlab.deliveryId({ 'idempotency-key': 'b4d2-17', 'x-gitlab-event-uuid': uuid })).toBe('b4d2-17');
    expect(providerSpecs.gitlab.deliveryId({ 'x-gitlab-event-uuid': uuid })).toBeUndefined();
  });

  it("GitHub's is X-GitHub-Delivery (a redelivery keeps it: the receiver processes it after its short window)", () => {
    expect(providerSpecs.github.deliveryId({ 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958' })).toBe('72d3162e-cc78-11e3-81ab-4c9367dc0958');
  });
});

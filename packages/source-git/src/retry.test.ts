// Each idempotent request is retried on its own, so a server that fails the same request
// of every fetch (e.g. each second request, which is always the pack POST) no longer fails every sync.
// Assertions are on request counts, order and statuses, never on how fast anything ran.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GitServer } from '@syncline/test-support';
import { startGitServer } from '@syncline/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTransient, parseRetryAfter } from './http.ts';
import { GitSourceError, createGitSource } from './index.ts';
import type { GitSourceOptions } from './index.ts';
import { failure, text } from './test-support.ts';

let server: GitServer;
let scratch: string;
let counter = 0;

beforeAll(async () => {
  server = await startGitServer();
  scratch = await mkdtemp(join(tmpdir(), 'source-git-retry-'));
});
afterAll(async () => {
  await server.close();
  await rm(scratch, { recursive: true, force: true });
});

async function newRepo(files: Record<string, string> = { 'a.yaml': 'a: 1\n' }) {
  const repo = await server.createRepo(`retry${++counter}`);
  return { repo, sha: await repo.commit(files) };
}

async function newSource(opts: Partial<GitSourceOptions> = {}) {
  return createGitSource({ cacheDir: await mkdtemp(join(scratch, 'cache-')), allowInsecureHttp: true, ...opts, retry: { baseDelayMs: 5, ...opts.retry } });
}

/** The repo's requests as `METHOD endpoint status`, in arrival order. */
function trace(repo: string): string[] {
  return server
    .requestLog()
    .filter((r) => r.repo === repo)
    .map((r) => `${r.method} ${r.path.includes('info/refs') ? 'info/refs' : 'upload-pack'} ${r.status}`);
}

describe('a request that fails transiently is retried on its own', () => {
  it.each([429, 500, 502, 503, 504])('every second request answers %i (always the pack POST of a fetch): the fetch succeeds', async (status) => {
    // given
    const { repo, sha } = await newRepo();
    const source = await newSource();
    server.setBehavior({ kind: 'status', status, repo: repo.name, every: 2 });

    // when
    const snapshot = await source.fetchSnapshot({ repo: repo.url, sha }).finally(() => server.setBehavior(undefined));

    // then
    expect(text(await source.readPath(snapshot, ''))).toEqual({ 'a.yaml': 'a: 1\n' });
    expect(trace(repo.name)).toEqual(['GET info/refs 200', `POST upload-pack ${status}`, 'POST upload-pack 200']);
  });

  it('every third request fails: ten resolves and fetches of moving commits all succeed', async () => {
    // given
    const { repo } = await newRepo();
    const source = await newSource();
    server.setBehavior({ kind: 'status', status: 503, repo: repo.name, every: 3 });

    // when
    const seen: string[] = [];
    try {
      for (let i = 0; i < 10; i++) {
        const sha = await repo.commit({ 'a.yaml': `a: ${i}\n` });
        const resolved = await source.resolveRevision({ repo: repo.url, revision: 'main' });
        const files = await source.readPath(await source.fetchSnapshot({ repo: repo.url, sha: resolved }), '');
        expect(resolved).toBe(sha);
        seen.push(text(files)['a.yaml'] ?? '');
      }
    } finally {
      server.setBehavior(undefined);
    }

    // then
    expect(seen).toEqual(Array.from({ length: 10 }, (_, i) => `a: ${i}\n`));
    const log = server.requestLog().filter((r) => r.repo === repo.name);
    expect(log.filter((r) => r.faulted).length).toBe(Math.floor(log.length / 3));
    expect(log.filter((r) => r.status === 503).length).toBe(Math.floor(log.length / 3));
  }, 30_000);

  it('every pack POST fails twice before it works: one fetch, three POSTs', async () => {
    // given
    const { repo, sha } = await newRepo();
    const source = await newSource();
    server.setBehavior({ kind: 'status', status: 502, repo: repo.name, only: 'git-upload-pack', times: 2 });

    // when
    await source.fetchSnapshot({ repo: repo.url, sha }).finally(() => server.setBehavior(undefined));

    // then
    expect(trace(repo.name)).toEqual(['GET info/refs 200', 'POST upload-pack 502', 'POST upload-pack 502', 'POST upload-pack 200']);
  });

  it.each([1, 2, 3, 4, 5])(
    'random 5xx on 4 requests in 10 (seed %i): every operation of a session succeeds',
    async (seed) => {
      // given
      const { repo } = await newRepo();
      const source = await newSource({ retry: { attempts: 6 } });
      server.setBehavior({ kind: 'status', status: 503, repo: repo.name, probability: 0.4, seed });

      // when
      try {
        for (let i = 0; i < 5; i++) {
          const sha = await repo.commit({ 'a.yaml': `a: ${i}\n` });
          expect(await source.resolveRevision({ repo: repo.url, revision: 'main' })).toBe(sha);
          expect(text(await source.readPath(await source.fetchSnapshot({ repo: repo.url, sha }), ''))).toEqual({ 'a.yaml': `a: ${i}\n` });
        }
      } finally {
        server.setBehavior(undefined);
      }

      // then: the faults happened, and each was answered by one more request (a commit costs a listing and one POST:
      // the fetch words its request from the capabilities the listing advertised)
      const log = server.requestLog().filter((r) => r.repo === repo.name);
      const faults = log.filter((r) => r.faulted).length;
      expect(faults).toBeGreaterThan(0);
      expect(log.length).toBe(5 * 2 + faults);
    },
    30_000,
  );

  it('retries a connection reset before the response, and one in the middle of the pack', async () => {
    // given
    const { repo, sha } = await newRepo();
    const source = await newSource();

    // when
    server.setBehavior({ kind: 'reset', repo: repo.name, times: 2 });
    const resolved = await source.resolveRevision({ repo: repo.url, revision: 'main' }).finally(() => server.setBehavior(undefined));
    server.setBehavior({ kind: 'reset', afterBytes: 120, repo: repo.name, only: 'git-upload-pack', times: 1 });
    const snapshot = await source.fetchSnapshot({ repo: repo.url, sha }).finally(() => server.setBehavior(undefined));

    // then
    expect(resolved).toBe(sha);
    expect(text(await source.readPath(snapshot, ''))).toEqual({ 'a.yaml': 'a: 1\n' });
    // the listing's 2 resets and its answer; the fetch asks for no advertisement of its own (the listing's is fresh)
    expect(server.requests(repo.name)).toEqual({ infoRefs: 3, uploadPack: 2 });
  });

  it('retries a server that stays silent past the idle timeout', async () => {
    // given
    const { repo, sha } = await newRepo();
    const source = await newSource({ limits: { idleTimeoutMs: 200 } });
    server.setBehavior({ kind: 'hang', repo: repo.name, only: 'git-upload-pack', times: 1 });

    // when
    await source.fetchSnapshot({ repo: repo.url, sha }).finally(() => server.setBehavior(undefined));

    // then
    expect(server.requests(repo.name)).toEqual({ infoRefs: 1, uploadPack: 2 });
  });

  it('gives up after the configured number of tries with a retryable error', async () => {
    // given
    const { repo, sha } = await newRepo();
    const source = await newSource({ retry: { attempts: 3 } });
    server.setBehavior({ kind: 'status', status: 503, repo: repo.name, only: 'git-upload-pack' });

    // when
    const err = await failure(source.fetchSnapshot({ repo: repo.url, sha })).finally(() => server.setBehavior(undefined));

    // then
    expect(err.code).toBe('ServerError');
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/HTTP 503/);
    expect(server.requests(repo.name)).toEqual({ infoRefs: 1, uploadPack: 3 });
  });
});

describe('Retry-After', () => {
  it('waits at least the seconds the server asks for', async () => {
    // given
    const { repo } = await newRepo();
    const source = await newSource();
    server.setBehavior({ kind: 'status', status: 503, retryAfter: '1', repo: repo.name, times: 1 });

    // when
    await source.resolveRevision({ repo: repo.url, revision: 'main' }).finally(() => server.setBehavior(undefined));

    // then
    const [first, second] = server.requestLog().filter((r) => r.repo === repo.name);
    expect(first?.status).toBe(503);
    expect(second?.status).toBe(200);
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(1000);
  });

  it('waits until the HTTP-date the server names', async () => {
    // given: a date on a whole second (the format's resolution), at least a second ahead
    const { repo } = await newRepo();
    const source = await newSource();
    const until = (Math.floor(Date.now() / 1000) + 2) * 1000;
    server.setBehavior({ kind: 'status', status: 429, retryAfter: new Date(until).toUTCString(), repo: repo.name, times: 1 });

    // when
    await source.resolveRevision({ repo: repo.url, revision: 'main' }).finally(() => server.setBehavior(undefined));

    // then: the retry arrived no earlier than the date (timeOrigin + performance.now() is the wall clock
    // within a millisecond or two; the client waits by Date.now(), so allow that much)
    const [, second] = server.requestLog().filter((r) => r.repo === repo.name);
    expect(performance.timeOrigin + (second?.at ?? 0)).toBeGreaterThanOrEqual(until - 5);
  }, 30_000);

  it('caps an absurd Retry-After at the policy maximum instead of waiting an hour', async () => {
    // given
    const { repo } = await newRepo();
    const source = await newSource({ retry: { maxDelayMs: 300 } });
    server.setBehavior({ kind: 'status', status: 503, retryAfter: '3600', repo: repo.name, times: 1 });

    // when
    const sha = await source.resolveRevision({ repo: repo.url, revision: 'main' }).finally(() => server.setBehavior(undefined));

    // then
    expect(sha).toMatch(/^[0-9a-f]{40}$/);
    const [first, second] = server.requestLog().filter((r) => r.repo === repo.name);
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(300);
  });
});

describe('requests that must not be retried', () => {
  it.each([
    [401, 'AuthFailed'],
    [403, 'AuthFailed'],
    [404, 'RepoNotFound'],
    [400, 'ServerError'],
  ])('HTTP %i is final: one request, %s', async (status, code) => {
    // given
    const { repo, sha } = await newRepo();
    const source = await newSource();

    // when
    server.setBehavior({ kind: 'status', status, repo: repo.name, only: 'info/refs' });
    const resolveErr = await failure(source.resolveRevision({ repo: repo.url, revision: 'main' })).finally(() => server.setBehavior(undefined));
    const afterResolve = server.requests(repo.name);
    server.setBehavior({ kind: 'status', status, repo: repo.name, only: 'git-upload-pack' });
    const fetchErr = await failure(source.fetchSnapshot({ repo: repo.url, sha })).finally(() => server.setBehavior(undefined));

    // then
    expect(afterResolve).toEqual({ infoRefs: 1, uploadPack: 0 });
    expect(server.requests(repo.name)).toEqual({ infoRefs: 2, uploadPack: 1 });
    expect([resolveErr.code, fetchErr.code]).toEqual([code, code]);
    expect(resolveErr.retryable).toBe(code === 'ServerError');
  });

  it('a missing commit is final: one POST', async () => {
    // given
    const { repo } = await newRepo();
    const source = await newSource();

    // when
    const err = await failure(source.fetchSnapshot({ repo: repo.url, sha: '0123456789012345678901234567890123456789' }));

    // then
    expect(err.code).toBe('CommitNotFound');
    expect(server.requests(repo.name)).toEqual({ infoRefs: 1, uploadPack: 1 });
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it.each([
    ['0', 0],
    ['7', 7000],
    [' 120 ', 120_000],
    ['Thu, 01 Jan 2026 00:00:30 GMT', 30_000],
    ['Wed, 31 Dec 2025 23:59:00 GMT', 0],
    ['soon', undefined],
    ['-5', undefined],
    [undefined, undefined],
  ])('%j → %j ms', (value, ms) => {
    expect(parseRetryAfter(value, now)).toBe(ms);
  });
});

describe('isTransient', () => {
  const withCause = (code: string): Error => Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('x'), { code }) });
  it('retries resets, refusals and socket errors, not DNS failures or our own limits', () => {
    expect(isTransient(withCause('ECONNRESET'))).toBe(true);
    expect(isTransient(withCause('ECONNREFUSED'))).toBe(true);
    expect(isTransient(withCause('UND_ERR_SOCKET'))).toBe(true);
    expect(isTransient(new TypeError('terminated'))).toBe(true);
    expect(isTransient(withCause('ENOTFOUND'))).toBe(false);
    expect(isTransient(new GitSourceError('Timeout', 'idle'))).toBe(true);
    expect(isTransient(new GitSourceError('LimitExceeded', 'too big'))).toBe(false);
    expect(isTransient(new Error('something else'))).toBe(false);
  });
});

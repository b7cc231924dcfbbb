// A host that rate-limits (429 or 503 with Retry-After) limits the whole client. Every other
// resolve or fetch to that scheme://host:port waits until the time it named instead of hammering it.
// Assertions are on request counts, order and statuses, never on how fast anything ran.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GitServer } from '@syncline/test-support';
import { startGitServer } from '@syncline/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostGates } from './http.ts';
import { createGitSource } from './index.ts';
import type { GitSourceOptions, RateLimitEvent } from './index.ts';
import { failure } from './test-support.ts';

let server: GitServer;
let scratch: string;
let counter = 0;

beforeAll(async () => {
  server = await startGitServer();
  scratch = await mkdtemp(join(tmpdir(), 'source-git-rate-limit-'));
});
afterAll(async () => {
  await server.close();
  await rm(scratch, { recursive: true, force: true });
});

async function newRepos(n: number) {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const repo = await server.createRepo(`limited${++counter}`);
      return { repo, sha: await repo.commit({ 'a.yaml': `a: ${counter}\n` }) };
    }),
  );
}

/** A source whose rate-limit events are recorded, and a promise of the first one. */
async function newSource(opts: Partial<GitSourceOptions> = {}) {
  const events: RateLimitEvent[] = [];
  let limited: (event: RateLimitEvent) => void = () => undefined;
  const firstLimit = new Promise<RateLimitEvent>((resolve) => (limited = resolve));
  const source = createGitSource({
    cacheDir: await mkdtemp(join(scratch, 'cache-')),
    allowInsecureHttp: true,
    ...opts,
    retry: { baseDelayMs: 5, ...opts.retry },
    onRateLimited: (event) => {
      events.push(event);
      limited(event);
    },
  });
  return { source, events, firstLimit };
}

/** Requests to these repos as `METHOD endpoint status`, in arrival order. */
function trace(names: readonly string[]): string[] {
  return server
    .requestLog()
    .filter((r) => r.repo !== undefined && names.includes(r.repo))
    .map((r) => `${r.method} ${r.path.includes('info/refs') ? 'info/refs' : 'upload-pack'} ${r.status}`);
}

describe('a host that rate-limits holds every request to it', () => {
  it.each([429, 503])('HTTP %i with Retry-After: the resolves and the fetch that come while it holds are sent once, after it lifts', async (status) => {
    // given: five repos on one host, which answers the first request with a 1 s rate limit (and every request
    // inside that second with another, like GitHub)
    const repos = await newRepos(5);
    const names = repos.map((r) => r.repo.name);
    const { source, events, firstLimit } = await newSource();
    server.resetRequests();
    server.setBehavior({ kind: 'rateLimit', seconds: 1, status, times: 1 });

    try {
      // when: one resolve meets the limit; while the host's gate is closed, four more resolves and a fetch start
      const first = source.resolveRevision({ repo: repos[0]?.repo.url ?? '', revision: 'main' });
      await firstLimit;
      const rest = await Promise.all([
        ...repos.slice(1).map(({ repo }) => source.resolveRevision({ repo: repo.url, revision: 'main' })),
        source.fetchSnapshot({ repo: repos[1]?.repo.url ?? '', sha: repos[1]?.sha ?? '' }).then((s) => s.sha),
      ]);

      // then: each operation succeeded and asked the host once after the one limited request
      expect([await first, ...rest]).toEqual([...repos.map((r) => r.sha), repos[1]?.sha]);
      const log = trace(names);
      expect(log[0]).toBe(`GET info/refs ${status}`);
      expect(log.slice(1).sort()).toEqual([...Array.from({ length: 6 }, () => 'GET info/refs 200'), 'POST upload-pack 200']);
      expect(events).toEqual([{ host: server.url, status, askedMs: 1000, waitMs: 1000 }]);
    } finally {
      server.setBehavior(undefined);
    }
  });

  it('six concurrent resolves against a host that limits them: every limited answer comes before every success, one success each', async () => {
    // given
    const repos = await newRepos(6);
    const names = repos.map((r) => r.repo.name);
    const { source, events } = await newSource();
    server.resetRequests();
    server.setBehavior({ kind: 'rateLimit', seconds: 1, times: 1 });

    // when: all at once (how many of them arrive inside the limit's second is up to the scheduler)
    const shas = await Promise.all(repos.map(({ repo }) => source.resolveRevision({ repo: repo.url, revision: 'main' }))).finally(() =>
      server.setBehavior(undefined),
    );

    // then
    expect(shas).toEqual(repos.map((r) => r.sha));
    const statuses = trace(names).map((line) => line.split(' ')[2]);
    const limited = statuses.filter((s) => s === '429').length;
    expect(limited).toBeGreaterThanOrEqual(1);
    expect(statuses).toEqual([...Array.from({ length: limited }, () => '429'), ...Array.from({ length: 6 }, () => '200')]);
    expect(events.length).toBe(limited);
  });

  it('a limit that outlasts the deadline fails at once, says which host limited us and for how long, and holds the next request unsent', async () => {
    // given: credentials in the URL, a 20 s limit, a 5 s deadline
    const [a, b] = await newRepos(2);
    const { source, events } = await newSource({ limits: { timeoutMs: 5_000 } });
    const withCredentials = (a?.repo.url ?? '').replace('http://', 'http://robot:s3cret-pw@');
    server.resetRequests();
    server.setBehavior({ kind: 'rateLimit', seconds: 20, times: 1 });

    try {
      // when
      const first = await failure(source.resolveRevision({ repo: withCredentials, revision: 'main' }));
      const second = await failure(source.fetchSnapshot({ repo: b?.repo.url ?? '', sha: b?.sha ?? '' }));

      // then
      expect(first.code).toBe('ServerError');
      expect(first.retryable).toBe(true);
      expect(first.message).toContain(`the host ${server.url} rate-limited us (HTTP 429, Retry-After 20 s)`);
      expect(first.message).not.toMatch(/s3cret|robot/);
      expect(second.message).toContain(`the host ${server.url} rate-limited us (HTTP 429, Retry-After 20 s)`);
      expect(trace([a?.repo.name ?? '', b?.repo.name ?? ''])).toEqual(['GET info/refs 429']);
      expect(events).toEqual([{ host: server.url, status: 429, askedMs: 20_000, waitMs: 20_000 }]);
    } finally {
      server.setBehavior(undefined);
    }
  });

  it('a host that limits every try: the error says it rate-limited us and how often we tried', async () => {
    // given: two tries; the retry (held until the first limit lifts) meets a second limit
    const [a] = await newRepos(1);
    const { source } = await newSource({ retry: { attempts: 2 } });
    server.resetRequests();
    server.setBehavior({ kind: 'rateLimit', seconds: 1, times: 2 });

    // when
    const err = await failure(source.resolveRevision({ repo: a?.repo.url ?? '', revision: 'main' })).finally(() => server.setBehavior(undefined));

    // then
    expect(err.message).toMatch(/the host http:\/\/127\.0\.0\.1:\d+ rate-limited us \(HTTP 429, Retry-After 1 s\); gave up after 2 tries/);
    expect(trace([a?.repo.name ?? ''])).toEqual(['GET info/refs 429', 'GET info/refs 429']);
  });

  it('a Retry-After beyond the cap closes the gate for the cap only', async () => {
    // given
    const [a, b] = await newRepos(2);
    const { source, events, firstLimit } = await newSource({ retry: { maxDelayMs: 300 } });
    server.resetRequests();
    server.setBehavior({ kind: 'status', status: 429, retryAfter: '3600', repo: a?.repo.name ?? '', times: 1 });

    // when
    const first = source.resolveRevision({ repo: a?.repo.url ?? '', revision: 'main' });
    await firstLimit;
    const second = await source.resolveRevision({ repo: b?.repo.url ?? '', revision: 'main' }).finally(() => server.setBehavior(undefined));

    // then
    expect([await first, second]).toEqual([a?.sha, b?.sha]);
    expect(events).toEqual([{ host: server.url, status: 429, askedMs: 3_600_000, waitMs: 300 }]);
    expect(trace([a?.repo.name ?? '', b?.repo.name ?? ''])).toEqual(['GET info/refs 429', 'GET info/refs 200', 'GET info/refs 200']);
  });
});

describe('HostGates', () => {
  it('closes per host for the wait asked (capped), is only ever extended, and opens when the time has come', () => {
    // given
    let now = 1_000;
    const events: RateLimitEvent[] = [];
    const gates = new HostGates({ now: () => now, onClosed: (e) => events.push(e) });

    // when / then
    gates.close('https://git.example.com', { status: 429, askedMs: 10_000, capMs: 30_000 });
    gates.close('https://git.example.com', { status: 503, askedMs: 2_000, capMs: 30_000 });
    expect(gates.closed('https://git.example.com')).toEqual({ waitMs: 10_000, status: 429, askedMs: 10_000 });
    expect(gates.closed('https://git.example.com:8443')).toBeUndefined();
    expect(gates.closed('http://git.example.com')).toBeUndefined();
    now += 9_999;
    expect(gates.closed('https://git.example.com')?.waitMs).toBe(1);
    now += 1;
    expect(gates.closed('https://git.example.com')).toBeUndefined();
    gates.close('https://git.example.com', { status: 429, askedMs: 3_600_000, capMs: 30_000 });
    expect(gates.closed('https://git.example.com')?.waitMs).toBe(30_000);
    expect(events.map((e) => [e.status, e.askedMs, e.waitMs])).toEqual([
      [429, 10_000, 10_000],
      [503, 2_000, 2_000],
      [429, 3_600_000, 30_000],
    ]);
  });
});

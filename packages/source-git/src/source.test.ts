// source-git against the real Git server (git http-backend on loopback): no Kubernetes needed.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GitServer } from '@syncline/test-support';
import { startGitServer } from '@syncline/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitSourceError, authFromSecretData, createGitSource } from './index.ts';
import type { GitSourceError as GitSourceErrorType, GitSourceOptions, Snapshot } from './index.ts';
import { INLINE_INDEX_BYTES } from './index-pack-worker.ts';
import { failure, text } from './test-support.ts';

let server: GitServer;
let scratch: string;
let counter = 0;

beforeAll(async () => {
  server = await startGitServer();
  scratch = await mkdtemp(join(tmpdir(), 'source-git-test-'));
});
afterAll(async () => {
  await server.close();
  await rm(scratch, { recursive: true, force: true });
});

async function newRepo(s: GitServer = server) {
  return s.createRepo(`repo${++counter}`);
}

async function newSource(opts: Partial<GitSourceOptions> = {}) {
  const cacheDir = opts.cacheDir ?? (await mkdtemp(join(scratch, 'cache-')));
  return { cacheDir, source: createGitSource({ allowInsecureHttp: true, ...opts, cacheDir }) };
}

describe('resolveRevision', () => {
  it('resolves branches, lightweight and annotated tags, refs/ names and full SHAs', async () => {
    // given
    const repo = await newRepo();
    const first = await repo.commit({ 'a.yaml': 'a: 1\n' });
    const second = await repo.commit({ 'a.yaml': 'a: 2\n' });
    await repo.tag('light', first);
    await repo.tag('v1.0.0', first, { annotated: true });
    await repo.commit({ 'b.yaml': 'b' }, { branch: 'feature' });
    const { source } = await newSource();
    const resolve = (revision: string) => source.resolveRevision({ repo: repo.url, revision });

    // when / then
    expect(await resolve('main')).toBe(second);
    expect(await resolve('refs/heads/main')).toBe(second);
    expect(await resolve('light')).toBe(first);
    expect(await resolve('v1.0.0')).toBe(first);
    expect(await resolve('feature')).toBe(await repo.resolve('feature'));
    expect(await resolve(first)).toBe(first);
    expect(await resolve(first.toUpperCase())).toBe(first);
  });

  it('follows a branch that moves, and costs one small request and no fetch when nothing changed', async () => {
    // given
    const repo = await newRepo();
    const first = await repo.commit({ 'a.yaml': 'a: 1\n' });
    const { source } = await newSource();
    expect(await source.resolveRevision({ repo: repo.url, revision: 'main' })).toBe(first);

    // when
    server.resetRequests();
    const again = await source.resolveRevision({ repo: repo.url, revision: 'main' });
    const unchanged = server.requests(repo.name);
    const second = await repo.commit({ 'a.yaml': 'a: 2\n' });
    const moved = await source.resolveRevision({ repo: repo.url, revision: 'main' });
    await repo.setBranch('main', first);
    const back = await source.resolveRevision({ repo: repo.url, revision: 'main' });

    // then
    expect(again).toBe(first);
    expect(unchanged).toEqual({ infoRefs: 1, uploadPack: 0 });
    expect(moved).toBe(second);
    expect(back).toBe(first);
  });

  it('shares one ref listing per repository: concurrent callers wait for one request, a recent one serves callers that accept its age, a fresh call lists again', async () => {
    // given a source on a clock the test moves
    const repo = await newRepo();
    const first = await repo.commit({ 'a.yaml': 'a: 1\n' });
    let now = 1_000_000;
    const { source } = await newSource({ clock: { now: () => now } });
    server.resetRequests();

    // when 100 syncs of the repository resolve at once, then one ref listing serves them all
    const shas = await Promise.all(Array.from({ length: 100 }, () => source.resolveRevision({ repo: repo.url, revision: 'main', maxAgeMs: 15_000 })));
    expect(new Set(shas)).toEqual(new Set([first]));
    expect(server.requests(repo.name).infoRefs).toBe(1);

    // when the branch moves but the listing is younger than callers accept, then they get the listing's answer
    const second = await repo.commit({ 'a.yaml': 'a: 2\n' });
    now += 10_000;
    expect(await source.resolveRevision({ repo: repo.url, revision: 'main', maxAgeMs: 15_000 })).toBe(first);
    expect(server.requests(repo.name).infoRefs).toBe(1);

    // when a caller asks fresh (a webhook), or the listing has aged past what callers accept, then it lists again
    expect(await source.resolveRevision({ repo: repo.url, revision: 'main', maxAgeMs: 0 })).toBe(second);
    expect(server.requests(repo.name).infoRefs).toBe(2);
    now += 16_000;
    await source.resolveRevision({ repo: repo.url, revision: 'main', maxAgeMs: 15_000 });
    expect(server.requests(repo.name).infoRefs).toBe(3);
    // and no age accepted (the default) always lists
    await source.resolveRevision({ repo: repo.url, revision: 'main' });
    expect(server.requests(repo.name).infoRefs).toBe(4);
  });

  it('answers requests woken at T with a listing begun at or after T, shared; a listing begun before T is not fresh enough, even in flight', async () => {
    // given a source on a clock the test moves, and a listing made at T0
    const repo = await newRepo();
    const first = await repo.commit({ 'a.yaml': 'a: 1\n' });
    let now = 2_000_000;
    const { source } = await newSource({ clock: { now: () => now } });
    server.resetRequests();
    const before = source.resolveRevision({ repo: repo.url, revision: 'main', maxAgeMs: 15_000 });

    // when a push lands and its webhook wakes 50 syncs at T1 (while the older listing may still be in flight)
    const second = await repo.commit({ 'a.yaml': 'a: 2\n' });
    now += 1;
    const wokenAt = now;
    const woken = await Promise.all(
      Array.from({ length: 50 }, () => source.resolveRevision({ repo: repo.url, revision: 'main', maxAgeMs: 0, startedAfter: wokenAt })),
    );

    // then they all see the push, through one new listing (the listing begun before the push was in flight while
    // it landed: it may have seen it or not, depending on when the server answered it)
    expect([first, second]).toContain(await before);
    expect(new Set(woken)).toEqual(new Set([second]));
    expect(server.requests(repo.name).infoRefs).toBe(2);

    // and a sync woken by the same push that runs later shares that listing too
    now += 5_000;
    expect(await source.resolveRevision({ repo: repo.url, revision: 'main', maxAgeMs: 0, startedAfter: wokenAt })).toBe(second);
    expect(server.requests(repo.name).infoRefs).toBe(2);
    // while a later wake lists again
    expect(await source.resolveRevision({ repo: repo.url, revision: 'main', maxAgeMs: 0, startedAfter: now })).toBe(second);
    expect(server.requests(repo.name).infoRefs).toBe(3);
  });

  it.each([
    ['', 'InvalidRevision', /revision is empty/],
    ['  ', 'InvalidRevision', /revision is empty/],
    ['abc1234', 'InvalidRevision', /short commit SHA.*full 40-character/],
    ['no-such-branch', 'RevisionNotFound', /no branch or tag named "no-such-branch"/],
    ['0123456789012345678901234567890123456789', 'CommitNotFound', /commit 0123456789012345678901234567890123456789 does not exist/],
  ])('refuses revision %j with %s, naming repo and revision', async (revision, code, message) => {
    // given
    const repo = await newRepo();
    await repo.commit({ 'a.yaml': 'a' });
    const { source } = await newSource();

    // when
    const err = await failure(source.resolveRevision({ repo: repo.url, revision }));

    // then
    expect(err.code).toBe(code);
    expect(err.message).toMatch(message);
    expect(err.message).toContain(repo.url);
    expect(err.retryable).toBe(false);
  });
});

describe('fetchSnapshot and readPath', () => {
  it('reads a snapshot path once for a fleet: later reads of it come from memory, other paths still from the pack', async () => {
    // given a snapshot read once at apps/web
    const repo = await newRepo();
    const sha = await repo.commit({ 'apps/web/a.yaml': 'a\n', 'apps/db/b.yaml': 'b\n' });
    const { source } = await newSource();
    const snapshot = await source.fetchSnapshot({ repo: repo.url, sha });
    const first = await source.readPath(snapshot, 'apps/web');

    // when the pack goes away behind the source's back
    await rm(join(snapshot.dir, 'objects'), { recursive: true, force: true });

    // then the path read before answers 100 syncs from memory, each with a list of its own
    const again = await Promise.all(Array.from({ length: 100 }, () => source.readPath(snapshot, 'apps/web')));
    for (const files of again) expect(text(files)).toEqual({ 'apps/web/a.yaml': 'a\n' });
    expect(again[0]).not.toBe(first);
    // and a path never read needs the pack, and says the snapshot must be fetched again
    expect((await failure(source.readPath(snapshot, 'apps/db'))).code).toBe('SnapshotUnavailable');
  });

  it("reads a snapshot's commit: its message and who committed it", async () => {
    // given a commit with a two-line message
    const repo = await newRepo();
    const sha = await repo.commit({ 'a.yaml': 'a\n' }, { message: 'Raise the web replicas\n\nFor the sale.' });
    const { source } = await newSource();
    const snapshot = await source.fetchSnapshot({ repo: repo.url, sha });

    // when its commit is read
    const commit = await source.readCommit(snapshot);

    // then the message is the one written, with the committer's name, email and time
    expect(commit.message.trim()).toBe('Raise the web replicas\n\nFor the sale.');
    expect(commit.committer.name).not.toBe('');
    expect(commit.committer.email).toContain('@');
    expect(Date.parse(commit.committer.time)).toBeGreaterThan(Date.parse('2020-01-01'));
  });

  it('reads a directory, one file, and a pinned older commit that is no branch tip', async () => {
    // given
    const repo = await newRepo();
    const old = await repo.commit({ 'apps/web/deploy.yaml': 'v: old\n', 'apps/web/svc.yaml': 'svc\n', 'apps/db/x.yaml': 'db\n', 'README.md': 'hi' });
    const tip = await repo.commit({ 'apps/web/deploy.yaml': 'v: new\n', 'apps/web/svc.yaml': null, 'apps/web/nested/cm.yaml': 'cm\n' });
    const { source } = await newSource();

    // when
    const now = await source.fetchSnapshot({ repo: repo.url, sha: tip });
    const before = await source.fetchSnapshot({ repo: repo.url, sha: old });

    // then
    expect(text(await source.readPath(now, 'apps/web'))).toEqual({ 'apps/web/deploy.yaml': 'v: new\n', 'apps/web/nested/cm.yaml': 'cm\n' });
    expect(text(await source.readPath(before, 'apps/web/'))).toEqual({ 'apps/web/deploy.yaml': 'v: old\n', 'apps/web/svc.yaml': 'svc\n' });
    const single = await source.readPath(now, './apps/web/deploy.yaml');
    expect(single).toHaveLength(1);
    expect(single[0]?.path).toBe('apps/web/deploy.yaml');
    expect(single[0]?.content).toBeInstanceOf(Uint8Array);
    expect(Object.keys(text(await source.readPath(now, '')))).toEqual(['README.md', 'apps/db/x.yaml', 'apps/web/deploy.yaml', 'apps/web/nested/cm.yaml']);
    expect(before.sha).toBe(old);
  });

  it('reads binary and large-ish files byte for byte', async () => {
    // given
    const repo = await newRepo();
    const binary = new Uint8Array(300_000).map((_, i) => (i * 7919) % 256);
    const sha = await repo.commit({ 'bin/data.bin': binary, 'bin/empty': '' });
    const { source } = await newSource();

    // when
    const files = await source.readPath(await source.fetchSnapshot({ repo: repo.url, sha }), 'bin');

    // then
    expect(files.map((f) => f.path)).toEqual(['bin/data.bin', 'bin/empty']);
    expect(Buffer.from(files[0]?.content ?? []).equals(Buffer.from(binary))).toBe(true);
    expect(files[1]?.content.length).toBe(0);
  });

  it('reads a pack over INLINE_INDEX_BYTES (indexed in a worker) and a small one (indexed here) alike', async () => {
    // given: a commit whose pack cannot be smaller than its incompressible file, and one of a few bytes
    const noise = randomBytes(INLINE_INDEX_BYTES + 256 * 1024);
    const largeRepo = await newRepo();
    const large = await largeRepo.commit({ 'big/noise.bin': noise });
    const smallRepo = await newRepo();
    const small = await smallRepo.commit({ 'small/a.yaml': 'a: 1\n' });
    const { source } = await newSource();

    // when
    const big = await source.readPath(await source.fetchSnapshot({ repo: largeRepo.url, sha: large }), 'big');
    const little = await source.readPath(await source.fetchSnapshot({ repo: smallRepo.url, sha: small }), 'small');

    // then
    expect(big.map((f) => f.path)).toEqual(['big/noise.bin']);
    expect(Buffer.from(big[0]?.content ?? []).equals(noise)).toBe(true);
    expect(text(little)).toEqual({ 'small/a.yaml': 'a: 1\n' });
  });

  it('follows symlinks inside the repository and refuses those that leave it, without quoting contents', async () => {
    // given
    const repo = await newRepo();
    const sha = await repo.commit({
      'shared/base.yaml': 'base: SECRET-CONTENT\n',
      'apps/web/base.yaml': { symlink: '../../shared/base.yaml' },
      'apps/dirlink': { symlink: '../shared' },
      'evil/passwd': { symlink: '/etc/passwd' },
      'evil2/up': { symlink: '../..' },
      'evil3/up': { symlink: '../../../etc/passwd' },
    });
    const { source } = await newSource();
    const snapshot = await source.fetchSnapshot({ repo: repo.url, sha });

    // when / then
    expect(text(await source.readPath(snapshot, 'apps/web'))).toEqual({ 'apps/web/base.yaml': 'base: SECRET-CONTENT\n' });
    expect(text(await source.readPath(snapshot, 'apps/dirlink/base.yaml'))).toEqual({ 'apps/dirlink/base.yaml': 'base: SECRET-CONTENT\n' });
    for (const path of ['evil', 'evil/passwd', 'evil2', 'evil3/up', 'evil2/up/etc/passwd']) {
      const err = await failure(source.readPath(snapshot, path));
      expect(err.code, path).toBe('UnsafePath');
      expect(err.message).toMatch(/outside the repository/);
      expect(err.message).not.toContain('root:');
    }
    const dirErr = await failure(source.readPath(snapshot, 'apps'));
    expect(dirErr.code).toBe('UnsupportedEntry');
    expect(dirErr.message).not.toContain('SECRET-CONTENT');
  });

  it.each([['..'], ['.git'], ['a\\b'], ['.GIT']])('refuses a tree entry named %j', async (name) => {
    // given
    const repo = await newRepo();
    const sha = await repo.commitRawTree([
      { name, content: 'hostile' },
      { name: 'ok.yaml', content: 'ok' },
    ]);
    const { source } = await newSource();
    const snapshot = await source.fetchSnapshot({ repo: repo.url, sha });

    // when
    const err = await failure(source.readPath(snapshot, ''));

    // then
    expect(err.code).toBe('UnsafePath');
    expect(err.message).toContain(JSON.stringify(name));
    expect(err.message).not.toContain('hostile');
  });

  it.each([['../x'], ['/etc/passwd'], ['apps/%2e%2e/%2e%2e/etc'], ['apps\\..\\x'], ['.git/config']])('refuses spec.path %j', async (path) => {
    // given
    const repo = await newRepo();
    const sha = await repo.commit({ 'apps/a.yaml': 'a' });
    const { source } = await newSource();
    const snapshot = await source.fetchSnapshot({ repo: repo.url, sha });

    // when
    const err = await failure(source.readPath(snapshot, path));

    // then
    expect(err.code).toBe('UnsafePath');
  });

  it('says which path is missing', async () => {
    // given
    const repo = await newRepo();
    const sha = await repo.commit({ 'apps/a.yaml': 'a' });
    const { source } = await newSource();
    const snapshot = await source.fetchSnapshot({ repo: repo.url, sha });

    // when
    const errs = await Promise.all(['apps/nope', 'apps/a.yaml/deeper', 'nope'].map((p) => failure(source.readPath(snapshot, p))));

    // then
    expect(errs.map((e) => e.code)).toEqual(['PathNotFound', 'PathNotFound', 'PathNotFound']);
    expect(errs[0]?.message).toMatch(/path "apps\/nope" does not exist/);
    expect(errs[0]?.message).toContain(sha);
  });

  it('enforces the file-count, single-file-size and total-size limits without quoting contents', async () => {
    // given
    const repo = await newRepo();
    const files: Record<string, string> = { 'big/large.yaml': 'SECRET'.repeat(2000) };
    for (let i = 0; i < 30; i++) files[`many/f${i}.yaml`] = `n: ${i}\n`;
    const sha = await repo.commit(files);
    const { cacheDir } = await newSource();
    const limited = async (limits: Partial<GitSourceOptions['limits']>) => {
      const { source } = await newSource({ cacheDir, limits });
      return { source, snapshot: await source.fetchSnapshot({ repo: repo.url, sha }) };
    };
    const few = await limited({ maxFiles: 20 });
    const small = await limited({ maxFileBytes: 10_000 });
    const little = await limited({ maxTotalBytes: 100 });

    // when
    const tooMany = await failure(few.source.readPath(few.snapshot, 'many'));
    const tooLarge = await failure(small.source.readPath(small.snapshot, 'big'));
    const fits = await little.source.readPath(little.snapshot, 'many/f1.yaml');
    const tooMuch = await failure(little.source.readPath(little.snapshot, 'many'));

    // then
    expect(tooMany.message).toMatch(/more than 20 files/);
    expect(tooLarge.message).toMatch(/big\/large.yaml is 12000 bytes, over the limit of 10000/);
    expect(tooMuch.message).toMatch(/more than 100 bytes/);
    expect(text(fits)).toEqual({ 'many/f1.yaml': 'n: 1\n' });
    for (const e of [tooMany, tooLarge, tooMuch]) {
      expect(e.code).toBe('LimitExceeded');
      expect(e.message).not.toContain('SECRET');
    }
  });

  it('refuses a SHA that is not a full 40-hex id', async () => {
    // given
    const { source } = await newSource();
    const repo = await newRepo();

    // when
    const err = await failure(source.fetchSnapshot({ repo: repo.url, sha: 'abc123' }));

    // then
    expect(err.code).toBe('InvalidRevision');
    expect(server.requests(repo.name)).toEqual({ infoRefs: 0, uploadPack: 0 });
  });
});

describe('the snapshot cache', () => {
  it('serves 100 concurrent callers of one new SHA with exactly one fetch', async () => {
    // given
    const repo = await newRepo();
    const sha = await repo.commit({ 'a.yaml': 'a' });
    const { source } = await newSource();

    // when
    const snapshots = await Promise.all(Array.from({ length: 100 }, () => source.fetchSnapshot({ repo: repo.url, sha })));

    // then
    expect(server.requests(repo.name).uploadPack).toBe(1);
    expect(new Set(snapshots.map((s) => s.dir)).size).toBe(1);
  });

  it('fetches a commit its listing just resolved with one request (the listing advertised the capabilities); a fetch the server refuses so is done again the usual way', async () => {
    // given a source that listed the repository (a push announced its new commit)
    const repo = await newRepo();
    const sha = await repo.commit({ 'a.yaml': 'a: 1\n' });
    const { source } = await newSource({ retry: { attempts: 1 } });
    server.resetRequests();
    const resolved = await source.resolveRevision({ repo: repo.url, revision: 'main', maxAgeMs: 0 });

    // when it fetches what it resolved
    const snapshot = await source.fetchSnapshot({ repo: repo.url, sha: resolved });

    // then the fetch is one POST: no second advertisement
    expect(resolved).toBe(sha);
    expect(text(await source.readPath(snapshot, ''))).toEqual({ 'a.yaml': 'a: 1\n' });
    expect(server.requests(repo.name)).toEqual({ infoRefs: 1, uploadPack: 1 });

    // when the server refuses the next commit's request worded so (as one that wants its advertisement asked for first)
    const next = await repo.commit({ 'a.yaml': 'a: 2\n' });
    await source.resolveRevision({ repo: repo.url, revision: 'main', maxAgeMs: 0 });
    server.resetRequests();
    server.setBehavior({ kind: 'status', status: 400, only: 'git-upload-pack', repo: repo.name, times: 1 });
    const fetched = await source.fetchSnapshot({ repo: repo.url, sha: next }).finally(() => server.setBehavior(undefined));

    // then the same fetch asks for the advertisement and sends its request again, and succeeds
    expect(text(await source.readPath(fetched, ''))).toEqual({ 'a.yaml': 'a: 2\n' });
    expect(server.requests(repo.name)).toEqual({ infoRefs: 1, uploadPack: 2 });
  });

  it('a fetch worded from a listing that the server refuses twice fails as any fetch does', async () => {
    // given
    const repo = await newRepo();
    const sha = await repo.commit({ 'a.yaml': 'a: 1\n' });
    const { source } = await newSource({ retry: { attempts: 1 } });
    await source.resolveRevision({ repo: repo.url, revision: 'main', maxAgeMs: 0 });
    server.resetRequests();

    // when
    server.setBehavior({ kind: 'status', status: 500, only: 'git-upload-pack', repo: repo.name, times: 2 });
    const err = await failure(source.fetchSnapshot({ repo: repo.url, sha })).finally(() => server.setBehavior(undefined));

    // then: one try with the listing's capabilities, one the usual way, and the error of the last
    expect(err.code).toBe('ServerError');
    expect(server.requests(repo.name)).toEqual({ infoRefs: 1, uploadPack: 2 });
  });

  it('survives a restart, and never serves a half-written snapshot', async () => {
    // given
    const repo = await newRepo();
    const sha = await repo.commit({ 'a.yaml': 'a: 1\n' });
    const first = await newSource();
    await first.source.fetchSnapshot({ repo: repo.url, sha });
    // a crash mid-write leaves debris in tmp/, and a snapshot dir without its metadata
    await mkdir(join(first.cacheDir, 'tmp', 'fetch-crashed', 'objects'), { recursive: true });
    const other = await repo.commit({ 'b.yaml': 'b' });
    await mkdir(join(first.cacheDir, 'snapshots', `x-${other}`), { recursive: true });
    await writeFile(join(first.cacheDir, 'snapshots', `x-${other}`, 'junk'), 'partial');
    server.resetRequests();

    // when
    const restarted = await newSource({ cacheDir: first.cacheDir });
    const snapshot = await restarted.source.fetchSnapshot({ repo: repo.url, sha });
    const files = await restarted.source.readPath(snapshot, '');

    // then
    // no pack fetched again: one ref listing proves this (new) process's access before the cached commit is served
    expect(server.requests(repo.name)).toEqual({ infoRefs: 1, uploadPack: 0 });
    expect(text(files)).toEqual({ 'a.yaml': 'a: 1\n' });
    expect(await readdir(join(first.cacheDir, 'tmp'))).toEqual([]);
    expect((await readdir(join(first.cacheDir, 'snapshots'))).some((d) => d.startsWith('x-'))).toBe(false);
  });

  it('evicts the least recently used snapshot under the byte bound', async () => {
    // given: three commits of roughly equal size, a bound that holds two
    const repo = await newRepo();
    const noise = (n: number) => Array.from({ length: 4000 }, (_, i) => ((i * 2654435761 + n) >>> 0).toString(36)).join('\n');
    const a = await repo.commit({ 'f.txt': noise(1) });
    const b = await repo.commit({ 'f.txt': noise(2) });
    const c = await repo.commit({ 'f.txt': noise(3) });
    let now = 1_000_000;
    const probe = await newSource();
    const size = (await readdirSizes(probe.source, repo.url, a, probe.cacheDir)) * 2.5;
    const { source, cacheDir } = await newSource({ cacheMaxBytes: size, clock: { now: () => (now += 1000) } });

    // when
    const snapA = await source.fetchSnapshot({ repo: repo.url, sha: a });
    await source.fetchSnapshot({ repo: repo.url, sha: b });
    await source.readPath(snapA, ''); // a is now more recently used than b
    await source.fetchSnapshot({ repo: repo.url, sha: c });
    server.resetRequests();
    await source.fetchSnapshot({ repo: repo.url, sha: a });
    await source.fetchSnapshot({ repo: repo.url, sha: c });
    const afterKept = server.requests(repo.name).uploadPack;
    await source.fetchSnapshot({ repo: repo.url, sha: b });

    // then
    expect(afterKept).toBe(0);
    expect(server.requests(repo.name).uploadPack).toBe(1);
    expect((await readdir(join(cacheDir, 'snapshots'))).length).toBe(2);
  });
});

async function readdirSizes(
  source: { fetchSnapshot(r: { repo: string; sha: string }): Promise<Snapshot> },
  repo: string,
  sha: string,
  cacheDir: string,
): Promise<number> {
  await source.fetchSnapshot({ repo, sha });
  const { stat } = await import('node:fs/promises');
  let total = 0;
  for (const e of await readdir(join(cacheDir, 'snapshots'), { recursive: true, withFileTypes: true })) {
    if (e.isFile()) total += (await stat(join(e.parentPath, e.name))).size;
  }
  return total;
}

describe('repo URLs', () => {
  it.each([
    ['git://github.com/org/repo.git', /git protocol/],
    ['file:///etc', /file protocol/],
    ['ext::sh -c touch% /tmp/pwned', /ext:: transport/],
    ['not a url', /whitespace/],
  ])('refuses %s, saying what is supported', async (repo, message) => {
    // given
    const { source } = await newSource();

    // when
    const err = await failure(source.resolveRevision({ repo, revision: 'main' }));

    // then
    expect(err.code).toBe('InvalidRepoUrl');
    expect(err.message).toMatch(message);
    expect(err.message).toMatch(/supported are https:\/\/ and ssh:\/\/ URLs and the scp-like user@host:path/);
  });

  it.each(['ssh://git@github.com/org/repo.git', 'git@github.com:org/repo.git'])('asks for an SSH Secret for %s rather than trusting anything', async (repo) => {
    // given
    const { source } = await newSource();

    // when
    const without = await failure(source.resolveRevision({ repo, revision: 'main' }));
    const https = await failure(source.resolveRevision({ repo, revision: 'main', auth: { username: 'u', password: 'hunter2' } }));

    // then
    expect(without.code).toBe('InvalidAuth');
    expect(without.message).toMatch(/needs spec\.source\.git\.secretRef naming a Secret with identity \(a private key\) and known_hosts keys/);
    expect(https.code).toBe('InvalidAuth');
    expect(https.message).toMatch(/the Secret holds https credentials/);
    expect(https.message).not.toContain('hunter2');
  });

  it('parses a repo URL once per source: later requests for it are answered alike, and a URL refused once is refused every time', async () => {
    // given a repository behind basic auth, named with its credentials in the URL, and a bad URL
    const basic = await startGitServer({ auth: { username: 'deploy', password: 'hunter2-pass' } });
    try {
      const repo = await newRepo(basic);
      const sha = await repo.commit({ 'a.yaml': 'a' });
      const embedded = repo.url.replace('http://', 'http://deploy:hunter2-pass@');
      const { source } = await newSource();

      // when each is asked for again (a resync), through resolve and fetch alike
      const requests: { infoRefs: number; uploadPack: number }[] = [];
      for (let round = 0; round < 2; round++) {
        expect(await source.resolveRevision({ repo: embedded, revision: 'main', maxAgeMs: 0 })).toBe(sha);
        const snapshot = await source.fetchSnapshot({ repo: embedded, sha });
        expect(snapshot.repo).not.toContain('hunter2');
        expect(text(await source.readPath(snapshot, ''))).toEqual({ 'a.yaml': 'a' });
        const err = await failure(source.resolveRevision({ repo: 'file:///etc', revision: 'main' }));
        expect(err.code).toBe('InvalidRepoUrl');
        requests.push(basic.requests(repo.name));
      }

      // then the second round listed again with the embedded credentials, and read the commit it had fetched
      expect(requests[1]?.infoRefs).toBe((requests[0]?.infoRefs ?? 0) + 1);
      expect(requests[1]?.uploadPack).toBe(requests[0]?.uploadPack);
    } finally {
      await basic.close();
    }
  });

  it('refuses plain http unless told otherwise (tests only)', async () => {
    // given
    const repo = await newRepo();
    const source = createGitSource({ cacheDir: await mkdtemp(join(scratch, 'cache-')) });

    // when
    const err = await failure(source.resolveRevision({ repo: repo.url, revision: 'main' }));

    // then
    expect(err.code).toBe('InvalidRepoUrl');
    expect(server.requests(repo.name)).toEqual({ infoRefs: 0, uploadPack: 0 });
  });
});

describe('auth', () => {
  let basic: GitServer;
  let bearer: GitServer;
  beforeAll(async () => {
    basic = await startGitServer({ auth: { username: 'deploy', password: 'hunter2-pass' } });
    bearer = await startGitServer({ auth: { bearerToken: 'tok-abcdef-123' } });
  });
  afterAll(async () => {
    await basic.close();
    await bearer.close();
  });

  it('sends basic and bearer credentials, also basic ones embedded in the URL', async () => {
    // given
    const repoB = await newRepo(basic);
    const shaB = await repoB.commit({ 'a.yaml': 'a' });
    const repoT = await newRepo(bearer);
    const shaT = await repoT.commit({ 't.yaml': 't' });
    const { source } = await newSource();
    const embedded = repoB.url.replace('http://', 'http://deploy:hunter2-pass@');

    // when / then
    expect(await source.resolveRevision({ repo: repoB.url, revision: 'main', auth: { username: 'deploy', password: 'hunter2-pass' } })).toBe(shaB);
    expect(await source.resolveRevision({ repo: embedded, revision: 'main' })).toBe(shaB);
    const snapshot = await source.fetchSnapshot({ repo: repoT.url, sha: shaT, auth: { bearerToken: 'tok-abcdef-123' } });
    expect(text(await source.readPath(snapshot, ''))).toEqual({ 't.yaml': 't' });
    expect(snapshot.repo).not.toContain('hunter2');
  });

  it('fails with AuthFailed on 401, and no error carries the credentials', async () => {
    // given
    const repoB = await newRepo(basic);
    const shaB = await repoB.commit({ 'a.yaml': 'a' });
    const repoT = await newRepo(bearer);
    const { source } = await newSource();

    // when
    const errors = [
      await failure(source.resolveRevision({ repo: repoB.url, revision: 'main' })),
      await failure(source.resolveRevision({ repo: repoB.url, revision: 'main', auth: { username: 'deploy', password: 'wrong-pass-xyz' } })),
      await failure(source.fetchSnapshot({ repo: repoB.url.replace('http://', 'http://deploy:wrong-pass-xyz@'), sha: shaB })),
      await failure(source.resolveRevision({ repo: repoT.url, revision: 'main', auth: { bearerToken: 'tok-wrong-999' } })),
    ];

    // then
    for (const err of errors) {
      expect(err.code).toBe('AuthFailed');
      expect(err.message).toMatch(/HTTP 401/);
      for (const secret of ['wrong-pass-xyz', 'tok-wrong-999', Buffer.from('deploy:wrong-pass-xyz').toString('base64')]) {
        expect(err.message).not.toContain(secret);
        expect(JSON.stringify(err)).not.toContain(secret);
        expect(String(err.stack)).not.toContain(secret);
      }
    }
  });

  it('never hands a commit another access fetched to a request without working credentials of its own', async () => {
    // given a private repository's commit in the cache, fetched with the right credentials
    const repo = await newRepo(basic);
    const sha = await repo.commit({ 'secret.yaml': 's' });
    const { source } = await newSource();
    const good = { username: 'deploy', password: 'hunter2-pass' };
    await source.fetchSnapshot({ repo: repo.url, sha, auth: good });

    // when the same commit is asked for by SHA with no credentials, wrong ones, and (at once) beside a good fetch
    const anonymous = await failure(source.fetchSnapshot({ repo: repo.url, sha }));
    const wrong = await failure(source.fetchSnapshot({ repo: repo.url, sha, auth: { username: 'deploy', password: 'wrong-pass-xyz' } }));
    const fresh = await repo.commit({ 'secret.yaml': 't' });
    const [joined, owner] = await Promise.allSettled([
      source.fetchSnapshot({ repo: repo.url, sha: fresh }),
      source.fetchSnapshot({ repo: repo.url, sha: fresh, auth: good }),
    ]);
    // and a branch is resolved without credentials after the good access listed it
    await source.resolveRevision({ repo: repo.url, revision: 'main', auth: good });
    const listing = await failure(source.resolveRevision({ repo: repo.url, revision: 'main', maxAgeMs: 3_600_000 }));

    // then each fails as it would alone; the good access is served
    for (const err of [anonymous, wrong, listing]) expect(err.code).toBe('AuthFailed');
    expect(joined.status).toBe('rejected');
    expect(owner.status).toBe('fulfilled');
    expect(text(await source.readPath(await source.fetchSnapshot({ repo: repo.url, sha, auth: good }), ''))).toEqual({ 'secret.yaml': 's' });
  });

  it('does not send credentials to another host after a redirect', async () => {
    // given: the authenticated server redirects to another host holding a repo of the same name
    await using elsewhere = await startGitServer();
    const repo = await newRepo(basic);
    await repo.commit({ 'a.yaml': 'a' });
    const mirror = await elsewhere.createRepo(repo.name);
    const mirrorSha = await mirror.commit({ 'm.yaml': 'm' });
    basic.setBehavior({ kind: 'redirect', to: elsewhere.url.replace('127.0.0.1', 'localhost') });
    const { source } = await newSource();

    // when
    const sha = await source
      .resolveRevision({ repo: repo.url, revision: 'main', auth: { username: 'deploy', password: 'hunter2-pass' } })
      .finally(() => basic.setBehavior(undefined));

    // then
    expect(sha).toBe(mirrorSha);
    expect(basic.requestLog().some((r) => r.repo === repo.name && r.hasAuthorization)).toBe(true);
    expect(elsewhere.requestLog().length).toBeGreaterThan(0);
    expect(elsewhere.requestLog().every((r) => !r.hasAuthorization)).toBe(true);
  });
});

describe('a misbehaving or missing server', () => {
  it('reports an unreachable host as a transient error', async () => {
    // given
    const gone = await startGitServer();
    const url = `${gone.url}/r.git`;
    await gone.close();
    const { source } = await newSource();

    // when
    const err = await failure(source.resolveRevision({ repo: url, revision: 'main' }));

    // then
    expect(err.code).toBe('Unreachable');
    expect(err.retryable).toBe(true);
  });

  it('reports a missing repository and a 500', async () => {
    // given
    const repo = await newRepo();
    await repo.commit({ 'a.yaml': 'a' });
    const { source } = await newSource();

    // when
    const missing = await failure(source.resolveRevision({ repo: `${server.url}/nope.git`, revision: 'main' }));
    server.setBehavior({ kind: 'status', status: 500, repo: repo.name });
    const broken = await failure(source.resolveRevision({ repo: repo.url, revision: 'main' })).finally(() => server.setBehavior(undefined));

    // then
    expect(missing.code).toBe('RepoNotFound');
    expect(broken.code).toBe('ServerError');
    expect(broken.message).toMatch(/HTTP 500/);
    expect(broken.retryable).toBe(true);
  });

  it.each([
    [{ kind: 'hang' } as const, { idleTimeoutMs: 300 }, 'Timeout'],
    [{ kind: 'slow', chunkBytes: 16, intervalMs: 50 } as const, { timeoutMs: 500, idleTimeoutMs: 5_000 }, 'Timeout'],
    [{ kind: 'huge', bytes: 3_000_000 } as const, { maxResponseBytes: 1_000_000 }, 'LimitExceeded'],
    [{ kind: 'endless' } as const, { maxResponseBytes: 1_000_000 }, 'LimitExceeded'],
  ])('gives up on a server that misbehaves: %j', async (behavior, limits, code) => {
    // given
    const repo = await newRepo();
    const sha = await repo.commit({ 'a.yaml': 'a' });
    const { source } = await newSource({ limits });

    // when
    server.setBehavior({ ...behavior, repo: repo.name });
    const started = Date.now();
    const errs = await Promise.all([
      failure(source.resolveRevision({ repo: repo.url, revision: 'main' })),
      failure(source.fetchSnapshot({ repo: repo.url, sha })),
    ]).finally(() => server.setBehavior(undefined));

    // then
    expect(errs.map((e) => e.code)).toEqual([code, code]);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('gives up on a fetch whose pack is larger than the byte limit', async () => {
    // given
    const repo = await newRepo();
    const noise = Array.from({ length: 40_000 }, (_, i) => ((i * 2654435761) >>> 0).toString(36)).join('\n');
    const sha = await repo.commit({ 'big.txt': noise });
    const { source, cacheDir } = await newSource({ limits: { maxResponseBytes: 50_000 } });

    // when
    const err = await failure(source.fetchSnapshot({ repo: repo.url, sha }));

    // then
    expect(err.code).toBe('LimitExceeded');
    expect(await readdir(join(cacheDir, 'snapshots'))).toEqual([]);
    expect(await readdir(join(cacheDir, 'tmp'))).toEqual([]);
  });
});

describe('authFromSecretData', () => {
  const b64 = (s: string) => Buffer.from(s).toString('base64');

  it('reads bearerToken, or username and password, from base64 Secret data', () => {
    expect(authFromSecretData({ bearerToken: b64('tok') })).toEqual({ bearerToken: 'tok' });
    expect(authFromSecretData({ username: b64('u'), password: b64('p') })).toEqual({ username: 'u', password: 'p' });
  });

  it('reads identity and known_hosts (with password as the passphrase, as in Flux) for SSH', () => {
    expect(authFromSecretData({ identity: b64('KEY'), known_hosts: b64('h ssh-ed25519 AAAA') }, 'Secret ns/git-auth')).toEqual({
      identity: 'KEY',
      knownHosts: 'h ssh-ed25519 AAAA',
      from: 'Secret ns/git-auth',
    });
    expect(authFromSecretData({ identity: b64('KEY'), known_hosts: b64('h'), password: b64('pw') })).toEqual({
      identity: 'KEY',
      knownHosts: 'h',
      passphrase: 'pw',
    });
  });

  it('refuses an identity without known_hosts: no trust on first use', () => {
    const err = (() => {
      try {
        return authFromSecretData({ identity: b64('-----BEGIN OPENSSH PRIVATE KEY-----\nsecretmaterial\n') });
      } catch (e) {
        return e;
      }
    })();
    expect((err as GitSourceErrorType).code).toBe('InvalidAuth');
    expect((err as GitSourceErrorType).message).toMatch(/no known_hosts key.*never trusted on first use/);
    expect((err as GitSourceErrorType).message).not.toContain('secretmaterial');
  });

  it('refuses Secret data with neither, without echoing what it holds', () => {
    // when
    const err = (() => {
      try {
        return authFromSecretData({ password: b64('only-a-password') });
      } catch (e) {
        return e;
      }
    })();

    // then
    expect(err).toBeInstanceOf(GitSourceError);
    expect((err as GitSourceErrorType).code).toBe('InvalidAuth');
    expect((err as GitSourceErrorType).message).not.toContain('only-a-password');
  });
});

describe('a snapshot that is gone', () => {
  it('fails readPath with a retryable SnapshotUnavailable, and fetching again restores it', async () => {
    // given
    const repo = await newRepo();
    const sha = await repo.commit({ 'a.yaml': 'a' });
    const { source } = await newSource();
    const snapshot = await source.fetchSnapshot({ repo: repo.url, sha });
    await rm(snapshot.dir, { recursive: true, force: true });

    // when
    const err = await failure(source.readPath(snapshot, ''));

    // then
    expect(err.code).toBe('SnapshotUnavailable');
    expect(err.retryable).toBe(true);
    const restored = await source.fetchSnapshot({ repo: repo.url, sha });
    expect(text(await source.readPath(restored, ''))).toEqual({ 'a.yaml': 'a' });
    expect(server.requests(repo.name).uploadPack).toBe(2);
  });
});

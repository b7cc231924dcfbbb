// A pack that ends early (cleanly, at a pkt-line boundary) or is damaged must never enter
// the snapshot cache; the fetch fails retryable, and the next fetch from a healthy server succeeds. And a
// cached snapshot found inconsistent later is dropped, so retrying really fetches again.
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, truncate, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GitServer, TestRepo } from '@syncline/test-support';
import { startGitServer } from '@syncline/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGitSource } from './index.ts';
import { failure, text } from './test-support.ts';

type Behavior = NonNullable<Parameters<GitServer['setBehavior']>[0]>;

let server: GitServer;
let scratch: string;
let counter = 0;

beforeAll(async () => {
  server = await startGitServer();
  scratch = await mkdtemp(join(tmpdir(), 'source-git-integrity-'));
});
afterAll(async () => {
  await server.close();
  await rm(scratch, { recursive: true, force: true });
});

async function newSource() {
  const cacheDir = await mkdtemp(join(scratch, 'cache-'));
  return { cacheDir, source: createGitSource({ cacheDir, allowInsecureHttp: true, retry: { baseDelayMs: 5 } }) };
}

/** A commit big enough that its pack spans some twenty side-band packets (git sends ~8 KiB at a time). */
async function repoWithPack(): Promise<{ repo: TestRepo; sha: string; files: Record<string, string> }> {
  const repo = await server.createRepo(`integrity${++counter}`);
  const files: Record<string, string> = {};
  for (let i = 0; i < 60; i++) files[`apps/team-${i % 5}/f${i}.yaml`] = `data: ${randomBytes(3000).toString('base64')}\n`;
  files['README.md'] = 'hello\n';
  return { repo, sha: await repo.commit(files), files };
}

function git(repo: TestRepo, args: string[], input?: string): Buffer {
  const r = spawnSync('git', args, { cwd: repo.dir, input, env: { PATH: process.env['PATH'], GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' } });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.toString()}`);
  return r.stdout;
}

/** A pack whose trailer is the SHA-1 of its new contents: only the deeper checks can find what is wrong. */
function resealed(body: Buffer): Buffer {
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

function flipByte(pack: Buffer, at: number): Buffer {
  const out = Buffer.from(pack);
  out[at] = (out[at] ?? 0) ^ 0xff;
  return out;
}

function withCount(pack: Buffer, delta: number): Buffer {
  const body = Buffer.from(pack.subarray(0, -20));
  body.writeUInt32BE(body.readUInt32BE(8) + delta, 8);
  return resealed(body);
}

/** A valid, sealed pack of the commit with one blob left out (what a buggy server might send). */
function packWithoutOneBlob(repo: TestRepo, sha: string): Buffer {
  const objects = git(repo, ['rev-list', '--objects', '--no-walk', sha]).toString('utf8').trim().split('\n');
  const blobs = objects.filter((line) => line.includes('f7.yaml'));
  expect(blobs).toHaveLength(1);
  const kept = objects.filter((line) => !line.includes('f7.yaml')).map((line) => line.split(' ')[0]);
  return git(repo, ['pack-objects', '--stdout', '-q'], kept.join('\n') + '\n');
}

const variants: Array<[string, (repo: TestRepo, sha: string) => Behavior]> = [
  ['cut after the first pack packet', () => ({ kind: 'truncate', packets: 4 })],
  ['cut in the middle', () => ({ kind: 'truncate', fraction: 0.5 })],
  ['cut just before the trailer', () => ({ kind: 'truncate', packets: -2 })],
  ['cut before the closing flush (pack whole, stream not)', () => ({ kind: 'truncate', packets: -1 })],
  ['an early 0000 flush in the middle', () => ({ kind: 'truncate', fraction: 0.5, flush: true })],
  ['an early 0000 flush after the first pack packet', () => ({ kind: 'truncate', packets: 4, flush: true })],
  ['the trailer missing', () => ({ kind: 'pack', transform: (pack) => pack.subarray(0, -20) })],
  ['a trailer byte corrupted', () => ({ kind: 'pack', transform: (pack) => Buffer.concat([pack.subarray(0, -1), Buffer.from([(pack.at(-1) ?? 0) ^ 0x5a])]) })],
  ['a byte inside an object corrupted', () => ({ kind: 'pack', transform: (pack) => flipByte(pack, Math.floor(pack.length / 2)) })],
  [
    'a damaged object under a valid trailer',
    () => ({ kind: 'pack', transform: (pack) => resealed(flipByte(pack.subarray(0, -20), Math.floor(pack.length / 2))) }),
  ],
  ['one object fewer than the header says', () => ({ kind: 'pack', transform: (pack) => withCount(pack, 1) })],
  ['one object more than the header says', () => ({ kind: 'pack', transform: (pack) => withCount(pack, -1) })],
  ['the last object cut off under a valid trailer', () => ({ kind: 'pack', transform: (pack) => resealed(pack.subarray(0, -40)) })],
  ['a valid pack missing one blob', (repo, sha) => ({ kind: 'pack', transform: () => packWithoutOneBlob(repo, sha) })],
  ['an empty pack', () => ({ kind: 'pack', transform: () => resealed(Buffer.from('PACK\0\0\0\x02\0\0\0\0', 'latin1')) })],
  ['no pack at all', () => ({ kind: 'pack', transform: () => Buffer.alloc(0) })],
];

describe('a fetched pack is verified before it is cached', () => {
  it.each(variants)(
    '%s: fails retryable, caches nothing, and a later fetch succeeds',
    async (_name, behavior) => {
      // given
      const { repo, sha, files } = await repoWithPack();
      const { source, cacheDir } = await newSource();
      server.setBehavior({ ...behavior(repo, sha), repo: repo.name, only: 'git-upload-pack' });

      // when
      const err = await failure(source.fetchSnapshot({ repo: repo.url, sha })).finally(() => server.setBehavior(undefined));

      // then
      expect(err.retryable).toBe(true);
      expect(err.code).toBe('ServerError');
      expect(err.message).toContain(repo.url);
      expect(await readdir(join(cacheDir, 'snapshots'))).toEqual([]);
      expect(await readdir(join(cacheDir, 'tmp'))).toEqual([]);
      // the fault is deterministic, so it was not retried away: one POST, and the healthy one next
      expect(server.requests(repo.name).uploadPack).toBe(1);
      const snapshot = await source.fetchSnapshot({ repo: repo.url, sha });
      expect(text(await source.readPath(snapshot, ''))).toEqual(files);
      expect(server.requests(repo.name).uploadPack).toBe(2);
    },
    30_000,
  );

  it('accepts a pack whose objects are deltas of one another (bases resolved, ids computed)', async () => {
    // given: near-identical files, which git packs as deltas against each other
    const repo = await server.createRepo(`integrity${++counter}`);
    const base = Array.from({ length: 400 }, (_, i) => `  key${i}: value-${i}`).join('\n');
    const files: Record<string, string> = {};
    for (let i = 0; i < 30; i++) files[`cm/c${i}.yaml`] = `${base}\n  variant: ${i}\n`;
    const sha = await repo.commit(files);
    const { source } = await newSource();

    // when
    const snapshot = await source.fetchSnapshot({ repo: repo.url, sha });

    // then
    const verbose = git(repo, ['verify-pack', '-v', ...(await packOf(snapshot.dir))]).toString('utf8');
    expect(verbose).toMatch(/ blob +\d+ \d+ \d+ \d+ [0-9a-f]{40}/); // at least one blob stored as a delta
    expect(text(await source.readPath(snapshot, 'cm'))).toEqual(files);
  });

  it('writes an index git itself accepts', async () => {
    // given
    const { repo, sha } = await repoWithPack();
    const { source } = await newSource();

    // when
    const snapshot = await source.fetchSnapshot({ repo: repo.url, sha });

    // then: git verify-pack checks the pack checksum, the index checksum and every object against the index
    git(repo, ['verify-pack', ...(await packOf(snapshot.dir))]);
  });
});

async function packOf(dir: string): Promise<string[]> {
  const packDir = join(dir, 'objects', 'pack');
  const idx = (await readdir(packDir)).filter((n) => n.endsWith('.idx'));
  expect(idx).toHaveLength(1);
  return [join(packDir, idx[0] ?? '')];
}

describe('a cached snapshot found inconsistent later', () => {
  it('is dropped on the failing read (retryable), and the next fetch really fetches again', async () => {
    // given: a snapshot damaged on disk after it was cached
    const { repo, sha, files } = await repoWithPack();
    const { source, cacheDir } = await newSource();
    const snapshot = await source.fetchSnapshot({ repo: repo.url, sha });
    const [pack] = (await readdir(join(snapshot.dir, 'objects', 'pack'))).filter((n) => n.endsWith('.pack'));
    const packPath = join(snapshot.dir, 'objects', 'pack', pack ?? '');
    await truncate(packPath, Math.floor((await stat(packPath)).size / 2));

    // when
    const err = await failure(source.readPath(snapshot, ''));
    const hit = await source.fetchSnapshot({ repo: repo.url, sha });

    // then
    expect(err.code).toBe('SnapshotUnavailable');
    expect(err.retryable).toBe(true);
    expect(err.message).not.toContain('data: ');
    expect(server.requests(repo.name).uploadPack).toBe(2);
    expect(text(await source.readPath(hit, ''))).toEqual(files);
    expect((await readdir(join(cacheDir, 'snapshots'))).length).toBe(1);
  });

  it('drops a snapshot whose object is missing when a single file is read', async () => {
    // given: the index is gone, so no object can be found
    const { repo, sha } = await repoWithPack();
    const { source } = await newSource();
    const snapshot = await source.fetchSnapshot({ repo: repo.url, sha });
    const packDir = join(snapshot.dir, 'objects', 'pack');
    for (const name of await readdir(packDir)) if (name.endsWith('.idx')) await rm(join(packDir, name));

    // when
    const first = await failure(source.readPath(snapshot, 'README.md'));
    const second = await failure(source.readPath(snapshot, 'README.md'));

    // then
    expect(first.code).toBe('SnapshotUnavailable');
    expect(second.code).toBe('SnapshotUnavailable');
    expect(second.message).toMatch(/no longer cached; fetch it again/);
    const again = await source.fetchSnapshot({ repo: repo.url, sha });
    expect(text(await source.readPath(again, 'README.md'))).toEqual({ 'README.md': 'hello\n' });
  });
});

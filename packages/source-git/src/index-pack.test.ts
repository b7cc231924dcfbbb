// The indexer on its own, against packs git writes: the index must be the one `git index-pack` writes, and
// any pack cut short or damaged (at object boundaries too, where a lenient reader would see a smaller
// valid-looking pack) must be refused.
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indexPack } from './index-pack.ts';
import { PackError } from './pack.ts';

let dir: string;
let repo: string;
const env = { PATH: process.env['PATH'], GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
const opts = { maxObjectBytes: 64 * 1024 * 1024, onTooLarge: (size: number) => new Error(`too large: ${size}`) };

function git(args: string[], input?: string | Buffer): Buffer {
  const r = spawnSync('git', args, { cwd: repo, input, env, maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.toString()}`);
  return r.stdout;
}

let objects: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'index-pack-test-'));
  repo = join(dir, 'repo.git');
  spawnSync('git', ['init', '-q', '--bare', repo], { env });
  // Near-identical files (packed as deltas), random ones (not), an empty one, and one larger than zlib's chunk.
  const base = Array.from({ length: 300 }, (_, i) => `  key${i}: value-${i}`).join('\n');
  const blobs = [
    ...Array.from({ length: 20 }, (_, i) => `${base}\n  v: ${i}\n`),
    ...Array.from({ length: 20 }, () => randomBytes(700).toString('hex')),
    '',
    randomBytes(100_000).toString('base64'),
  ];
  const lines = blobs.map((content, i) => `100644 blob ${git(['hash-object', '-w', '--stdin'], content).toString().trim()}\tf${i}`);
  const tree = git(['mktree'], lines.join('\n') + '\n')
    .toString()
    .trim();
  objects = [tree, ...lines.map((l) => l.split(/\s+/)[2])].join('\n') + '\n';
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function packFile(name: string, pack: Buffer): Promise<string> {
  const path = join(dir, `${name}.pack`);
  await writeFile(path, pack);
  return path;
}

describe('indexPack', () => {
  it.each([
    ['offset deltas', ['--delta-base-offset']],
    ['ref deltas', []],
  ])('indexes a pack with %s exactly as git index-pack does', async (name, flags) => {
    // given
    const pack = git(['pack-objects', '--stdout', '-q', ...flags], objects);
    const path = await packFile(name.replace(' ', '-'), pack);

    // when
    const index = await indexPack(path, `${path}.idx`, opts);

    // then
    git(['index-pack', '-o', `${path}.git.idx`, path]);
    expect((await readFile(`${path}.idx`)).equals(await readFile(`${path}.git.idx`))).toBe(true);
    expect(index.count).toBe(objects.trim().split('\n').length);
    expect(index.checksum.equals(pack.subarray(-20))).toBe(true);
  });

  const reseal = (body: Buffer): Buffer => Buffer.concat([body, createHash('sha1').update(body).digest()]);

  it.each<[string, (pack: Buffer, ends: number[]) => Buffer]>([
    ['cut after the header', (p) => p.subarray(0, 12)],
    ['cut in the middle', (p) => p.subarray(0, p.length >> 1)],
    ['cut inside the trailer', (p) => p.subarray(0, -7)],
    ['without its trailer', (p) => p.subarray(0, -20)],
    ['with a trailer byte flipped', (p) => Buffer.concat([p.subarray(0, -1), Buffer.from([(p.at(-1) ?? 0) ^ 1])])],
    ['cut at an object boundary and resealed', (p, ends) => reseal(p.subarray(0, ends[ends.length >> 1]))],
    ['cut at the last object boundary and resealed', (p, ends) => reseal(p.subarray(0, ends.at(-2)))],
    ['announcing one object more, resealed', (p) => reseal(withCount(p, 1))],
    ['announcing one object fewer, resealed', (p) => reseal(withCount(p, -1))],
    ['announcing four billion objects, resealed', (p) => reseal(withCount(p, 0xffffffff - p.readUInt32BE(8)))],
    ['with junk between the last object and the trailer, resealed', (p) => reseal(Buffer.concat([p.subarray(0, -20), Buffer.from('junk')]))],
    ['with a damaged object, resealed', (p, ends) => reseal(Buffer.from(p.subarray(0, -20).map((b, i) => (i === (ends[3] ?? 0) - 3 ? b ^ 0xff : b))))],
  ])('refuses a pack %s', async (name, damage) => {
    // given
    const pack = git(['pack-objects', '--stdout', '-q', '--delta-base-offset'], objects);
    const ends = objectEnds(pack);
    const path = await packFile(name.replace(/\W+/g, '-'), damage(pack, ends));

    // when
    const err = await indexPack(path, `${path}.idx`, opts).then(
      () => undefined,
      (e: unknown) => e,
    );

    // then
    expect(err).toBeInstanceOf(PackError);
  });
});

function withCount(pack: Buffer, delta: number): Buffer {
  const body = Buffer.from(pack.subarray(0, -20));
  body.writeUInt32BE((body.readUInt32BE(8) + delta) >>> 0, 8);
  return body;
}

/** Where each object of a pack ends, from git's own verify-pack. */
function objectEnds(pack: Buffer): number[] {
  const path = join(dir, 'probe.pack');
  writeFileSync(path, pack);
  git(['index-pack', '-o', join(dir, 'probe.idx'), path]);
  const rows = git(['verify-pack', '-v', join(dir, 'probe.idx')])
    .toString()
    .split('\n')
    .map((line) => /^[0-9a-f]{40} \w+ +\d+ (\d+) (\d+)/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[2]) + Number(m[1]));
  return rows.sort((a, b) => a - b);
}

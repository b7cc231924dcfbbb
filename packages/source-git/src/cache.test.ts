import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SnapshotCache, snapshotFormat } from './cache.ts';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function cacheWithEntry(clock: { now: number }): Promise<{ cache: SnapshotCache; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'syncline-cache-'));
  dirs.push(dir);
  const cache = new SnapshotCache({ dir, maxBytes: 1 << 30, now: () => clock.now });
  await cache.load();
  const scratch = await cache.scratch();
  await cache.commit('k', scratch, { repo: 'r', sha: 's', bytes: 1, format: snapshotFormat });
  return { cache, dir };
}

const metaTime = async (dir: string): Promise<number> => (await stat(join(dir, 'snapshots', 'k', 'snapshot.json'))).mtimeMs;

describe('SnapshotCache.touch', () => {
  it('keeps the use time in memory on every touch and writes it to disk at most once a minute', async () => {
    const clock = { now: Date.UTC(2026, 0, 1) };
    const { cache, dir } = await cacheWithEntry(clock);
    expect(await metaTime(dir)).toBe(clock.now);

    clock.now += 30_000;
    expect((await cache.touch('k'))?.lastUsed).toBe(clock.now);
    expect(await metaTime(dir)).toBe(clock.now - 30_000); // not written yet

    clock.now += 30_000;
    await cache.touch('k');
    expect(await metaTime(dir)).toBe(clock.now); // a minute since the last write

    // and a restart finds that use time
    const restarted = new SnapshotCache({ dir, maxBytes: 1 << 30, now: () => clock.now });
    await restarted.load();
    expect((await restarted.touch('k'))?.lastUsed).toBe(clock.now);
  });

  it('forgets an entry removed behind its back when it next writes the use time', async () => {
    const clock = { now: Date.UTC(2026, 0, 1) };
    const { cache, dir } = await cacheWithEntry(clock);
    await rm(join(dir, 'snapshots', 'k'), { recursive: true });
    clock.now += 60_000;
    expect(await cache.touch('k')).toBeUndefined();
    expect(cache.has('k')).toBe(false);
  });
});

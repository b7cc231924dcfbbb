// The on-disk snapshot cache: one directory per (repo, commit), written aside in tmp/ and renamed into
// snapshots/ only when complete (a half-written snapshot is never served), found again after a restart,
// bounded in bytes with least-recently-used eviction. Directories being read are pinned and not evicted.
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface CacheEntry {
  key: string;
  dir: string;
  bytes: number;
  lastUsed: number;
  /** The use last written to disk (the metadata's mtime). */
  persisted: number;
  pins: number;
}

/**
 * How stale the on-disk use time may get: every reconcile of every sync touches its snapshot, and 1,000 syncs
 * writing an mtime each took half a second of the operator's main thread in a fan-out (bench operator). LRU
 * order after a restart only needs to be about right.
 */
const PERSIST_USE_MS = 60_000;

export interface SnapshotMeta {
  repo: string;
  sha: string;
  bytes: number;
  /** `snapshotFormat` when written; older snapshots were cached without verifying the pack and are dropped. */
  format?: number;
}

/** 2: the pack was verified (trailer, object count, reachability) before it was cached (format 1 entries may hold a pack cut short, so they are fetched again). */
export const snapshotFormat = 2;

const metaFile = 'snapshot.json';

export class SnapshotCache {
  readonly #root: string;
  readonly #maxBytes: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, CacheEntry>();
  #loaded: Promise<void> | undefined;

  constructor(opts: { dir: string; maxBytes: number; now: () => number }) {
    this.#root = opts.dir;
    this.#maxBytes = opts.maxBytes;
    this.#now = opts.now;
  }

  get #snapshots(): string {
    return join(this.#root, 'snapshots');
  }

  get #tmp(): string {
    return join(this.#root, 'tmp');
  }

  /** Scans the cache once: complete snapshots come back, leftovers of an interrupted write are removed. */
  load(): Promise<void> {
    this.#loaded ??= (async () => {
      await rm(this.#tmp, { recursive: true, force: true });
      await mkdir(this.#tmp, { recursive: true });
      await mkdir(this.#snapshots, { recursive: true });
      for (const key of await readdir(this.#snapshots)) {
        const dir = join(this.#snapshots, key);
        try {
          const meta = JSON.parse(await readFile(join(dir, metaFile), 'utf8')) as SnapshotMeta;
          if (meta.format !== snapshotFormat) throw new Error('snapshot cached before packs were verified');
          const { mtimeMs } = await stat(join(dir, metaFile));
          this.#entries.set(key, { key, dir, bytes: meta.bytes, lastUsed: mtimeMs, persisted: mtimeMs, pins: 0 });
        } catch {
          await rm(dir, { recursive: true, force: true });
        }
      }
    })();
    return this.#loaded;
  }

  get totalBytes(): number {
    let total = 0;
    for (const e of this.#entries.values()) total += e.bytes;
    return total;
  }

  has(key: string): boolean {
    return this.#entries.has(key);
  }

  /**
   * Marks an entry used now (persisted as the mtime of its metadata, at most every PERSIST_USE_MS, so LRU order
   * survives a restart). A snapshot removed behind our back is noticed here or by the read that misses it.
   */
  async touch(key: string): Promise<CacheEntry | undefined> {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    entry.lastUsed = this.#now();
    if (entry.lastUsed - entry.persisted < PERSIST_USE_MS) return entry;
    const t = new Date(entry.lastUsed);
    try {
      await utimes(join(entry.dir, metaFile), t, t);
      entry.persisted = entry.lastUsed;
    } catch {
      // Removed behind our back (someone cleaned the cache dir): forget it, so the next fetch restores it.
      if (entry.pins === 0) this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }

  pin(key: string): CacheEntry | undefined {
    const entry = this.#entries.get(key);
    if (entry !== undefined) entry.pins++;
    return entry;
  }

  unpin(key: string): void {
    const entry = this.#entries.get(key);
    if (entry !== undefined && entry.pins > 0) entry.pins--;
  }

  /** A fresh directory to write a snapshot into before `commit`. */
  async scratch(): Promise<string> {
    const dir = join(this.#tmp, `fetch-${randomBytes(8).toString('hex')}`);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  async discard(scratchDir: string): Promise<void> {
    await rm(scratchDir, { recursive: true, force: true });
  }

  /** Moves a complete snapshot into place (atomic rename) and evicts down to the byte bound. */
  async commit(key: string, scratchDir: string, meta: SnapshotMeta): Promise<CacheEntry> {
    const now = this.#now();
    await writeFile(join(scratchDir, metaFile), JSON.stringify(meta));
    await utimes(join(scratchDir, metaFile), new Date(now), new Date(now));
    const dir = join(this.#snapshots, key);
    try {
      await rename(scratchDir, dir);
    } catch (err) {
      // Another process sharing the cache dir finished the same snapshot first: use theirs.
      await this.discard(scratchDir);
      if (!isExists(err)) throw err;
    }
    const entry: CacheEntry = { key, dir, bytes: meta.bytes, lastUsed: now, persisted: now, pins: 0 };
    this.#entries.set(key, entry);
    await this.#evict(key);
    return entry;
  }

  /** Drops an entry found inconsistent, pinned or not: readers holding its files open keep them. */
  async remove(key: string): Promise<void> {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    await this.#discardDir(entry.dir);
  }

  /** Out of snapshots/ first (atomic), then delete at leisure: a reader never sees half a snapshot. */
  async #discardDir(dir: string): Promise<void> {
    const doomed = join(this.#tmp, `evicted-${randomBytes(8).toString('hex')}`);
    try {
      await rename(dir, doomed);
      await rm(doomed, { recursive: true, force: true });
    } catch {
      // already gone
    }
  }

  async #evict(keep: string): Promise<void> {
    let total = this.totalBytes;
    if (total <= this.#maxBytes) return;
    const candidates = [...this.#entries.values()].filter((e) => e.key !== keep && e.pins === 0).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const victim of candidates) {
      if (total <= this.#maxBytes) break;
      this.#entries.delete(victim.key);
      total -= victim.bytes;
      await this.#discardDir(victim.dir);
    }
  }
}

function isExists(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === 'ENOTEMPTY' || code === 'EEXIST';
}

/** Bytes of all files below `dir`. */
export async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

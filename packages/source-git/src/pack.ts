// Reads objects out of a packfile + its v2 index with Node's native zlib. isomorphic-git's own reader inflates
// with pure-JS pako, and reading 5,000 blobs that way costs more than the fetch; a pack from a depth-1 fetch is self-contained (no thin-pack bases), so this small reader suffices.
// The entry decoding is shared with the indexer (index-pack.ts), which walks a freshly fetched pack.
import type { FileHandle } from 'node:fs/promises';
import { readSync } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { inflateSync } from 'node:zlib';

export const ObjectType = { commit: 1, tree: 2, blob: 3, tag: 4 } as const;
export type ObjectType = (typeof ObjectType)[keyof typeof ObjectType];

export const OFS_DELTA = 6;
export const REF_DELTA = 7;

export const objectTypeNames: Readonly<Record<ObjectType, string>> = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag' };

export interface PackObject {
  type: ObjectType;
  data: Buffer;
}

export interface PackReadOptions {
  /** Refuse (before inflating where the size is known up front) objects larger than this. */
  maxBytes: number;
  onTooLarge: (size: number) => Error;
}

/** Damage in a pack or its index: the bytes are not what Git wrote. Callers decide whom to blame. */
export class PackError extends Error {
  override readonly name = 'PackError';
}

/** The header of one packed object: `type`, inflated `size`, and where its zlib data starts. */
export interface EntryHeader {
  type: number;
  size: number;
  /** OFS_DELTA: the base's pack offset. */
  baseOffset?: number;
  /** REF_DELTA: the base's object id. */
  baseOid?: Buffer;
  dataStart: number;
}

/** Parses the entry header at `offset`; `raw` holds the pack bytes from `offset` on (at least the header). */
export function parseEntryHeader(raw: Buffer, offset: number): EntryHeader {
  let pos = 0;
  const next = (): number => {
    if (pos >= raw.length) throw new PackError(`object header at ${offset} runs past the end of the pack`);
    return raw[pos++] ?? 0;
  };
  let byte = next();
  const type = (byte >> 4) & 7;
  let size = byte & 15;
  let shift = 4;
  while (byte & 0x80) {
    byte = next();
    size += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (shift > 53) throw new PackError(`object size at ${offset} is out of range`);
  }
  if (type === OFS_DELTA) {
    byte = next();
    let rel = byte & 0x7f;
    while (byte & 0x80) {
      byte = next();
      rel = (rel + 1) * 128 + (byte & 0x7f);
    }
    if (rel <= 0 || rel > offset - 12) throw new PackError(`delta at ${offset} names a base outside the pack`);
    return { type, size, baseOffset: offset - rel, dataStart: offset + pos };
  }
  if (type === REF_DELTA) {
    if (pos + 20 > raw.length) throw new PackError(`object header at ${offset} runs past the end of the pack`);
    const baseOid = Buffer.from(raw.subarray(pos, pos + 20));
    return { type, size, baseOid, dataStart: offset + pos + 20 };
  }
  if (type < 1 || type > 4) throw new PackError(`unknown pack object type ${type} at ${offset}`);
  return { type, size, dataStart: offset + pos };
}

/**
 * Inflates one zlib stream of `size` bytes into a buffer of its own. zlib's output is a view of a 16 KiB
 * chunk (and small Buffers come from a shared pool): kept as is, every tiny file would pin 16 KiB (20,000
 * small files cost ~800 MiB; memory.test.ts), so anything not already exactly its own allocation is copied out.
 * Returns the bytes of `input` the stream used, which tells the indexer where the next object starts.
 */
export function inflateExact(input: Buffer, size: number): { data: Buffer; consumed: number } {
  const { out, consumed } = inflateSized(input, size);
  return { data: ownBuffer(out), consumed };
}

/**
 * Inflates a zlib stream whose size is known into one chunk of that size (plus slack, so zlib sees the end
 * of the stream in the same call): by default every call would allocate a 16 KiB chunk, 250 times the size
 * of a typical small config object, and a fetch of 60,000 of them churned through gigabytes.
 */
function inflateSized(input: Buffer, size: number): { out: Buffer; consumed: number } {
  const result = inflateSync(input, { info: true, maxOutputLength: Math.max(size, 1), chunkSize: Math.max(64, size + 64) }) as unknown as {
    buffer: Buffer;
    engine: { bytesWritten: number };
  };
  const out = result.buffer;
  if (out.length !== size) throw new PackError(`object inflates to ${out.length} bytes, its header says ${size}`);
  return { out, consumed: result.engine.bytesWritten };
}

/** `b` itself when it is (nearly) the whole of its own allocation, else a copy that is exactly that. */
export function ownBuffer(b: Buffer): Buffer {
  if (b.byteOffset === 0 && b.buffer.byteLength - b.byteLength <= 64 && b.byteLength >= 4096) return b;
  if (b.byteOffset === 0 && b.buffer.byteLength === b.byteLength) return b;
  const copy = Buffer.from(new ArrayBuffer(b.byteLength));
  b.copy(copy);
  return copy;
}

/** Finds objects in a pack: by id (an index) and by extent (sorted offsets). */
export interface PackLocator {
  /** The pack offset of a 20-byte object id; undefined when the pack does not hold it. */
  offsetOf(oid: Buffer): number | undefined;
  /** Where the object starting at `offset` ends: the next object's offset, or the trailer. */
  endOf(offset: number): number;
}

/** Bytes the base cache may pin; each entry is counted with its bookkeeping, so tiny objects are not free. */
/**
 * `length` bytes of `file` from `position`. Small ranges are read synchronously: a snapshot read is tens of
 * thousands of small objects, nearly always in the page cache, where a pread takes microseconds and a trip
 * through libuv's thread pool many times that (reading 20,000 files spent most of its time there).
 */
export async function readRange(file: FileHandle, position: number, length: number): Promise<Buffer> {
  const raw = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const bytesRead =
      length <= 64 * 1024
        ? readSync(file.fd, raw, filled, length - filled, position + filled)
        : (await file.read(raw, filled, length - filled, position + filled)).bytesRead;
    if (bytesRead === 0) throw new PackError('short read from pack');
    filled += bytesRead;
  }
  return raw;
}

const baseCacheBytes = 32 * 1024 * 1024;
const entryOverhead = 320;

/** Reads objects of a pack file at known offsets, resolving delta chains through a bounded base cache. */
export class PackObjects {
  readonly #pack: FileHandle;
  readonly #locator: PackLocator;
  /**
   * Recently used objects by offset, least recent first. Sized by bytes, not entries: a config repo's
   * blobs are small and deltified in long chains, and a cache that cannot hold them all re-reads whole chains
   * per file (reading 20,000 such files took over a minute that way).
   */
  readonly #cache = new Map<number, PackObject>();
  #cachedBytes = 0;

  constructor(pack: FileHandle, locator: PackLocator) {
    this.#pack = pack;
    this.#locator = locator;
  }

  /** Keeps an object (a likely delta base) for later reads; bounded, least recently used goes first. */
  remember(offset: number, obj: PackObject): void {
    if (obj.data.length > 4 * 1024 * 1024 || this.#cache.has(offset)) return;
    this.#cache.set(offset, obj);
    this.#cachedBytes += obj.data.buffer.byteLength + entryOverhead;
    if (this.#cachedBytes <= baseCacheBytes) return;
    // Evict down to three quarters in one pass: a Map iterator starts at its oldest slot and walks past the
    // slots of deleted entries, so evicting one entry per insert would walk them again every time.
    for (const [key, value] of this.#cache) {
      if (this.#cachedBytes <= (baseCacheBytes * 3) / 4) break;
      this.#cache.delete(key);
      this.#cachedBytes -= value.data.buffer.byteLength + entryOverhead;
    }
  }

  async readAt(offset: number, opts: PackReadOptions, depth = 0): Promise<PackObject> {
    if (depth > 64) throw new PackError('delta chain too deep');
    const cached = this.#cache.get(offset);
    if (cached !== undefined) {
      this.#cache.delete(offset);
      this.#cache.set(offset, cached);
      return cached;
    }
    const raw = await readRange(this.#pack, offset, this.#locator.endOf(offset) - offset);
    const head = parseEntryHeader(raw, offset);
    const zdata = raw.subarray(head.dataStart - offset);
    if (head.type === OFS_DELTA || head.type === REF_DELTA) {
      let baseOffset = head.baseOffset;
      if (head.baseOid !== undefined) {
        baseOffset = this.#locator.offsetOf(head.baseOid);
        if (baseOffset === undefined) throw new PackError('delta base missing from pack');
      }
      const base = await this.#readBase(baseOffset ?? 0, opts, depth);
      const delta = inflateSized(zdata, head.size).out;
      return { type: base.type, data: applyDelta(base.data, delta, opts) };
    }
    if (head.size > opts.maxBytes) throw opts.onTooLarge(head.size);
    const data = head.size === 0 ? Buffer.alloc(0) : inflateExact(zdata, head.size).data;
    return { type: head.type as ObjectType, data };
  }

  async #readBase(offset: number, opts: PackReadOptions, depth: number): Promise<PackObject> {
    const base = await this.readAt(offset, { maxBytes: Number.MAX_SAFE_INTEGER, onTooLarge: opts.onTooLarge }, depth + 1);
    this.remember(offset, base);
    return base;
  }
}

/** Reads objects out of a pack with its v2 index (what a verified fetch leaves in the cache). */
export class PackReader {
  readonly #pack: FileHandle;
  readonly #objects: PackObjects;
  readonly #shas: Buffer;
  readonly #offsets: Float64Array;
  readonly #fanout: Uint32Array;

  private constructor(pack: FileHandle, packSize: number, fanout: Uint32Array, shas: Buffer, offsets: Float64Array) {
    this.#pack = pack;
    this.#fanout = fanout;
    this.#shas = shas;
    this.#offsets = offsets;
    // Offsets sorted ascending: an object ends where the next one starts.
    const sorted = Float64Array.from(offsets).sort();
    this.#objects = new PackObjects(pack, {
      offsetOf: (oid) => this.#find(oid),
      endOf: (offset) => {
        let lo = 0;
        let hi = sorted.length;
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          if ((sorted[mid] ?? 0) <= offset) lo = mid + 1;
          else hi = mid;
        }
        return lo < sorted.length ? (sorted[lo] ?? packSize - 20) : packSize - 20;
      },
    });
  }

  static async open(packPath: string, idxPath: string): Promise<PackReader> {
    const idx = await readFile(idxPath);
    if (idx.length < 8 + 256 * 4 || idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2) throw new PackError('unsupported pack index version');
    const fanout = new Uint32Array(256);
    for (let i = 0; i < 256; i++) fanout[i] = idx.readUInt32BE(8 + i * 4);
    const count = fanout[255] ?? 0;
    const shaStart = 8 + 256 * 4;
    const offStart = shaStart + count * 20 + count * 4;
    const largeStart = offStart + count * 4;
    if (idx.length < largeStart + 40) throw new PackError('truncated pack index');
    const shas = Buffer.from(idx.subarray(shaStart, shaStart + count * 20));
    const offsets = new Float64Array(count);
    for (let i = 0; i < count; i++) {
      const v = idx.readUInt32BE(offStart + i * 4);
      offsets[i] = v & 0x80000000 ? Number(idx.readBigUInt64BE(largeStart + (v & 0x7fffffff) * 8)) : v;
    }
    const pack = await open(packPath, 'r');
    try {
      const { size } = await pack.stat();
      return new PackReader(pack, size, fanout, shas, offsets);
    } catch (err) {
      await pack.close();
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.#pack.close();
  }

  has(oid: string): boolean {
    const key = Buffer.from(oid, 'hex');
    return key.length === 20 && this.#find(key) !== undefined;
  }

  #find(key: Buffer): number | undefined {
    const first = key[0] ?? 0;
    let lo = first === 0 ? 0 : (this.#fanout[first - 1] ?? 0);
    let hi = this.#fanout[first] ?? 0;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const cmp = this.#shas.compare(key, 0, 20, mid * 20, mid * 20 + 20);
      if (cmp === 0) return this.#offsets[mid];
      if (cmp < 0) lo = mid + 1;
      else hi = mid;
    }
    return undefined;
  }

  /** Reads an object by id; undefined when the pack does not hold it. */
  async read(oid: string, opts: PackReadOptions): Promise<PackObject | undefined> {
    const key = Buffer.from(oid, 'hex');
    const offset = key.length === 20 ? this.#find(key) : undefined;
    return offset === undefined ? undefined : this.#objects.readAt(offset, opts);
  }
}

function readVarint(buf: Buffer, start: number): [value: number, next: number] {
  let value = 0;
  let shift = 0;
  let pos = start;
  let byte: number;
  do {
    byte = buf[pos++] ?? 0;
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [value, pos];
}

/** Applies a Git delta (copy/insert instructions) to `base`. */
export function applyDelta(base: Buffer, delta: Buffer, opts: PackReadOptions): Buffer {
  const [baseSize, afterBase] = readVarint(delta, 0);
  if (baseSize !== base.length) throw new PackError('delta base size mismatch');
  const [resultSize, start] = readVarint(delta, afterBase);
  if (resultSize > opts.maxBytes) throw opts.onTooLarge(resultSize);
  // Not from the shared pool: the result may be handed out as a file and must pin only its own bytes.
  const out = Buffer.allocUnsafeSlow(resultSize);
  let pos = start;
  let written = 0;
  while (pos < delta.length) {
    const op = delta[pos++] ?? 0;
    if (op & 0x80) {
      let copyOffset = 0;
      let copySize = 0;
      if (op & 0x01) copyOffset |= delta[pos++] ?? 0;
      if (op & 0x02) copyOffset |= (delta[pos++] ?? 0) << 8;
      if (op & 0x04) copyOffset |= (delta[pos++] ?? 0) << 16;
      if (op & 0x08) copyOffset += (delta[pos++] ?? 0) * 2 ** 24;
      if (op & 0x10) copySize |= delta[pos++] ?? 0;
      if (op & 0x20) copySize |= (delta[pos++] ?? 0) << 8;
      if (op & 0x40) copySize |= (delta[pos++] ?? 0) << 16;
      if (copySize === 0) copySize = 0x10000;
      if (copyOffset + copySize > base.length || written + copySize > resultSize) throw new PackError('delta copy out of range');
      base.copy(out, written, copyOffset, copyOffset + copySize);
      written += copySize;
    } else if (op !== 0) {
      if (pos + op > delta.length || written + op > resultSize) throw new PackError('delta insert out of range');
      delta.copy(out, written, pos, pos + op);
      pos += op;
      written += op;
    } else {
      throw new PackError('invalid delta opcode 0');
    }
  }
  if (written !== resultSize) throw new PackError('delta result size mismatch');
  return out;
}

export interface TreeEntry {
  mode: string;
  name: string;
  oid: string;
}

/** Parses a tree object: `<mode> <name>\0<20-byte id>` repeated. Names are bytes; we read them as UTF-8. */
export function parseTree(data: Buffer): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let pos = 0;
  while (pos < data.length) {
    const space = data.indexOf(0x20, pos);
    const nul = data.indexOf(0, space + 1);
    if (space < 0 || nul < 0 || nul + 21 > data.length) throw new PackError('malformed tree object');
    entries.push({
      mode: data.toString('latin1', pos, space),
      name: data.toString('utf8', space + 1, nul),
      oid: data.toString('hex', nul + 1, nul + 21),
    });
    pos = nul + 21;
  }
  return entries;
}

/** Who wrote or committed a commit, as its header says. */
export type CommitPerson = { readonly name: string; readonly email: string; readonly time: string };

/** A commit's author, committer and message (the text a person wrote: shown, never interpreted). */
export type CommitMetadata = { readonly author: CommitPerson; readonly committer: CommitPerson; readonly message: string };

/** The author, committer and message of a commit object. */
export function parseCommit(data: Buffer): CommitMetadata {
  const text = data.toString('utf8');
  const end = text.indexOf('\n\n');
  const headers = (end === -1 ? text : text.slice(0, end)).split('\n');
  const person = (key: string): CommitPerson => {
    const line = headers.find((h) => h.startsWith(`${key} `)) ?? '';
    const m = /^\S+ (.*?) <([^>]*)> (\d+) ([+-]\d{4})$/.exec(line);
    if (m === null) return { name: '', email: '', time: '' };
    const [, name = '', email = '', seconds = '0'] = m;
    return { name, email, time: new Date(Number(seconds) * 1000).toISOString() };
  };
  return { author: person('author'), committer: person('committer'), message: end === -1 ? '' : text.slice(end + 2) };
}

/** The tree id of a commit object. */
export function commitTree(data: Buffer): string {
  const m = /^tree ([0-9a-f]{40})\n/.exec(data.toString('latin1', 0, 46));
  if (m?.[1] === undefined) throw new PackError('malformed commit object');
  return m[1];
}

// Reads objects out of a packfile + its v2 index with Node's native zlib. isomorphic-git's own reader inflates
// with pure-JS pako and, per DESIGN.md's measurements, reading 5,000 blobs that way costs more than the
// fetch; a pack from a depth-1 fetch is self-contained (no thin-pack bases), so this small reader suffices.
import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import { inflateSync } from 'node:zlib';

export const ObjectType = { commit: 1, tree: 2, blob: 3, tag: 4 } as const;
export type ObjectType = (typeof ObjectType)[keyof typeof ObjectType];

const OFS_DELTA = 6;
const REF_DELTA = 7;

export interface PackObject {
  type: ObjectType;
  data: Buffer;
}

export interface PackReadOptions {
  /** Refuse (before inflating where the size is known up front) objects larger than this. */
  maxBytes: number;
  onTooLarge: (size: number) => Error;
}

export class PackReader {
  readonly #pack: FileHandle;
  readonly #packSize: number;
  readonly #shas: Buffer;
  readonly #offsets: Float64Array;
  readonly #fanout: Uint32Array;
  /** Offsets sorted ascending: an object ends where the next one starts. */
  readonly #sortedOffsets: Float64Array;
  /** Resolved delta bases (trees and blobs that other objects are deltas against), bounded. */
  readonly #baseCache = new Map<number, PackObject>();
  #baseCacheBytes = 0;

  private constructor(pack: FileHandle, packSize: number, fanout: Uint32Array, shas: Buffer, offsets: Float64Array) {
    this.#pack = pack;
    this.#packSize = packSize;
    this.#fanout = fanout;
    this.#shas = shas;
    this.#offsets = offsets;
    this.#sortedOffsets = Float64Array.from(offsets).sort();
  }

  static async open(packPath: string, idxPath: string): Promise<PackReader> {
    const { readFile } = await import('node:fs/promises');
    const idx = await readFile(idxPath);
    if (idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2) throw new Error('unsupported pack index version');
    const fanout = new Uint32Array(256);
    for (let i = 0; i < 256; i++) fanout[i] = idx.readUInt32BE(8 + i * 4);
    const count = fanout[255] ?? 0;
    const shaStart = 8 + 256 * 4;
    const shas = idx.subarray(shaStart, shaStart + count * 20);
    const offStart = shaStart + count * 20 + count * 4;
    const largeStart = offStart + count * 4;
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
    return this.#find(oid) !== undefined;
  }

  #find(oid: string): number | undefined {
    const key = Buffer.from(oid, 'hex');
    if (key.length !== 20) return undefined;
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
    const offset = this.#find(oid);
    return offset === undefined ? undefined : this.#readAt(offset, opts, 0);
  }

  #endOf(offset: number): number {
    const s = this.#sortedOffsets;
    let lo = 0;
    let hi = s.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((s[mid] ?? 0) <= offset) lo = mid + 1;
      else hi = mid;
    }
    return lo < s.length ? (s[lo] ?? this.#packSize - 20) : this.#packSize - 20;
  }

  async #readAt(offset: number, opts: PackReadOptions, depth: number): Promise<PackObject> {
    if (depth > 64) throw new Error('delta chain too deep');
    const cached = this.#baseCache.get(offset);
    if (cached !== undefined) return cached;
    const end = this.#endOf(offset);
    const raw = Buffer.allocUnsafe(end - offset);
    const { bytesRead } = await this.#pack.read(raw, 0, raw.length, offset);
    if (bytesRead !== raw.length) throw new Error('short read from pack');

    let pos = 0;
    let byte = raw[pos++] ?? 0;
    const type = (byte >> 4) & 7;
    let size = byte & 15;
    let shift = 4;
    while (byte & 0x80) {
      byte = raw[pos++] ?? 0;
      size += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    }
    if (type === OFS_DELTA || type === REF_DELTA) {
      let base: PackObject;
      if (type === OFS_DELTA) {
        byte = raw[pos++] ?? 0;
        let rel = byte & 0x7f;
        while (byte & 0x80) {
          byte = raw[pos++] ?? 0;
          rel = (rel + 1) * 128 + (byte & 0x7f);
        }
        base = await this.#readBase(offset - rel, opts, depth);
      } else {
        const baseOid = raw.subarray(pos, pos + 20).toString('hex');
        pos += 20;
        const baseOffset = this.#find(baseOid);
        if (baseOffset === undefined) throw new Error('delta base missing from pack');
        base = await this.#readBase(baseOffset, opts, depth);
      }
      const delta = inflateSync(raw.subarray(pos), { maxOutputLength: Math.max(size, 1) });
      return { type: base.type, data: applyDelta(base.data, delta, opts) };
    }
    if (type < 1 || type > 4) throw new Error(`unknown pack object type ${type}`);
    if (size > opts.maxBytes) throw opts.onTooLarge(size);
    const data = size === 0 ? Buffer.alloc(0) : inflateSync(raw.subarray(pos), { maxOutputLength: size });
    if (data.length !== size) throw new Error('pack object size mismatch');
    return { type: type as ObjectType, data };
  }

  async #readBase(offset: number, opts: PackReadOptions, depth: number): Promise<PackObject> {
    const base = await this.#readAt(offset, { maxBytes: Number.MAX_SAFE_INTEGER, onTooLarge: opts.onTooLarge }, depth + 1);
    if (!this.#baseCache.has(offset) && base.data.length < 4 * 1024 * 1024) {
      this.#baseCache.set(offset, base);
      this.#baseCacheBytes += base.data.length;
      for (const [key, value] of this.#baseCache) {
        if (this.#baseCacheBytes <= 32 * 1024 * 1024) break;
        this.#baseCache.delete(key);
        this.#baseCacheBytes -= value.data.length;
      }
    }
    return base;
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
  if (baseSize !== base.length) throw new Error('delta base size mismatch');
  const [resultSize, start] = readVarint(delta, afterBase);
  if (resultSize > opts.maxBytes) throw opts.onTooLarge(resultSize);
  const out = Buffer.allocUnsafe(resultSize);
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
      if (copyOffset + copySize > base.length || written + copySize > resultSize) throw new Error('delta copy out of range');
      base.copy(out, written, copyOffset, copyOffset + copySize);
      written += copySize;
    } else if (op !== 0) {
      if (pos + op > delta.length || written + op > resultSize) throw new Error('delta insert out of range');
      delta.copy(out, written, pos, pos + op);
      pos += op;
      written += op;
    } else {
      throw new Error('invalid delta opcode 0');
    }
  }
  if (written !== resultSize) throw new Error('delta result size mismatch');
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
    if (space < 0 || nul < 0 || nul + 21 > data.length) throw new Error('malformed tree object');
    entries.push({
      mode: data.toString('latin1', pos, space),
      name: data.toString('utf8', space + 1, nul),
      oid: data.toString('hex', nul + 1, nul + 21),
    });
    pos = nul + 21;
  }
  return entries;
}

/** The tree id of a commit object. */
export function commitTree(data: Buffer): string {
  const m = /^tree ([0-9a-f]{40})\n/.exec(data.toString('latin1', 0, 46));
  if (m?.[1] === undefined) throw new Error('malformed commit object');
  return m[1];
}

// Indexes and verifies a fetched pack before it may enter the snapshot cache. isomorphic-git stopped silently
// at the end of a stream, so a pack cut short at a pkt-line boundary was indexed as far as it went, cached,
// and then every read of the commit failed "missing from the snapshot" without a refetch (issue 15). Here:
// the trailer must be the SHA-1 of the bytes before it, the header's object count must be the number of
// objects that parse and they must end exactly at the trailer, every object must inflate to its stated size
// (and its id is computed from its content), every delta must find its base, and `verifyReachable` then walks
// the commit's trees. Memory stays proportional to the object count (ids, offsets, CRCs), not the pack:
// the pack is read from disk through a window, and delta bases come through PackObjects' bounded cache.
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { open, writeFile } from 'node:fs/promises';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { crc32 } from 'node:zlib';
import type { PackReadOptions, PackReader } from './pack.ts';
import { OFS_DELTA, ObjectType, PackError, PackObjects, REF_DELTA, commitTree, inflateExact, objectTypeNames, parseEntryHeader, parseTree } from './pack.ts';

export interface PackIndex {
  /** The pack's trailer (SHA-1 of all bytes before it), which also names the pack. */
  checksum: Buffer;
  count: number;
  /** Object ids, sorted ascending, 20 bytes each. */
  shas: Buffer;
  /** Pack offset of each object, by sorted position. */
  offsets: Float64Array;
  /** CRC-32 of each object's packed bytes, by sorted position (the idx v2 format carries them). */
  crcs: Uint32Array;
  /** Type of each object (deltas resolved), by sorted position. */
  types: Uint8Array;
}

export interface IndexPackOptions {
  /** Largest object (inflated) the pack may hold; a bigger one is refused before it is inflated. */
  maxObjectBytes: number;
  onTooLarge: (size: number) => Error;
}

const windowBytes = 1024 * 1024;
const headerMaxBytes = 32;

/** Reads the pack file through one window of at least 1 MiB, never past `limit` (the trailer). */
class FileWindow {
  readonly #file: FileHandle;
  readonly #limit: number;
  #buf = Buffer.alloc(0);
  #start = 0;

  constructor(file: FileHandle, limit: number) {
    this.#file = file;
    this.#limit = limit;
  }

  /** Bytes [pos, pos + len), shorter when the range reaches the limit. */
  async view(pos: number, len: number): Promise<Buffer> {
    const end = Math.min(pos + len, this.#limit);
    if (pos >= this.#start && end <= this.#start + this.#buf.length) return this.#buf.subarray(pos - this.#start, end - this.#start);
    const size = Math.min(this.#limit - pos, Math.max(end - pos, windowBytes));
    const buf = Buffer.allocUnsafeSlow(size);
    let filled = 0;
    while (filled < size) {
      const { bytesRead } = await this.#file.read(buf, filled, size - filled, pos + filled);
      if (bytesRead === 0) throw new PackError('short read from pack');
      filled += bytesRead;
    }
    this.#buf = buf;
    this.#start = pos;
    return buf.subarray(0, end - pos);
  }
}

/** The most a zlib stream of `size` bytes can take (zlib's deflateBound, generously). */
function deflateBound(size: number): number {
  return size + (size >>> 9) + 64;
}

function objectId(type: ObjectType, data: Buffer): Buffer {
  return createHash('sha1').update(`${objectTypeNames[type]} ${data.length}\0`).update(data).digest();
}

/** Checks the pack at `packPath` and writes its v2 index to `idxPath`. Throws PackError on any damage. */
export async function indexPack(packPath: string, idxPath: string, opts: IndexPackOptions): Promise<PackIndex> {
  const file = await open(packPath, 'r');
  try {
    const { size } = await file.stat();
    if (size < 32) throw new PackError(`the pack is ${size} bytes, too short to be one`);
    const checksum = await verifyTrailer(file, size);
    const header = Buffer.alloc(12);
    await file.read(header, 0, 12, 0);
    if (header.toString('latin1', 0, 4) !== 'PACK') throw new PackError('the pack does not start with PACK');
    const version = header.readUInt32BE(4);
    if (version !== 2 && version !== 3) throw new PackError(`unsupported pack version ${version}`);
    const count = header.readUInt32BE(8);
    const limit = size - 20;
    // Each object takes at least a header byte and a zlib stream (>= 8 bytes): a header promising more is lying,
    // and must not make us allocate for it.
    if (count > (limit - 12) / 9) throw new PackError(`the pack header announces ${count} objects, more than its ${size} bytes can hold`);
    const scanned = await scan(file, limit, count, opts);
    return { checksum, count, ...(await writeIndex(idxPath, checksum, scanned)) };
  } finally {
    await file.close();
  }
}

async function verifyTrailer(file: FileHandle, size: number): Promise<Buffer> {
  const hash = createHash('sha1');
  const buf = Buffer.allocUnsafeSlow(windowBytes);
  for (let pos = 0; pos < size - 20; ) {
    const { bytesRead } = await file.read(buf, 0, Math.min(buf.length, size - 20 - pos), pos);
    if (bytesRead === 0) throw new PackError('short read from pack');
    hash.update(buf.subarray(0, bytesRead));
    pos += bytesRead;
  }
  const trailer = Buffer.alloc(20);
  await file.read(trailer, 0, 20, size - 20);
  const actual = hash.digest();
  if (!actual.equals(trailer)) throw new PackError('the pack checksum does not match its contents (cut short or damaged)');
  return trailer;
}

interface Scanned {
  count: number;
  oids: Buffer;
  offsets: Float64Array;
  crcs: Uint32Array;
  types: Uint8Array;
}

/** Walks every object in pack order, computing its id; deltas are resolved as their bases become known. */
async function scan(file: FileHandle, limit: number, count: number, opts: IndexPackOptions): Promise<Scanned> {
  const offsets = new Float64Array(count);
  const ends = new Float64Array(count);
  const crcs = new Uint32Array(count);
  const types = new Uint8Array(count);
  const oids = Buffer.alloc(count * 20);
  const resolved = new Uint8Array(count);
  /** REF_DELTA base ids by object position (rare: a server that knows ofs-delta uses it). */
  const refBases = new Map<number, Buffer>();
  /** OFS_DELTA base offsets of deltas whose base was itself not yet resolved when they were scanned. */
  const ofsBases = new Map<number, number>();
  const pending: number[] = [];
  let known = 0;
  const positionOf = (offset: number): number | undefined => {
    let lo = 0;
    let hi = known;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const at = offsets[mid] ?? 0;
      if (at === offset) return mid;
      if (at < offset) lo = mid + 1;
      else hi = mid;
    }
    return undefined;
  };
  let byId: Map<string, number> | undefined;
  const objects = new PackObjects(file, {
    offsetOf: (oid) => byId?.get(oid.toString('hex')),
    endOf: (offset) => {
      const i = positionOf(offset);
      if (i === undefined) throw new PackError(`no object starts at ${offset}`);
      return ends[i] ?? limit;
    },
  });
  const unlimited: PackReadOptions = { maxBytes: opts.maxObjectBytes, onTooLarge: opts.onTooLarge };
  const settle = (i: number, type: ObjectType, data: Buffer): void => {
    types[i] = type;
    objectId(type, data).copy(oids, i * 20);
    resolved[i] = 1;
    objects.remember(offsets[i] ?? 0, { type, data });
  };

  const window = new FileWindow(file, limit);
  let pos = 12;
  let lastYield = performance.now();
  for (let i = 0; i < count; i++) {
    if (pos >= limit) throw new PackError(`the pack ends after ${i} of the ${count} objects its header announces`);
    const head = parseEntryHeader(await window.view(pos, headerMaxBytes), pos);
    if (head.size > opts.maxObjectBytes) throw opts.onTooLarge(head.size);
    const headerBytes = head.dataStart - pos;
    let guess = deflateBound(head.size);
    let inflated: { data: Buffer; consumed: number };
    let packed: Buffer;
    for (;;) {
      packed = await window.view(pos, headerBytes + guess);
      try {
        inflated = inflateExact(packed.subarray(headerBytes), head.size);
        break;
      } catch (err) {
        // The bound is a guess: zlib may legally take more (stored blocks, odd encoders). Read on, up to the trailer.
        const more = (err as { code?: unknown }).code === 'Z_BUF_ERROR' && pos + packed.length < limit;
        if (!more) throw new PackError(`object ${i} at offset ${pos} is damaged (${err instanceof Error ? err.message : String(err)})`);
        guess = guess * 2 + windowBytes;
      }
    }
    const end = head.dataStart + inflated.consumed;
    offsets[i] = pos;
    ends[i] = end;
    crcs[i] = crc32(packed.subarray(0, end - pos));
    known = i + 1;
    if (head.type === OFS_DELTA) {
      const base = positionOf(head.baseOffset ?? -1);
      if (base === undefined) throw new PackError(`delta at offset ${pos} names no object as its base`);
      if (resolved[base] === 1) {
        const obj = await objects.resolveDelta(head.baseOffset ?? 0, inflated.data, unlimited);
        settle(i, obj.type, obj.data);
      } else {
        ofsBases.set(i, head.baseOffset ?? 0);
        pending.push(i);
      }
    } else if (head.type === REF_DELTA) {
      refBases.set(i, head.baseOid ?? Buffer.alloc(20));
      pending.push(i);
    } else {
      settle(i, head.type as ObjectType, inflated.data);
    }
    pos = end;
    // Thousands of small objects inflate and hash without awaiting I/O; let the operator's other work run.
    if (performance.now() - lastYield > 20) {
      await nextTurn();
      lastYield = performance.now();
    }
  }
  if (pos !== limit) throw new PackError(`the pack holds more data than the ${count} objects its header announces`);

  if (pending.length > 0) {
    // Deltas whose base comes later in the pack, or is named by id: resolve in rounds until nothing moves.
    byId = new Map();
    for (let i = 0; i < count; i++) if (resolved[i] === 1) byId.set(oids.toString('hex', i * 20, i * 20 + 20), offsets[i] ?? 0);
    let left = pending;
    while (left.length > 0) {
      const next: number[] = [];
      for (const i of left) {
        const ref = refBases.get(i);
        const ready = ref !== undefined ? byId.has(ref.toString('hex')) : resolved[positionOf(ofsBases.get(i) ?? -1) ?? -1] === 1;
        if (!ready) {
          next.push(i);
          continue;
        }
        const obj = await objects.readAt(offsets[i] ?? 0, unlimited);
        settle(i, obj.type, obj.data);
        byId.set(oids.toString('hex', i * 20, i * 20 + 20), offsets[i] ?? 0);
      }
      if (next.length === left.length) throw new PackError(`${next.length} deltas name bases the pack does not hold`);
      left = next;
    }
  }
  return { count, oids, offsets, crcs, types };
}

/** Writes a v2 pack index (what `git index-pack` writes): fanout, sorted ids, CRCs, offsets, checksums. */
async function writeIndex(idxPath: string, checksum: Buffer, s: Scanned): Promise<Omit<PackIndex, 'checksum' | 'count'>> {
  const n = s.count;
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  order.sort((a, b) => s.oids.compare(s.oids, b * 20, b * 20 + 20, a * 20, a * 20 + 20));
  const shas = Buffer.alloc(n * 20);
  const offsets = new Float64Array(n);
  const crcs = new Uint32Array(n);
  const types = new Uint8Array(n);
  let large = 0;
  for (let k = 0; k < n; k++) {
    const i = order[k] ?? 0;
    s.oids.copy(shas, k * 20, i * 20, i * 20 + 20);
    offsets[k] = s.offsets[i] ?? 0;
    crcs[k] = s.crcs[i] ?? 0;
    types[k] = s.types[i] ?? 0;
    if ((offsets[k] ?? 0) >= 0x80000000) large++;
  }
  const out = Buffer.alloc(8 + 256 * 4 + n * 28 + large * 8 + 40);
  out.writeUInt32BE(0xff744f63, 0);
  out.writeUInt32BE(2, 4);
  let k = 0;
  for (let byte = 0; byte < 256; byte++) {
    while (k < n && (shas[k * 20] ?? 0) <= byte) k++;
    out.writeUInt32BE(k, 8 + byte * 4);
  }
  let at = 8 + 256 * 4;
  shas.copy(out, at);
  at += n * 20;
  for (let j = 0; j < n; j++, at += 4) out.writeUInt32BE(crcs[j] ?? 0, at);
  const largeAt = at + n * 4;
  let nextLarge = 0;
  for (let j = 0; j < n; j++, at += 4) {
    const offset = offsets[j] ?? 0;
    if (offset < 0x80000000) out.writeUInt32BE(offset, at);
    else {
      out.writeUInt32BE((0x80000000 | nextLarge) >>> 0, at);
      out.writeBigUInt64BE(BigInt(offset), largeAt + nextLarge * 8);
      nextLarge++;
    }
  }
  at = largeAt + large * 8;
  checksum.copy(out, at);
  createHash('sha1').update(out.subarray(0, at + 20)).digest().copy(out, at + 20);
  await writeFile(idxPath, out);
  return { shas, offsets, crcs, types };
}

/** The resolved type of an object in `index`, or undefined when the pack does not hold it. */
export function typeIn(index: PackIndex, oid: string): number | undefined {
  const key = Buffer.from(oid, 'hex');
  if (key.length !== 20) return undefined;
  let lo = 0;
  let hi = index.count;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const cmp = index.shas.compare(key, 0, 20, mid * 20, mid * 20 + 20);
    if (cmp === 0) return index.types[mid];
    if (cmp < 0) lo = mid + 1;
    else hi = mid;
  }
  return undefined;
}

/**
 * Checks that `commit`, its root tree and every tree and blob below it are in the pack with the right types,
 * which is everything a snapshot's reader may be asked for (submodule entries name commits of other
 * repositories and are skipped). Throws PackError naming what is missing.
 */
export async function verifyReachable(reader: PackReader, index: PackIndex, commit: string): Promise<void> {
  const big: PackReadOptions = { maxBytes: Number.MAX_SAFE_INTEGER, onTooLarge: () => new PackError('object too large') };
  const commitObject = await reader.read(commit, big);
  if (commitObject?.type !== ObjectType.commit) throw new PackError(`commit ${commit} is not in the pack`);
  const seen = new Set<string>();
  const stack = [{ oid: commitTree(commitObject.data), path: '' }];
  let lastYield = performance.now();
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    if (seen.has(item.oid)) continue;
    seen.add(item.oid);
    const shown = item.path === '' ? 'the root tree' : `tree ${item.path}`;
    if (typeIn(index, item.oid) !== ObjectType.tree) throw new PackError(`${shown} (${item.oid}) is not in the pack`);
    const tree = await reader.read(item.oid, big);
    if (tree === undefined) throw new PackError(`${shown} (${item.oid}) is not in the pack`);
    for (const entry of parseTree(tree.data)) {
      const path = item.path === '' ? entry.name : `${item.path}/${entry.name}`;
      if (entry.mode === '40000') stack.push({ oid: entry.oid, path });
      else if (entry.mode !== '160000' && typeIn(index, entry.oid) !== ObjectType.blob) {
        throw new PackError(`blob ${JSON.stringify(path)} (${entry.oid}) is not in the pack`);
      }
    }
    if (performance.now() - lastYield > 20) {
      await nextTurn();
      lastYield = performance.now();
    }
  }
}

// Indexes and verifies a fetched pack before it may enter the snapshot cache. isomorphic-git stopped silently
// at the end of a stream, so a pack cut short at a pkt-line boundary was indexed as far as it went, cached,
// and then every read of the commit failed "missing from the snapshot" without a refetch (pack-integrity.test.ts). Here:
// the trailer must be the SHA-1 of the bytes before it, the header's object count must be the number of
// objects that parse and they must end exactly at the trailer, every object must inflate to its stated size
// (and its id is computed from its content), every delta must find its base, and `verifyReachable` then walks
// the commit's trees. Memory stays proportional to the object count (ids, offsets, CRCs), not the pack:
// the pack is read from disk through a window, and deltas are resolved one chain at a time.
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { open, writeFile } from 'node:fs/promises';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { crc32 } from 'node:zlib';
import type { PackReadOptions } from './pack.ts';
import {
  OFS_DELTA,
  ObjectType,
  PackError,
  PackReader,
  REF_DELTA,
  applyDelta,
  commitTree,
  inflateExact,
  objectTypeNames,
  parseEntryHeader,
  parseTree,
  readRange,
} from './pack.ts';

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
  /** What each tree (by id) names: 21-byte records, a kind byte (`entryKind`) then the 20-byte id. */
  trees: Map<string, Buffer>;
  /** The root tree of each commit, by commit id. */
  commitTrees: Map<string, string>;
}

/** Kinds of tree entries as `PackIndex.trees` records them. */
export const entryKind = { tree: 1, blob: 2, submodule: 3 } as const;

export interface IndexPackOptions {
  /** Largest object (inflated) the pack may hold; a bigger one is refused before it is inflated. */
  maxObjectBytes: number;
  onTooLarge: (size: number) => Error;
  /**
   * Runs the garbage collector. Every object inflated is garbage a moment later, and V8 lets tens of MiB of such
   * buffers pile up before it collects them (most of a fetch's peak, bench source-git); given this, the indexer has
   * them collected after every 4 MiB it inflates. Only the index worker passes it: its heap is small, so a full
   * collection takes a few milliseconds (in all ~8% of the 50 MB bench's fetch time, for ~30 MB less peak).
   */
  collect?: (() => void) | undefined;
}

const windowBytes = 1024 * 1024;
const headerMaxBytes = 32;

/**
 * Reads the pack file through one window of at least 1 MiB, never past `limit` (the trailer). The window's
 * memory is reused as it moves (a new one per MiB was a pack's worth of garbage), so a view is valid
 * only until the next call.
 */
class FileWindow {
  readonly #file: FileHandle;
  readonly #limit: number;
  #memory = Buffer.alloc(0);
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
    // No view reaches past the limit: a pack smaller than the window gets a window of its own size.
    if (this.#memory.length < size) this.#memory = Buffer.allocUnsafeSlow(Math.max(size, Math.min(windowBytes, this.#limit)));
    const buf = this.#memory.subarray(0, size);
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
    return { checksum, count, ...(await writeIndex(idxPath, checksum, scanned)), trees: scanned.trees, commitTrees: scanned.commitTrees };
  } finally {
    await file.close();
  }
}

async function verifyTrailer(file: FileHandle, size: number): Promise<Buffer> {
  const hash = createHash('sha1');
  const buf = Buffer.allocUnsafeSlow(Math.max(1, Math.min(windowBytes, size - 20)));
  for (let pos = 0; pos < size - 20;) {
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
  trees: Map<string, Buffer>;
  commitTrees: Map<string, string>;
}

/** A tree's entries as 21-byte records (kind, id): what the reachability check needs, in a fraction of the bytes. */
function treeEdges(data: Buffer): Buffer {
  const entries = parseTree(data);
  const out = Buffer.allocUnsafeSlow(entries.length * 21);
  entries.forEach((e, k) => {
    out[k * 21] = e.mode === '40000' ? entryKind.tree : e.mode === '160000' ? entryKind.submodule : entryKind.blob;
    out.write(e.oid, k * 21 + 1, 'hex');
  });
  return out;
}

/**
 * Walks every object in pack order, computing the id of each whole object; then resolves deltas as git's
 * index-pack does, depth first from each base through its children, so memory is one delta chain, not a
 * cache of bases (a bounded cache of tiny config objects either thrashes or costs more than the pack).
 */
async function scan(file: FileHandle, limit: number, count: number, opts: IndexPackOptions): Promise<Scanned> {
  const offsets = new Float64Array(count);
  const ends = new Float64Array(count);
  const crcs = new Uint32Array(count);
  const types = new Uint8Array(count);
  const oids = Buffer.alloc(count * 20);
  const resolved = new Uint8Array(count);
  /** OFS_DELTA: the base's position; -1 otherwise. */
  const ofsBase = new Int32Array(count).fill(-1);
  /** REF_DELTA: positions of the deltas waiting for each base id (rare: a server that knows ofs-delta uses it). */
  const refChildren = new Map<string, number[]>();
  let deltas = 0;
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
  const trees = new Map<string, Buffer>();
  const commitTrees = new Map<string, string>();
  let churned = 0;
  const settle = (i: number, type: ObjectType, data: Buffer): void => {
    churned += data.length;
    if (churned >= collectEveryBytes && opts.collect !== undefined) {
      opts.collect();
      churned = 0;
    }
    types[i] = type;
    const id = objectId(type, data);
    id.copy(oids, i * 20);
    resolved[i] = 1;
    if (type === ObjectType.tree) trees.set(id.toString('hex'), treeEdges(data));
    else if (type === ObjectType.commit) commitTrees.set(id.toString('hex'), commitTree(data));
  };
  const yielder = new Yielder();

  const window = new FileWindow(file, limit);
  let pos = 12;
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
      ofsBase[i] = base;
      deltas++;
    } else if (head.type === REF_DELTA) {
      const key = (head.baseOid ?? Buffer.alloc(20)).toString('hex');
      const waiting = refChildren.get(key);
      if (waiting === undefined) refChildren.set(key, [i]);
      else waiting.push(i);
      deltas++;
    } else {
      settle(i, head.type as ObjectType, inflated.data);
    }
    pos = end;
    await yielder.maybe();
  }
  if (pos !== limit) throw new PackError(`the pack holds more data than the ${count} objects its header announces`);
  if (deltas === 0) return { count, oids, offsets, crcs, types, trees, commitTrees };

  // Children of each base by position (compressed rows: firstChild[b] .. firstChild[b + 1] in children).
  const firstChild = new Int32Array(count + 1);
  for (let i = 0; i < count; i++) {
    const b = ofsBase[i] ?? -1;
    if (b >= 0) firstChild[b + 1] = (firstChild[b + 1] ?? 0) + 1;
  }
  for (let b = 0; b < count; b++) firstChild[b + 1] = (firstChild[b + 1] ?? 0) + (firstChild[b] ?? 0);
  const children = new Int32Array(firstChild[count] ?? 0);
  const fill = Int32Array.from(firstChild);
  for (let i = 0; i < count; i++) {
    const b = ofsBase[i] ?? -1;
    if (b < 0) continue;
    const at = fill[b] ?? 0;
    children[at] = i;
    fill[b] = at + 1;
  }

  const readEntry = async (i: number): Promise<{ type: number; data: Buffer }> => {
    const start = offsets[i] ?? 0;
    const raw = await readRange(file, start, (ends[i] ?? 0) - start);
    const head = parseEntryHeader(raw, start);
    return { type: head.type, data: inflateExact(raw.subarray(head.dataStart - start), head.size).data };
  };
  const limits: PackReadOptions = { maxBytes: opts.maxObjectBytes, onTooLarge: opts.onTooLarge };
  let settled = 0;
  const descend = async (base: number, type: ObjectType, data: Buffer): Promise<void> => {
    const kids = [...children.subarray(firstChild[base] ?? 0, firstChild[base + 1] ?? 0)];
    if (refChildren.size > 0) kids.push(...(refChildren.get(oids.toString('hex', base * 20, base * 20 + 20)) ?? []));
    for (const kid of kids) {
      if (resolved[kid] === 1) continue;
      const out = applyDelta(data, (await readEntry(kid)).data, limits);
      settle(kid, type, out);
      settled++;
      await yielder.maybe();
      await descend(kid, type, out);
    }
  };
  for (let root = 0; root < count; root++) {
    if ((types[root] ?? 0) === 0 || (ofsBase[root] ?? -1) >= 0) continue;
    const hasKids = (firstChild[root + 1] ?? 0) > (firstChild[root] ?? 0) || refChildren.has(oids.toString('hex', root * 20, root * 20 + 20));
    if (!hasKids) continue;
    const whole = await readEntry(root);
    if (whole.type === REF_DELTA) continue;
    await descend(root, whole.type as ObjectType, whole.data);
  }
  if (settled !== deltas) throw new PackError(`${deltas - settled} deltas name bases the pack does not hold`);
  return { count, oids, offsets, crcs, types, trees, commitTrees };
}

/** How much inflated data the indexer leaves to the collector before it asks it to run (`IndexPackOptions.collect`). */
const collectEveryBytes = 4 * 1024 * 1024;

/** Lets the event loop run every 20 ms: thousands of small objects inflate and hash without awaiting I/O. */
class Yielder {
  #last = performance.now();
  async maybe(): Promise<void> {
    if (performance.now() - this.#last < 20) return;
    await nextTurn();
    this.#last = performance.now();
  }
}

/** Writes a v2 pack index (what `git index-pack` writes): fanout, sorted ids, CRCs, offsets, checksums. */
async function writeIndex(idxPath: string, checksum: Buffer, s: Scanned): Promise<Omit<PackIndex, 'checksum' | 'count' | 'trees' | 'commitTrees'>> {
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
  createHash('sha1')
    .update(out.subarray(0, at + 20))
    .digest()
    .copy(out, at + 20);
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
 * repositories and are skipped). The walk uses the edges the scan recorded; the commit and its root tree are
 * also read back through `reader`, the very reader readPath will use. Throws PackError naming what is missing.
 */
export async function verifyReachable(reader: PackReader, index: PackIndex, commit: string): Promise<void> {
  const big: PackReadOptions = { maxBytes: Number.MAX_SAFE_INTEGER, onTooLarge: () => new PackError('object too large') };
  const root = index.commitTrees.get(commit);
  const commitObject = await reader.read(commit, big);
  if (root === undefined || commitObject?.type !== ObjectType.commit || commitTree(commitObject.data) !== root) {
    throw new PackError(`commit ${commit} is not in the pack`);
  }
  if ((await reader.read(root, big))?.type !== ObjectType.tree) throw new PackError(`the root tree (${root}) is not in the pack`);
  const seen = new Set<string>();
  const stack = [root];
  const yielder = new Yielder();
  for (let oid = stack.pop(); oid !== undefined; oid = stack.pop()) {
    if (seen.has(oid)) continue;
    seen.add(oid);
    const edges = index.trees.get(oid);
    if (edges === undefined || typeIn(index, oid) !== ObjectType.tree)
      throw new PackError(`tree ${await pathOf(reader, root, oid)} (${oid}) is not in the pack`);
    for (let at = 0; at < edges.length; at += 21) {
      const kind = edges[at];
      const entry = edges.toString('hex', at + 1, at + 21);
      if (kind === entryKind.tree) stack.push(entry);
      else if (kind === entryKind.blob && typeIn(index, entry) !== ObjectType.blob)
        throw new PackError(`blob ${await pathOf(reader, root, entry)} (${entry}) is not in the pack`);
    }
    await yielder.maybe();
  }
}

/** Where `oid` sits below `root`, for the message of a failed check (only then are the trees read again). */
async function pathOf(reader: PackReader, root: string, oid: string): Promise<string> {
  const big: PackReadOptions = { maxBytes: Number.MAX_SAFE_INTEGER, onTooLarge: () => new PackError('object too large') };
  if (oid === root) return '(the root tree)';
  const queue = [{ tree: root, path: '' }];
  for (let item = queue.shift(); item !== undefined; item = queue.shift()) {
    const tree = await reader.read(item.tree, big).catch(() => undefined);
    if (tree?.type !== ObjectType.tree) continue;
    for (const entry of parseTree(tree.data)) {
      const path = item.path === '' ? entry.name : `${item.path}/${entry.name}`;
      if (entry.oid === oid) return JSON.stringify(path);
      if (entry.mode === '40000') queue.push({ tree: entry.oid, path });
    }
  }
  return '(unknown path)';
}

export interface IndexJob {
  packPath: string;
  idxPath: string;
  /** The commit the pack must hold, with everything it reaches. */
  commit: string;
  maxObjectBytes: number;
}

/** What the indexer reports: the pack's checksum, or why it refused the pack. */
export type IndexOutcome = { ok: true; checksum: string } | { ok: false; kind: 'damaged'; message: string } | { ok: false; kind: 'tooLarge'; size: number };

class TooLarge extends Error {
  readonly size: number;
  constructor(size: number) {
    super(`object of ${size} bytes`);
    this.size = size;
  }
}

/** Indexes the pack and checks it holds `commit` whole. Errors other than damage or size are thrown. */
export async function indexAndVerify(job: IndexJob, collect?: () => void): Promise<IndexOutcome> {
  try {
    const index = await indexPack(job.packPath, job.idxPath, { maxObjectBytes: job.maxObjectBytes, onTooLarge: (size) => new TooLarge(size), collect });
    const reader = await PackReader.open(job.packPath, job.idxPath);
    try {
      await verifyReachable(reader, index, job.commit);
    } finally {
      await reader.close();
    }
    return { ok: true, checksum: index.checksum.toString('hex') };
  } catch (err) {
    if (err instanceof TooLarge) return { ok: false, kind: 'tooLarge', size: err.size };
    if (err instanceof PackError) return { ok: false, kind: 'damaged', message: err.message };
    throw err;
  }
}

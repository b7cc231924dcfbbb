// The Git pack protocol (v0) as git-upload-pack speaks it, over any transport: the ref advertisement, then
// one request with one want (depth 1), streaming the pack out of the side-band into a file as it arrives.
// Smart HTTP (http.ts: GET info/refs, then POST git-upload-pack) and SSH (ssh.ts: one exec channel running
// git-upload-pack) only carry the bytes; listing refs and fetching a commit are the same code for both.
// The pack never sits in memory (isomorphic-git collected it whole and then indexed it with per-object
// structures: ~320 MiB for a 2.5 MB pack of 60,000 objects), and nothing here trusts the stream to
// be complete: index-pack.ts verifies what was written.
import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import { GitSourceError, GitSourceErrorCode } from './errors.ts';
import { garbageCollector } from './gc.ts';
import type { HttpSession, SessionResponse } from './http.ts';
import { HttpStatusError } from './http.ts';
import { PackError } from './pack.ts';

/** One ref of the advertisement; annotated tags carry the commit they peel to. */
export interface AdvertisedRef {
  ref: string;
  oid: string;
  peeled?: string | undefined;
  /** For a symbolic ref (HEAD): the ref it points at. */
  target?: string | undefined;
}

export interface Advertisement {
  refs: AdvertisedRef[];
  capabilities: Set<string>;
}

/** One conversation with git-upload-pack: its ref advertisement, then at most one request. */
export interface UploadPackConversation {
  readonly advertisement: Advertisement;
  /**
   * Sends a request (wants, then done) and hands the response's pkt-lines to `consume`. A transport may call
   * `consume` more than once (HTTP retries a transient failure); each call starts from the response's start.
   */
  request<T>(body: Buffer, consume: (reader: PktReader) => Promise<T>): Promise<T>;
  /** Ends the conversation (SSH: tells upload-pack we are done and closes the channel). */
  close(): Promise<void>;
}

/** Opens conversations with one repository's git-upload-pack. */
export interface UploadPackTransport {
  open(): Promise<UploadPackConversation>;
  /** Aborted when the operation's deadline passes. */
  readonly signal: AbortSignal;
}

export interface FetchPackOptions {
  transport: UploadPackTransport;
  sha: string;
  /** Where the pack is written (replaced by each attempt). */
  packPath: string;
  shownRepo: string;
}

export const userAgent = 'git/syncline';

/** The repository's advertisement: its refs (branches, tags peeled, HEAD and its target) and capabilities. */
export async function listRefs(transport: UploadPackTransport): Promise<Advertisement> {
  const conversation = await transport.open();
  await conversation.close();
  return conversation.advertisement;
}

/** Fetches `sha` into `packPath`. Returns the bytes written. */
export async function fetchPack(opts: FetchPackOptions): Promise<number> {
  const conversation = await opts.transport.open();
  try {
    const caps = conversation.advertisement.capabilities;
    if (caps.has('object-format=sha256')) {
      throw new GitSourceError(GitSourceErrorCode.ServerError, `${opts.shownRepo}: SHA-256 repositories are not supported`);
    }
    const sideband = caps.has('side-band-64k') ? 'side-band-64k' : caps.has('side-band') ? 'side-band' : undefined;
    const wanted = [sideband, 'ofs-delta', 'shallow', 'no-progress'].filter((c): c is string => c !== undefined && caps.has(c));
    const body = Buffer.concat([
      pktLine(`want ${opts.sha} ${[...wanted, `agent=${userAgent}`].join(' ')}\n`),
      ...(caps.has('shallow') ? [pktLine('deepen 1\n')] : []),
      Buffer.from('0000'),
      pktLine('done\n'),
    ]);
    return await conversation.request(body, async (reader) => {
      const file = await open(opts.packPath, 'w');
      try {
        return await receivePack(reader, file, sideband !== undefined, opts);
      } finally {
        await file.close();
      }
    });
  } finally {
    await conversation.close();
  }
}

/**
 * Reads a v0 ref advertisement up to its flush: `<oid> <ref>\0<capabilities>` first, then `<oid> <ref>`,
 * with `<ref>^{}` lines peeling annotated tags. An empty repository sends `capabilities^{}` or nothing.
 */
export async function readAdvertisement(reader: PktReader, shownRepo: string): Promise<Advertisement> {
  const refs: AdvertisedRef[] = [];
  const byName = new Map<string, AdvertisedRef>();
  let capabilities = new Set<string>();
  let first = true;
  for (;;) {
    const line = await reader.read();
    if (line === 'flush' || line === 'eof') {
      if (line === 'eof' && first) throw protocolError(shownRepo, 'the ref advertisement is empty');
      break;
    }
    if (line === 'delim') throw protocolError(shownRepo, 'unexpected delimiter in the ref advertisement');
    const text = line.toString('utf8');
    if (text.startsWith('ERR ')) throw serverSaid(shownRepo, text.slice(4));
    if (first && /^version 1\n?$/.test(text)) continue;
    if (first && text.startsWith('version 2')) throw protocolError(shownRepo, 'the server answered with protocol v2, which was not asked for');
    const nul = line.indexOf(0);
    const head = (nul < 0 ? text : line.toString('utf8', 0, nul)).replace(/\n$/, '');
    if (first && nul >= 0)
      capabilities = new Set(
        line
          .toString('latin1', nul + 1)
          .trim()
          .split(' ')
          .filter((c) => c !== ''),
      );
    first = false;
    const m = /^([0-9a-f]{40}) (\S+)$/.exec(head);
    if (m === null) throw protocolError(shownRepo, 'a ref line is malformed');
    const [, oid = '', name = ''] = m;
    if (name === 'capabilities^{}') continue;
    if (name.endsWith('^{}')) {
      const tag = byName.get(name.slice(0, -3));
      if (tag !== undefined) tag.peeled = oid;
      continue;
    }
    const ref: AdvertisedRef = { ref: name, oid };
    refs.push(ref);
    byName.set(name, ref);
  }
  for (const cap of capabilities) {
    const m = /^symref=([^:]+):(.+)$/.exec(cap);
    const ref = m === null ? undefined : byName.get(m[1] ?? '');
    if (ref !== undefined) ref.target = m?.[2];
  }
  return { refs, capabilities };
}

/**
 * Smart HTTP: GET info/refs for the advertisement, then POST git-upload-pack with the request. With `known`, the
 * capabilities of an advertisement this access read moments ago, there is no GET: HTTP is stateless (each POST runs
 * its own upload-pack, which checks the wants against the refs itself), so a fetch needs the server's capabilities
 * to word its request and nothing else of the advertisement.
 */
export function httpUploadPack(session: HttpSession, url: string, shownRepo: string, known?: ReadonlySet<string>): UploadPackTransport {
  const conversation = (advertisement: Advertisement): UploadPackConversation => ({
    advertisement,
    request: (body, consume) =>
      session.exchange(
        {
          url: `${url}/git-upload-pack`,
          method: 'POST',
          headers: {
            'content-type': 'application/x-git-upload-pack-request',
            accept: 'application/x-git-upload-pack-result',
            'user-agent': userAgent,
          },
          body,
        },
        async (res) => {
          expectGit(res, 'application/x-git-upload-pack-result', shownRepo);
          return consume(new PktReader(res.body));
        },
      ),
    close: () => Promise.resolve(),
  });
  return {
    signal: session.signal,
    async open() {
      if (known !== undefined) return conversation({ refs: [], capabilities: new Set(known) });
      const advertisement = await session.exchange(
        { url: `${url}/info/refs?service=git-upload-pack`, method: 'GET', headers: { accept: '*/*', 'user-agent': userAgent } },
        async (res) => {
          expectGit(res, 'application/x-git-upload-pack-advertisement', shownRepo);
          const reader = new PktReader(res.body);
          const line = await reader.peek();
          if (Buffer.isBuffer(line) && line.toString('latin1').startsWith('# service=')) {
            await reader.read();
            if ((await reader.peek()) === 'flush') await reader.read();
          }
          const adv = await readAdvertisement(reader, shownRepo);
          // Read to the end so the connection is reusable.
          for await (const _ of reader.rest());
          return adv;
        },
      );
      return conversation(advertisement);
    },
  };
}

async function receivePack(reader: PktReader, file: FileHandle, sideband: boolean, opts: FetchPackOptions): Promise<number> {
  const sink = new FileSink(file);
  // Negotiation: shallow/unshallow lines and flushes, then NAK (we sent "done" with no "have").
  for (;;) {
    const line = await reader.read();
    if (line === 'eof') throw protocolError(opts.shownRepo, 'the response ended before the pack');
    if (line === 'flush' || line === 'delim') continue;
    const text = line.toString('utf8');
    if (text.startsWith('ERR ')) {
      if (/not our ref|unadvertised object/i.test(text)) {
        throw new GitSourceError(GitSourceErrorCode.CommitNotFound, `${opts.shownRepo}: commit ${opts.sha} does not exist on the server`);
      }
      throw serverSaid(opts.shownRepo, text.slice(4));
    }
    if (text.startsWith('shallow ') || text.startsWith('unshallow ')) continue;
    if (text.startsWith('NAK') || text.startsWith('ACK ')) break;
    throw protocolError(opts.shownRepo, 'unexpected line before the pack');
  }
  if (!sideband) {
    for await (const chunk of reader.rest()) await sink.write(chunk);
    return sink.close();
  }
  // Pack data (band 1) goes from the response's chunks to the file as it is, never assembled into packets:
  // copying each 64 KiB packet out of the chunks it spans doubled the garbage of a fetch (bench source-git).
  const toFile = (piece: Buffer): Promise<void> => sink.write(piece);
  for (;;) {
    const packet = await reader.readStreaming(1, toFile);
    if (packet === 'streamed') continue;
    // A flush ends the stream, early or not; whether the pack is whole is for the indexer to say. A stream
    // that stops without one was cut off (git's own client: "the remote end hung up unexpectedly").
    if (packet === 'eof') throw new PackError('the response ended without the flush that closes the pack stream');
    if (packet === 'flush') {
      // Read to the end rather than drop the connection on a server still finishing its response.
      for await (const _ of reader.rest());
      break;
    }
    if (packet === 'delim') throw protocolError(opts.shownRepo, 'unexpected delimiter in the pack stream');
    const band = packet[0];
    if (band === 1) await sink.write(packet.subarray(1));
    else if (band === 3) throw serverSaid(opts.shownRepo, packet.toString('utf8', 1));
    else if (band !== 2) throw protocolError(opts.shownRepo, `unknown side-band channel ${String(band)}`);
  }
  return sink.close();
}

const collectEveryBytes = 2 * 1024 * 1024;

/** Writes pack bytes to the file in pieces of about 1 MiB. */
class FileSink {
  readonly #file: FileHandle;
  #parts: Buffer[] = [];
  #pending = 0;
  #written = 0;
  #collectedAt = 0;

  constructor(file: FileHandle) {
    this.#file = file;
  }

  async write(chunk: Uint8Array): Promise<void> {
    this.#parts.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    this.#pending += chunk.byteLength;
    if (this.#pending >= 1024 * 1024) await this.#flush();
  }

  async #flush(): Promise<void> {
    // The response's chunks die as soon as they are written, but V8 would let tens of MiB of them wait for a
    // collection: a young-generation one (about a millisecond) every 2 MiB keeps them few.
    if (this.#written - this.#collectedAt >= collectEveryBytes) {
      this.#collectedAt = this.#written;
      garbageCollector()?.({ type: 'minor' });
    }
    const parts = this.#parts;
    this.#parts = [];
    this.#pending = 0;
    for (const part of parts) {
      for (let at = 0; at < part.length;) {
        const { bytesWritten } = await this.#file.write(part, at, part.length - at);
        at += bytesWritten;
        this.#written += bytesWritten;
      }
    }
  }

  async close(): Promise<number> {
    await this.#flush();
    return this.#written;
  }
}

/** Reads pkt-lines: a 4-hex-digit length (including itself), then the payload; 0000 is a flush. */
export class PktReader {
  readonly #it: AsyncIterator<Uint8Array>;
  #buf: Buffer = Buffer.alloc(0);
  #ended = false;

  constructor(body: AsyncIterable<Uint8Array>) {
    this.#it = body[Symbol.asyncIterator]();
  }

  /** What is left of a chunk after `#fill` took the start of it to complete `#buf`. */
  #rest: Buffer | undefined;

  /** The next chunk of the body, or undefined at its end. */
  async #next(): Promise<Buffer | undefined> {
    const rest = this.#rest;
    if (rest !== undefined) {
      this.#rest = undefined;
      return rest;
    }
    if (this.#ended) return undefined;
    const next = await this.#it.next();
    if (next.done === true) {
      this.#ended = true;
      return undefined;
    }
    return Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
  }

  /** Makes `#buf` hold at least `n` bytes, copying no more of a new chunk than it needs. */
  async #fill(n: number): Promise<boolean> {
    while (this.#buf.length < n) {
      const chunk = await this.#next();
      if (chunk === undefined) return false;
      if (this.#buf.length === 0) this.#buf = chunk;
      else {
        const need = n - this.#buf.length;
        if (chunk.length > need) this.#rest = chunk.subarray(need);
        this.#buf = Buffer.concat([this.#buf, chunk.subarray(0, need)]);
      }
    }
    return true;
  }

  #peeked: Buffer | 'flush' | 'delim' | 'eof' | undefined;

  /** The next packet, left to be read again. */
  async peek(): Promise<Buffer | 'flush' | 'delim' | 'eof'> {
    this.#peeked ??= await this.read();
    return this.#peeked;
  }

  /** The next packet's payload, 'flush' (0000), 'delim' (0001), or 'eof' at a clean end of the stream. */
  async read(): Promise<Buffer | 'flush' | 'delim' | 'eof'> {
    if (this.#peeked !== undefined) {
      const packet = this.#peeked;
      this.#peeked = undefined;
      return packet;
    }
    if (!(await this.#fill(4))) {
      if (this.#buf.length === 0) return 'eof';
      throw new PackError('the response breaks off inside a packet length');
    }
    const hex = this.#buf.toString('latin1', 0, 4);
    if (!/^[0-9a-f]{4}$/i.test(hex)) throw new PackError('the response is not a sequence of pkt-lines');
    const len = Number.parseInt(hex, 16);
    if (len === 0 || len === 1) {
      this.#buf = this.#buf.subarray(4);
      return len === 0 ? 'flush' : 'delim';
    }
    if (len < 4) throw new PackError(`invalid pkt-line length ${len}`);
    if (!(await this.#fill(len))) throw new PackError('the response breaks off inside a packet');
    const payload = this.#buf.subarray(4, len);
    this.#buf = this.#buf.subarray(len);
    return payload;
  }

  /**
   * Like `read`, except that a packet whose first payload byte is `band` is not assembled: the rest of its
   * payload goes to `sink` in the pieces it arrived in (views of the response's chunks), and 'streamed' is
   * returned. Other packets are returned whole, as by `read`.
   */
  async readStreaming(band: number, sink: (piece: Buffer) => Promise<void>): Promise<Buffer | 'flush' | 'delim' | 'eof' | 'streamed'> {
    if (this.#peeked !== undefined || !(await this.#fill(5)) || this.#buf[4] !== band) return this.read();
    const hex = this.#buf.toString('latin1', 0, 4);
    if (!/^[0-9a-f]{4}$/i.test(hex)) throw new PackError('the response is not a sequence of pkt-lines');
    const len = Number.parseInt(hex, 16);
    if (len < 5) return this.read();
    this.#buf = this.#buf.subarray(5);
    for (let remaining = len - 5; remaining > 0;) {
      if (this.#buf.length === 0) {
        const chunk = await this.#next();
        if (chunk === undefined) throw new PackError('the response breaks off inside a packet');
        this.#buf = chunk;
        continue;
      }
      const piece = this.#buf.subarray(0, Math.min(remaining, this.#buf.length));
      this.#buf = this.#buf.subarray(piece.length);
      remaining -= piece.length;
      await sink(piece);
    }
    return 'streamed';
  }

  /** Whatever follows, unframed (a pack sent without side-band). */
  async *rest(): AsyncGenerator<Uint8Array> {
    if (this.#peeked !== undefined) throw new Error('PktReader.rest after peek');
    if (this.#buf.length > 0) yield this.#buf;
    this.#buf = Buffer.alloc(0);
    for (let chunk = await this.#next(); chunk !== undefined; chunk = await this.#next()) yield chunk;
  }
}

export function pktLine(text: string): Buffer {
  const payload = Buffer.from(text, 'utf8');
  return Buffer.concat([Buffer.from((payload.length + 4).toString(16).padStart(4, '0'), 'latin1'), payload]);
}

function expectGit(res: SessionResponse, contentType: string, shownRepo: string): void {
  if (res.statusCode !== 200) throw new HttpStatusError(res.statusCode, `HTTP ${res.statusCode}`);
  const type = (res.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== contentType) throw protocolError(shownRepo, `expected ${contentType}, got ${type === '' ? 'no content type' : JSON.stringify(type)}`);
}

function protocolError(shownRepo: string, detail: string): GitSourceError {
  return new GitSourceError(GitSourceErrorCode.ServerError, `${shownRepo}: the server's answer is not valid Git upload-pack protocol (${detail})`);
}

function serverSaid(shownRepo: string, message: string): GitSourceError {
  const text = message.trim().replace(/[^\x20-\x7e]/g, '?');
  return new GitSourceError(
    GitSourceErrorCode.ServerError,
    `${shownRepo}: the server reported an error: ${text.length > 200 ? `${text.slice(0, 200)}…` : text}`,
  );
}

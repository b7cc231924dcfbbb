// A snapshot's files cost memory in proportion to their bytes. zlib's output used to be a
// view of a 16–64 KiB chunk, so each tiny file pinned the whole chunk (20,000 files ≈ 800 MiB). Measured
// deterministically by retained size: the ArrayBuffer behind each returned content.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GitServer } from '@syncline/test-support';
import { startGitServer } from '@syncline/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGitSource } from './index.ts';
import { PktReader } from './upload-pack.ts';

let server: GitServer;
let scratch: string;

beforeAll(async () => {
  server = await startGitServer();
  scratch = await mkdtemp(join(tmpdir(), 'source-git-memory-'));
});
afterAll(async () => {
  await server.close();
  await rm(scratch, { recursive: true, force: true });
});

describe('memory of a read snapshot', () => {
  it('each file pins about its own bytes: tiny, deltified, empty and large files alike', async () => {
    // given: 3,000 tiny files, near-identical ones (packed as deltas), an empty one, a large one
    const repo = await server.createRepo('memory');
    const files: Record<string, string> = {};
    for (let i = 0; i < 3000; i++) files[`tiny/t${i}.yaml`] = `n: ${i}\n`;
    const base = Array.from({ length: 200 }, (_, i) => `  key${i}: value-${i}`).join('\n');
    for (let i = 0; i < 50; i++) files[`similar/s${i}.yaml`] = `${base}\n  variant: ${i}\n`;
    files['empty.txt'] = '';
    files['large.txt'] = Array.from({ length: 20_000 }, (_, i) => ((i * 2654435761) >>> 0).toString(36)).join('\n');
    const sha = await repo.commit(files);
    const source = createGitSource({ cacheDir: await mkdtemp(join(scratch, 'cache-')), allowInsecureHttp: true });

    // when
    const read = await source.readPath(await source.fetchSnapshot({ repo: repo.url, sha }), '');

    // then
    expect(read).toHaveLength(Object.keys(files).length);
    const held = read.reduce((n, f) => n + f.content.byteLength, 0);
    const pinned = read.reduce((n, f) => n + f.content.buffer.byteLength, 0);
    expect(held).toBe(Object.values(files).reduce((n, c) => n + Buffer.byteLength(c), 0));
    expect(pinned).toBeLessThanOrEqual(2 * held);
    for (const f of read) expect(f.content.buffer.byteLength, f.path).toBeLessThanOrEqual(2 * f.content.byteLength + 64);
  }, 60_000);
});

describe('memory of a fetch', () => {
  it('side-band pack data reaches the sink as views of the response chunks, never copied into packets', async () => {
    // given: three 64 KiB band-1 packets, a progress packet and a flush, cut into chunks across packet bounds
    const packets = [0, 1, 2].map((k) => Buffer.concat([Buffer.from('fff4\u0001', 'latin1'), Buffer.alloc(0xfff4 - 5, k + 1)]));
    const progress = Buffer.from('000a\u0002hello', 'latin1');
    const stream = Buffer.concat([...packets, progress, Buffer.from('0000', 'latin1')]);
    const chunks: Buffer[] = [];
    for (let at = 0; at < stream.length; at += 40_000) chunks.push(Buffer.from(stream.subarray(at, at + 40_000)));
    const reader = new PktReader(
      (async function* body() {
        for (const chunk of chunks) yield await Promise.resolve(chunk);
      })(),
    );
    const pieces: Buffer[] = [];

    // when
    const seen: Array<string> = [];
    for (;;) {
      const packet = await reader.readStreaming(1, (piece) => {
        pieces.push(piece);
        return Promise.resolve();
      });
      if (packet === 'flush') break;
      seen.push(packet === 'streamed' ? 'streamed' : Buffer.isBuffer(packet) ? packet.toString('latin1') : packet);
    }

    // then: the data is whole and in order, and every piece is a view of a chunk the body yielded
    expect(seen).toEqual(['streamed', 'streamed', 'streamed', '\u0002hello']);
    expect(Buffer.concat(pieces)).toEqual(Buffer.concat(packets.map((p) => p.subarray(5))));
    const chunkMemory = new Set(chunks.map((c) => c.buffer));
    for (const piece of pieces) expect(chunkMemory.has(piece.buffer)).toBe(true);
  });
});

// `pnpm bench source-git`: a generated 5,000-file / ~50 MB repo on the real test Git server.
// Cold fetch vs native `git clone --depth 1` (same server, same run), peak memory of the fetch, reading the
// snapshot, re-resolving an unchanged revision, and 100 concurrent callers of one new SHA.
// The fetch runs in a child process so its peak RSS (its own VmHWM) is the fetch's alone; the child loads
// source-git only (the test Git server's code is the parent's, imported below the child's branch).
// Then 60,000 tiny files: the fetch's peak RSS, and what reading them all keeps in buffers.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGitSource } from '../src/index.ts';

const MB = 1024 * 1024;
const fmt = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

interface ChildResult {
  fetchMs: number;
  readAllMs: number;
  readAllFiles: number;
  readAllBytes: number;
  readDirMs: number;
  readDirFiles: number;
  /** Peak RSS of the child right after the fetch (its own VmHWM). */
  fetchRssMb: number;
  maxRssMb: number;
  heapUsedMb: number;
  snapshotBytes: number;
  /** RSS of the child before the fetch (Node + the modules loaded). */
  startRssMb: number;
  /** Growth of external memory (ArrayBuffers included) and of ArrayBuffers alone while holding all files read. */
  readAllExternalMb: number;
  readAllArrayBuffersMb: number;
  /** Sum of the ArrayBuffers behind the returned contents. */
  readAllPinnedBytes: number;
}

/**
 * The peak RSS of this process alone, in MB: VmHWM (the high-water mark of its own address space). getrusage's
 * maxRSS is not that: Linux carries it across fork and exec, so a child starts with its parent's RSS at the
 * fork as its "peak" (this bench's parent, holding the generated repo, can be bigger than the fetch).
 */
function ownPeakRssMb(): number {
  try {
    const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (hwm?.[1] !== undefined) return Number(hwm[1]) / 1024;
  } catch {
    // not Linux: fall back to getrusage
  }
  return process.resourceUsage().maxRSS / 1024;
}

if (process.argv[2] === '--child') {
  // Child: one cold fetch into an empty cache, then reads.
  const [, , , repo, sha, cacheDir, maxFiles] = process.argv;
  if (repo === undefined || sha === undefined || cacheDir === undefined) throw new Error('usage: --child repo sha cacheDir [maxFiles]');
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
  const startRssMb = process.memoryUsage().rss / MB;
  const source = createGitSource({ cacheDir, allowInsecureHttp: true, limits: { maxFiles: Number(maxFiles ?? 20_000) } });
  let t = performance.now();
  const snapshot = await source.fetchSnapshot({ repo, sha });
  const fetchMs = performance.now() - t;
  const fetchRssMb = ownPeakRssMb();
  const { directoryBytes } = await import('../src/cache.ts');
  t = performance.now();
  const dir = await source.readPath(snapshot, 'apps/team-7');
  const readDirMs = performance.now() - t;
  gc();
  const before = process.memoryUsage();
  t = performance.now();
  const all = await source.readPath(snapshot, '');
  const readAllMs = performance.now() - t;
  gc();
  const after = process.memoryUsage();
  const result: ChildResult = {
    fetchMs,
    readAllMs,
    readAllFiles: all.length,
    readAllBytes: all.reduce((n, f) => n + f.content.length, 0),
    readDirMs,
    readDirFiles: dir.length,
    fetchRssMb,
    maxRssMb: ownPeakRssMb(),
    heapUsedMb: process.memoryUsage().heapUsed / MB,
    snapshotBytes: await directoryBytes(snapshot.dir),
    startRssMb,
    readAllExternalMb: (after.external - before.external) / MB,
    readAllArrayBuffersMb: (after.arrayBuffers - before.arrayBuffers) / MB,
    readAllPinnedBytes: all.reduce((n, f) => n + f.content.buffer.byteLength, 0),
  };
  process.stdout.write(JSON.stringify(result));
  process.exit(0);
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ ms: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve({ ms: performance.now() - started, stdout, stderr });
      else reject(new Error(`${cmd} ${args.join(' ')} exited ${String(code)}: ${stderr}`));
    });
  });
}

const { generateRepo, startGitServer } = await import('@syncline/test-support');
const scratch = await mkdtemp(join(tmpdir(), 'bench-source-git-'));
await using server = await startGitServer();
try {
  const repo = await server.createRepo('bench');
  let t = performance.now();
  const sha = await generateRepo(repo, { files: 5_000, totalBytes: 50 * MB });
  const genMs = performance.now() - t;
  const packed = await run('git', ['count-objects', '-v', '-H'], { ...process.env, GIT_DIR: repo.dir });
  console.log(`generated 5,000 files in ${fmt(genMs)}; bare repo: ${packed.stdout.replace(/\n/g, ' ').trim()}`);

  // Native git, same server, same run. Best of two (the first also warms the server's page cache).
  const gitEnv = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
  const timeV = ['-f', '%M', 'git', 'clone', '--quiet', '--depth', '1'];
  const natives: Array<{ ms: number; rssMb: number }> = [];
  for (let i = 0; i < 2; i++) {
    const r = await run('/usr/bin/time', [...timeV, repo.url, join(scratch, `native-${i}`)], gitEnv);
    natives.push({ ms: r.ms, rssMb: Number.parseInt(r.stderr.trim().split('\n').pop() ?? '0', 10) / 1024 });
  }
  const native = natives.reduce((a, b) => (b.ms < a.ms ? b : a));

  // source-git cold fetch: best of two, each in a fresh process with an empty cache.
  const colds: ChildResult[] = [];
  for (let i = 0; i < 2; i++) {
    const cacheDir = await mkdtemp(join(scratch, 'cache-'));
    const r = await run(process.execPath, ['--expose-gc', import.meta.filename, '--child', repo.url, sha, cacheDir]);
    colds.push(JSON.parse(r.stdout) as ChildResult);
  }
  const cold = colds.reduce((a, b) => (b.fetchMs < a.fetchMs ? b : a));

  // In this process: a warm cache, then re-resolve and the thundering herd.
  const source = createGitSource({ cacheDir: await mkdtemp(join(scratch, 'cache-')), allowInsecureHttp: true });
  await source.resolveRevision({ repo: repo.url, revision: 'main' });
  server.resetRequests();
  t = performance.now();
  const again = await source.resolveRevision({ repo: repo.url, revision: 'main' });
  const resolveMs = performance.now() - t;
  const resolveCounts = server.requests('bench');
  if (again !== sha) throw new Error('re-resolve returned another SHA');

  const next = await repo.commit({ 'apps/team-1/service-1/extra.yaml': 'extra: true\n' });
  server.resetRequests();
  t = performance.now();
  const herd = await Promise.all(Array.from({ length: 100 }, () => source.fetchSnapshot({ repo: repo.url, sha: next })));
  const herdMs = performance.now() - t;
  const herdCounts = server.requests('bench');
  if (new Set(herd.map((s) => s.dir)).size !== 1) throw new Error('callers got different snapshots');

  // 60,000 tiny files, each in its own directory: 120,000 objects in a pack of a few MB.
  const tinyRepo = await server.createRepo('tiny');
  const tinySha = await generateRepo(tinyRepo, { files: 60_000, totalBytes: 60_000 * 40 });
  const tinyCache = await mkdtemp(join(scratch, 'cache-'));
  const tinyRun = await run(process.execPath, ['--expose-gc', import.meta.filename, '--child', tinyRepo.url, tinySha, tinyCache, '60000']);
  const tiny = JSON.parse(tinyRun.stdout) as ChildResult;

  const ratio = cold.fetchMs / native.ms;
  console.log(
    `cold runs (fetch ms): ${colds.map((c) => c.fetchMs.toFixed(0)).join(', ')}; native runs (ms): ${natives.map((n) => n.ms.toFixed(0)).join(', ')}`,
  );
  console.log(`snapshot on disk: ${(cold.snapshotBytes / MB).toFixed(1)} MB; heap after reads: ${cold.heapUsedMb.toFixed(0)} MB`);
  console.log('--- source-git benchmark (5,000 files / ~50 MB, loopback git http-backend) ---');
  console.log(`native git clone --depth 1:        ${fmt(native.ms)}, peak RSS ${native.rssMb.toFixed(0)} MB`);
  console.log(
    `source-git cold fetchSnapshot:     ${fmt(cold.fetchMs)}, peak RSS ${cold.fetchRssMb.toFixed(0)} MB (target ≤ 150 MB: ${cold.fetchRssMb <= 150 ? 'met' : 'NOT met'}; process at start ${cold.startRssMb.toFixed(0)} MB; ${cold.maxRssMb.toFixed(0)} MB after reading all files)`,
  );
  console.log(`ratio cold fetch / native clone:   ${ratio.toFixed(2)}x (target <= 2.0x)`);
  console.log(`readPath 1 dir (${cold.readDirFiles} files):          ${cold.readDirMs.toFixed(0)} ms`);
  console.log(`readPath all (${cold.readAllFiles} files, ${(cold.readAllBytes / MB).toFixed(1)} MB):  ${fmt(cold.readAllMs)}`);
  console.log(
    `re-resolve unchanged revision:     ${resolveMs.toFixed(0)} ms, requests info/refs=${resolveCounts.infoRefs} upload-pack=${resolveCounts.uploadPack}`,
  );
  console.log(`100 concurrent callers of new SHA: ${fmt(herdMs)}, fetches (upload-pack POSTs)=${herdCounts.uploadPack}`);
  console.log(
    `60,000 tiny files: fetch ${fmt(tiny.fetchMs)}, peak RSS ${tiny.fetchRssMb.toFixed(0)} MB (process at start ${tiny.startRssMb.toFixed(0)} MB; ` +
      `was 562 MB before files got buffers of their own), target <= ${(tiny.startRssMb + 200).toFixed(0)} MB (start + 200)`,
  );
  console.log(
    `60,000 tiny files: readPath all (${tiny.readAllFiles} files, ${(tiny.readAllBytes / MB).toFixed(1)} MB) in ${fmt(tiny.readAllMs)}: ` +
      `external+arrayBuffers +${tiny.readAllExternalMb.toFixed(1)} MB, buffers pinned ${(tiny.readAllPinnedBytes / MB).toFixed(1)} MB ` +
      `(was 64 KiB a file, 3.9 GB), target <= ${((2 * tiny.readAllBytes) / MB).toFixed(1)} MB (2x the bytes)`,
  );
} finally {
  await rm(scratch, { recursive: true, force: true });
}

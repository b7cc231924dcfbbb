// Runs indexAndVerify in a worker thread for a pack over INLINE_INDEX_BYTES (a smaller one is indexed on the calling
// thread, see indexFetchedPack): indexing tens of thousands of objects allocates (and leaves for the
// collector) far more than it keeps, and a fetch's peak belongs off the operator's long-lived heap. The worker's heap is gone when it exits; its young generation is kept small so garbage does not pile
// up before a scavenge, and it runs a full collection after every few MiB it inflates (index-pack.ts). The
// network stays on the main thread (the transport is injected and cannot move).
// The worker runs these modules as JavaScript the main thread has already stripped of types:
// loading .ts in the worker made Node instantiate its TypeScript stripper there too, ~30 MB of the fetch's peak.
import { existsSync, readFileSync } from 'node:fs';
import * as nodeModule from 'node:module';
import * as sea from 'node:sea';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { IndexJob, IndexOutcome } from './index-pack.ts';
import { garbageCollector } from './gc.ts';
import { indexAndVerify } from './index-pack.ts';

if (!isMainThread && parentPort !== null && (workerData as { syncline?: unknown } | null)?.syncline === 'index-pack') {
  const port = parentPort;
  const { job } = workerData as { job: IndexJob };
  const gc = garbageCollector();
  indexAndVerify(job, gc === undefined ? undefined : () => gc({ type: 'major' })).then(
    (outcome) => port.postMessage({ outcome }),
    (err: unknown) => port.postMessage({ failure: err instanceof Error ? err.message : String(err) }),
  );
}

/**
 * Packs up to this size are indexed on the calling thread. A worker starts an isolate of its own, and that
 * costs 6–11 MB of resident memory while it runs (bench operator, 1,000 syncs on a small repository: the new
 * commit's RSS peak) against a pack of a few hundred KiB, whose objects, inflated one at a time, are garbage a
 * young-generation collection frees. Larger packs (a repository's first fetch, vendored charts) keep the worker.
 */
export const INLINE_INDEX_BYTES = 1024 * 1024;

/**
 * Indexes and verifies a fetched pack of `packBytes`: a small one here (INLINE_INDEX_BYTES), a larger one in a
 * worker thread, which aborting `signal` terminates.
 */
export async function indexFetchedPack(job: IndexJob, packBytes: number, signal: AbortSignal): Promise<IndexOutcome> {
  if (packBytes > INLINE_INDEX_BYTES) return indexInWorker(job, signal);
  signal.throwIfAborted();
  return indexAndVerify(job);
}

/** Indexes and verifies a pack in a worker thread; aborting `signal` terminates it. */
export function indexInWorker(job: IndexJob, signal: AbortSignal): Promise<IndexOutcome> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerEntry(), {
      workerData: { syncline: 'index-pack', job },
      // 2 MiB rather than 8: the indexer's garbage is short-lived and the worker scavenges often anyway; the
      // smaller young generation took ~6 MB off a 50 MB repo's fetch peak (bench source-git).
      resourceLimits: { maxYoungGenerationSizeMb: 2 },
      stdout: false,
      stderr: false,
    });
    let settled = false;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      fn();
      void worker.terminate();
    };
    const onAbort = (): void => finish(() => reject(new Error('the operation was aborted while indexing the pack')));
    signal.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (message: { outcome?: IndexOutcome; failure?: string }) => {
      finish(() =>
        message.outcome !== undefined ? resolve(message.outcome) : reject(new Error(`indexing the pack failed: ${message.failure ?? 'unknown error'}`)),
      );
    });
    worker.on('error', (err: unknown) => finish(() => reject(err instanceof Error ? err : new Error(String(err)))));
    worker.on('exit', (code) => finish(() => reject(new Error(`the pack indexer exited with code ${code}`))));
  });
}

let entry: URL | undefined;

/**
 * In a single executable (`syncline` as a release ships it: one bundled script, no module files beside it), the
 * worker is the bundle of this module that the executable carries as its asset `index-pack-worker.mjs`.
 */
function seaEntry(): URL | undefined {
  if (!sea.isSea()) return undefined;
  return new URL(`data:text/javascript;base64,${Buffer.from(sea.getAsset('index-pack-worker.mjs')).toString('base64')}`);
}

/**
 * In the operator's JavaScript bundle (packages/cli/build/bundle.ts: what the image runs), this module is part
 * of a chunk; the worker is the bundle of this module written beside it as `index-pack-worker.mjs`.
 */
function bundledEntry(): URL | undefined {
  if (import.meta.url.endsWith('.ts')) return undefined;
  const beside = new URL('./index-pack-worker.mjs', import.meta.url);
  return existsSync(beside) ? beside : undefined;
}

/**
 * This module and what it imports (index-pack.ts, pack.ts, gc.ts: Node built-ins only) as `data:` URLs of JavaScript,
 * stripped once per process; where that is not possible (no `stripTypeScriptTypes`), this file itself.
 */
function workerEntry(): URL {
  entry ??= seaEntry() ?? bundledEntry() ?? strippedEntry() ?? new URL(import.meta.url);
  return entry;
}

function strippedEntry(): URL | undefined {
  const strip = (nodeModule as { stripTypeScriptTypes?: (code: string) => string }).stripTypeScriptTypes;
  if (strip === undefined || !import.meta.url.startsWith('file:')) return undefined;
  // It warns that it is experimental (once per process); what it does here is what loading a .ts file does.
  const emitWarning: typeof process.emitWarning = Reflect.get(process, 'emitWarning');
  process.emitWarning = () => undefined;
  try {
    const asData = (name: string, imports: Record<string, string>): string => {
      let code = strip(readFileSync(new URL(name, import.meta.url), 'utf8'));
      for (const [from, to] of Object.entries(imports)) code = code.replaceAll(`from '${from}'`, `from '${to}'`);
      return `data:text/javascript;base64,${Buffer.from(code).toString('base64')}`;
    };
    const pack = asData('./pack.ts', {});
    const indexPack = asData('./index-pack.ts', { './pack.ts': pack });
    const gc = asData('./gc.ts', {});
    return new URL(asData('./index-pack-worker.ts', { './index-pack.ts': indexPack, './gc.ts': gc }));
  } catch {
    return undefined;
  } finally {
    process.emitWarning = emitWarning;
  }
}

// Runs indexAndVerify in a worker thread: indexing tens of thousands of objects allocates (and leaves for the
// collector) far more than it keeps, and DESIGN.md asks to keep a fetch's peak off the operator's long-lived
// heap. The worker's heap is gone when it exits; its young generation is kept small so garbage does not pile
// up before a scavenge. The network stays on the main thread (the transport is injected and cannot move).
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { IndexJob, IndexOutcome } from './index-pack.ts';
import { indexAndVerify } from './index-pack.ts';

if (!isMainThread && parentPort !== null && (workerData as { syncline?: unknown } | null)?.syncline === 'index-pack') {
  const port = parentPort;
  const { job } = workerData as { job: IndexJob };
  indexAndVerify(job).then(
    (outcome) => port.postMessage({ outcome }),
    (err: unknown) => port.postMessage({ failure: err instanceof Error ? err.message : String(err) }),
  );
}

/** Indexes and verifies a pack in a worker thread; aborting `signal` terminates it. */
export function indexInWorker(job: IndexJob, signal: AbortSignal): Promise<IndexOutcome> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), {
      workerData: { syncline: 'index-pack', job },
      resourceLimits: { maxYoungGenerationSizeMb: 8 },
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
      finish(() => (message.outcome !== undefined ? resolve(message.outcome) : reject(new Error(`indexing the pack failed: ${message.failure ?? 'unknown error'}`))));
    });
    worker.on('error', (err: unknown) => finish(() => reject(err instanceof Error ? err : new Error(String(err)))));
    worker.on('exit', (code) => finish(() => reject(new Error(`the pack indexer exited with code ${code}`))));
  });
}

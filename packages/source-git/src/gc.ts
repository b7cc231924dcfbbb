// V8's collector on demand, for the few places where a fetch leaves a pack's worth of short-lived buffers that
// V8 would otherwise let pile up (it waits for some 64 MiB of them before collecting; see bench source-git).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export type CollectGarbage = (options: { type: 'minor' | 'major' }) => void;

let collect: CollectGarbage | null | undefined;

/** V8's `gc` for this thread's heap, or undefined where it cannot be had. The flag only gives new contexts the function. */
export function garbageCollector(): CollectGarbage | undefined {
  if (collect === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      const gc: unknown = runInNewContext('gc');
      collect = typeof gc === 'function' ? (gc as CollectGarbage) : null;
    } catch {
      collect = null;
    }
  }
  return collect ?? undefined;
}

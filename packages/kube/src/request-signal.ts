// One request's abort signal: the caller's signal, an overall deadline and the write fence, combined
// without AbortSignal.any. A composite of AbortSignal.timeout and a long-lived signal (the fence) stays
// reachable until the timer fires, ~0.5 KB per request (500,000 requests kept 255 MB on Node 24); here the
// timer and the listeners go as soon as the request settles.
//
// A request does not add a listener of its own to the caller's signal or the fence: every request of a client
// shares one fence, and Node's EventTarget walks a signal's whole listener list on each add and remove (it
// looks for a duplicate), so with a hundred writes in flight each write paid for all the others (2 % of the
// operator's CPU in a burst of applies). Each signal gets one listener, once, which aborts the requests that
// watch it now: joining and leaving are a Set's add and delete.

/** The requests that watch one signal: aborted together by its one listener. */
type Watchers = Set<() => void>;

const watchersOf = new WeakMap<AbortSignal, Watchers>();

/** Runs `onAbort` when `signal` aborts (not yet aborted); returns what stops it. */
function watch(signal: AbortSignal, onAbort: () => void): () => void {
  let watchers = watchersOf.get(signal);
  if (watchers === undefined) {
    const set: Watchers = new Set();
    watchers = set;
    watchersOf.set(signal, set);
    signal.addEventListener(
      'abort',
      () => {
        const now = [...set];
        set.clear();
        for (const run of now) {
          // as with a listener of its own: one that throws is reported, and the others still run
          try {
            run();
          } catch (error) {
            queueMicrotask(() => {
              throw error;
            });
          }
        }
      },
      { once: true },
    );
  }
  watchers.add(onAbort);
  const joined = watchers;
  return () => joined.delete(onAbort);
}

/** How many requests watch `signal` now (tests: a settled request leaves nothing behind). */
export function watchersOfSignal(signal: AbortSignal): number {
  return watchersOf.get(signal)?.size ?? 0;
}

export type RequestSignal = {
  readonly signal: AbortSignal;
  /** What aborted it, if anything: the caller, the fence or the deadline. */
  cause(): 'caller' | 'fence' | 'deadline' | undefined;
  /** The request settled: drop the timer and the listeners. */
  done(): void;
};

export function requestSignal(options: { timeoutMs: number; signal?: AbortSignal | undefined; fence?: AbortSignal | undefined }): RequestSignal {
  const controller = new AbortController();
  let cause: 'caller' | 'fence' | 'deadline' | undefined;
  const abort = (why: 'caller' | 'fence' | 'deadline', reason: unknown): void => {
    if (cause !== undefined) return;
    cause = why;
    controller.abort(reason);
  };
  const { signal, fence } = options;
  let leaveCaller: (() => void) | undefined;
  let leaveFence: (() => void) | undefined;
  if (signal?.aborted === true) abort('caller', signal.reason);
  else if (signal !== undefined) leaveCaller = watch(signal, () => abort('caller', signal.reason));
  if (fence?.aborted === true) abort('fence', fence.reason);
  else if (fence !== undefined) leaveFence = watch(fence, () => abort('fence', fence.reason));
  const timer = setTimeout(() => abort('deadline', new DOMException('The operation timed out.', 'TimeoutError')), options.timeoutMs);
  timer.unref();
  return {
    signal: controller.signal,
    cause: () => cause,
    done() {
      clearTimeout(timer);
      leaveCaller?.();
      leaveFence?.();
    },
  };
}

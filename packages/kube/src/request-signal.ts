// One request's abort signal: the caller's signal, an overall deadline and the write fence, combined
// without AbortSignal.any. A composite of AbortSignal.timeout and a long-lived signal (the fence) stays
// reachable until the timer fires, ~0.5 KB per request (500,000 requests kept 255 MB on Node 24); here the
// timer and the listeners go as soon as the request settles.
//
// A request does not add a listener of its own to the caller's signal or the fence: every request of a client
// shares one fence, and Node's EventTarget walks a signal's whole listener list on each add and remove (it
// looks for a duplicate), so with a hundred writes in flight each write paid for all the others (2 to 3 % of the
// operator's CPU in a burst of applies). Each signal gets one listener, once, which aborts the requests that
// watch it now: joining and leaving are a Set's add and delete.

/** The requests that watch one signal: aborted together by its one listener. */
type Watchers = Set<() => void>;

const watchersOf = new WeakMap<AbortSignal, Watchers>();

/** Runs `run` as an event listener runs: one that throws is reported (an uncaught exception), and the others still run. */
function reported(run: () => void): void {
  try {
    run();
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
  }
}

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
        for (const run of now) reported(run);
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

/**
 * What a request's exchange listens to for its end: an AbortSignal has this shape through `abortable`, and a
 * RequestSignal has it without an AbortController of its own (one fewer object and listener per request).
 */
export type Abortable = {
  readonly aborted: boolean;
  readonly reason: unknown;
  /** Runs `onAbort` once, when it aborts (never when it already has); returns what stops it. */
  listen(onAbort: () => void): () => void;
};

/** An AbortSignal as an Abortable. */
export function abortable(signal: AbortSignal): Abortable {
  return {
    get aborted() {
      return signal.aborted;
    },
    get reason(): unknown {
      const reason: unknown = signal.reason;
      return reason;
    },
    listen(onAbort) {
      signal.addEventListener('abort', onAbort, { once: true });
      return () => signal.removeEventListener('abort', onAbort);
    },
  };
}

export type RequestSignal = Abortable & {
  /** The same as an AbortSignal (made on first use: the REST client listens through `listen`). */
  readonly signal: AbortSignal;
  /** What aborted it, if anything: the caller, the fence or the deadline. */
  cause(): 'caller' | 'fence' | 'deadline' | undefined;
  /** The request settled: drop the timer and the listeners. */
  done(): void;
};

export function requestSignal(options: { timeoutMs: number; signal?: AbortSignal | undefined; fence?: AbortSignal | undefined }): RequestSignal {
  let cause: 'caller' | 'fence' | 'deadline' | undefined;
  let reason: unknown;
  let listener: (() => void) | undefined;
  let listeners: (() => void)[] | undefined;
  let controller: AbortController | undefined;
  const abort = (why: 'caller' | 'fence' | 'deadline', given: unknown): void => {
    if (cause !== undefined) return;
    cause = why;
    reason = given;
    const run = listener;
    const more = listeners;
    listener = undefined;
    listeners = undefined;
    if (run !== undefined) reported(run);
    if (more !== undefined) for (const each of more) reported(each);
  };
  const listen = (onAbort: () => void): (() => void) => {
    if (cause !== undefined) return () => undefined;
    if (listener === undefined && listeners === undefined) {
      listener = onAbort;
      return () => {
        if (listener === onAbort) listener = undefined;
      };
    }
    (listeners ??= []).push(onAbort);
    return () => {
      if (listener === onAbort) listener = undefined;
      const at = listeners?.indexOf(onAbort) ?? -1;
      if (at !== -1) listeners?.splice(at, 1);
    };
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
    get aborted() {
      return cause !== undefined;
    },
    get reason(): unknown {
      return reason;
    },
    listen,
    get signal() {
      if (controller === undefined) {
        const made = new AbortController();
        controller = made;
        if (cause !== undefined) made.abort(reason);
        else listen(() => made.abort(reason));
      }
      return controller.signal;
    },
    cause: () => cause,
    done() {
      clearTimeout(timer);
      leaveCaller?.();
      leaveFence?.();
    },
  };
}

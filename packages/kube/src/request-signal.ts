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
/** The signal watched last and its watchers (a weak reference would cost more than it saves: it is one signal). */
const last: { signal: AbortSignal | undefined; watchers: Watchers | undefined } = { signal: undefined, watchers: undefined };

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
  // most requests watch the same signal as the last one (their client's fence): no WeakMap look-up then
  let watchers = signal === last.signal ? last.watchers : watchersOf.get(signal);
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
  last.signal = signal;
  last.watchers = watchers;
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

type Cause = 'caller' | 'fence' | 'deadline';

/** A class, not an object of closures and accessors: one is made per request. */
class PendingRequest implements RequestSignal {
  #cause: Cause | undefined;
  #reason: unknown;
  /** The one listener most requests have (their exchange), and any beyond it. */
  #listener: (() => void) | undefined;
  #more: (() => void)[] | undefined;
  #controller: AbortController | undefined;
  #leaveCaller: (() => void) | undefined;
  #leaveFence: (() => void) | undefined;
  readonly #timer: NodeJS.Timeout;

  constructor(options: { timeoutMs: number; signal?: AbortSignal | undefined; fence?: AbortSignal | undefined }) {
    const { signal, fence } = options;
    if (signal?.aborted === true) this.#abort('caller', signal.reason);
    else if (signal !== undefined) this.#leaveCaller = watch(signal, () => this.#abort('caller', signal.reason));
    if (fence?.aborted === true) this.#abort('fence', fence.reason);
    else if (fence !== undefined) this.#leaveFence = watch(fence, () => this.#abort('fence', fence.reason));
    this.#timer = setTimeout(() => this.#abort('deadline', new DOMException('The operation timed out.', 'TimeoutError')), options.timeoutMs);
    this.#timer.unref();
  }

  get aborted(): boolean {
    return this.#cause !== undefined;
  }

  get reason(): unknown {
    return this.#reason;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const made = new AbortController();
      this.#controller = made;
      if (this.#cause !== undefined) made.abort(this.#reason);
      else this.listen(() => made.abort(this.#reason));
    }
    return this.#controller.signal;
  }

  listen(onAbort: () => void): () => void {
    if (this.#cause !== undefined) return () => undefined;
    if (this.#listener === undefined && this.#more === undefined) {
      this.#listener = onAbort;
      return () => {
        if (this.#listener === onAbort) this.#listener = undefined;
      };
    }
    (this.#more ??= []).push(onAbort);
    return () => {
      if (this.#listener === onAbort) this.#listener = undefined;
      const at = this.#more?.indexOf(onAbort) ?? -1;
      if (at !== -1) this.#more?.splice(at, 1);
    };
  }

  cause(): Cause | undefined {
    return this.#cause;
  }

  done(): void {
    clearTimeout(this.#timer);
    this.#leaveCaller?.();
    this.#leaveFence?.();
  }

  #abort(why: Cause, reason: unknown): void {
    if (this.#cause !== undefined) return;
    this.#cause = why;
    this.#reason = reason;
    const first = this.#listener;
    const more = this.#more;
    this.#listener = undefined;
    this.#more = undefined;
    if (first !== undefined) reported(first);
    if (more !== undefined) for (const each of more) reported(each);
  }
}

export function requestSignal(options: { timeoutMs: number; signal?: AbortSignal | undefined; fence?: AbortSignal | undefined }): RequestSignal {
  return new PendingRequest(options);
}

// The reconcile work queue: one entry per key however often it is added, never two workers on one key
// (an add while it runs marks it dirty and it runs again after), delayed requeues where the earliest
// wins, and per-key exponential backoff with jitter for transient failures (cockatiel).
import { ExponentialBackoff, type IBackoff, type IBackoffFactory } from 'cockatiel';
import { MAX_TIMER_MS } from './duration.ts';
import type { ReconcileOutcome } from './shell.ts';
import { trace } from './trace.ts';

export type { ReconcileOutcome };

/**
 * Slots several queues share (the manager's lanes of one group): a queue runs a key only when it has a slot of its
 * own (its concurrency) and one of the pool. A freed slot goes first to the queues that waited for one, in turn,
 * so one queue of the group cannot keep the others waiting.
 */
export class SlotPool {
  readonly limit: number;
  #used = 0;
  readonly #waiting = new Set<() => void>();

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Takes a slot when one is free; otherwise `wake` is called once one is freed. */
  take(wake: () => void): boolean {
    if (this.#used < this.limit) {
      this.#used++;
      return true;
    }
    this.#waiting.add(wake);
    return false;
  }

  release(): void {
    this.#used--;
    for (const wake of [...this.#waiting]) {
      if (this.#used >= this.limit) return;
      this.#waiting.delete(wake);
      wake();
    }
  }
}

export type WorkQueueOptions = {
  readonly concurrency: number;
  /** Slots shared with other queues, on top of `concurrency`. */
  readonly pool?: SlotPool;
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
  readonly onDepthChange?: (depth: number) => void;
  /** Backoff policy for transient failures; default cockatiel's exponential backoff with decorrelated jitter. */
  readonly backoff?: IBackoffFactory<unknown>;
  /** Milliseconds since the epoch (tests pass their own). */
  readonly now?: () => number;
};

type BackoffState = { backoff: IBackoff<unknown> | undefined };

export class WorkQueue {
  readonly #options: WorkQueueOptions;
  readonly #pending: string[] = [];
  readonly #queued = new Set<string>();
  readonly #running = new Set<string>();
  readonly #dirty = new Set<string>();
  readonly #timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  readonly #backoff = new Map<string, BackoffState>();
  readonly #policy: IBackoffFactory<unknown>;
  #handler: ((key: string) => Promise<ReconcileOutcome>) | undefined;
  #stopped = false;
  #idle: (() => void)[] = [];
  /** When a reconcile last finished, or work arrived at an idle queue, or the queue started. */
  #progressAt = 0;
  readonly #now: () => number;

  constructor(options: WorkQueueOptions) {
    this.#options = options;
    this.#policy = options.backoff ?? new ExponentialBackoff({ initialDelay: options.initialBackoffMs ?? 500, maxDelay: options.maxBackoffMs ?? 5 * 60_000 });
    this.#now = options.now ?? Date.now;
  }

  /**
   * How long a started queue has had work (waiting or running) without finishing any of it: 0 when it is
   * idle, not started or stopped. A liveness probe fails on a bound of this.
   */
  stalledForMs(): number {
    if (this.#handler === undefined || this.#stopped) return 0;
    if (this.#pending.length === 0 && this.#running.size === 0) return 0;
    return Math.max(0, this.#now() - this.#progressAt);
  }

  get depth(): number {
    return this.#pending.length;
  }

  /** Reconciles running now. */
  get inFlight(): number {
    return this.#running.size;
  }

  start(handler: (key: string) => Promise<ReconcileOutcome>): void {
    this.#handler = handler;
    this.#progressAt = this.#now();
    this.#pump();
  }

  /** Enqueue now; a no-op when the key is already waiting. */
  add(key: string): void {
    if (this.#stopped) return;
    const timer = this.#timers.get(key);
    if (timer !== undefined) {
      clearTimeout(timer.timer);
      this.#timers.delete(key);
    }
    if (this.#running.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    if (this.#pending.length === 0 && this.#running.size === 0) this.#progressAt = this.#now();
    this.#queued.add(key);
    this.#pending.push(key);
    trace(key, 'queued');
    this.#options.onDepthChange?.(this.#pending.length);
    this.#pump();
  }

  /** Enqueue after a delay; an earlier pending schedule for the key wins. */
  addAfter(key: string, requestedMs: number): void {
    if (this.#stopped) return;
    // Never hand a timer a delay it cannot hold: above 2^31-1 ms Node fires it after 1 ms (a hot loop).
    const delayMs = Number.isFinite(requestedMs) ? Math.min(requestedMs, MAX_TIMER_MS) : MAX_TIMER_MS;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + delayMs;
    const existing = this.#timers.get(key);
    if (existing !== undefined && existing.at <= at) return;
    if (existing !== undefined) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.#timers.set(key, { at, timer });
  }

  /** Forget a key entirely (its object is gone). */
  forget(key: string): void {
    const timer = this.#timers.get(key);
    if (timer !== undefined) clearTimeout(timer.timer);
    this.#timers.delete(key);
    this.#backoff.delete(key);
  }

  /** Stops taking work at once: nothing waiting or scheduled starts any more (the running reconciles go on). */
  halt(): void {
    this.#stopped = true;
    for (const { timer } of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  /** Stops taking work and waits for the running reconciles to finish. */
  async shutdown(): Promise<void> {
    this.halt();
    if (this.#running.size === 0) return;
    await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  readonly #wake = (): void => this.#pump();

  #pump(): void {
    const handler = this.#handler;
    if (handler === undefined) return;
    const pool = this.#options.pool;
    while (!this.#stopped && this.#running.size < this.#options.concurrency && this.#pending.length > 0) {
      if (pool !== undefined && !pool.take(this.#wake)) return;
      const key = this.#pending.shift() as string;
      this.#queued.delete(key);
      this.#options.onDepthChange?.(this.#pending.length);
      this.#running.add(key);
      trace(key, 'start');
      void this.#run(key, handler);
    }
  }

  async #run(key: string, handler: (key: string) => Promise<ReconcileOutcome>): Promise<void> {
    let outcome: ReconcileOutcome;
    try {
      outcome = await handler(key);
    } catch {
      outcome = { kind: 'retry' };
    }
    this.#running.delete(key);
    trace(key, `end:${outcome.kind}`);
    this.#options.pool?.release();
    this.#progressAt = this.#now();
    const state = this.#backoff.get(key) ?? { backoff: undefined };
    switch (outcome.kind) {
      case 'retry': {
        state.backoff = (state.backoff ?? this.#policy).next(undefined);
        this.#backoff.set(key, state);
        this.addAfter(key, state.backoff.duration);
        break;
      }
      case 'done':
      case 'wait':
      case 'stalled': {
        this.#backoff.delete(key);
        if (outcome.kind !== 'stalled' && outcome.requeueAfterMs !== undefined) this.addAfter(key, outcome.requeueAfterMs);
        break;
      }
    }
    if (this.#dirty.delete(key)) this.add(key);
    if (this.#stopped && this.#running.size === 0) for (const resolve of this.#idle.splice(0)) resolve();
    this.#pump();
  }
}

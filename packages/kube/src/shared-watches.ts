// Watches shared by the objects that need them: one informer per watched collection however many
// subscribers it has, stopped when the last one leaves. Each event wakes every subscriber.
import type { KubeRest } from './rest.ts';
import { Informer, type InformerOptions } from './informer.ts';
import type { WatchBudget } from './watch-budget.ts';

export type WatchSpec = Pick<InformerOptions, 'path' | 'labelSelector' | 'fieldSelector' | 'project'>;

export class SharedWatches {
  readonly #watches = new Map<string, { informer: Informer; subscribers: Set<string> }>();
  readonly #subscriptions = new Map<string, Set<string>>(); // subscriber → watch keys
  readonly #rest: KubeRest;
  readonly #wake: (subscriber: string) => void;
  readonly #onError: (error: unknown, watch: string) => void;
  readonly #budget: WatchBudget | undefined;

  constructor(options: { rest: KubeRest; wake: (subscriber: string) => void; onError: (error: unknown, watch: string) => void; budget?: WatchBudget }) {
    this.#rest = options.rest;
    this.#budget = options.budget;
    this.#wake = options.wake;
    this.#onError = options.onError;
  }

  /**
   * `subscriber` watches exactly `specs` from now on (the ones it no longer names are released). All or
   * nothing: when the new watches do not fit the budget, WatchBudgetError is thrown and nothing changes.
   */
  set(subscriber: string, specs: readonly WatchSpec[]): void {
    const wanted = new Map(specs.map((spec) => [`${spec.path}?${spec.labelSelector ?? ''}&${spec.fieldSelector ?? ''}`, spec]));
    const current = this.#subscriptions.get(subscriber) ?? new Set<string>();
    const added = [...wanted.keys()].filter((key) => !this.#watches.has(key)).length;
    const freed = [...current].filter((key) => !wanted.has(key) && this.#watches.get(key)?.subscribers.size === 1).length;
    this.#budget?.check(added - freed, `${subscriber} (${wanted.size} watches)`);
    for (const key of current) if (!wanted.has(key)) this.#release(subscriber, key);
    for (const [key, spec] of wanted) {
      let watch = this.#watches.get(key);
      if (watch === undefined) {
        const subscribers = new Set<string>();
        const informer = new Informer({
          rest: this.#rest,
          ...spec,
          onEvent: () => {
            for (const s of subscribers) this.#wake(s);
          },
          onError: (error) => this.#onError(error, key),
          ...(this.#budget === undefined ? {} : { budget: this.#budget }),
        });
        watch = { informer, subscribers };
        this.#watches.set(key, watch);
        informer.start();
      }
      watch.subscribers.add(subscriber);
    }
    if (wanted.size === 0) this.#subscriptions.delete(subscriber);
    else this.#subscriptions.set(subscriber, new Set(wanted.keys()));
  }

  /** All watches of every subscriber listed and healthy. */
  healthy(): boolean {
    return [...this.#watches.values()].every((w) => w.informer.synced && w.informer.healthy);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#watches.values()].map((w) => w.informer.stop()));
    this.#watches.clear();
    this.#subscriptions.clear();
  }

  #release(subscriber: string, key: string): void {
    const watch = this.#watches.get(key);
    if (watch === undefined) return;
    watch.subscribers.delete(subscriber);
    if (watch.subscribers.size === 0) {
      this.#watches.delete(key);
      void watch.informer.stop();
    }
  }
}

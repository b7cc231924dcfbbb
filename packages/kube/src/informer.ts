// A list-watch cache for one resource path, hardened against the informer's known failure modes: a watch
// that errors or ends is restarted from the last resourceVersion, a 410 Gone (expired version) re-lists,
// and every failure backs off instead of stopping for good. `synced` and `healthy` feed /readyz.
//
// A watch stream can also go silent without ending (a proxy or NAT that dropped it): the cache then no longer
// hears the cluster, yet looks healthy. So the informer keeps when it last heard from the server (a list, the
// server opening a watch, an event or a bookmark); a decision that trusts the cache asks `isFresh()` first and,
// when it is not, reads instead and may `restart()` the watch.
import type { KubeRest } from './rest.ts';
import { KubeApiError, WATCH_FRESH_MS } from './rest.ts';
import { sleep } from './sleep.ts';
import type { WatchBudget } from './watch-budget.ts';

/** A re-list of a large collection can take long on a loaded API server; it still has an end. */
const RELIST_TIMEOUT_MS = 5 * 60_000;

export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; [key: string]: unknown };
  [key: string]: unknown;
};

export type InformerEvent = 'ADDED' | 'MODIFIED' | 'DELETED';

export type InformerOptions = {
  readonly rest: KubeRest;
  /** Collection path, e.g. /apis/syncline.dev/v1alpha1/configsyncs (all namespaces). */
  readonly path: string;
  readonly labelSelector?: string;
  /** E.g. `metadata.name=db`: watch one object of a collection. */
  readonly fieldSelector?: string;
  /**
   * What to keep of each object in the cache (e.g. metadata only); default the whole object. `previous` is the
   * cached object it replaces (projected), for a projection that shares what did not change (see withUnchangedSpec).
   */
  readonly project?: (object: KubeObject, previous?: KubeObject) => KubeObject;
  /** `previous` is the cached object a MODIFIED replaces (undefined after a re-list found it new). */
  readonly onEvent: (type: InformerEvent, object: KubeObject, previous?: KubeObject) => void;
  readonly onError?: (error: unknown) => void;
  /** Upper bound of a single watch request; the server ends it and we continue from the last version. */
  readonly watchTimeoutSeconds?: number;
  /** The process's watch budget: start() takes one watch from it (or throws WatchBudgetError), stop() gives it back. */
  readonly budget?: WatchBudget;
};

export function objectKey(object: { metadata: { name: string; namespace?: string } }): string {
  return object.metadata.namespace === undefined || object.metadata.namespace === ''
    ? object.metadata.name
    : `${object.metadata.namespace}/${object.metadata.name}`;
}

/**
 * The object less metadata.managedFields, for a cache whose readers never look at them: the field managers' sets
 * are most of a small object (a ConfigSync: 4.7 of the 7.7 KB it held in the cache). Not for a cache whose
 * objects' ownership is judged from their managers (apply's appliedBy): those need them.
 */
export function withoutManagedFields(object: KubeObject): KubeObject {
  if (object.metadata['managedFields'] === undefined) return object;
  const { managedFields: _managedFields, ...metadata } = object.metadata;
  return { ...object, metadata };
}

/**
 * The object with the cached object's spec when both are one object (one uid) at one generation: for a kind whose
 * metadata.generation counts every change of its spec (a custom resource with the status subresource, as every
 * Syncline kind is), the same generation is the same spec. A status write (ours coming back, or anyone's) or a
 * metadata change then keeps the very spec object the cache held, so what is derived from a spec and kept by its
 * identity (the reconcile shell's parsed spec, see @syncline/runtime's shell.ts) is not derived again. The rest of
 * the object is the new one: a change to status, labels, annotations, finalizers or a deletion is seen as it comes.
 * An object deleted and created again under its name (a new uid, generation 1 again) keeps nothing.
 */
export function withUnchangedSpec(object: KubeObject, previous: KubeObject | undefined): KubeObject {
  if (previous === undefined || previous['spec'] === undefined || object['spec'] === undefined || previous['spec'] === object['spec']) return object;
  const { generation, uid } = object.metadata;
  if (generation === undefined || uid === undefined || previous.metadata['generation'] !== generation || previous.metadata['uid'] !== uid) return object;
  return { ...object, spec: previous['spec'] };
}

export class Informer {
  readonly #options: InformerOptions;
  readonly #cache = new Map<string, KubeObject>();
  readonly #abort = new AbortController();
  #synced = false;
  #healthy = false;
  readonly #firstSync = Promise.withResolvers<void>();
  #running: Promise<void> | undefined;
  #release: (() => void) | undefined;
  /** When the server was last heard from (epoch ms); undefined before the first list. */
  #heardAt: number | undefined;
  /** The watch request in flight, and when it was made. */
  #attempt: { readonly abort: AbortController; readonly at: number } | undefined;

  constructor(options: InformerOptions) {
    this.#options = options;
  }

  get synced(): boolean {
    return this.#synced;
  }
  /** False while the watch is down (between a failure and the next successful list or watch). */
  get healthy(): boolean {
    return this.#healthy;
  }
  /** When the server was last heard from: a list, the server opening a watch, an event or a bookmark (epoch ms). */
  get heardAt(): number | undefined {
    return this.#heardAt;
  }
  /**
   * Whether the cache can be trusted to know of every change until now: listed, watching, and heard from within
   * `windowMs` (default WATCH_FRESH_MS: the API server's bookmark period and a margin, so a live watch with
   * nothing to say stays fresh on bookmarks alone).
   */
  isFresh(now = Date.now(), windowMs = WATCH_FRESH_MS): boolean {
    return this.#synced && this.#healthy && this.#heardAt !== undefined && now - this.#heardAt <= windowMs;
  }
  /**
   * Gives the current watch stream up and watches again from the last resourceVersion (what changed meanwhile
   * arrives as events). Nothing happens while a watch started after the server was last heard from is still
   * within `windowMs` of its start: that one is still opening. One opened longer ago whose answer never came
   * (a stream frozen before its headers arrived) is given up like any silent one. Returns whether it restarted.
   */
  restart(now = Date.now(), windowMs = WATCH_FRESH_MS): boolean {
    const attempt = this.#attempt;
    if (attempt === undefined) return false;
    if (this.#heardAt !== undefined && attempt.at > this.#heardAt && now - attempt.at <= windowMs) return false;
    attempt.abort.abort(
      new Error(
        `watch ${this.#options.path}: restarted, not heard from since ${this.#heardAt === undefined ? 'it started' : new Date(this.#heardAt).toISOString()}`,
      ),
    );
    return true;
  }
  /** isFresh(), and when the cache is listed but not fresh, restart() (its silent stream is given up now). */
  freshOrRestart(now = Date.now()): boolean {
    if (this.isFresh(now)) return true;
    if (this.#synced) this.restart(now);
    return false;
  }
  get(key: string): KubeObject | undefined {
    return this.#cache.get(key);
  }
  list(): KubeObject[] {
    return [...this.#cache.values()];
  }

  /** Starts the list-watch loop; throws WatchBudgetError when the budget has no room for another watch. */
  start(): void {
    if (this.#running !== undefined) return;
    this.#release = this.#options.budget?.acquire(`the watch of ${this.#options.path}`);
    this.#running = this.#loop();
  }

  /** Resolves true once the first list is in the cache, false when `timeoutMs` passes first. */
  async waitSynced(timeoutMs: number): Promise<boolean> {
    if (this.#synced) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([this.#firstSync.promise.then(() => true), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    this.#release?.();
    await this.#running;
  }

  async #loop(): Promise<void> {
    const signal = this.#abort.signal;
    let failures = 0;
    let resourceVersion: string | undefined;
    while (!signal.aborted) {
      try {
        if (resourceVersion === undefined) resourceVersion = await this.#relist(signal);
        this.#healthy = true;
        resourceVersion = await this.#watch(resourceVersion, signal);
        failures = 0;
      } catch (error) {
        if (signal.aborted) break;
        this.#healthy = false;
        if (error instanceof KubeApiError && error.status === 410) {
          resourceVersion = undefined; // expired: list again
          continue;
        }
        if (error instanceof ExpiredError) {
          resourceVersion = undefined;
          continue;
        }
        this.#options.onError?.(error);
        failures++;
        const delay = Math.min(30_000, 250 * 2 ** Math.min(failures, 7)) * (0.5 + Math.random() / 2);
        await sleep(delay, signal);
        resourceVersion = undefined;
      }
    }
  }

  async #relist(signal: AbortSignal): Promise<string> {
    const list = await this.#options.rest.request<{ apiVersion?: string; kind?: string; metadata: { resourceVersion: string }; items: KubeObject[] }>({
      method: 'GET',
      path: this.#options.path,
      query: { labelSelector: this.#options.labelSelector, fieldSelector: this.#options.fieldSelector },
      signal,
      timeoutMs: RELIST_TIMEOUT_MS,
    });
    const seen = new Set<string>();
    const project = this.#options.project ?? ((o: KubeObject) => o);
    for (const raw of list.items) {
      // Items of a list carry no apiVersion/kind of their own.
      raw.apiVersion ??= list.apiVersion;
      raw.kind ??= list.kind?.replace(/List$/, '');
      const key = objectKey(raw);
      const previous = this.#cache.get(key);
      const item = project(raw, previous);
      seen.add(key);
      this.#cache.set(key, item);
      if (previous === undefined) this.#options.onEvent('ADDED', item);
      else if (previous.metadata.resourceVersion !== item.metadata.resourceVersion) this.#options.onEvent('MODIFIED', item, previous);
    }
    // Deletions missed while the watch was down.
    for (const [key, object] of this.#cache) {
      if (!seen.has(key)) {
        this.#cache.delete(key);
        this.#options.onEvent('DELETED', object);
      }
    }
    this.#synced = true;
    this.#heardAt = Date.now();
    this.#firstSync.resolve();
    return list.metadata.resourceVersion;
  }

  async #watch(from: string, loop: AbortSignal): Promise<string> {
    let resourceVersion = from;
    const attempt = { abort: new AbortController(), at: Date.now() };
    this.#attempt = attempt;
    const signal = AbortSignal.any([loop, attempt.abort.signal]);
    const heard = (): void => {
      if (this.#attempt === attempt) this.#heardAt = Date.now();
    };
    try {
      await this.#options.rest.watch(
        this.#options.path,
        {
          resourceVersion: from,
          allowWatchBookmarks: true,
          labelSelector: this.#options.labelSelector,
          fieldSelector: this.#options.fieldSelector,
          timeoutSeconds: this.#options.watchTimeoutSeconds ?? 300,
        },
        (raw) => {
          const event = raw as { type: string; object: KubeObject & { code?: number } };
          const project = this.#options.project ?? ((o: KubeObject) => o);
          if (event.type === 'ERROR') {
            if (event.object.code === 410) throw new ExpiredError();
            throw new Error(`watch ${this.#options.path}: ${JSON.stringify(event.object).slice(0, 300)}`);
          }
          heard();
          const rv = event.object.metadata.resourceVersion;
          if (rv !== undefined) resourceVersion = rv;
          if (event.type === 'BOOKMARK') return;
          const key = objectKey(event.object);
          const previous = this.#cache.get(key);
          const object = event.type === 'DELETED' ? project(event.object) : project(event.object, previous);
          if (event.type === 'DELETED') this.#cache.delete(key);
          else this.#cache.set(key, object);
          this.#options.onEvent(event.type as InformerEvent, object, previous);
        },
        signal,
        heard,
      );
    } finally {
      if (this.#attempt === attempt) this.#attempt = undefined;
    }
    return resourceVersion;
  }
}

class ExpiredError extends Error {}

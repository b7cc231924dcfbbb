// The reconcile shell every Syncline kind runs in (the controller-runtime shape): read the object from the
// informer cache (from the API server after a 409) → deletion (the kind's finalize) → add the finalizer (stored
// before anything is written; a kind whose steps read first may let them read meanwhile) → parse the spec (an
// invalid one is Stalled) → suspend (a Suspended condition, nothing else) → the kind's steps → status, written only
// when it changed and conditioned on the resourceVersion that was read → Events that are news once → metrics.
// A reconciler supplies only its steps; a fix to any of the above lands in every kind.
import { KubeApiError, type EventRecorder, type KubeRest } from '@syncline/kube';
import type { Logger } from 'pino';
import type { Condition } from '@syncline/api';
import { Reason, removeCondition, setCondition, truncate } from './conditions.ts';
import { conditionsDiffer, objectPath, patchFinalizers, writeStatus, type OwnObject } from './object-status.ts';
import { trace } from './trace.ts';

/** The reconcile metrics the shell records (the operator's syncline_reconcile_duration_seconds and _total). */
export type ShellMetrics = {
  readonly reconcileDuration: { observe(labels: { result: string }, seconds: number): void };
  readonly reconcileTotal: { inc(labels: { result: string }): void };
};

/** What a reconcile tells the work queue (queue.ts): when to run the key again. */
export type ReconcileOutcome =
  /** Done; run again after the given delay (the refresh interval), or only on the next event. */
  | { readonly kind: 'done'; readonly requeueAfterMs?: number }
  /** A transient failure: retry with this key's exponential backoff. */
  | { readonly kind: 'retry' }
  /** Waiting on something with a known delay. */
  | { readonly kind: 'wait'; readonly requeueAfterMs: number }
  /** Bad spec or source: wait for a change event, never retry on a timer. */
  | { readonly kind: 'stalled' };

/** `logged`: the run wrote its own line about this (with structured fields): the Event is recorded without a second line. */
export type ShellEvent = { readonly type: 'Normal' | 'Warning'; readonly reason: string; readonly message: string; readonly logged?: boolean };

/** What a kind's steps found: the status to write, when to run again, and what to tell (recorded only as news). */
export type ShellOutcome<S> = { readonly status: S; readonly result: ReconcileOutcome; readonly events: readonly ShellEvent[] };

/** The object as the shell reads it: its own object, with a spec and conditions. */
export type ShellObject = OwnObject & {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: OwnObject['metadata'] & { readonly generation?: number; readonly deletionTimestamp?: string };
  readonly spec?: unknown;
  readonly status?: { readonly conditions?: Condition[] };
};

type SafeParse<Spec> =
  | { readonly success: true; readonly data: Spec }
  | { readonly success: false; readonly error: { readonly issues: readonly { readonly path: readonly PropertyKey[]; readonly message: string }[] } };

export type ReconcilerShellOptions<T extends ShellObject, Spec, S extends object> = {
  /** The kind, for logs (its lower-case form keys the log context: `configsync: ns/name`). */
  readonly kind: string;
  /** The REST plural of the kind (syncline.dev/v1alpha1). */
  readonly plural: string;
  readonly rest: KubeRest;
  readonly logger: Logger;
  readonly events: EventRecorder;
  readonly clock: { now(): Date };
  /** Reconcile duration and result; omitted: not counted. */
  readonly metrics?: ShellMetrics;
  /** The informer cache: current state by key. */
  readonly read: (key: string) => T | undefined;
  /**
   * The kind's finalizer and what deletion does while it holds (ending with removeFinalizer). Omitted: the kind
   * keeps no finalizer and a deleted object is left alone.
   */
  readonly finalizer?: { readonly name: string; readonly finalize: (object: T, log: Logger) => Promise<ReconcileOutcome> };
  readonly parse: (spec: unknown) => SafeParse<Spec>;
  /** The status of an object whose spec does not parse (Ready False, Stalled), with `invalidReason`. */
  readonly invalid: (object: T, reason: Reason, message: string, now: string) => S;
  /** The reason an invalid spec is reported under, in status and its Warning Event (default InvalidSpec). */
  readonly invalidReason?: Reason;
  /** Whether the spec asks to stop, and what the Suspended condition then says. Omitted: the kind has no suspend. */
  readonly suspend?: { readonly when: (spec: Spec) => boolean; readonly message: string };
  /**
   * The kind's steps, from a parsed, unsuspended spec. Errors thrown here are retried (409 quietly). `writable`
   * resolves once the object's finalizer is stored: with `finalizeWhileReading`, the steps await it before their
   * first write; otherwise it is stored before they start.
   */
  readonly run: (input: {
    readonly object: T;
    readonly spec: Spec;
    readonly key: string;
    readonly log: Logger;
    readonly writable: () => Promise<void>;
  }) => Promise<ShellOutcome<S>>;
  /**
   * The kind's steps read (a source, a render) before they write anything, and await `writable()` before the first
   * write: a new object's finalizer patch then goes while they read instead of before them. Omitted: the patch
   * is stored before the steps start.
   */
  readonly finalizeWhileReading?: boolean;
};

export function createReconciler<T extends ShellObject, Spec, S extends { conditions?: Condition[] }>(
  options: ReconcilerShellOptions<T, Spec, S>,
): (key: string) => Promise<ReconcileOutcome> {
  const logKey = options.kind.toLowerCase();
  // Objects whose last status write got 409 Conflict: the next run reads them from the API server, not the cache.
  // Normally the cache catches up within milliseconds, but a watch that hangs (a dropped connection that sends
  // nothing until it is detected) leaves it stale, and retrying from a stale cache would conflict again every time.
  const conflicted = new Map<string, { namespace: string; name: string }>();
  // The resourceVersions each object had before this shell last wrote its status (and, on a new object, its
  // finalizer): while the cache still holds one of them, it has not seen the write, and a run from it would
  // compute the status of one write ago (and, finding it equal to the cached one, leave the newer status
  // standing). Such a run reads the object first.
  const wroteOver = new Map<string, readonly string[]>();
  // A spec parsed once per object read: the cache hands every run the same spec object until the object changes
  // (an update is a new object), so a resync does not validate the same spec again. Nothing changes a parsed spec.
  const parsedSpecs = new WeakMap<object, SafeParse<Spec>>();
  const parse = (spec: unknown): SafeParse<Spec> => {
    if (typeof spec !== 'object' || spec === null) return options.parse(spec);
    let parsed = parsedSpecs.get(spec);
    if (parsed === undefined) parsedSpecs.set(spec, (parsed = options.parse(spec)));
    return parsed;
  };
  const shell = { ...options, parse };
  // The run's logger, one per spec read: pino builds a child's bindings (each value through the redaction paths)
  // at creation, so a resync, which reads the very object the last run read, takes the child that run made, and so
  // does a run after a status write (a cache that keeps the spec of a status change, see @syncline/kube's
  // withUnchangedSpec, hands the same spec object). Kept by the cached spec (the object when it has none): a new
  // spec makes a new one, and a deleted object takes its own along. The child says only the key.
  const loggers = new WeakMap<object, { readonly key: string; readonly log: Logger }>();
  const loggerFor = (object: T, key: string): Logger => {
    const holder = typeof object.spec === 'object' && object.spec !== null ? object.spec : object;
    const kept = loggers.get(holder);
    if (kept !== undefined && kept.key === key) return kept.log;
    const log = options.logger.child({ [logKey]: key });
    loggers.set(holder, { key, log });
    return log;
  };
  const current = async (key: string): Promise<T | undefined> => {
    const cached = options.read(key);
    const again =
      conflicted.get(key) ??
      (cached !== undefined && cached.metadata.resourceVersion !== undefined && wroteOver.get(key)?.includes(cached.metadata.resourceVersion) === true
        ? { namespace: cached.metadata.namespace ?? 'default', name: cached.metadata.name }
        : undefined);
    wroteOver.delete(key);
    if (again === undefined) return cached;
    conflicted.delete(key);
    try {
      return await options.rest.request<T>({ method: 'GET', path: objectPath(options.plural, again.namespace, again.name) });
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return undefined;
      return cached;
    }
  };
  return async (key) => {
    const object = await current(key);
    if (object === undefined) return { kind: 'done' };
    const started = performance.now();
    const log = loggerFor(object, key);
    let label = 'success';
    try {
      const outcome = await reconcileOnce(shell, object, key, log);
      label = outcome.label;
      if (outcome.wroteOver.length > 0) wroteOver.set(key, outcome.wroteOver);
      return outcome.result;
    } catch (error) {
      label = 'error';
      // 409: the object changed since this run read it (or the cache had not caught up with our last status
      // write); the retry starts from the current object. Not worth a warning.
      if (error instanceof KubeApiError && error.status === 409) {
        log.debug({ err: safeMessage(error) }, `the ${options.kind} changed while it was reconciled; running again`);
        conflicted.set(key, { namespace: object.metadata.namespace ?? 'default', name: object.metadata.name });
      } else log.warn({ err: safeMessage(error) }, 'reconcile failed');
      return { kind: 'retry' };
    } finally {
      options.metrics?.reconcileDuration.observe({ result: label }, (performance.now() - started) / 1000);
      options.metrics?.reconcileTotal.inc({ result: label });
    }
  };
}

async function reconcileOnce<T extends ShellObject, Spec, S extends { conditions?: Condition[] }>(
  options: ReconcilerShellOptions<T, Spec, S>,
  read: T,
  key: string,
  log: Logger,
): Promise<{ result: ReconcileOutcome; label: string; wroteOver: readonly string[] }> {
  let object = read;
  const path = pathOf(options.plural, object);
  const finalizers = object.metadata.finalizers ?? [];
  if (object.metadata.deletionTimestamp !== undefined) {
    if (options.finalizer === undefined || !finalizers.includes(options.finalizer.name)) return { result: { kind: 'done' }, label: 'success', wroteOver: [] };
    return { result: await options.finalizer.finalize(object, log), label: 'success', wroteOver: [] };
  }
  // The finalizer is stored before anything else is written, so whatever this run applies is finalized on
  // deletion. The patch is conditioned on the resourceVersion read (a concurrent change fails it with 409 and
  // the run starts again from the current object); once stored, the run goes on from the object as the patch
  // left it: its new resourceVersion conditions the status write as the read one would have. A new object costs
  // one reconcile, not two (the operator's controllers take the patch's own watch event for no news).
  const stored = storeFinalizer(options, object, path, key);
  // With finalizeWhileReading the kind's steps read while the patch is on its way (they await `writable` before
  // their first write); every write of the shell's own waits for it here.
  if (stored !== undefined) stored.catch(() => undefined);
  const writable = async (): Promise<void> => {
    if (stored === undefined) return;
    const patched = await stored;
    // An answer without a version (no API server sends one): run again, from the object read afresh.
    if (patched === undefined) throw new FinalizerNotStored();
    object = patched;
  };
  if (options.finalizeWhileReading !== true) {
    try {
      await writable();
    } catch (error) {
      if (!(error instanceof FinalizerNotStored)) throw error;
      return { result: { kind: 'retry' }, label: 'retry', wroteOver: read.metadata.resourceVersion === undefined ? [] : [read.metadata.resourceVersion] };
    }
  }
  // The versions this run's writes replace: a cache that still holds one has not seen them (see wroteOver).
  const replaced = (wrote: boolean): string[] => {
    const versions: string[] = [];
    if (object !== read && read.metadata.resourceVersion !== undefined) versions.push(read.metadata.resourceVersion); // the finalizer's patch
    if (wrote && object.metadata.resourceVersion !== undefined) versions.push(object.metadata.resourceVersion);
    return versions;
  };
  const now = options.clock.now().toISOString();
  const parsed = options.parse(object.spec);
  if (!parsed.success) {
    const message = `invalid spec: ${parsed.error.issues.map((i) => `${i.path.map(String).join('.')}: ${i.message}`).join('; ')}`;
    const reason = options.invalidReason ?? Reason.InvalidSpec;
    await writable();
    const status = options.invalid(object, reason, message, now);
    const wrote = await report(
      options,
      object,
      { status, result: { kind: 'stalled' }, events: [{ type: 'Warning', reason, message: truncate(message) }] },
      log,
    );
    return { result: { kind: 'stalled' }, label: 'stalled', wroteOver: replaced(wrote) };
  }
  const spec = parsed.data;
  if (options.suspend?.when(spec) === true) {
    // Visible, not silent: a Suspended condition (and column) for the generation that asked for it.
    await writable();
    const at = { generation: object.metadata.generation, now };
    const conditions = setCondition(
      object.status?.conditions ?? [],
      { type: 'Suspended', status: 'True', reason: Reason.Suspended, message: options.suspend.message },
      at,
    );
    const wrote = await report(
      options,
      object,
      { status: { ...object.status, observedGeneration: object.metadata.generation, conditions } as unknown as S, result: { kind: 'done' }, events: [] },
      log,
    );
    return { result: { kind: 'done' }, label: 'suspended', wroteOver: replaced(wrote) };
  }
  let outcome: ShellOutcome<S>;
  try {
    outcome = await options.run({ object, spec, key, log, writable });
  } finally {
    // Never leave a patch of ours in flight behind the run (whatever it answers, the next run starts after it).
    await stored?.catch(() => undefined);
  }
  await writable();
  // A resumed object is no longer Suspended, whatever its steps say.
  const status =
    outcome.status.conditions?.some((c) => c.type === 'Suspended') === true
      ? { ...outcome.status, conditions: removeCondition(outcome.status.conditions, 'Suspended') }
      : outcome.status;
  const wrote = await report(options, object, { ...outcome, status }, log);
  return { result: outcome.result, label: outcome.result.kind === 'done' ? 'success' : outcome.result.kind, wroteOver: replaced(wrote) };
}

/** The finalizer's patch answered without a resourceVersion (no API server does): the run starts again. */
class FinalizerNotStored extends Error {
  constructor() {
    super('the finalizer patch was answered without a resourceVersion');
  }
}

/**
 * Stores the kind's finalizer on an object (not being deleted) that lacks it: the object as the patch left it, or
 * undefined when the answer carried no resourceVersion. Nothing to store: undefined.
 */
function storeFinalizer<T extends ShellObject, Spec, S extends object>(
  options: ReconcilerShellOptions<T, Spec, S>,
  object: T,
  path: string,
  key: string,
): Promise<T | undefined> | undefined {
  const finalizers = object.metadata.finalizers ?? [];
  if (options.finalizer === undefined || finalizers.includes(options.finalizer.name)) return undefined;
  const withFinalizer = [...finalizers, options.finalizer.name];
  return patchFinalizers(options.rest, path, object, withFinalizer, { read: true }).then((resourceVersion) => {
    trace(key, 'finalized');
    return resourceVersion === undefined ? undefined : { ...object, metadata: { ...object.metadata, finalizers: withFinalizer, resourceVersion } };
  });
}

/**
 * Status and Events. The write is conditioned on the resourceVersion this run read (or, on a new object, the one
 * its finalizer's patch left: the shell writes nothing else to the object on the way here): a run that started
 * from a cache that had not yet seen the previous run's status write gets 409 Conflict and runs again, instead of
 * overwriting that status with one computed from the older one. A Warning is news once: while the conditions say
 * the same, repeats go to debug and count up the first one's Event (a status write for another reason is not news
 * of it); a Normal Event goes with any status write.
 */
async function report<T extends ShellObject, Spec, S extends object>(
  options: ReconcilerShellOptions<T, Spec, S>,
  object: T,
  outcome: ShellOutcome<S>,
  log: Logger,
): Promise<boolean> {
  const wrote = await writeStatus(options.rest, pathOf(options.plural, object), object, outcome.status, { ifUnchanged: true });
  const news = wrote && conditionsDiffer(object.status?.conditions, (outcome.status as { conditions?: Condition[] }).conditions);
  for (const event of outcome.events) {
    // A Warning the conditions already said is a repeat: it counts up its Event (kubectl's "x6 over 2m") and is
    // no news to notifications. A Normal Event goes with the status write it explains.
    const repeat = event.type === 'Warning' && !news;
    const recorded = event.type === 'Warning' || wrote;
    if (event.logged !== true && recorded)
      log[repeat ? 'debug' : 'info'](
        { reason: event.reason, message: event.message },
        event.type === 'Warning' ? `${options.kind} did not succeed` : event.reason,
      );
    // Not waited for: the worker is free once the status is written (identical Events still count up in order).
    if (recorded) void options.events.record(object, { type: event.type, reason: event.reason, message: event.message, ...(repeat ? { repeat } : {}) });
  }
  return wrote;
}

/** Removes the kind's finalizer (conditioned on the resourceVersion read): the API server may then delete the object. */
export async function removeFinalizer(rest: KubeRest, plural: string, object: ShellObject, finalizer: string): Promise<void> {
  await patchFinalizers(
    rest,
    pathOf(plural, object),
    object,
    (object.metadata.finalizers ?? []).filter((f) => f !== finalizer),
  );
}

const pathOf = (plural: string, object: ShellObject): string => objectPath(plural, object.metadata.namespace ?? 'default', object.metadata.name);

/** Errors that may carry request details are reduced to their message. */
function safeMessage(error: unknown): { message: string; name?: string } {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { message: String(error) };
}

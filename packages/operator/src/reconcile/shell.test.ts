import { KubeApiError, type EventRecorder, type KubeRequest, type KubeRest } from '@syncline/kube';
import { pino, type Logger } from 'pino';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Condition } from '@syncline/api';
import type { ReconcileOutcome } from '@syncline/runtime';
import { createMetrics } from '../metrics.ts';
import { Reason, setCondition } from '@syncline/runtime';
import { createReconciler, removeFinalizer, type ShellEvent, type ShellObject, type ShellOutcome } from '@syncline/runtime';

const Spec = z.object({ value: z.string(), suspend: z.boolean().default(false) });
type Spec = z.infer<typeof Spec>;
type Status = { observedGeneration?: number; conditions?: Condition[]; value?: string };
type Widget = ShellObject & {
  metadata: { name: string; namespace: string; resourceVersion: string; generation: number; finalizers?: string[]; deletionTimestamp?: string };
  spec: unknown;
  status?: Status;
};

const PATH = '/apis/syncline.dev/v1alpha1/namespaces/team/widgets/w';
const FINALIZER = 'syncline.dev/finalizer';

/**
 * An API server holding one object, with its resourceVersion: a merge patch that names another
 * resourceVersion than the stored one is refused with 409, as the real one does. The informer cache is a
 * separate copy the test moves forward (`catchUp`), so a run can start from a stale object.
 */
function fakeCluster(initial: Omit<Widget, 'apiVersion' | 'kind'>) {
  let stored: Widget = { apiVersion: 'syncline.dev/v1alpha1', kind: 'Widget', ...structuredClone(initial) };
  let cached: Widget | undefined = structuredClone(stored);
  const patches: KubeRequest[] = [];
  const reads: string[] = [];
  const recorded: ShellEvent[] = [];
  const rest: KubeRest = {
    server: 'https://fake',
    request: <T>(req: KubeRequest): Promise<T> => {
      if (req.method === 'GET') {
        reads.push(req.path);
        return Promise.resolve(structuredClone(stored) as T);
      }
      patches.push(req);
      const body = req.body as { metadata?: { resourceVersion?: string; finalizers?: string[] }; status?: Record<string, unknown> };
      if (body.metadata?.resourceVersion !== undefined && body.metadata.resourceVersion !== stored.metadata.resourceVersion) {
        return Promise.reject(new KubeApiError({ status: 409, reason: 'Conflict', message: 'the object has been modified' }));
      }
      const next = structuredClone(stored);
      next.metadata.resourceVersion = String(Number(stored.metadata.resourceVersion) + 1);
      if (req.path === `${PATH}/status`) {
        const merged: Record<string, unknown> = { ...next.status };
        for (const [k, v] of Object.entries(body.status ?? {}))
          if (v === null) delete merged[k];
          else merged[k] = v;
        next.status = merged;
      } else if (body.metadata?.finalizers !== undefined) next.metadata.finalizers = body.metadata.finalizers;
      stored = next;
      return Promise.resolve(structuredClone(stored) as T);
    },
    watch: () => Promise.resolve(),
  };
  const events: EventRecorder = {
    record: (_object, event) => {
      recorded.push(event);
      return Promise.resolve();
    },
  };
  return {
    rest,
    events,
    patches,
    reads,
    recorded,
    read: () => (cached === undefined ? undefined : structuredClone(cached)),
    stored: () => stored,
    /** The informer sees the stored object (or a change someone else made to it). */
    catchUp: (change?: (w: Widget) => void) => {
      if (change !== undefined) {
        change(stored);
        stored.metadata.resourceVersion = String(Number(stored.metadata.resourceVersion) + 1);
      }
      cached = structuredClone(stored);
    },
    statusWrites: () => patches.filter((p) => p.path.endsWith('/status')).length,
    /** Someone changes the stored object; the cache does not see it yet. */
    changeStored: (change: (w: Widget) => void) => {
      change(stored);
      stored.metadata.resourceVersion = String(Number(stored.metadata.resourceVersion) + 1);
    },
  };
}

type Cluster = ReturnType<typeof fakeCluster>;

function logSink() {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

const readyStatus = (object: Widget, spec: Spec, message: string): Status => ({
  ...object.status,
  observedGeneration: object.metadata.generation,
  value: spec.value,
  conditions: setCondition(
    object.status?.conditions ?? [],
    { type: 'Ready', status: message === 'ok' ? 'True' : 'False', reason: message === 'ok' ? Reason.Succeeded : Reason.ApplyFailed, message },
    { generation: object.metadata.generation, now: 't' },
  ),
});

function reconcilerFor(
  cluster: Cluster,
  options: {
    run?: (object: Widget, spec: Spec) => ShellOutcome<Status>;
    finalize?: (object: Widget) => Promise<ReconcileOutcome>;
    withFinalizer?: boolean;
    /** Called as the steps start. */
    onRun?: () => void;
    /** The steps read first and await `writable` before they write (finalizeWhileReading); replaces `run`. */
    whileReading?: (input: { object: Widget; spec: Spec; writable: () => Promise<void> }) => Promise<ShellOutcome<Status>>;
  } = {},
) {
  const sink = logSink();
  const metrics = createMetrics();
  const runs: Widget[] = [];
  const loggers: Logger[] = [];
  let parses = 0;
  const reconcile = createReconciler<Widget, Spec, Status>({
    kind: 'Widget',
    plural: 'widgets',
    rest: cluster.rest,
    logger: sink.logger,
    events: cluster.events,
    clock: { now: () => new Date('2026-01-01T00:00:00Z') },
    metrics,
    read: cluster.read,
    ...(options.withFinalizer === false
      ? {}
      : { finalizer: { name: FINALIZER, finalize: options.finalize ?? (() => Promise.resolve({ kind: 'done' as const })) } }),
    parse: (spec) => {
      parses++;
      return Spec.safeParse(spec);
    },
    invalid: (object, reason, message) => ({
      ...object.status,
      observedGeneration: object.metadata.generation,
      conditions: setCondition(
        object.status?.conditions ?? [],
        { type: 'Stalled', status: 'True', reason, message },
        { generation: object.metadata.generation, now: 't' },
      ),
    }),
    suspend: { when: (spec) => spec.suspend, message: 'suspended for the test' },
    ...(options.whileReading === undefined ? {} : { finalizeWhileReading: true }),
    run: ({ object, spec, log, writable }) => {
      options.onRun?.();
      runs.push(object);
      loggers.push(log);
      if (options.whileReading !== undefined) return options.whileReading({ object, spec, writable });
      return Promise.resolve(
        options.run?.(object, spec) ?? {
          status: readyStatus(object, spec, 'ok'),
          result: { kind: 'done' },
          events: [{ type: 'Normal', reason: 'Synced', message: `value ${spec.value}` }],
        },
      );
    },
  });
  return { reconcile: () => reconcile('team/w'), runs, loggers, logs: sink.lines, metrics, parses: () => parses };
}

const widget = (overrides: { finalizers?: string[]; spec?: unknown; status?: Status; deletionTimestamp?: string } = {}) => ({
  metadata: {
    name: 'w',
    namespace: 'team',
    resourceVersion: '1',
    generation: 1,
    finalizers: overrides.finalizers ?? [FINALIZER],
    ...(overrides.deletionTimestamp === undefined ? {} : { deletionTimestamp: overrides.deletionTimestamp }),
  },
  spec: overrides.spec ?? { value: 'a' },
  ...(overrides.status === undefined ? {} : { status: overrides.status }),
});

describe('createReconciler', () => {
  it('validates a spec once per object the cache holds, and anew when the object changes', async () => {
    // given a cache that hands out the same object until it changes, as an informer does
    const cluster = fakeCluster(widget());
    let cached = structuredClone(cluster.stored());
    const { reconcile, parses, runs } = reconcilerFor({ ...cluster, read: () => cached });
    await reconcile();
    cached = structuredClone(cluster.stored()); // the status write comes back
    const before = parses();
    // when the same object is reconciled again (resyncs), then its spec is not parsed again
    await reconcile();
    await reconcile();
    expect(parses()).toBe(before + 1);
    expect(runs).toHaveLength(3);
    // when the object changes, then the new spec is parsed and is the one that runs
    cached = { ...cached, spec: { value: 'b' } };
    await reconcile();
    expect(parses()).toBe(before + 2);
    expect(cluster.stored().status?.value).toBe('b');
    // and an invalid one is refused as before
    cached = { ...structuredClone(cluster.stored()), spec: { value: 1 } };
    await reconcile();
    expect(cluster.stored().status?.conditions?.find((c) => c.type === 'Stalled')?.status).toBe('True');
  });

  it('hands a resync of the same object the logger of the run before, and a changed object a new one, each naming the object', async () => {
    // given a cache that hands out the same object until it changes, as an informer does
    const cluster = fakeCluster(widget());
    let cached = structuredClone(cluster.stored());
    const { reconcile, loggers } = reconcilerFor({ ...cluster, read: () => cached });
    await reconcile();
    cached = structuredClone(cluster.stored());
    // when the same object is reconciled again (resyncs), then the run gets the same child logger
    await reconcile();
    await reconcile();
    expect(loggers[2]).toBe(loggers[1]);
    // when the object changes, then a new one, bound to the same key, as a fresh child would be
    cached = { ...cached, spec: { value: 'b' } };
    await reconcile();
    expect(loggers[3]).not.toBe(loggers[2]);
    for (const log of loggers) expect(log.bindings()).toEqual({ widget: 'team/w' });
  });

  it('takes a status write that came back with the spec the cache kept (see withUnchangedSpec) for no new spec: no parse, the same logger', async () => {
    const cluster = fakeCluster(widget());
    let cached = structuredClone(cluster.stored());
    const { reconcile, loggers, parses, runs } = reconcilerFor({ ...cluster, read: () => cached });
    await reconcile();
    const parsed = parses();
    // given the run's own status write back in the cache as a new object that keeps the cached spec object
    const spec = cached.spec;
    cached = { ...structuredClone(cluster.stored()), spec };
    // and someone's status change after it, the same way
    cluster.changeStored((w) => {
      w.status = { ...w.status, value: 'theirs' };
    });
    cached = { ...structuredClone(cluster.stored()), spec };
    await reconcile();
    // then the spec is not validated again and the run keeps its logger, and it runs from the status as it is now
    expect(parses()).toBe(parsed);
    expect(loggers[1]).toBe(loggers[0]);
    expect(runs[1]?.status?.value).toBe('theirs');
    expect(cluster.stored().status?.value).toBe('a');
    // its status write sent only what it changed back, conditioned on the version that holds their change
    expect(cluster.patches.at(-1)?.body).toEqual({ metadata: { resourceVersion: '3' }, status: { value: 'a' } });
    // a new spec (a new generation) is parsed, and gets a logger of its own naming the same object
    cached = { ...structuredClone(cluster.stored()), spec: { value: 'b' } };
    await reconcile();
    expect(parses()).toBe(parsed + 1);
    expect(loggers[2]).not.toBe(loggers[1]);
    expect(loggers[2]?.bindings()).toEqual({ widget: 'team/w' });
  });

  it('stores its finalizer before the steps run, then goes on in the same run from the version the patch left', async () => {
    const cluster = fakeCluster(widget({ finalizers: ['someone.else/keep'] }));
    const finalizersWhenRun: (readonly string[] | undefined)[] = [];
    const { reconcile, runs } = reconcilerFor(cluster, { onRun: () => finalizersWhenRun.push(cluster.stored().metadata.finalizers) });
    expect(await reconcile()).toEqual({ kind: 'done' });
    expect(cluster.stored().metadata.finalizers).toEqual(['someone.else/keep', FINALIZER]);
    // The steps ran once, after the finalizer was stored, and were handed the object with it.
    expect(finalizersWhenRun).toEqual([['someone.else/keep', FINALIZER]]);
    expect(runs).toHaveLength(1);
    expect(runs[0]?.metadata.finalizers).toEqual(['someone.else/keep', FINALIZER]);
    // The status write was conditioned on the version the finalizer's patch left (2), and succeeded.
    expect(cluster.patches.map((p) => [p.path, (p.body as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion])).toEqual([
      [PATH, '1'],
      [`${PATH}/status`, '2'],
    ]);
    expect(cluster.statusWrites()).toBe(1);
    expect(cluster.stored().status?.value).toBe('a');
  });

  it('with finalizeWhileReading, the steps read while the finalizer is stored; their first write and the status wait for it', async () => {
    // given an API server that holds the answer to the finalizer's patch until the test lets it go
    const cluster = fakeCluster(widget({ finalizers: [] }));
    let answer: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (answer = resolve));
    const request = cluster.rest.request.bind(cluster.rest);
    cluster.rest.request = async <T>(req: KubeRequest): Promise<T> => {
      if (req.method === 'PATCH' && req.path === PATH) await held;
      return request<T>(req);
    };
    const steps: string[] = [];
    let readingDone: () => void = () => undefined;
    const read = new Promise<void>((resolve) => (readingDone = resolve));
    const { reconcile } = reconcilerFor(cluster, {
      whileReading: async ({ object, spec, writable }) => {
        steps.push('read');
        readingDone();
        await writable();
        steps.push(`write, finalizer stored: ${String(cluster.stored().metadata.finalizers?.includes(FINALIZER))}`);
        return { status: readyStatus(object, spec, 'ok'), result: { kind: 'done' }, events: [] };
      },
    });
    // when a new object is reconciled
    const done = reconcile();
    await read;
    // then its steps read while the patch is unanswered, and wrote nothing yet
    expect(steps).toEqual(['read']);
    expect(cluster.statusWrites()).toBe(0);
    answer();
    expect(await done).toEqual({ kind: 'done' });
    // and wrote once the finalizer was stored; the status write was conditioned on the version the patch left
    expect(steps).toEqual(['read', 'write, finalizer stored: true']);
    expect(cluster.patches.map((p) => [p.path, (p.body as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion])).toEqual([
      [PATH, '1'],
      [`${PATH}/status`, '2'],
    ]);
  });

  it('with finalizeWhileReading, a finalizer patch refused with 409 lets no step write, and a run that never asked to write waits for it too', async () => {
    // given a new object someone changed after the cache read it
    const cluster = fakeCluster(widget({ finalizers: [] }));
    const wrote: string[] = [];
    let askToWrite = true;
    const { reconcile } = reconcilerFor(cluster, {
      whileReading: async ({ object, spec, writable }) => {
        if (askToWrite) {
          await writable();
          wrote.push('apply');
        }
        return { status: readyStatus(object, spec, 'ok'), result: { kind: 'done' }, events: [] };
      },
    });
    cluster.changeStored((w) => (w.spec = { value: 'b' }));
    // when it is reconciled, then the patch's 409 ends the run before any write, to run again from the object read afresh
    expect(await reconcile()).toEqual({ kind: 'retry' });
    expect(wrote).toEqual([]);
    expect(cluster.statusWrites()).toBe(0);
    expect(cluster.stored().metadata.finalizers).toEqual([]);
    // when the steps return without asking to write (a source that failed), then the status still waits for the finalizer
    askToWrite = false;
    expect(await reconcile()).toEqual({ kind: 'done' });
    expect(cluster.patches.map((p) => p.path)).toEqual([PATH, PATH, `${PATH}/status`]);
    expect(cluster.stored().metadata.finalizers).toEqual([FINALIZER]);
    expect(cluster.stored().status?.value).toBe('b');
  });

  it('a new object changed since it was read gets no finalizer and no step: 409, then a run from the object read afresh', async () => {
    const cluster = fakeCluster(widget({ finalizers: [] }));
    const { reconcile, runs } = reconcilerFor(cluster);
    // Someone changes the object after the cache read it (the cache has not seen it).
    cluster.changeStored((w) => (w.spec = { value: 'b' }));
    expect(await reconcile()).toEqual({ kind: 'retry' });
    expect(runs).toHaveLength(0);
    expect(cluster.stored().metadata.finalizers).toEqual([]);
    expect(await reconcile()).toEqual({ kind: 'done' });
    expect(runs).toHaveLength(1);
    expect(cluster.stored().metadata.finalizers).toEqual([FINALIZER]);
    expect(cluster.stored().status?.value).toBe('b');
  });

  it('after a new object was finalized and synced in one run, a run from a cache that saw neither write reads the object first', async () => {
    const cluster = fakeCluster(widget({ finalizers: [] }));
    const { reconcile, runs } = reconcilerFor(cluster);
    await reconcile();
    expect(runs).toHaveLength(1);
    const patches = cluster.patches.length;
    // The cache still holds the object as first read (no finalizer, no status): not trusted, read afresh.
    expect(await reconcile()).toEqual({ kind: 'done' });
    expect(cluster.reads).toHaveLength(1);
    expect(cluster.patches).toHaveLength(patches);
    expect(runs).toHaveLength(2);
  });

  it('on deletion runs finalize only while its finalizer holds, and removeFinalizer keeps the others', async () => {
    const cluster = fakeCluster(widget({ finalizers: [FINALIZER, 'someone.else/keep'], deletionTimestamp: '2026-01-01T00:00:00Z' }));
    const finalized: Widget[] = [];
    const { reconcile, runs } = reconcilerFor(cluster, {
      finalize: async (object) => {
        finalized.push(object);
        await removeFinalizer(cluster.rest, 'widgets', object, FINALIZER);
        return { kind: 'done' };
      },
    });
    expect(await reconcile()).toEqual({ kind: 'done' });
    expect(finalized).toHaveLength(1);
    expect(cluster.stored().metadata.finalizers).toEqual(['someone.else/keep']);
    cluster.catchUp();
    await reconcile();
    expect(finalized).toHaveLength(1);
    expect(runs).toHaveLength(0);
  });

  it('a kind without a finalizer leaves a deleted object alone and never adds one', async () => {
    const cluster = fakeCluster(widget({ finalizers: [] }));
    const { reconcile, runs } = reconcilerFor(cluster, { withFinalizer: false });
    await reconcile();
    expect(cluster.stored().metadata.finalizers).toEqual([]);
    expect(runs).toHaveLength(1);
    cluster.catchUp((w) => (w.metadata.deletionTimestamp = '2026-01-01T00:00:00Z'));
    expect(await reconcile()).toEqual({ kind: 'done' });
    expect(runs).toHaveLength(1);
  });

  it('writes status once: an unchanged resync writes nothing and records no Event', async () => {
    const cluster = fakeCluster(widget());
    const { reconcile, runs } = reconcilerFor(cluster);
    expect(await reconcile()).toEqual({ kind: 'done' });
    expect(cluster.statusWrites()).toBe(1);
    expect(cluster.stored().status).toMatchObject({ value: 'a', observedGeneration: 1 });
    expect(cluster.recorded).toEqual([{ type: 'Normal', reason: 'Synced', message: 'value a' }]);
    cluster.catchUp();
    await reconcile();
    await reconcile();
    expect(runs).toHaveLength(3);
    expect(cluster.statusWrites()).toBe(1);
    expect(cluster.recorded).toHaveLength(1);
  });

  it('conditions the status write on the resourceVersion read: 409 runs again (logged at debug), from the current object', async () => {
    const cluster = fakeCluster(widget());
    const { reconcile, runs, logs, metrics } = reconcilerFor(cluster);
    // someone changes the object after the cache was read: this run's write must not land
    cluster.stored().spec = { value: 'b' };
    cluster.stored().metadata.resourceVersion = '2';
    expect(await reconcile()).toEqual({ kind: 'retry' });
    expect(cluster.stored().status).toBeUndefined();
    const conflict = logs.find((l) => /changed while it was reconciled/.test(l.msg));
    expect(conflict?.level).toBe(20);
    expect(logs.some((l) => l.level >= 40)).toBe(false);
    expect((await metrics.reconcileTotal.get()).values.find((v) => v.labels.result === 'error')?.value).toBe(1);
    // the queue runs it again once the cache has caught up: now it lands, computed from the current spec
    cluster.catchUp();
    expect(await reconcile()).toEqual({ kind: 'done' });
    expect(runs.map((r) => (r.spec as Spec).value)).toEqual(['a', 'b']);
    expect(cluster.stored().status).toMatchObject({ value: 'b' });
    expect(cluster.recorded).toEqual([{ type: 'Normal', reason: 'Synced', message: 'value b' }]);
  });

  it('after a 409, runs again from the object the API server holds, even while the cache stays stale (a hung watch)', async () => {
    const cluster = fakeCluster(widget());
    const { reconcile, runs } = reconcilerFor(cluster);
    // given: the object changed and the cache never hears of it
    cluster.stored().spec = { value: 'b' };
    cluster.stored().metadata.resourceVersion = '2';
    expect(await reconcile()).toEqual({ kind: 'retry' });
    expect(cluster.reads).toEqual([]);
    // when the queue runs it again, the cache still stale
    expect(await reconcile()).toEqual({ kind: 'done' });
    // then that run read the object once from the API server, and its status landed, computed from the current spec
    expect(cluster.reads).toEqual([PATH]);
    expect(runs.map((r) => (r.spec as Spec).value)).toEqual(['a', 'b']);
    expect(cluster.stored().status).toMatchObject({ value: 'b' });
    // and a run after that reads the cache again: no request
    cluster.catchUp();
    await reconcile();
    expect(cluster.reads).toEqual([PATH]);
  });

  it('a run from a cache that has not seen its last status write reads the object first, so that write cannot outlive the run', async () => {
    const cluster = fakeCluster(widget());
    let health = 'ok';
    const { reconcile } = reconcilerFor(cluster, {
      run: (object, spec) => ({ status: readyStatus(object, spec, health), result: { kind: 'done' }, events: [] }),
    });
    await reconcile();
    cluster.catchUp();
    // given: a run writes Ready False (a pod flapped), and the next run comes before the cache has seen that write
    health = 'degraded';
    await reconcile();
    expect(cluster.stored().status?.conditions?.[0]?.status).toBe('False');
    health = 'ok';
    // when: that run finds everything fine again, as the cached status (one write old) already says
    await reconcile();
    // then: it read the object the API server holds, and wrote Ready True over the write the cache had not seen
    expect(cluster.reads).toEqual([PATH]);
    expect(cluster.stored().status?.conditions?.[0]?.status).toBe('True');
    // and once the cache holds the object, runs read it from there again
    cluster.catchUp();
    await reconcile();
    expect(cluster.reads).toEqual([PATH]);
  });

  it('records a Warning as news once while the conditions say the same; its repeats are marked to count it up', async () => {
    const cluster = fakeCluster(widget());
    let attempt = 0;
    const { reconcile, logs } = reconcilerFor(cluster, {
      run: (object, spec) => {
        attempt += 1;
        // the same failure each time, with a new detail in the status (a count): the status is written each time
        return {
          status: { ...readyStatus(object, spec, 'broken'), value: `attempt ${attempt}` },
          result: { kind: 'retry' },
          events: [{ type: 'Warning', reason: Reason.ApplyFailed, message: 'broken' }],
        };
      },
    });
    for (let i = 0; i < 3; i += 1) {
      expect(await reconcile()).toEqual({ kind: 'retry' });
      cluster.catchUp();
    }
    expect(cluster.statusWrites()).toBe(3);
    const broken = { type: 'Warning', reason: Reason.ApplyFailed, message: 'broken' };
    expect(cluster.recorded).toEqual([broken, { ...broken, repeat: true }, { ...broken, repeat: true }]);
    expect(logs.filter((l) => l.msg === 'Widget did not succeed').map((l) => l.level)).toEqual([30, 20, 20]);
  });

  it('an Event the run has logged itself is recorded without a second log line; others get one', async () => {
    const cluster = fakeCluster(widget());
    const { reconcile, logs } = reconcilerFor(cluster, {
      run: (object, spec) => ({
        status: readyStatus(object, spec, 'ok'),
        result: { kind: 'done' },
        events: [
          { type: 'Normal', reason: 'Synced', message: 'value a', logged: true },
          { type: 'Normal', reason: 'Pruned', message: 'one gone' },
        ],
      }),
    });
    await reconcile();
    expect(cluster.recorded).toEqual([
      { type: 'Normal', reason: 'Synced', message: 'value a' },
      { type: 'Normal', reason: 'Pruned', message: 'one gone' },
    ]);
    expect(logs.map((l) => l.msg)).toEqual(['Pruned']);
  });

  it('suspend: a Suspended condition and nothing run; resuming removes it', async () => {
    const cluster = fakeCluster(widget({ spec: { value: 'a', suspend: true } }));
    const { reconcile, runs, metrics } = reconcilerFor(cluster);
    expect(await reconcile()).toEqual({ kind: 'done' });
    expect(runs).toHaveLength(0);
    expect(cluster.stored().status?.conditions).toEqual([
      expect.objectContaining({ type: 'Suspended', status: 'True', reason: Reason.Suspended, message: 'suspended for the test' }),
    ]);
    expect((await metrics.reconcileTotal.get()).values.find((v) => v.labels.result === 'suspended')?.value).toBe(1);
    cluster.catchUp();
    await reconcile();
    expect(cluster.statusWrites()).toBe(1);
    cluster.catchUp((w) => (w.spec = { value: 'a', suspend: false }));
    await reconcile();
    expect(runs).toHaveLength(1);
    expect(cluster.stored().status?.conditions?.map((c) => c.type)).toEqual(['Ready']);
  });

  it('an invalid spec is Stalled, with one InvalidSpec Warning naming the field', async () => {
    const cluster = fakeCluster(widget({ spec: { value: 3 } }));
    const { reconcile, runs } = reconcilerFor(cluster);
    expect(await reconcile()).toEqual({ kind: 'stalled' });
    cluster.catchUp();
    expect(await reconcile()).toEqual({ kind: 'stalled' });
    expect(runs).toHaveLength(0);
    expect(cluster.stored().status?.conditions).toEqual([expect.objectContaining({ type: 'Stalled', reason: Reason.InvalidSpec })]);
    const invalid = { type: 'Warning', reason: Reason.InvalidSpec, message: expect.stringMatching(/^invalid spec: value: /) as string };
    expect(cluster.recorded).toEqual([invalid, { ...invalid, repeat: true }]);
  });

  it("an invalid spec is reported under the kind's own reason when it names one", async () => {
    const cluster = fakeCluster(widget({ spec: { value: 3 }, finalizers: [] }));
    const reconcile = createReconciler<Widget, Spec, Status>({
      kind: 'Widget',
      plural: 'widgets',
      rest: cluster.rest,
      logger: pino({ level: 'silent' }),
      events: cluster.events,
      clock: { now: () => new Date() },
      read: cluster.read,
      parse: (spec) => Spec.safeParse(spec),
      invalidReason: Reason.InvalidKubeconfig,
      invalid: (object, reason, message) => ({
        conditions: setCondition([], { type: 'Ready', status: 'False', reason, message }, { generation: object.metadata.generation, now: 't' }),
      }),
      run: () => Promise.reject(new Error('unreachable')),
    });
    expect(await reconcile('team/w')).toEqual({ kind: 'stalled' });
    expect(cluster.stored().status?.conditions).toEqual([expect.objectContaining({ reason: Reason.InvalidKubeconfig })]);
    expect(cluster.recorded.map((e) => e.reason)).toEqual([Reason.InvalidKubeconfig]);
  });

  it('an object the cache does not hold is done without a request; a thrown step is retried with a warning', async () => {
    const cluster = fakeCluster(widget());
    cluster.catchUp((w) => w);
    const gone = createReconciler<Widget, Spec, Status>({
      kind: 'Widget',
      plural: 'widgets',
      rest: cluster.rest,
      logger: pino({ level: 'silent' }),
      events: cluster.events,
      clock: { now: () => new Date() },
      read: () => undefined,
      parse: (spec) => Spec.safeParse(spec),
      invalid: (object) => object.status ?? {},
      run: () => Promise.reject(new Error('unreachable')),
    });
    expect(await gone('team/w')).toEqual({ kind: 'done' });
    expect(cluster.patches).toHaveLength(0);
    const { reconcile, logs } = reconcilerFor(cluster, {
      run: () => {
        throw new Error('boom');
      },
    });
    expect(await reconcile()).toEqual({ kind: 'retry' });
    expect(logs.find((l) => l.msg === 'reconcile failed')?.level).toBe(40);
  });
});

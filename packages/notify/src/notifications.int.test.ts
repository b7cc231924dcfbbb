// Notifications in process against the real control plane: NotificationProviders, NotificationAlerts and their Secrets are real
// objects; deliveries go to a real HTTP receiver. A flood of 1,000 events to one channel is deduplicated and
// rate-limited (and what does not fit the queue is dropped and counted); a receiver that answers 500 is retried,
// then reported as a Warning Event and a condition on the NotificationAlert and a metric, none of which names the URL.
import { connectionFromKubeConfig, createEventRecorder, createKubeRest, type EventRecorder, type KubeRest } from '@syncline/kube';
import { startHttpReceiver } from '@syncline/test-support';
import { testKubeConfig, testNamespace } from '@syncline/test-support/kube';
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { createManager, installCrds, type ControllerRegistry, type ReconcileOutcome } from '@syncline/runtime';
import { Registry } from 'prom-client';
import { NOTIFICATIONS_CONTROLLER, startNotifications, type Notifications, type NotificationsOptions } from './controller.ts';

/** Notifications on a controller manager of their own (no election: it leads), as the composition root wires them. */
function started(options: Omit<NotificationsOptions, 'controllers'>): Notifications {
  const controllers = createManager({ logger: options.logger, metrics: { leader: { set: () => undefined }, trackQueue: () => () => undefined } });
  const notifications = startNotifications({ ...options, controllers });
  controllers.start();
  return {
    ...notifications,
    async stop() {
      await notifications.stop();
      await controllers.stop();
    },
  };
}

const eventually = async <T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 60_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
};

let rest: KubeRest;
beforeAll(async () => {
  rest = await createKubeRest(await connectionFromKubeConfig(testKubeConfig()));
  await installCrds(rest, { fieldManager: 'syncline-tests' });
}, 120_000);

const create = (namespace: string, plural: string, body: Record<string, unknown>): Promise<unknown> =>
  rest.request({
    method: 'POST',
    path: plural === 'secrets' ? `/api/v1/namespaces/${namespace}/secrets` : `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/${plural}`,
    body,
  });

type Ready = { status: string; reason: string; message: string };
const readyOf = async (namespace: string, plural: string, name: string): Promise<Ready | undefined> => {
  const object = await rest.request<{ status?: { conditions?: (Ready & { type: string })[] } }>({
    method: 'GET',
    path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/${plural}/${name}`,
  });
  return object.status?.conditions?.find((c) => c.type === 'Ready');
};

async function webhookSetup(
  namespace: string,
  options: { address: string; rateLimit?: { messages: number; interval: string }; batch?: { window: string; maxEvents: number } },
): Promise<void> {
  await create(namespace, 'secrets', { metadata: { name: 'hook' }, stringData: { address: options.address, hmacKey: 'shared-key' } });
  await create(namespace, 'notificationproviders', {
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'NotificationProvider',
    metadata: { name: 'hook' },
    spec: {
      type: 'webhook',
      secretRef: { name: 'hook' },
      ...(options.rateLimit === undefined ? {} : { rateLimit: options.rateLimit }),
      ...(options.batch === undefined ? {} : { batch: options.batch }),
    },
  });
  await create(namespace, 'notificationalerts', {
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'NotificationAlert',
    metadata: { name: 'all' },
    spec: { providerRef: { name: 'hook' }, eventSources: [{ kind: 'ConfigSync', name: '*' }] },
  });
  await eventually(
    async () => ((await readyOf(namespace, 'notificationproviders', 'hook'))?.status === 'True' ? true : undefined),
    'the NotificationProvider to be Ready',
  );
  await eventually(
    async () => ((await readyOf(namespace, 'notificationalerts', 'all'))?.status === 'True' ? true : undefined),
    'the NotificationAlert to be Ready',
  );
}

const involved = (namespace: string, name: string) => ({
  apiVersion: 'syncline.dev/v1alpha1',
  kind: 'ConfigSync',
  metadata: { name, namespace, uid: `uid-${name}` },
});

describe('notifications against the real control plane', () => {
  it('a flood of 1,000 events to one channel is deduplicated, rate-limited and bounded', async () => {
    await using ns = await testNamespace({ prefix: 'notify-flood' });
    await using receiver = await startHttpReceiver();
    const recorded: string[] = [];
    const recorder: EventRecorder = { record: (_object, event) => Promise.resolve(void recorded.push(event.reason)) };
    const metrics = { registry: new Registry() };
    const notifications = started({
      rest,
      logger: pino({ level: 'silent' }),
      metrics,
      clock: { now: () => new Date() },
      trusted: new Set(),
      recorder,
      delivery: { queueSize: 5 },
    });
    try {
      await webhookSetup(ns.name, { address: `${receiver.url}/flood`, rateLimit: { messages: 3, interval: '10s' } });
      // Given 20 distinct messages, each recorded 50 times (interleaved): 1,000 Events.
      for (let i = 0; i < 1000; i++)
        void notifications.events.record(involved(ns.name, `s${i % 20}`), { type: 'Warning', reason: 'ApplyFailed', message: `target t failed (${i % 20})` });
      // Every Event still reached the operator's own recorder.
      expect(recorded).toHaveLength(1000);
      const count = async (result: string): Promise<number> =>
        (await metrics.registry.getSingleMetric('syncline_notifications_total')?.get())?.values.find((v) => v.labels['result'] === result)?.value ?? 0;
      // 980 identical repeats are sent once; of the 20 distinct, one in flight and 5 queued fit, 14 are dropped.
      expect(await count('deduplicated')).toBe(980);
      expect(await count('dropped')).toBe(14);
      const requests = await receiver.waitFor((r) => r.length >= 6, 'the six queued messages', 90_000);
      await notifications.idle();
      expect(requests).toHaveLength(6);
      expect(await count('sent')).toBe(6);
      // Rate: 3 per 10 s in a burst of 3; the 4th waited for a token (~3.3 s after the first).
      const at = requests.map((r) => r.at);
      expect((at[3] ?? 0) - (at[0] ?? 0)).toBeGreaterThanOrEqual(3000);
      // Signed as documented: sha256=HMAC(body).
      const { createHmac } = await import('node:crypto');
      for (const r of requests) expect(r.headers['x-syncline-signature']).toBe(`sha256=${createHmac('sha256', 'shared-key').update(r.body).digest('hex')}`);
    } finally {
      await notifications.stop();
    }
  }, 180_000);

  it('a batched NotificationProvider: a window of events arrives as JSON arrays of at most maxEvents, each signed as one body; the API server refuses a batch with a template', async () => {
    await using ns = await testNamespace({ prefix: 'notify-batch' });
    await using receiver = await startHttpReceiver();
    const metrics = { registry: new Registry() };
    const notifications = started({
      rest,
      logger: pino({ level: 'silent' }),
      metrics,
      clock: { now: () => new Date() },
      trusted: new Set(),
      recorder: { record: () => Promise.resolve() },
    });
    try {
      await webhookSetup(ns.name, { address: `${receiver.url}/batched`, batch: { window: '1s', maxEvents: 50 } });
      // 120 events of 120 syncs, as a commit's reconciles record them: 50, 50, then 20 when the window ends.
      for (let i = 0; i < 120; i++)
        void notifications.events.record(involved(ns.name, `s${i}`), { type: 'Normal', reason: 'Synced', message: `revision 0123456789ab: ${i} created` });
      await receiver.waitFor((r) => r.length >= 3, 'three batches');
      await notifications.idle();
      const { createHmac } = await import('node:crypto');
      const bodies = receiver.requests.map((r) => {
        expect(r.path).toBe('/batched');
        expect(r.headers['content-type']).toBe('application/json');
        expect(r.headers['x-syncline-signature']).toBe(`sha256=${createHmac('sha256', 'shared-key').update(r.body).digest('hex')}`);
        return JSON.parse(r.body) as { kind: string; name: string; alert: string; message: string }[];
      });
      expect(bodies.map((b) => b.length)).toEqual([50, 50, 20]);
      const events = bodies.flat();
      expect(events.map((e) => e.name)).toEqual(Array.from({ length: 120 }, (_, i) => `s${i}`));
      expect(events[7]).toMatchObject({ kind: 'ConfigSync', alert: `${ns.name}/all`, message: 'revision 0123456789ab: 7 created', category: 'Applied' });
      const sent = (await metrics.registry.getSingleMetric('syncline_notifications_total')?.get())?.values.find((v) => v.labels['result'] === 'sent');
      expect(sent?.value).toBe(120);
      expect((await readyOf(ns.name, 'notificationalerts', 'all'))?.status).toBe('True');
      // A template words one event: the CRD's rule refuses it beside a batch.
      const refused = await create(ns.name, 'notificationproviders', {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'NotificationProvider',
        metadata: { name: 'templated' },
        spec: { type: 'webhook', secretRef: { name: 'hook' }, template: '{{json message}}', batch: { window: '1s' } },
      }).then(
        () => 'created',
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      );
      expect(refused).toMatch(/batch is not available with a template/);
    } finally {
      await notifications.stop();
    }
  }, 120_000);

  it('a batch the receiver refuses is retried whole, then each NotificationAlert it carried says DeliveryFailed; the next batch that succeeds clears it', async () => {
    await using ns = await testNamespace({ prefix: 'notify-batch-500' });
    await using receiver = await startHttpReceiver({ respond: () => ({ status: 500, body: 'boom' }) });
    const notifications = started({
      rest,
      logger: pino({ level: 'silent' }),
      metrics: { registry: new Registry() },
      clock: { now: () => new Date() },
      trusted: new Set(),
      recorder: createEventRecorder({ rest, component: 'syncline', host: 'test', clock: { now: () => new Date() } }),
      delivery: { attempts: 3, initialBackoffMs: 100 },
    });
    try {
      await webhookSetup(ns.name, { address: `${receiver.url}/batched`, batch: { window: '500ms', maxEvents: 10 } });
      // A second NotificationAlert on the same NotificationProvider, for ConfigSync web only (its summary makes its
      // message differ from the first's: one channel does not carry the same words twice).
      await create(ns.name, 'notificationalerts', {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'NotificationAlert',
        metadata: { name: 'web' },
        spec: { providerRef: { name: 'hook' }, eventSources: [{ kind: 'ConfigSync', name: 'web' }], summary: 'web team' },
      });
      await eventually(
        async () => ((await readyOf(ns.name, 'notificationalerts', 'web'))?.status === 'True' ? true : undefined),
        'NotificationAlert web Ready',
      );
      void notifications.events.record(involved(ns.name, 'web'), { type: 'Normal', reason: 'Synced', message: 'revision 0123456789ab: 1 created' });
      void notifications.events.record(involved(ns.name, 'api'), { type: 'Normal', reason: 'Synced', message: 'revision 0123456789ab: 2 created' });
      await receiver.waitFor((r) => r.length >= 3, 'three attempts');
      await notifications.idle();
      // One batch of three messages (web to both NotificationAlerts, api to "all"), sent three times as it was.
      expect(receiver.requests).toHaveLength(3);
      expect(new Set(receiver.requests.map((r) => r.body)).size).toBe(1);
      expect((JSON.parse(receiver.requests[0]?.body ?? '[]') as { alert: string }[]).map((m) => m.alert).sort()).toEqual([
        `${ns.name}/all`,
        `${ns.name}/all`,
        `${ns.name}/web`,
      ]);
      for (const name of ['all', 'web'])
        await eventually(
          async () => ((await readyOf(ns.name, 'notificationalerts', name))?.reason === 'DeliveryFailed' ? true : undefined),
          `NotificationAlert ${name} to say DeliveryFailed`,
        );
      // The receiver is back: the next batch is delivered and both NotificationAlerts are Ready again.
      receiver.respond(() => ({ status: 200, body: 'ok' }));
      void notifications.events.record(involved(ns.name, 'web'), { type: 'Normal', reason: 'Synced', message: 'revision 0123456789ab: 3 created' });
      await receiver.waitFor((r) => r.length >= 4, 'the next batch');
      for (const name of ['all', 'web'])
        await eventually(
          async () => ((await readyOf(ns.name, 'notificationalerts', name))?.status === 'True' ? true : undefined),
          `NotificationAlert ${name} Ready again`,
        );
    } finally {
      await notifications.stop();
    }
  }, 120_000);

  it('an event meets exactly the NotificationAlerts whose sources name it: by name, any name, any kind; not another name, kind or namespace', async () => {
    await using ns = await testNamespace({ prefix: 'notify-match' });
    await using other = await testNamespace({ prefix: 'notify-match-other' });
    await using receiver = await startHttpReceiver();
    const recorder: EventRecorder = { record: () => Promise.resolve() };
    const notifications = started({
      rest,
      logger: pino({ level: 'silent' }),
      metrics: { registry: new Registry() },
      clock: { now: () => new Date() },
      trusted: new Set([ns.name]),
      recorder,
    });
    try {
      await webhookSetup(ns.name, { address: `${receiver.url}/hook` });
      const sources: Record<string, Record<string, string>[]> = {
        named: [{ kind: 'ConfigSync', name: 'web' }],
        'any-kind': [{ kind: '*', name: 'web' }],
        'both-names': [
          { kind: 'ConfigSync', name: 'api' },
          { kind: 'ConfigSync', name: 'web' },
        ],
        'other-name': [{ kind: 'ConfigSync', name: 'api' }],
        'other-kind': [{ kind: 'ManifestSync', name: '*' }],
        'other-namespace': [{ kind: 'ConfigSync', name: 'web', namespace: other.name }],
      };
      // A NotificationProvider each: one channel does not carry the same words twice (deduplicated), whichever NotificationAlert asked.
      for (const [name, eventSources] of Object.entries(sources)) {
        await create(ns.name, 'notificationproviders', {
          apiVersion: 'syncline.dev/v1alpha1',
          kind: 'NotificationProvider',
          metadata: { name },
          spec: { type: 'webhook', secretRef: { name: 'hook' } },
        });
        await create(ns.name, 'notificationalerts', {
          apiVersion: 'syncline.dev/v1alpha1',
          kind: 'NotificationAlert',
          metadata: { name },
          spec: { providerRef: { name }, eventSources },
        });
      }
      for (const name of Object.keys(sources))
        await eventually(
          async () => ((await readyOf(ns.name, 'notificationalerts', name))?.status === 'True' ? true : undefined),
          `NotificationAlert ${name} Ready`,
        );
      // The NotificationAlerts are in the cache once Ready: one event of ConfigSync web, then one of a ManifestSync named web.
      void notifications.events.record(involved(ns.name, 'web'), { type: 'Normal', reason: 'Synced', message: 'revision 0123456789ab: 1 created' });
      void notifications.events.record({ ...involved(ns.name, 'web'), kind: 'ManifestSync' }, { type: 'Normal', reason: 'Synced', message: '1 created' });
      // "all" (webhookSetup's, ConfigSync *) hears the ConfigSync; "any-kind" both.
      await receiver.waitFor((r) => r.length >= 6, 'six deliveries');
      await notifications.idle();
      const heard = receiver.requests.map((r) => JSON.parse(r.body) as { alert: string; kind: string }).map((b) => `${b.kind} ${b.alert.split('/')[1] ?? ''}`);
      expect(heard.sort()).toEqual([
        'ConfigSync all',
        'ConfigSync any-kind',
        'ConfigSync both-names',
        'ConfigSync named',
        'ManifestSync any-kind',
        'ManifestSync other-kind',
      ]);
    } finally {
      await notifications.stop();
    }
  }, 120_000);

  it('a receiver that answers 500 is retried, then reported: a Warning Event and the condition on the NotificationAlert, and the metric; no URL anywhere', async () => {
    await using ns = await testNamespace({ prefix: 'notify-500' });
    await using receiver = await startHttpReceiver({ respond: () => ({ status: 500, body: 'boom' }) });
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, new Writable({ write: (chunk: Buffer, _encoding, done) => done(void lines.push(chunk.toString())) }));
    const metrics = { registry: new Registry() };
    const recorder = createEventRecorder({ rest, component: 'syncline', host: 'test', clock: { now: () => new Date() } });
    const notifications = started({
      rest,
      logger,
      metrics,
      clock: { now: () => new Date() },
      trusted: new Set(),
      recorder,
      delivery: { attempts: 4, initialBackoffMs: 100 },
    });
    const secretPath = '/hooks/T0SECRET/B0SECRET';
    try {
      await webhookSetup(ns.name, { address: `${receiver.url}${secretPath}` });
      void notifications.events.record(involved(ns.name, 'web'), { type: 'Normal', reason: 'Synced', message: 'revision 0123456789ab: 1 created' });
      await receiver.waitFor((r) => r.length >= 4, 'four attempts');
      const ready = await eventually(async () => {
        const r = await readyOf(ns.name, 'notificationalerts', 'all');
        return r?.reason === 'DeliveryFailed' ? r : undefined;
      }, 'the NotificationAlert to say DeliveryFailed');
      expect(ready.message).toMatch(/webhook NotificationProvider .*\/hook: failed: the receiver answered HTTP 500/);
      const events = await eventually(async () => {
        const list = await rest.request<{ items: { reason: string; message: string; involvedObject: { kind: string; name: string } }[] }>({
          method: 'GET',
          path: `/api/v1/namespaces/${ns.name}/events`,
        });
        const found = list.items.filter((e) => e.involvedObject.kind === 'NotificationAlert' && e.reason === 'DeliveryFailed');
        return found.length > 0 ? found : undefined;
      }, 'a DeliveryFailed Event on the NotificationAlert');
      expect(events[0]?.involvedObject.name).toBe('all');
      const failed = (await metrics.registry.getSingleMetric('syncline_notifications_total')?.get())?.values.find(
        (v) => v.labels['result'] === 'failed' && v.labels['provider'] === 'webhook',
      );
      expect(failed?.value).toBe(1);
      expect(receiver.requests).toHaveLength(4);
      const said = [ready.message, ...events.map((e) => e.message), ...lines].join('\n');
      expect(said).not.toContain('SECRET');
      expect(said).not.toContain(receiver.url);
    } finally {
      await notifications.stop();
    }
  }, 120_000);

  it('checks NotificationProviders and NotificationAlerts on the controller manager: a check that never finishes fails liveness naming notifications, and its lane shows it', async () => {
    await using ns = await testNamespace({ prefix: 'notify-stall' });
    const logger = pino({ level: 'silent' });
    const controllers = createManager({ logger, metrics: { leader: { set: () => undefined }, trackQueue: () => () => undefined }, stallTimeoutMs: 1000 });
    // The registration seam: every check of the notifications controller hangs until released.
    const stall = { released: false, waiting: [] as (() => void)[] };
    const done: ReconcileOutcome = { kind: 'done' };
    const stalling: ControllerRegistry = {
      isLeader: () => controllers.isLeader(),
      register: (name, options, declare) =>
        controllers.register(name, options, (queue) => ({
          ...declare(queue),
          reconcile: () => (stall.released ? Promise.resolve(done) : new Promise<ReconcileOutcome>((resolve) => stall.waiting.push(() => resolve(done)))),
        })),
    };
    const notifications = startNotifications({
      rest,
      logger,
      metrics: { registry: new Registry() },
      clock: { now: () => new Date() },
      trusted: new Set(),
      recorder: { record: () => Promise.resolve() },
      watchNamespace: ns.name,
      controllers: stalling,
    });
    controllers.start();
    try {
      // A NotificationProvider to check (its Secret need not exist: the check never gets that far).
      await create(ns.name, 'notificationproviders', {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'NotificationProvider',
        metadata: { name: 'hook' },
        spec: { type: 'webhook', secretRef: { name: 'hook' } },
      });
      const reason = await eventually(() => {
        const live = controllers.live();
        return live.ok ? undefined : live.reason;
      }, 'liveness to fail');
      expect(reason).toMatch(new RegExp(`^controller ${NOTIFICATIONS_CONTROLLER}: its work queue has had work and finished none of it`));
      expect(controllers.lanes()).toEqual([expect.objectContaining({ controller: NOTIFICATIONS_CONTROLLER, inFlight: expect.any(Number) as number })]);
      expect(controllers.lanes()[0]?.inFlight).toBeGreaterThan(0);
    } finally {
      stall.released = true;
      for (const go of stall.waiting.splice(0)) go();
      await notifications.stop();
      await controllers.stop();
    }
  }, 120_000);
});

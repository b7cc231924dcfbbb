// Notifications, wired in process: a tap on the operator's Event recorder (every Event it records anyway is
// offered to the NotificationAlerts that ask for it) and on the ConfigSync cache (commit statuses follow each sync's
// status). NotificationProviders and NotificationAlerts are watched and checked by a controller registered on the
// process's controller manager (its lane, its leadership: a replica checks them all when it starts to lead);
// their Secrets are read when they change (provider.ts). Sending
// is the dispatcher's, off the reconcile path: the tap returns at once, and notifications make no request to
// the API server per event. Failures are Warning Events on the NotificationAlert and a Ready condition on NotificationAlert and
// Provider; nothing that is logged, recorded or written names a URL or a credential.
import { Informer, objectKey, type EventRecorder, type KubeObject, type KubeRest, type WatchBudget } from '@syncline/kube';
import type { HttpTransport } from '@syncline/source-git';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { AlertSpec, type Condition, type ConfigSync, type NotificationProvider } from '@syncline/api';
import {
  parseDuration,
  objectPath,
  writeStatus,
  type ControllerDeclaration,
  type ControllerQueue,
  type ControllerRegistry,
  type TrustedNamespaces,
} from '@syncline/runtime';
import { alertIndex, alertMatches, refusedSources, sourceMatches, type AlertView } from './alerts.ts';
import {
  createDispatcher,
  DeliveryResult,
  type ChannelSettings,
  type DeliveryBatch,
  type Dispatcher,
  type DispatcherOptions,
  type PreparedRequest,
} from './delivery.ts';
import { RecoveryTracker, notificationEvent, type InvolvedObject, type NotificationEvent, type RecordedEvent } from './event.ts';
import { commitContext, commitStates, commitStatusRequest, forgeRepository, type CommitStatus } from './forge.ts';
import { chatBatchRequests } from './batch-payloads.ts';
import { createReceiverTransport } from './transport.ts';
import { chatRequest, type ChatProvider, type Message } from './payloads.ts';
import {
  ProviderError,
  channelSettings,
  forgeCredentialsFromGitSecret,
  isCommitStatusType,
  readSecretData,
  resolveProvider,
  type ResolvedProvider,
} from './provider.ts';

export const NOTIFICATIONS_METRIC = 'syncline_notifications_total';
export const DELIVERY_FAILED = 'DeliveryFailed';
/** The controller name of notifications (queue metrics, logs, liveness). */
export const NOTIFICATIONS_CONTROLLER = 'notifications';

/** The keys of the notifications controller: a NotificationProvider or a NotificationAlert to check. */
type CheckKey = `NotificationProvider/${string}` | `NotificationAlert/${string}`;

export type NotificationsOptions = {
  readonly rest: KubeRest;
  readonly logger: Logger;
  readonly metrics: { readonly registry: Registry };
  readonly clock: { now(): Date };
  readonly trusted: TrustedNamespaces;
  /** The recorder the operator uses today: every Event still goes there first, unchanged. */
  readonly recorder: EventRecorder;
  /**
   * The controller manager the checks of NotificationProviders and NotificationAlerts register on (handed over by
   * the composition root); only its leader sends and writes status (the others' taps see no Events anyway).
   */
  readonly controllers: ControllerRegistry;
  readonly budget?: WatchBudget;
  /** Watch NotificationProviders and NotificationAlerts in this namespace only; undefined = all. */
  readonly watchNamespace?: string | undefined;
  readonly transport?: HttpTransport;
  readonly delivery?: Pick<DispatcherOptions, 'dedupWindowMs' | 'queueSize' | 'attempts' | 'initialBackoffMs'>;
};

export type Notifications = {
  /** The recorder to hand to every reconciler: records as before, and offers each Event to the NotificationAlerts. */
  readonly events: EventRecorder;
  /** Feed of ConfigSync changes from the operator's own cache (the manager's observe): commit statuses. */
  readonly observeConfigSync: (type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubeObject) => void;
  /** Resolves when no delivery is queued or in flight. */
  idle(): Promise<void>;
  stop(): Promise<void>;
};

type ProviderState = { resolved?: ResolvedProvider; error?: ProviderError; resolving?: Promise<ResolvedProvider> };

/** The NotificationProvider as deliveries use it: read once per change of the NotificationProvider, and again after a failed delivery. */
function providerResolver(
  rest: KubeRest,
  providerStates: Map<string, ProviderState>,
  current: (key: string) => NotificationProvider | undefined,
): (key: string) => Promise<ResolvedProvider> {
  return async (key) => {
    const state = providerStates.get(key) ?? {};
    providerStates.set(key, state);
    const object = current(key);
    if (object === undefined) throw new ProviderError('InvalidSpec', `NotificationProvider ${key} not found`);
    const fresh = state.resolved !== undefined && state.resolved.generation === object.metadata.generation;
    if (fresh && state.resolved !== undefined) return state.resolved;
    state.resolving ??= resolveProvider(rest, object, Date.now()).finally(() => {
      state.resolving = undefined;
    });
    try {
      state.resolved = await state.resolving;
      state.error = undefined;
      return state.resolved;
    } catch (error) {
      state.resolved = undefined;
      state.error = error instanceof ProviderError ? error : new ProviderError('InvalidSecret', "the NotificationProvider's Secrets could not be read");
      throw state.error;
    }
  };
}

export function startNotifications(options: NotificationsOptions): Notifications {
  let notifications: Notifications | undefined;
  options.controllers.register<CheckKey, ControllerDeclaration<CheckKey>>(NOTIFICATIONS_CONTROLLER, { concurrency: 4 }, (queue) => {
    const made = notificationsController(queue, options);
    notifications = made.notifications;
    return made.declaration;
  });
  return notifications as unknown as Notifications;
}

function notificationsController(
  queue: ControllerQueue<CheckKey>,
  options: NotificationsOptions,
): { notifications: Notifications; declaration: ControllerDeclaration<CheckKey> } {
  const { rest, logger, trusted } = options;
  const isLeader = (): boolean => options.controllers.isLeader();
  const log = logger.child({ component: 'notifications' });
  const counter = notificationsCounter(options.metrics.registry);
  const transport = transportOf(options.transport);
  const dispatcher: Dispatcher = createDispatcher({
    transport: transport.transport,
    count: (provider, result) => counter.inc({ provider, result }),
    ...options.delivery,
  });
  const providerStates = new Map<string, ProviderState>();
  const recovery = new RecoveryTracker();
  const collection = (plural: string): string =>
    `/apis/syncline.dev/v1alpha1${options.watchNamespace === undefined ? '' : `/namespaces/${options.watchNamespace}`}/${plural}`;
  const status = createStatusWriter({
    rest,
    log,
    isLeader,
    read: (plural, key) => (plural === 'notificationproviders' ? providers : alerts).get(key),
    clock: options.clock,
  });
  let stopped = false;

  const providerFor = providerResolver(rest, providerStates, (key) => providers.get(key) as NotificationProvider | undefined);
  const plan = providerPlans(providerFor);

  /** Checks a NotificationProvider (and the NotificationAlerts that use it) and says so in their status. */
  const checkProvider = async (key: string): Promise<void> => {
    if (!isLeader() || stopped) return;
    try {
      const resolved = await providerFor(key);
      status.ready('notificationproviders', key, { status: 'True', reason: 'Ready', message: `${resolved.spec.type} provider ready` });
    } catch (error) {
      const e = error instanceof ProviderError ? error : new ProviderError('InvalidSecret', 'the NotificationProvider could not be read');
      status.ready('notificationproviders', key, { status: 'False', reason: e.reason, message: e.message });
    }
    for (const alert of alerts.list()) if (providerKeyOf(alert) === key) queue.add(`NotificationAlert/${objectKey(alert)}`);
  };

  const checkAlert = (key: string): void => {
    if (!isLeader() || stopped) return;
    const view = alertView(alerts.get(key));
    if (view === undefined) {
      status.ready('notificationalerts', key, { status: 'False', reason: 'InvalidSpec', message: 'invalid spec' });
      return;
    }
    const refused = refusedSources(view, trusted);
    const providerKey = `${view.namespace}/${view.spec.providerRef.name}`;
    const provider = providerStates.get(providerKey);
    if (refused.length > 0) status.ready('notificationalerts', key, { status: 'False', reason: 'NamespaceNotAllowed', message: refused.join('; ') });
    else if (providers.get(providerKey) === undefined)
      status.ready('notificationalerts', key, { status: 'False', reason: 'ProviderNotFound', message: `NotificationProvider ${providerKey} not found` });
    else if (provider?.error !== undefined)
      status.ready('notificationalerts', key, {
        status: 'False',
        reason: 'ProviderNotReady',
        message: `NotificationProvider ${providerKey}: ${provider.error.message}`,
      });
    else
      status.ready(
        'notificationalerts',
        key,
        { status: 'True', reason: 'Ready', message: `sending to NotificationProvider ${providerKey}` },
        { keepFailure: true },
      );
  };

  /** Whether a NotificationProvider sets commit statuses: looked at once per change of the NotificationProviders, not per ConfigSync change. */
  let commitStatusProviders: boolean | undefined;
  const setsCommitStatuses = (): boolean =>
    (commitStatusProviders ??= providers.list().some((p) => isCommitStatusType(String((p['spec'] as { type?: unknown } | undefined)?.type))));
  const providers = new Informer({
    rest,
    ...(options.budget === undefined ? {} : { budget: options.budget }),
    path: collection('notificationproviders'),
    onEvent: (type, object, previous) => {
      commitStatusProviders = undefined;
      const key = objectKey(object);
      if (type === 'DELETED') {
        providerStates.delete(key);
        return;
      }
      // Our own status write changes neither; an annotation does (the way to have its Secrets read again).
      if (
        type === 'MODIFIED' &&
        previous !== undefined &&
        previous.metadata.generation === object.metadata.generation &&
        JSON.stringify(previous.metadata.annotations) === JSON.stringify(object.metadata.annotations)
      )
        return;
      providerStates.delete(key);
      queue.add(`NotificationProvider/${key}`);
    },
    onError: (error) => log.warn({ err: error instanceof Error ? error.message : String(error) }, 'Provider watch failed; restarting'),
  });
  const alertsFor = alertIndex(() => alerts.list(), alertView);
  const alerts = new Informer({
    rest,
    ...(options.budget === undefined ? {} : { budget: options.budget }),
    path: collection('notificationalerts'),
    onEvent: (type, object, previous) => {
      alertsFor.reset();
      if (type === 'DELETED') return;
      if (type === 'MODIFIED' && previous?.metadata.generation === object.metadata.generation) return;
      queue.add(`NotificationAlert/${objectKey(object)}`);
    },
    onError: (error) => log.warn({ err: error instanceof Error ? error.message : String(error) }, 'Alert watch failed; restarting'),
  });
  // A replica that becomes leader checks every NotificationProvider and NotificationAlert once (as a follower it wrote no status).
  const declaration: ControllerDeclaration<CheckKey> = {
    caches: [providers, alerts],
    keys: () => [
      ...providers.list().map((p): CheckKey => `NotificationProvider/${objectKey(p)}`),
      ...alerts.list().map((a): CheckKey => `NotificationAlert/${objectKey(a)}`),
    ],
    reconcile: async (key) => {
      if (key.startsWith('NotificationProvider/')) await checkProvider(key.slice('NotificationProvider/'.length));
      else checkAlert(key.slice('NotificationAlert/'.length));
      return { kind: 'done' };
    },
  };

  const delivered = createDeliveryReporter({
    log,
    status,
    recorder: options.recorder,
    isLeader,
    alert: (key) => alerts.get(key),
    forgetProvider: (key) => providerStates.delete(key),
  });

  /** The tap: an Event the operator records, offered to every NotificationAlert that asks for it. Never throws, never waits. */
  const offer = (object: InvolvedObject, event: RecordedEvent): void => {
    // A repeat counts up an Event already sent: one notification per failure until its cause changes.
    if (stopped || event.repeat === true || object.kind === 'NotificationAlert' || object.kind === 'NotificationProvider') return;
    const recovered = recovery.observe(`${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`, event.type);
    // Most objects have no NotificationAlert: their Events are not made into notifications at all.
    const candidates = alertsFor.of({ namespace: object.metadata.namespace ?? '', kind: object.kind, name: object.metadata.name });
    if (candidates.length === 0) return;
    const notification = notificationEvent({ object, event, recovered, now: options.clock.now() });
    for (const alert of candidates) {
      const view = alertView(alert);
      if (view === undefined || !alertMatches(view, notification, trusted)) continue;
      const provider = providers.get(`${view.namespace}/${view.spec.providerRef.name}`) as NotificationProvider | undefined;
      if (provider === undefined || provider.spec.suspend === true || isCommitStatusType(provider.spec.type)) continue;
      deliverChat({ dispatcher, providerFor, delivered, plan }, { alertKey: objectKey(alert), view, provider, notification });
    }
  };

  const commitStatuses = createCommitStatuses({
    rest,
    alerts: alertsFor.of,
    providers: (key) => providers.get(key) as NotificationProvider | undefined,
    providerFor,
    trusted,
    dispatcher,
    delivered,
  });

  const notifications: Notifications = {
    events: {
      record(object, event) {
        const written = options.recorder.record(object, event);
        try {
          offer(object, event);
        } catch (error) {
          log.debug({ err: error instanceof Error ? error.message : String(error) }, 'could not offer an event to the NotificationAlerts');
        }
        return written;
      },
    },
    observeConfigSync: (type, object) => {
      if (stopped || !isLeader()) return;
      // The common case costs one look at a flag: no NotificationProvider sets commit statuses.
      if (!setsCommitStatuses()) return;
      try {
        commitStatuses(type, object as unknown as ConfigSync);
      } catch (error) {
        log.debug({ err: error instanceof Error ? error.message : String(error) }, 'could not derive commit statuses');
      }
    },
    idle: () => dispatcher.idle(),
    // The watches are the controller manager's, stopped with it.
    // What is queued, in flight or gathered in a batch's window is dropped, not flushed: a flush would send while the
    // process is asked to end, and a batch may wait its whole window. The log says how many.
    stop() {
      stopped = true;
      const givenUp = dispatcher.stop();
      void transport.close();
      if (givenUp > 0)
        log.info({ notifications: givenUp }, 'notifications given up unsent (queued, gathered in a batch or in flight): the operator is stopping');
      return Promise.resolve();
    },
  };
  return { notifications, declaration };
}

/** The transport handed over, or the receivers' undici clients of this process's own (which stop() closes). */
function transportOf(given: HttpTransport | undefined): { transport: HttpTransport; close: () => Promise<void> } {
  if (given !== undefined) return { transport: given, close: () => Promise.resolve() };
  const own = createReceiverTransport();
  return { transport: own, close: () => own.close() };
}

type Reporter = (alertKey: string, providerKey: string, providerType: string) => (result: DeliveryResult, error?: string) => void;

/** What happened to one delivery of a NotificationAlert (counted already): a failure is a Warning Event on the NotificationAlert and a condition on both. */
function createDeliveryReporter(deps: {
  readonly log: Logger;
  readonly status: ReturnType<typeof createStatusWriter>;
  readonly recorder: EventRecorder;
  readonly isLeader: () => boolean;
  readonly alert: (key: string) => KubeObject | undefined;
  readonly forgetProvider: (key: string) => void;
}): Reporter {
  return (alertKey, providerKey, providerType) => (result, error) => {
    if (result === DeliveryResult.Sent) {
      deps.status.recovered('notificationalerts', alertKey, `sending to NotificationProvider ${providerKey}`);
      deps.status.recovered('notificationproviders', providerKey, `${providerType} provider ready`);
      return;
    }
    if (result === DeliveryResult.Deduplicated) return;
    if (result === DeliveryResult.Dropped) {
      deps.log.debug({ alert: alertKey, provider: providerKey }, 'notification dropped: the queue is full');
      return;
    }
    const message = `${providerType} NotificationProvider ${providerKey}: failed: ${error ?? 'unknown error'}`;
    deps.log.warn({ alert: alertKey, provider: providerKey, err: error }, 'notification not delivered');
    // A rotated token or webhook URL shows as a failure: the next delivery reads the Secrets again.
    deps.forgetProvider(providerKey);
    const alert = deps.alert(alertKey);
    if (alert !== undefined && deps.isLeader())
      void deps.recorder.record(alert as unknown as InvolvedObject, { type: 'Warning', reason: DELIVERY_FAILED, message });
    deps.status.ready('notificationalerts', alertKey, { status: 'False', reason: DELIVERY_FAILED, message });
    deps.status.ready('notificationproviders', providerKey, { status: 'False', reason: DELIVERY_FAILED, message });
  };
}

/** What every delivery through a NotificationProvider shares: its channel's settings and, batched, its batch's plan. */
type ProviderPlan = { readonly settings: ChannelSettings; readonly batch?: Omit<DeliveryBatch, 'message'> | undefined };

/**
 * The plans of NotificationProviders by cached object (the informer holds a new one per change): worked out once,
 * not per event. A batch's requests are built from the NotificationProvider as it is when the batch's turn comes.
 */
function providerPlans(providerFor: (key: string) => Promise<ResolvedProvider>): (provider: NotificationProvider) => ProviderPlan {
  const plans = new WeakMap<NotificationProvider, ProviderPlan>();
  return (provider) => {
    const cached = plans.get(provider);
    if (cached !== undefined) return cached;
    const key = objectKey(provider);
    const { batch, template } = provider.spec;
    const plan: ProviderPlan = {
      settings: channelSettings(provider.spec),
      batch:
        batch === undefined || template !== undefined
          ? undefined
          : {
              windowMs: parseDuration(batch.window),
              maxEvents: batch.maxEvents,
              prepare: async (messages) => {
                const { resolved, chat } = await resolvedChat(providerFor, key);
                return chatBatchRequests(chat, resolved.credentials, messages).map(({ request, count }) => ({
                  request: { ...request, ...requestTransport(resolved) },
                  count,
                }));
              },
            },
    };
    plans.set(provider, plan);
    return plan;
  };
}

async function resolvedChat(providerFor: (key: string) => Promise<ResolvedProvider>, key: string): Promise<{ resolved: ResolvedProvider; chat: ChatProvider }> {
  const resolved = await providerFor(key);
  return { resolved, chat: { ...resolved.spec, type: resolved.spec.type as ChatProvider['type'], template: resolved.template } };
}

/** How a chat request reaches its receiver: the NotificationProvider's CA and proxy, and how to read Slack's Web API answer. */
const requestTransport = (resolved: ResolvedProvider): Pick<PreparedRequest, 'ca' | 'proxy' | 'okField'> => ({
  ca: resolved.ca,
  proxy: resolved.proxy,
  okField: resolved.spec.type === 'slack' && resolved.credentials.token !== undefined,
});

/** One chat or webhook message of one NotificationAlert, to the dispatcher; the request is built when its turn comes. */
function deliverChat(
  deps: {
    readonly dispatcher: Dispatcher;
    readonly providerFor: (key: string) => Promise<ResolvedProvider>;
    readonly delivered: Reporter;
    readonly plan: (provider: NotificationProvider) => ProviderPlan;
  },
  input: { readonly alertKey: string; readonly view: AlertView; readonly provider: NotificationProvider; readonly notification: NotificationEvent },
): void {
  const { alertKey, view, provider, notification } = input;
  const providerKey = `${view.namespace}/${view.spec.providerRef.name}`;
  const message: Message = { event: notification, alert: alertKey, summary: view.spec.summary };
  const plan = deps.plan(provider);
  deps.dispatcher.deliver({
    provider: providerKey,
    providerType: provider.spec.type,
    dedupKey: dedupKey(notification, view.spec.summary),
    settings: plan.settings,
    prepare: async () => {
      const { resolved, chat } = await resolvedChat(deps.providerFor, providerKey);
      return { ...chatRequest(chat, resolved.credentials, message), ...requestTransport(resolved) };
    },
    done: deps.delivered(alertKey, providerKey, provider.spec.type),
    ...(plan.batch === undefined ? {} : { batch: { ...plan.batch, message } }),
  });
}

/** Identical to the receiver: the same words about the same object (the time aside), and the same summary. */
export function dedupKey(event: NotificationEvent, summary: string | undefined): string {
  const { kind, namespace, name, labels, severity, reason, category, message, recovered, revision } = event;
  return JSON.stringify([kind, namespace, name, labels, severity, reason, category, message, recovered, revision ?? null, summary ?? '']);
}

function notificationsCounter(registry: Registry): Counter<'provider' | 'result'> {
  const existing = registry.getSingleMetric(NOTIFICATIONS_METRIC);
  if (existing !== undefined) return existing as Counter<'provider' | 'result'>;
  return new Counter({
    name: NOTIFICATIONS_METRIC,
    help: 'Notifications by NotificationProvider type and result: sent, failed (after retries), dropped (queue full), deduplicated.',
    labelNames: ['provider', 'result'],
    registers: [registry],
  });
}

/** Parsed NotificationAlerts by cached object (the informer holds a new one per change): every event meets every NotificationAlert, each is parsed once. */
const parsedAlerts = new WeakMap<KubeObject, AlertView | null>();

function alertView(object: KubeObject | undefined): AlertView | undefined {
  if (object === undefined) return undefined;
  const cached = parsedAlerts.get(object);
  if (cached !== undefined) return cached ?? undefined;
  const parsed = AlertSpec.safeParse(object['spec']);
  const view = parsed.success ? { namespace: object.metadata.namespace ?? 'default', name: object.metadata.name, spec: parsed.data } : null;
  parsedAlerts.set(object, view);
  return view ?? undefined;
}

const providerKeyOf = (alert: KubeObject): string | undefined => {
  const ref = (alert['spec'] as { providerRef?: { name?: string } } | undefined)?.providerRef?.name;
  return ref === undefined ? undefined : `${alert.metadata.namespace ?? 'default'}/${ref}`;
};

type CommitStatusDeps = {
  readonly rest: KubeRest;
  /** The NotificationAlerts whose sources cover a namespace. */
  readonly alerts: (object: { namespace: string; kind: string; name: string }) => readonly KubeObject[];
  readonly providers: (key: string) => NotificationProvider | undefined;
  readonly providerFor: (key: string) => Promise<ResolvedProvider>;
  readonly trusted: TrustedNamespaces;
  readonly dispatcher: Dispatcher;
  readonly delivered: Reporter;
};

/** Remembered per sync target and NotificationAlert, at most this many: the oldest are forgotten first. */
const REMEMBERED = 10_000;

/**
 * Commit statuses from a ConfigSync's status changes. A target's state is posted when it changes; before a final
 * state of a commit nothing was posted for yet, pending goes first (so the forge shows the commit go from pending
 * to its result even when one reconcile applied it). What the cache holds at start is not posted again: it was
 * final before this process (or before the NotificationAlert) saw it.
 */
function createCommitStatuses(deps: CommitStatusDeps): (type: 'ADDED' | 'MODIFIED' | 'DELETED', cs: ConfigSync) => void {
  const seen = new Map<string, Map<string, string>>();
  const pendingPosted = new Map<string, string>();
  // The ConfigSyncs' Git Secrets, read once and again after a failed delivery (a rotated token shows as one).
  const gitSecrets = new Map<string, Promise<Readonly<Record<string, string>> | undefined>>();
  const gitCredentials = (namespace: string, name: string): Promise<Readonly<Record<string, string>> | undefined> => {
    const key = `${namespace}/${name}`;
    const cached = gitSecrets.get(key);
    if (cached !== undefined) return cached;
    const data = readSecretData(deps.rest, namespace, name);
    gitSecrets.set(key, data);
    data.catch(() => gitSecrets.delete(key));
    return data;
  };
  const remember = <V>(map: Map<string, V>, key: string, value: V): void => {
    map.delete(key);
    map.set(key, value);
    for (const oldest of map.keys()) {
      if (map.size <= REMEMBERED) break;
      map.delete(oldest);
    }
  };

  const post = (alert: KubeObject, provider: NotificationProvider, cs: ConfigSync, status: CommitStatus): void => {
    const namespace = cs.metadata.namespace ?? 'default';
    const providerKey = `${provider.metadata.namespace ?? 'default'}/${provider.metadata.name}`;
    deps.dispatcher.deliver({
      provider: providerKey,
      providerType: provider.spec.type,
      dedupKey: JSON.stringify([status.context, status.sha, status.state, status.description]),
      settings: channelSettings(provider.spec),
      prepare: async () => {
        const resolved = await deps.providerFor(providerKey);
        const type = resolved.spec.type as Parameters<typeof forgeRepository>[0];
        const repository = forgeRepository(type, cs.spec.source.git.repo, resolved.spec.address);
        const own = resolved.credentials;
        const secretRef = cs.spec.source.git.secretRef;
        const credentials =
          own.token !== undefined || own.password !== undefined
            ? own
            : forgeCredentialsFromGitSecret(secretRef === undefined ? undefined : await gitCredentials(namespace, secretRef.name));
        return { ...commitStatusRequest(type, repository, credentials, status), ca: resolved.ca, proxy: resolved.proxy };
      },
      done: (result, error) => {
        const secretRef = cs.spec.source.git.secretRef;
        if (result === DeliveryResult.Failed && secretRef !== undefined) gitSecrets.delete(`${namespace}/${secretRef.name}`);
        deps.delivered(objectKey(alert), providerKey, provider.spec.type)(result, error);
      },
    });
  };

  return (type, cs) => {
    const key = objectKey(cs);
    if (type === 'DELETED') {
      seen.delete(key);
      return;
    }
    const object = { kind: 'ConfigSync', namespace: cs.metadata.namespace ?? 'default', name: cs.metadata.name, labels: cs.metadata.labels ?? {} };
    const targets: { alert: KubeObject; provider: NotificationProvider }[] = [];
    for (const alert of deps.alerts(object)) {
      const view = alertView(alert);
      if (view === undefined || view.spec.suspend || !sourceMatches(view, object, deps.trusted)) continue;
      const provider = deps.providers(`${view.namespace}/${view.spec.providerRef.name}`);
      if (provider !== undefined && provider.spec.suspend !== true && isCommitStatusType(provider.spec.type)) targets.push({ alert, provider });
    }
    // No commit status asked for: nothing remembered either (a NotificationAlert added later starts from what it then sees).
    if (targets.length === 0) {
      seen.delete(key);
      return;
    }
    const states = commitStates(cs);
    const before = seen.get(key);
    remember(seen, key, new Map(states.map((s) => [s.target, `${s.sha}:${s.state}`])));
    for (const s of states) {
      if (before?.get(s.target) === `${s.sha}:${s.state}`) continue;
      if (before === undefined && s.state !== 'pending') continue;
      const context = commitContext(object.namespace, object.name, s.target);
      for (const { alert, provider } of targets) {
        const postedKey = `${objectKey(alert)}|${context}`;
        if (s.state !== 'pending' && pendingPosted.get(postedKey) !== s.sha)
          post(alert, provider, cs, { sha: s.sha, state: 'pending', context, description: `applying ${s.sha.slice(0, 12)}` });
        remember(pendingPosted, postedKey, s.sha);
        post(alert, provider, cs, { sha: s.sha, state: s.state, context, description: s.description });
      }
    }
  };
}

type ReadyInput = { readonly status: 'True' | 'False'; readonly reason: string; readonly message: string };

/**
 * The Ready condition of NotificationProviders and NotificationAlerts, written only by the leader and only when it says something new;
 * one write at a time per object. `recovered` clears a DeliveryFailed once a delivery succeeds.
 */
function createStatusWriter(deps: {
  rest: KubeRest;
  log: Logger;
  isLeader: () => boolean;
  read: (plural: string, key: string) => KubeObject | undefined;
  clock: { now(): Date };
}) {
  const chains = new Map<string, Promise<void>>();
  const write = (plural: string, key: string, input: ReadyInput, options: { keepFailure?: boolean } = {}): void => {
    if (!deps.isLeader()) return;
    const chainKey = `${plural}/${key}`;
    const next = (chains.get(chainKey) ?? Promise.resolve()).then(async () => {
      const object = deps.read(plural, key);
      if (object === undefined) return;
      const status = (object['status'] ?? {}) as { conditions?: Condition[]; observedGeneration?: number };
      const current = status.conditions?.find((c) => c.type === 'Ready');
      if (options.keepFailure === true && current?.reason === DELIVERY_FAILED && status.observedGeneration === object.metadata.generation) return;
      if (
        current !== undefined &&
        current.status === input.status &&
        current.reason === input.reason &&
        current.message === input.message &&
        status.observedGeneration === object.metadata.generation
      )
        return;
      const condition: Condition = {
        type: 'Ready',
        status: input.status,
        observedGeneration: object.metadata.generation as number | undefined,
        lastTransitionTime: current !== undefined && current.status === input.status ? current.lastTransitionTime : deps.clock.now().toISOString(),
        reason: input.reason,
        message: input.message.slice(0, 1024),
      };
      const conditions = [...(status.conditions ?? []).filter((c) => c.type !== 'Ready'), condition];
      const [namespace = 'default', name = key] = key.split('/');
      await writeStatus(deps.rest, objectPath(plural, namespace, name), object, { ...status, observedGeneration: object.metadata.generation, conditions });
    });
    const settled = next.catch((error: unknown) =>
      deps.log.debug({ err: error instanceof Error ? error.message : String(error), object: chainKey }, 'could not write the Ready condition'),
    );
    chains.set(chainKey, settled);
    void settled.finally(() => {
      if (chains.get(chainKey) === settled) chains.delete(chainKey);
    });
  };
  return {
    ready: write,
    recovered(plural: string, key: string, message: string): void {
      const current = ((deps.read(plural, key)?.['status'] ?? {}) as { conditions?: Condition[] }).conditions?.find((c) => c.type === 'Ready');
      if (current?.reason === DELIVERY_FAILED) write(plural, key, { status: 'True', reason: 'Ready', message });
    },
  };
}

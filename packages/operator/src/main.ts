#!/usr/bin/env node
// The composition root: reads flags and environment once, builds { kube, git, clock, logger, metrics }
// and hands them to the command. Nothing deeper reads process.env.
import {
  createEventRecorder,
  connectKubeconfig,
  type KubeConnection,
  loadKubeConfig,
  createKubeRest,
  WatchBudget,
  type EventRecorder,
  type KubeObject,
  type KubeRest,
} from '@syncline/kube';
import { parseShard, shardLeaseName, shardedWaker } from './shard.ts';
import { EngineRenderCache, RenderEngine, TemplateCache, type AwsCredentials } from '@syncline/render';
import { existsSync } from 'node:fs';
import { createGitSource, proxyFromEnvironment, type GitSource } from '@syncline/source-git';
import type { ApplyClient } from '@syncline/apply';
import { createChartSource, type ChartSource } from '@syncline/source-helm';
import { hostname, homedir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import type { RunOptions } from './run-options.ts';
import { createApplyClients, type ApplyIdentity } from './cluster/identity.ts';
import { startManager, type Manager as OperatorManager } from './manager.ts';
import { createManager, type ControllerRegistry, type Manager } from '@syncline/runtime';
import { registerAutoFailover } from './dr/auto-failover.ts';
import { registerReplicationPolicies } from './reconcile/namespacereplicationpolicy.ts';
import { registerMirrorController, type MirrorController } from './mirror/controller.ts';
import { StalePolicy, mirrorKeys, parseMirrorSourceNamespaces, type MirrorKeys, type NamePattern } from './mirror/index.ts';
import { DEFAULT_INTERVAL_BOUNDS } from './reconcile/configsync.ts';
import { createDecryptionContext } from './reconcile/decryption.ts';
import { createLogger } from './logging.ts';
import type { Logger } from 'pino';
import { createMetrics, type Metrics } from './metrics.ts';
import { startProbeServer } from './server.ts';
import { standbyRules, trustedNamespaces, type StandbyRules } from './tenancy.ts';
import type { MirrorRow } from './mirror/status.ts';
import type { TrustedNamespaces } from './tenancy.ts';
import { startWebhookServer, type WebhookServer } from './webhook/receiver.ts';
import { createWebhookSecrets, parseSecretRef } from './webhook/secrets.ts';
import { createWaker } from './webhook/wake.ts';

/** The image's copy of the render process (Dockerfile). */
const IMAGE_RENDER_ENGINE = '/usr/local/bin/syncline-render';

/** The Kustomize, Helm and Jsonnet render process, when its binary is found; it starts on the first render. */
function startRenderEngine(flags: RunOptions, env: NodeJS.ProcessEnv, logger: Logger): RenderEngine | undefined {
  const binary = flags.renderEngine ?? env['SYNCLINE_RENDER_ENGINE'] ?? (existsSync(IMAGE_RENDER_ENGINE) ? IMAGE_RENDER_ENGINE : undefined);
  if (binary === undefined) {
    logger.info('no render engine (--render-engine): syncs that need Kustomize, Helm or Jsonnet report RenderFailed');
    return undefined;
  }
  return new RenderEngine({ binary, limits: { timeoutMs: flags.renderTimeout, memoryBytes: flags.renderMemoryLimit * 1024 * 1024 } });
}

/**
 * The web UI, as the composition root (the `syncline` binary) plugs it in: @syncline/ui's createWebUi. The operator
 * hands it what it watches, records and caches, and knows nothing else of it; without it, no web UI is served.
 */
export type WebUi = {
  /** The recorder the operator records Events through, wrapped so the UI's recent activity sees what it records. */
  record(recorder: EventRecorder): EventRecorder;
  /** Serves the UI at options.address; the UI reads the manager's caches, its actions checked against the viewer's RBAC. */
  start(options: WebUiOptions): Promise<{ address: string; close(): Promise<void> }>;
};
export type WebUiOptions = {
  readonly address: string;
  /** The run flags (the UI reads its sign-in settings from them) and the pod's namespace. */
  readonly flags: RunOptions;
  readonly podNamespace: string | undefined;
  readonly rest: KubeRest;
  readonly source: OperatorManager;
  readonly logger: Logger;
  /** The operator's Git cache, apply client and render process, for live and deploy diffs of a ConfigSync. */
  readonly diffs: { git: GitSource; client: () => Promise<ApplyClient>; engine: RenderEngine | undefined };
  /** Label-driven mirroring's rows from the mirroring controller's memory; absent = mirroring off here. */
  readonly mirrors?: () => MirrorRow[];
};

/**
 * Notifications (@syncline/notify's startNotifications), as the composition root plugs them in: they take the
 * operator's event feed (every Event it records, and its cache's ConfigSync changes), register their controller
 * (their own kinds' watches and checks) on the process's controller manager, and hand back the recorder every
 * reconciler records through. Absent: no notifications are sent.
 */
export type NotificationsPart = (options: {
  readonly rest: KubeRest;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly clock: { now(): Date };
  readonly trusted: TrustedNamespaces;
  readonly budget: WatchBudget;
  readonly watchNamespace: string | undefined;
  /** The controller manager every controller of the process registers on (its leadership, queue, liveness). */
  readonly controllers: ControllerRegistry;
  readonly recorder: EventRecorder;
}) => {
  readonly events: EventRecorder;
  readonly observeConfigSync: (type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubeObject) => void;
  stop(): Promise<void>;
};

/** `syncline run`: the operator, until SIGTERM/SIGINT or lost leadership. `parts`: the web UI and notifications, when there are. */
export async function runOperator(
  flags: RunOptions,
  env: NodeJS.ProcessEnv,
  parts: { readonly ui?: WebUi; readonly notifications?: NotificationsPart } = {},
): Promise<number> {
  boundHeap(env);
  const shard = parseShard(flags.shard);
  const logger = createLogger({ level: flags.logLevel, format: flags.logFormat, base: { pid: process.pid, shard: shard ?? 'default' } });
  const connection = await connectKubeconfig(loadKubeConfig({ kubeconfig: flags.kubeconfig, context: flags.context, env }));
  // Aborted when this replica loses its leadership: from then on no client of the process writes.
  const fence = new AbortController();
  const rest = await createKubeRest(connection, { userAgent: 'syncline-operator', writeFence: fence.signal, requestSockets: flags.apiConnections });
  const clock = { now: () => new Date() };
  const metrics = createMetrics();
  // A named shard's series carry its name; the default shard's stay as they are (one operator = no label).
  if (shard !== undefined) metrics.registry.setDefaultLabels({ shard });
  const { git, renderEngine, charts } = openSources(flags, env, logger, metrics);
  const identity = `${hostname()}-${process.pid}`;
  const podNamespace = env['POD_NAMESPACE'];

  const secretNamespaces = flags.secretNamespaces
    ?.split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  // Mirroring watches Secrets in every namespace: it cannot run on per-namespace Secret rights.
  if (secretNamespaces !== undefined && flags.mirror === 'on')
    throw new Error('--secret-namespaces needs --mirror off (mirroring watches Secrets in every namespace)');
  const keys = mirrorKeys(flags.mirrorPrefix);
  const sourceNamespaces = parseMirrorSourceNamespaces(flags.mirrorSourceNamespaces ?? '');
  // Whose objects may write outside their own namespace with the operator's rights (see tenancy.ts).
  const trusted = trustedNamespaces({ operatorNamespace: flags.operatorNamespace ?? podNamespace, list: flags.trustedNamespaces });
  // Where a DR standby may never be, whoever writes it (see tenancy.ts's allowedStandby).
  const standby = standbyRules({ operatorNamespace: flags.operatorNamespace ?? podNamespace, allow: flags.drAllowStandbyNamespaces });
  const applyClient = createApplyClients({ connection, rest, clock, writeFence: fence.signal, requestSockets: flags.apiConnections });
  // The web UI's recent activity: what this recorder records, remembered in memory as it goes.
  const recorder = createEventRecorder({
    rest,
    component: 'syncline',
    host: identity,
    clock,
    onError: (error) => logger.debug({ err: String(error) }, 'could not record an event'),
  });
  const recorded = parts.ui === undefined ? recorder : parts.ui.record(recorder);

  const shutdown = new AbortController();
  // One budget for every watch of the process: the manager's and mirroring's.
  const watchBudget = new WatchBudget(flags.watchBudget);
  // Every controller of the process registers here and runs on its queue (a lane each), leadership and liveness.
  const controllers = await createControllerManager(flags, { logger, metrics, connection, identity, podNamespace, shard, fence, shutdown });
  // Every Event the operator records is also offered to the NotificationAlerts (NotificationProviders and NotificationAlerts: @syncline/notify).
  const notifications = parts.notifications?.({
    rest,
    logger,
    metrics,
    clock,
    trusted,
    budget: watchBudget,
    watchNamespace: flags.namespace,
    controllers,
    recorder: recorded,
  }) ?? { events: recorded, observeConfigSync: () => undefined, stop: () => Promise.resolve() };
  const events = notifications.events;
  const manager = startManager({
    rest,
    git,
    applyClient,
    templates: new TemplateCache(),
    ...(renderEngine === undefined ? {} : { renderEngine, engineCache: new EngineRenderCache(), charts }),
    clock,
    logger,
    metrics,
    events,
    defaultServiceAccount: flags.defaultServiceAccount,
    concurrency: flags.concurrency,
    watchBudget,
    intervalBounds: { ...DEFAULT_INTERVAL_BOUNDS, minMs: flags.minRefreshInterval },
    mirrorKeys: keys,
    trusted,
    standbyRules: standby,
    decryption: createDecryptionContext({
      environmentAws: flags.sopsAllowEnvironmentCredentials === true ? awsEnvironmentCredentials(env) : undefined,
      ...(flags.sopsKmsEndpoint === undefined ? {} : { kmsEndpoint: () => flags.sopsKmsEndpoint ?? '' }),
    }),
    ...(flags.webhookSecret === undefined || flags.webhookAddr === 'off'
      ? {}
      : { webhookSecret: parseSecretRef(flags.webhookSecret, podNamespace ?? 'default') }),
    watchNamespace: flags.namespace,
    ...(secretNamespaces === undefined ? {} : { secretNamespaces }),
    ...(shard === undefined ? {} : { shard }),
    controllers,
    writeFence: fence.signal,
    ...(flags.drHeartbeatInterval === 'off' ? {} : { drHeartbeat: { intervalMs: flags.drHeartbeatInterval, identity } }),
  });
  manager.observe((kind, type, object) => {
    if (kind === 'ConfigSync') notifications.observeConfigSync(type, object);
  });
  const mirror = registerOptionalControllers(controllers, flags, {
    rest,
    applyClient,
    clock,
    logger,
    metrics,
    events,
    keys,
    sourceNamespaces,
    trusted,
    standby,
    identity,
    shard,
    watchBudget,
  });
  // Every controller registered: the watches start, and the election (or the work, without one).
  controllers.start();
  // Ready: every controller's caches (the operator's kinds' and mirroring's watches) listed and alive.
  const probes = await startProbeServer({ address: flags.probeAddr, metrics, ready: () => manager.ready(), live: () => manager.live(), logger });
  const webhooks = await startWebhooks(flags, { rest, manager, logger, metrics, podNamespace });
  // The UI reads the manager's caches; its actions are checked against the viewer's own RBAC first.
  if (flags.uiAddr !== 'off' && parts.ui === undefined) logger.warn('--ui-addr: this process was started without the web UI; none is served');
  const ui =
    flags.uiAddr === 'off' || parts.ui === undefined
      ? undefined
      : await parts.ui.start({
          address: flags.uiAddr,
          flags,
          podNamespace,
          rest,
          source: manager,
          logger,
          diffs: { git, client: () => applyClient(undefined), engine: renderEngine },
          ...(mirror === undefined ? {} : { mirrors: () => mirror.mirrors() }),
        });
  logger.info(
    {
      probes: probes.address,
      webhooks: webhooks?.address ?? 'off',
      ui: ui?.address ?? 'off',
      identity,
      leaderElection: flags.leaderElect === true,
      trustedNamespaces: [...trusted].sort(),
    },
    'syncline started',
  );

  return untilStopped(shutdown.signal, flags.shutdownTimeout, logger, { webhooks, ui, manager, notifications, probes, renderEngine });
}

/**
 * Runs until SIGTERM, SIGINT or `stopped` (lost leadership), then stops the servers and drains the reconciles in
 * flight, within a bound: the kubelet kills the pod at its terminationGracePeriod, and a process that outlives its
 * servers' ports would make the next start fail with EADDRINUSE. Resolves with the exit code.
 */
async function untilStopped(
  stopped: AbortSignal,
  shutdownTimeoutMs: number,
  logger: Logger,
  parts: {
    webhooks: WebhookServer | undefined;
    ui: { close(): Promise<void> } | undefined;
    manager: OperatorManager;
    notifications: { stop(): Promise<void> };
    probes: { close(): Promise<void> };
    renderEngine: RenderEngine | undefined;
  },
): Promise<number> {
  const { webhooks, ui, manager, notifications, probes, renderEngine } = parts;
  await new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    stopped.addEventListener('abort', stop, { once: true });
  });
  logger.info('shutting down');
  const drained = await within(shutdownTimeoutMs, async () => {
    await webhooks?.close();
    await ui?.close();
    // Every controller of the controller manager: mirroring, policies, failover and notifications' checks too.
    await manager.stop();
    await notifications.stop();
  });
  await probes.close();
  renderEngine?.close();
  if (!drained) {
    logger.error({ shutdownTimeoutMs }, 'reconciles still running at the shutdown timeout; exiting without them');
    return 1;
  }
  logger.info('stopped');
  return typeof process.exitCode === 'number' ? process.exitCode : 0;
}

/** Where the syncs' sources come from: the Git cache, the render process (when found) and published charts. */
function openSources(
  flags: RunOptions,
  env: NodeJS.ProcessEnv,
  logger: Logger,
  metrics: Metrics,
): { git: GitSource; renderEngine: RenderEngine | undefined; charts: ChartSource | undefined } {
  const cacheDir = flags.cacheDir ?? join(env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'syncline', 'snapshots');
  const git = createGitSource({
    cacheDir,
    cacheMaxBytes: flags.cacheMaxBytes,
    allowInsecureHttp: flags.allowInsecureHttp === true,
    // HTTPS_PROXY/NO_PROXY of the pod (chart: operator.extraEnv); a ConfigSync's proxySecretRef wins.
    environmentProxy: proxyFromEnvironment(env),
    onFetch: (event) => metrics.gitCacheHits.inc({ outcome: event.cached ? 'hit' : 'miss' }),
    // One line per closing of a host's gate (not per waiting request): every sync of that host waits it out.
    onRateLimited: (event) =>
      logger.warn({ host: event.host, status: event.status, waitMs: event.waitMs }, 'the Git host rate-limited us; every request to it waits'),
  });
  const renderEngine = startRenderEngine(flags, env, logger);
  // Published charts (spec.source.helm.repository), cached by digest in the cache directory beside the Git
  // snapshots; the render process chooses their versions with Helm's semver library, so none without it.
  const charts =
    renderEngine === undefined
      ? undefined
      : createChartSource({
          chooseVersion: (versions, version) => renderEngine.chooseChartVersion(versions, version),
          allowInsecureHttp: flags.allowInsecureHttp === true,
          cacheDir: join(cacheDir, 'charts'),
        });
  return { git, renderEngine, charts };
}

/**
 * The controller manager every controller of the process registers on: its queue, its leader election (with
 * --leader-elect) and the fencing that follows a lost Lease, and its liveness.
 */
async function createControllerManager(
  flags: RunOptions,
  deps: {
    logger: Logger;
    metrics: Metrics;
    connection: KubeConnection;
    identity: string;
    podNamespace: string | undefined;
    shard: string | undefined;
    fence: AbortController;
    shutdown: AbortController;
  },
): Promise<Manager> {
  const { logger, metrics, connection, identity, podNamespace, shard, fence, shutdown } = deps;
  return createManager({
    logger,
    metrics,
    ...(flags.leaderElect === true
      ? {
          leaderElection: {
            namespace: flags.leaderElectionNamespace ?? podNamespace ?? 'default',
            name: shardLeaseName(flags.leaderElectionId, shard),
            identity,
            leaseDurationMs: flags.leaseDuration,
            // A connection pool of its own: a renewal never queues behind the re-lists that follow an API outage,
            // status writes or Events (they share the request pool), so a leader is not lost to its own backlog.
            rest: await createKubeRest(connection, { userAgent: 'syncline-operator' }),
          },
        }
      : {}),
    onLostLeadership: () => {
      // Like controller-runtime: a replica that lost the lease exits, and a fresh process competes again.
      fence.abort(new Error('this replica lost its leadership'));
      shutdown.abort();
      process.exitCode = 1;
    },
    stallTimeoutMs: flags.stallTimeout,
  });
}

/** Mirroring, automatic failover and NamespaceReplicationPolicies, each registered when its flags turn it on; returns mirroring. */
function registerOptionalControllers(
  controllers: ControllerRegistry,
  flags: RunOptions,
  deps: {
    rest: KubeRest;
    applyClient: (identity: ApplyIdentity) => Promise<ApplyClient>;
    clock: { now(): Date };
    logger: Logger;
    metrics: Metrics;
    events: EventRecorder;
    keys: MirrorKeys;
    sourceNamespaces: NamePattern[];
    trusted: TrustedNamespaces;
    standby: StandbyRules;
    identity: string;
    shard: string | undefined;
    watchBudget: WatchBudget;
  },
): MirrorController | undefined {
  const { rest, applyClient, clock, logger, metrics, events, keys, sourceNamespaces, trusted, standby, identity, shard, watchBudget } = deps;
  const staleTtlMs = flags.mirrorStaleTtl;
  // Mirroring works only while this replica leads (the manager's election); its watches run regardless, so
  // a follower is ready to take over and /readyz reports them.
  // Label-driven mirroring has no shard label of its own: the default shard runs it, named shards never do.
  const mirror =
    flags.mirror === 'on' && shard === undefined
      ? registerMirrorController(controllers, {
          rest,
          applyClient: () => applyClient(undefined),
          clock,
          logger,
          metrics,
          events,
          keys,
          sourceNamespaces,
          trusted,
          staleMode: flags.mirrorStale === 'mark' ? StalePolicy.Mark : StalePolicy.Delete,
          staleTtlMs,
          resyncMs: flags.mirrorResync,
          watchBudget,
        })
      : undefined;
  // Standby side: promote a standby namespace whose primary stopped renewing its heartbeat (off by default).
  if (flags.drAutoFailoverGrace !== undefined && flags.drAutoFailoverGrace !== 'off') {
    registerAutoFailover(controllers, {
      rest,
      applyClient: () => applyClient(undefined),
      graceMs: flags.drAutoFailoverGrace,
      clock,
      logger,
      metrics,
      events,
      keys,
      identity,
      standbyRules: standby,
    });
  }
  // One NamespaceReplication per namespace a policy selects: it watches every namespace (not in --namespace mode).
  if (flags.namespace === undefined)
    registerReplicationPolicies(controllers, {
      rest,
      applyClient: () => applyClient(undefined),
      clock,
      logger,
      metrics,
      events,
      trusted,
      standbyRules: standby,
      shard,
      watchBudget,
    });
  return mirror;
}

/** The webhook receiver (off with --webhook-addr off): a push wakes the ConfigSyncs of that repository, in every shard. */
async function startWebhooks(
  flags: RunOptions,
  deps: { rest: KubeRest; manager: ReturnType<typeof startManager>; logger: Logger; metrics: Metrics; podNamespace: string | undefined },
): Promise<WebhookServer | undefined> {
  const { rest, manager, logger, metrics, podNamespace } = deps;
  if (flags.webhookAddr === 'off') return undefined;
  const ref = flags.webhookSecret === undefined ? undefined : parseSecretRef(flags.webhookSecret, podNamespace ?? 'default');
  return startWebhookServer({
    address: flags.webhookAddr,
    // Without --webhook-secret no provider is configured and every delivery is refused.
    secrets: ref === undefined ? { get: () => Promise.resolve([]) } : createWebhookSecrets({ rest, ...ref }),
    // Every shard's ConfigSyncs: another shard's are woken through the API (the reconcile-request annotation).
    configSyncs: () => [...manager.configSyncs(), ...manager.otherShardConfigSyncs()],
    wake: shardedWaker(
      (key) => manager.inOtherShard(key),
      createWaker({ rest, isLeader: () => manager.isLeader(), enqueue: (key) => manager.enqueue(key), logger }),
      createWaker({ rest, isLeader: () => false, enqueue: () => undefined, logger }),
    ),
    logger,
    metrics,
    maxBodyBytes: flags.webhookMaxBodyBytes,
    readTimeoutMs: flags.webhookReadTimeout,
  });
}

/** Whether `work` finished within `ms` (it is not cancelled: the process exits after a false). */
async function within(ms: number, work: () => Promise<void>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const done = await Promise.race([
    work().then(() => true),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]);
  clearTimeout(timer);
  return done;
}

/**
 * Bounds the operator's peak RSS, which a burst of reconciles drives: it promotes a lot of short-lived garbage.
 *
 * The young generation: by default V8 lets it grow to 3 × 32 MB. The image bounds it at start
 * (NODE_OPTIONS=--max-semi-space-size=4; V8 reads that flag only then). Started without such a bound (or
 * --optimize-for-size either way), the operator falls back to --optimize-for-size, which V8 reads at every GC:
 * as small (bench operator, 200 syncs: 153–158 MB against 176–177 MB) but slower to apply a commit (2.17–2.25 s
 * against 1.88–1.96 s).
 *
 * The old generation: V8 lets it grow to up to 4× what survived the last full GC before collecting again, and
 * what a burst promoted stays RSS. HEAP_GROWING_PERCENT caps that at 1.3× (read at every GC; a node flag
 * given at start wins). The old generation's committed size at the RSS peak is about that factor times what
 * survived, plus the young generation's capacity: V8 collects when the old generation has grown by the factor or
 * by 8 MB, whichever is more. bench operator, 1,000 syncs: at 1.4× (before), peak RSS 232–288 MB → 191–194 MB, new
 * commit 8.5–9.4 s (8.9–11.2 s before, the API server on the same 2 cores being the bottleneck); 200 syncs:
 * 179–183 MB either way. Later, on a build that needed less (--scope cluster --layout namespace-per-sync, ~31 MB
 * surviving): 1.3× against 1.4×, the old generation at the peak 44–45 MB against 48–49 MB (peak RSS 142–148 MB
 * against 149–153 MB, with MALLOC_ARENA_MAX=2), about a fifth more full GCs (13–14 → 16 per run), the operator's
 * CPU per phase 2–4 % more; 1.25×: 18–19 full GCs for 1 MB less; 1.2×: 42 MB, the 8 MB step then decides.
 */
const HEAP_GROWING_PERCENT = 30;

function boundHeap(env: NodeJS.ProcessEnv): void {
  const given = [...process.execArgv, env['NODE_OPTIONS'] ?? ''].join(' ');
  if (!/heap[-_]growing[-_]percent/.test(given)) setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  if (/optimize[-_]for[-_]size|max[-_]semi[-_]space[-_]size/.test(given)) return;
  setFlagsFromString('--optimize-for-size');
}

/** The operator's own static AWS credentials, for SOPS KMS keys when the admin allowed them; undefined when unset. */
function awsEnvironmentCredentials(env: NodeJS.ProcessEnv): AwsCredentials | undefined {
  const accessKeyId = env['AWS_ACCESS_KEY_ID'];
  const secretAccessKey = env['AWS_SECRET_ACCESS_KEY'];
  if (accessKeyId === undefined || secretAccessKey === undefined || accessKeyId === '' || secretAccessKey === '') return undefined;
  return { accessKeyId, secretAccessKey, sessionToken: env['AWS_SESSION_TOKEN'] };
}

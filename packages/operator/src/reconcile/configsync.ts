// The ConfigSync reconciler: step functions, run in the reconcile shell (@syncline/runtime's shell.ts: the object, finalizer,
// suspend, status, Events and metrics), that each return early when there is nothing to do:
// resolve revision → fetch snapshot → render every target → plan → apply → prune → status.
// It reconciles from current state, never from the event that woke it, so running it twice changes nothing.
import { type EventRecorder, type KubeRest } from '@syncline/kube';
import { decodeInventory, digestRendered, encodeInventory, objectId, ownedBy, recordHistory, type ApplyClient, type InventoryEntry } from '@syncline/apply';
import {
  EngineFailure,
  RenderError,
  RenderErrorReason,
  layerValues,
  renderTarget,
  renderWithEngine,
  type EngineRenderCache,
  type RenderEngine,
  type TemplateCache,
  type KubernetesObject,
  type Values,
} from '@syncline/render';
import { GitSourceError, type GitSource } from '@syncline/source-git';
import { ChartSourceError, type ChartSource, type FetchedChart } from '@syncline/source-helm';
import type { Logger } from 'pino';
import {
  ConfigSyncSpec,
  INTERVAL_BOUNDS,
  type Condition,
  type ConfigSync,
  type ConfigSyncStatus,
  type HistoryEntry,
  type TargetInventory,
  type TargetStatus,
} from '@syncline/api';
import type { RemoteClients, RemoteClusters } from '../remote/clusters.ts';
import type { TargetBackoff } from '../remote/backoff.ts';
import type { ReconcileOutcome } from '@syncline/runtime';
import { ServiceAccountError } from '../cluster/errors.ts';
import type { ApplyIdentity } from '../cluster/identity.ts';
import { FINALIZER, RECONCILE_REQUESTED_ANNOTATION } from '@syncline/api';
import type { Metrics } from '../metrics.ts';
import { Reason, keepTransitions, removeCondition, setCondition, type ConditionInput } from '@syncline/runtime';
import { MAX_TIMER_MS, boundedInterval, parseDuration, type IntervalBounds } from '@syncline/runtime';
import { objectPath, sameAsStored, writeStatus } from '@syncline/runtime';
import { createReconciler, removeFinalizer, trace, type ShellEvent, type ShellOutcome } from '@syncline/runtime';
import { StallError, readGitAccess, readValues } from './inputs.ts';
import {
  DecryptionFailure,
  createDecryptionContext,
  decryptFiles,
  readKeyRing,
  readValuesFiles,
  type DecryptionContext,
  type LayeredValuesFiles,
} from './decryption.ts';
import {
  appliedConditions,
  applyTarget,
  combineTargets,
  describeChanges,
  emptyCounts,
  provenByWatches,
  onlyRefused,
  partitionInventory,
  readableId,
  truncate,
  type TargetApplyInput,
  type TargetNoop,
  type TargetOutcome,
} from './target.ts';
import { dependencyNotReady, findCycle } from './dependencies.ts';
import { healthConditions } from './health.ts';
import { fetchPublishedChart } from './charts.ts';
import { DigestMemo, RenderMemo } from './render-memo.ts';
import { SteadyOutcomes } from './steady-outcome.ts';
import { capabilitiesOf, engineSpecFor, readsWholeRepository, serverVersion, targetPath } from './engines.ts';
import { NAMESPACE_NOT_ALLOWED, type Actor, type TrustedNamespaces } from '../tenancy.ts';
import { HOOK_POLL_MS, applyTargetWithHooks, deleteHookObjects, hookConditions, hooksFailed, hooksRunning } from './hook-run.ts';
import { hookSummary } from './hooks.ts';
import { FindingCause, findingMessage, isTransient, isUnreachable, sortFindings } from './findings.ts';

/** How long a sync waits for spec.timeout when it sets none (Flux's default for wait is its interval; 5m here). */
export const DEFAULT_HEALTH_TIMEOUT = '5m';
/** A sync whose dependencies are not Ready looks again after this at the latest (their status changes wake it sooner). */
const DEPENDENCY_RETRY_MS = 30_000;

export { FINALIZER, RECONCILE_REQUESTED_ANNOTATION };
export type { ApplyIdentity };

export type ConfigSyncReconcilerDeps = {
  readonly rest: KubeRest;
  readonly git: GitSource;
  /** An apply client for the operator itself (undefined) or impersonating a tenant's ServiceAccount. */
  readonly applyClient: (identity: ApplyIdentity) => Promise<ApplyClient>;
  readonly templates: TemplateCache;
  /** The Kustomize, Helm and Jsonnet render process; without it a sync that needs one fails (and says so). */
  readonly renderEngine?: RenderEngine;
  /** Engine renders by commit, path, inputs and target: a resync of an unchanged commit renders nothing. */
  readonly engineCache?: EngineRenderCache;
  /** Charts from Helm repositories and OCI registries (spec.source.helm.repository), cached by digest. */
  readonly charts?: ChartSource;
  readonly clock: { now(): Date };
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly events: EventRecorder;
  /** The informer cache: current state by `namespace/name`. */
  readonly get: (key: string) => ConfigSync | undefined;
  /** Syncs without serviceAccountName apply as this account when set (multi-tenant clusters). */
  readonly defaultServiceAccount?: string;
  /** Namespaces whose syncs may write outside their own namespace with the operator's rights (tenancy.ts); default none. */
  readonly trusted?: TrustedNamespaces;
  /** 0..1 source of jitter for the refresh interval. */
  readonly random?: () => number;
  /** Where refresh intervals are clamped (default: DEFAULT_INTERVAL_BOUNDS). */
  readonly intervalBounds?: IntervalBounds;
  /** Runs before a target writes anything, with the ids it will apply (and the remote cluster's clients): the manager starts drift watches here. */
  readonly beforeApply?: (ids: readonly string[], remote?: RemoteClients) => Promise<void>;
  /** Clients of RemoteClusters, for targets with `cluster`. */
  readonly remote?: RemoteClusters;
  /** Per-target backoff of remote targets whose cluster failed: the other targets are not held back. */
  readonly targetBackoff?: TargetBackoff;
  /**
   * When a webhook or a change of the object last asked `namespace/name` to look at its source now (epoch ms): a
   * run accepts only a ref listing begun after it. It stands until `freshRequestHandled` says a run read the
   * source for it (a run that waits for its dependencies has not).
   */
  readonly freshRequest?: (key: string) => number | undefined;
  readonly freshRequestHandled?: (key: string, at: number) => void;
  /** Whether the drift watches in a remote cluster are listed and healthy (undefined: not known). */
  readonly remoteWatchesHealthy?: (remote: RemoteClients) => boolean;
  /** Why the drift of some of these objects (in this cluster) cannot be watched (forbidden, the watch budget); undefined when it can. */
  readonly unwatchedDrift?: (ids: readonly string[]) => string | undefined;
  /**
   * No-op resyncs without requests: the last clean no-op per target (keys start with `namespace/name/`) and
   * what the drift watches know of an object (see applyTarget's `noop`).
   */
  readonly noop?: {
    readonly records: Map<string, TargetNoop>;
    readonly watched: (id: string, remote?: RemoteClients, onStale?: (why: string) => void) => string | null | undefined;
    /** A first apply's owner LIST answered from the drift watches (see applyTarget's FirstApply). */
    readonly firstApply?: {
      readonly applied: Set<string>;
      readonly ownerSeen: (scope: { group: string; kind: string; namespace: string }, ownerLabel: string, remote?: RemoteClients) => boolean | undefined;
      /** Starts (or joins) the drift watches of a first apply's ids before it reads; never rejects (see FirstApply's `watch`). */
      readonly watch?: (ids: readonly string[], remote?: RemoteClients) => Promise<void>;
    };
  };
  /** SOPS decryption: key-service settings, the in-memory data key cache and parsed key rings (default: a private one). */
  readonly decryption?: DecryptionContext;
};

/**
 * The operator's default interval bounds: a 10 s floor (the API admits 1 s; `--min-refresh-interval`
 * lowers the operator's floor for tests and demos) and the API's ceiling.
 */
export const DEFAULT_INTERVAL_BOUNDS: IntervalBounds = { minMs: 10_000, maxMs: parseDuration(INTERVAL_BOUNDS.max) };

type SyncEvent = ShellEvent;

/** Events are recorded only when the status changed (see @syncline/runtime's shell.ts), so a repeated finding is news once. */
type Outcome = ShellOutcome<ConfigSyncStatus>;

/** A step either hands its value to the next one or ends the sync with an outcome. */
type Step<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly outcome: Outcome };

/** What every step of one sync run reads. */
type SyncRun = {
  readonly deps: ConfigSyncReconcilerDeps;
  readonly object: ConfigSync;
  readonly spec: ConfigSyncSpec;
  readonly namespace: string;
  readonly log: Logger;
  /** The refresh interval to requeue after, bounded and jittered. */
  readonly refreshMs: number;
  /**
   * How old a shared ref listing of the repository may be (half the refresh interval), or 0 when this run must
   * see the branch as it is now: a webhook, a reconcile request or a spec change woke it.
   */
  readonly refAgeMs: number;
  /** When refAgeMs is 0: a ref listing begun at or after this time (epoch ms) is fresh enough, shared by every sync woken together. */
  readonly refStartedAfter: number | undefined;
  /** The fresh request this run answers, if one woke it. */
  readonly wokenAt: number | undefined;
  /** Set when spec.refreshInterval was clamped: the IntervalClamped condition says so. */
  readonly refreshAdjusted: string | undefined;
  readonly now: string;
  /** Resolves once the object's finalizer is stored (a new sync's is stored while the run reads): awaited before any write. */
  readonly writable: () => Promise<void>;
};

const objectKeyOf = (object: ConfigSync): string => `${object.metadata.namespace ?? 'default'}/${object.metadata.name}`;
const pathOf = (object: ConfigSync): string => objectPath('configsyncs', object.metadata.namespace ?? 'default', object.metadata.name);

export function createConfigSyncReconciler(deps: ConfigSyncReconcilerDeps): (key: string) => Promise<ReconcileOutcome> {
  return createReconciler<ConfigSync, ConfigSyncSpec, ConfigSyncStatus>({
    kind: 'ConfigSync',
    plural: 'configsyncs',
    rest: deps.rest,
    logger: deps.logger,
    events: deps.events,
    clock: deps.clock,
    metrics: deps.metrics,
    read: deps.get,
    finalizer: { name: FINALIZER, finalize: (object, log) => finalize(deps, object, log) },
    parse: (spec) => ConfigSyncSpec.safeParse(spec),
    invalid: (object, reason, message) => withRevisionColumn(stalledStatus(deps, object, reason, message)),
    suspend: { when: (spec) => spec.suspend, message: 'spec.suspend is true: nothing is fetched, applied or pruned until it is false' },
    // A new sync's finalizer is stored while it resolves, fetches and renders (none of which writes): its first
    // apply, which waits for it, comes one API round trip sooner.
    finalizeWhileReading: true,
    run: async ({ object, spec, log, writable }) => {
      const outcome = await sync(startRun(deps, object, spec, log, writable));
      return { ...outcome, status: withRevisionColumn(outcome.status) };
    },
  });
}

function startRun(deps: ConfigSyncReconcilerDeps, object: ConfigSync, spec: ConfigSyncSpec, log: Logger, writable: () => Promise<void>): SyncRun {
  const refresh = boundedInterval('refreshInterval', spec.refreshInterval, deps.intervalBounds ?? DEFAULT_INTERVAL_BOUNDS);
  const now = deps.clock.now();
  const wokenAt = deps.freshRequest?.(objectKeyOf(object));
  const fresh =
    wokenAt !== undefined ||
    object.status?.observedGeneration !== object.metadata.generation ||
    (object.metadata.annotations?.[RECONCILE_REQUESTED_ANNOTATION] ?? object.status?.lastHandledReconcileAt) !== object.status?.lastHandledReconcileAt;
  return {
    deps,
    object,
    spec,
    namespace: object.metadata.namespace ?? 'default',
    log,
    refreshMs: Math.min(jittered(refresh.ms, deps.random ?? Math.random), MAX_TIMER_MS),
    refAgeMs: fresh ? 0 : Math.floor(refresh.ms / 2),
    refStartedAfter: fresh ? (wokenAt ?? now.getTime()) : undefined,
    wokenAt,
    refreshAdjusted: refresh.adjusted,
    now: now.toISOString(),
    writable,
  };
}

/** source → render → apply every target → status. Each step returns early with an outcome when it cannot go on. */
async function sync(run: SyncRun): Promise<Outcome> {
  const dependencies = reconcileDependencies(run);
  if (!dependencies.ok) return dependencies.outcome;
  const source = await reconcileSource(run);
  if (!source.ok) return source.outcome;
  if (run.wokenAt !== undefined) run.deps.freshRequestHandled?.(objectKeyOf(run.object), run.wokenAt);
  const clusters = await resolveClusters(run);
  const decrypted = await reconcileDecryption(run, source.value);
  if (!decrypted.ok) return decrypted.outcome;
  const chart = await reconcileChart(run, decrypted.value);
  if (!chart.ok) return chart.outcome;
  const renderedBy = new Map<string, RenderedBy>();
  const rendered = await reconcileRender(run, chart.value, clusters, renderedBy);
  if (!rendered.ok) return rendered.outcome;
  trace(objectKeyOf(run.object), 'rendered');
  // Everything above only read: the first write (a hook, an apply) comes after the finalizer is stored.
  await run.writable();
  const client = await applyClientFor(run, source.value.revision);
  if (!client.ok) return client.outcome;
  const targets = await reconcileTargets(run, client.value, rendered.value, clusters, source.value.revision);
  trace(objectKeyOf(run.object), 'applied');
  const desired = [...rendered.value.values()].flat();
  const outcome = outcomeOf(run, source.value.revision, targets, desired, renderedBy);
  // A target waiting out its backoff asks to run again when that ends, not at the next refresh.
  const retryAt = Math.min(...run.spec.targets.map((t) => run.deps.targetBackoff?.waiting(backoffKey(run, t.name))?.retryInMs ?? Infinity));
  if (Number.isFinite(retryAt) && outcome.result.kind === 'done')
    return { ...outcome, result: { kind: 'done', requeueAfterMs: Math.min(outcome.result.requeueAfterMs ?? retryAt, Math.max(retryAt, 1000)) } };
  return outcome;
}

/**
 * spec.dependsOn: every dependency (same namespace, from the informer cache) Ready at its current revision,
 * or nothing is fetched or applied. A cycle through this sync is refused (Stalled) instead of waited on.
 */
function reconcileDependencies(run: SyncRun): Step<undefined> {
  const names = [...new Set((run.spec.dependsOn ?? []).map((d) => d.name))];
  if (names.length === 0) return { ok: true, value: undefined };
  const self = run.object.metadata.name;
  const lookup = (name: string): ConfigSync | undefined => run.deps.get(`${run.namespace}/${name}`);
  const cycle = findCycle(self, (name) => (name === self ? names : (lookup(name)?.spec.dependsOn ?? []).map((d) => d.name)));
  if (cycle !== undefined) {
    return {
      ok: false,
      outcome: stalled(
        run,
        Reason.DependencyCycle,
        `spec.dependsOn forms a cycle: ${cycle.join(' → ')}; nothing is applied until one of them drops the dependency`,
      ),
    };
  }
  const waiting = names.flatMap((name) => {
    const why = dependencyNotReady(lookup(name));
    return why === undefined ? [] : [`${name} (${why})`];
  });
  if (waiting.length === 0) return { ok: true, value: undefined };
  const previous = run.object.status ?? {};
  const at = { generation: run.object.metadata.generation, now: run.now };
  const message = truncate(`waiting for ${waiting.length === 1 ? 'dependency' : 'dependencies'} ${waiting.join(', ')}`);
  const conditions = setCondition(
    baseConditions(run, previous.conditions ?? []),
    { type: 'Ready', status: 'False', reason: Reason.DependencyNotReady, message },
    at,
  );
  // Their status changes wake this sync (manager); the retry bounds a missed event.
  return {
    ok: false,
    outcome: {
      status: { ...previous, observedGeneration: run.object.metadata.generation, conditions },
      result: { kind: 'wait', requeueAfterMs: Math.min(DEPENDENCY_RETRY_MS, run.refreshMs) },
      events: [],
    },
  };
}

type Snapshot = Awaited<ReturnType<GitSource['fetchSnapshot']>>;
type Source = {
  revision: string;
  files: Awaited<ReturnType<GitSource['readPath']>>;
  snapshot: Snapshot;
  valuesFiles?: LayeredValuesFiles;
  /** Encrypted files outside the rendered paths that could not be decrypted, left out of the render. */
  withheld?: readonly string[];
  /** The published chart (spec.source.helm.repository) the Helm render reads instead of the Git files. */
  chart?: FetchedChart;
};

/**
 * spec.source.helm.repository: the chart resolved, downloaded and verified before anything renders. A bad spec
 * or Secret stalls; an unreachable server, a digest that does not match or a version not published yet is
 * retried with backoff. Either way nothing is applied or pruned.
 */
async function reconcileChart(run: SyncRun, source: Source): Promise<Step<Source>> {
  try {
    const chart = await fetchPublishedChart({ rest: run.deps.rest, charts: run.deps.charts, namespace: run.namespace, spec: run.spec, maxAgeMs: run.refAgeMs });
    return { ok: true, value: chart === undefined ? source : { ...source, chart } };
  } catch (error) {
    if (error instanceof StallError) return { ok: false, outcome: stalled(run, error.reason, error.message, source.revision) };
    // The message names the sync too: it travels beyond the object (events, logs, notifications).
    const sync = `ConfigSync ${run.namespace}/${run.object.metadata.name}: chart`;
    if (error instanceof ChartSourceError && !error.retryable)
      return { ok: false, outcome: stalled(run, Reason.FetchFailed, `${sync} ${error.message}`, source.revision) };
    const message = error instanceof ChartSourceError ? error.message : safeError(error).message;
    return { ok: false, outcome: failed(run, Reason.FetchFailed, `${sync} ${message}`, { kind: 'retry' }) };
  }
}

/** Resolve the revision and read the path from its snapshot. A failure here never touches the cluster. */
async function reconcileSource(run: SyncRun): Promise<Step<Source>> {
  const { deps, spec } = run;
  try {
    const { auth, connection } = await readGitAccess(deps.rest, run.namespace, spec.source.git);
    const revision = await timed(deps, 'resolve', () =>
      deps.git.resolveRevision({
        repo: spec.source.git.repo,
        revision: spec.source.git.revision,
        auth,
        connection,
        maxAgeMs: run.refAgeMs,
        startedAfter: run.refStartedAfter,
      }),
    );
    trace(objectKeyOf(run.object), 'resolved');
    const snapshot = await timed(deps, 'fetch', () => deps.git.fetchSnapshot({ repo: spec.source.git.repo, sha: revision, auth, connection }));
    trace(objectKeyOf(run.object), 'fetched');
    // An engine's overlay reaches bases elsewhere in the repository: then the whole snapshot is read.
    let files = readsWholeRepository(spec) ? await deps.git.readPath(snapshot, '') : await deps.git.readPath(snapshot, spec.source.git.path);
    if (spec.source.git.path !== '' && !readsWholeRepository(spec) && readsWholeRepository(spec, files)) files = await deps.git.readPath(snapshot, '');
    return { ok: true, value: { revision, files, snapshot } };
  } catch (error) {
    if (error instanceof StallError) return { ok: false, outcome: stalled(run, error.reason, error.message) };
    if (error instanceof GitSourceError && !error.retryable) return { ok: false, outcome: stalled(run, Reason.FetchFailed, error.message) };
    const message = error instanceof GitSourceError ? error.message : `fetching the source failed: ${safeError(error).message}`;
    return { ok: false, outcome: failed(run, Reason.FetchFailed, message, { kind: 'retry' }) };
  }
}

const defaultDecryption = new WeakMap<ConfigSyncReconcilerDeps, DecryptionContext>();
const renderMemos = new WeakMap<ConfigSyncReconcilerDeps, RenderMemo>();
/** The history digests of the kept renders (a resync's objects are the kept ones: see DigestMemo). */
const renderedDigests = new DigestMemo();
/** The reconciler's kept renders (render-memo.ts): one memo per reconciler, as its template cache is. */
function renderMemoOf(deps: ConfigSyncReconcilerDeps): RenderMemo {
  let memo = renderMemos.get(deps);
  if (memo === undefined) renderMemos.set(deps, (memo = new RenderMemo()));
  return memo;
}

/**
 * Decrypt every SOPS-encrypted file of the source in memory, and read spec.valuesFiles / targets[].valuesFiles
 * from the same snapshot. Always runs: without spec.decryption an encrypted file stalls the sync, naming it.
 * Bad input (no key opens a file, a MAC mismatch, a bad key Secret) stalls; an unreachable Vault or KMS is
 * retried with backoff. Nothing is applied or pruned when a file cannot be decrypted.
 */
async function reconcileDecryption(run: SyncRun, source: Source): Promise<Step<Source>> {
  const { deps, spec } = run;
  let context = deps.decryption ?? defaultDecryption.get(deps);
  if (context === undefined) {
    context = createDecryptionContext();
    defaultDecryption.set(deps, context);
  }
  try {
    const ring = await readKeyRing(deps.rest, context, run.namespace, spec);
    const valuesFiles = await readValuesFiles(context, spec, ring, (path) => deps.git.readPath(source.snapshot, path));
    const roots = spec.targets.map((target) =>
      targetPath(spec, target)
        .split('/')
        .filter((part) => part !== '' && part !== '.')
        .join('/'),
    );
    const { files, withheld } = await decryptFiles(
      context,
      source.files.filter((file) => !valuesFiles.paths.has(file.path)),
      ring,
      roots,
    );
    return { ok: true, value: { ...source, files, valuesFiles, withheld } };
  } catch (error) {
    const message = truncate(`${error instanceof Error ? error.message : 'decryption failed'}`);
    if (error instanceof DecryptionFailure && !error.retryable)
      return { ok: false, outcome: stalled(run, Reason.DecryptionFailed, `DecryptionFailed: ${message}`, source.revision) };
    if (error instanceof DecryptionFailure)
      return { ok: false, outcome: failed(run, Reason.DecryptionFailed, `DecryptionFailed: ${message}`, { kind: 'retry' }) };
    if (error instanceof RenderError) return { ok: false, outcome: stalled(run, Reason.RenderFailed, error.message, source.revision) };
    if (error instanceof GitSourceError && !error.retryable)
      return { ok: false, outcome: stalled(run, Reason.RenderFailed, `valuesFiles: ${error.message}`, source.revision) };
    return {
      ok: false,
      outcome: failed(run, Reason.DecryptionFailed, `DecryptionFailed: reading the key Secret or values files failed: ${safeError(error).message}`, {
        kind: 'retry',
      }),
    };
  }
}

/** Remote targets' clusters: clients, or why a target cannot reach its cluster now (that target fails alone). */
type ClusterAccess = ReadonlyMap<string, { clients: RemoteClients } | { unavailable: string }>;

const backoffKey = (run: SyncRun, target: string): string => `${run.namespace}/${run.object.metadata.name}/${target}`;

async function resolveClusters(run: SyncRun): Promise<ClusterAccess> {
  const access = new Map<string, { clients: RemoteClients } | { unavailable: string }>();
  await Promise.all(
    run.spec.targets.map(async (target) => {
      if (target.cluster === undefined) return;
      // Waiting out a failure: said in the words of that failure (no countdown), so the message stays the same.
      const waiting = run.deps.targetBackoff?.waiting(backoffKey(run, target.name));
      if (waiting !== undefined) {
        access.set(target.name, { unavailable: waiting.failure });
        return;
      }
      if (run.deps.remote === undefined) {
        access.set(target.name, { unavailable: 'remote clusters (RemoteCluster) are not enabled in this operator' });
        return;
      }
      try {
        const clients = await run.deps.remote.clients(run.namespace, target.cluster.name);
        // Discovery is what render needs from the cluster: reading it now also tells whether it answers.
        await clients.apply.discovery();
        access.set(target.name, { clients });
      } catch (error) {
        const unavailable = `cluster ${target.cluster.name}: ${safeError(error).message}`;
        run.deps.targetBackoff?.failed(backoffKey(run, target.name), unavailable);
        access.set(target.name, { unavailable });
      }
    }),
  );
  return access;
}

/** Which engine rendered a target (status.targets[].engine), and the published chart it read. */
type RenderedBy = { readonly engine: NonNullable<TargetStatus['engine']>; readonly chart?: string };

function withRenderedBy(outcome: Outcome, renderedBy: ReadonlyMap<string, RenderedBy>): Outcome {
  const targets = outcome.status.targets?.map((t) => {
    const by = renderedBy.get(t.name);
    if (by === undefined) return t;
    const { chart: _chart, ...rest } = t;
    return { ...rest, engine: by.engine, ...(by.chart === undefined ? {} : { chart: by.chart }) };
  });
  return targets === undefined ? outcome : { ...outcome, status: { ...outcome.status, targets } };
}

/** Render every target before applying any, so a bad template never half-applies. */
async function reconcileRender(
  run: SyncRun,
  source: Source,
  clusters: ClusterAccess,
  renderedBy: Map<string, RenderedBy>,
): Promise<Step<Map<string, KubernetesObject[]>>> {
  const { deps, spec } = run;
  const rendered = new Map<string, KubernetesObject[]>();
  try {
    const values = layerValues([source.valuesFiles?.spec, await readValues(deps.rest, run.namespace, spec)], { keepNulls: true });
    const defaultClient = await deps.applyClient(undefined);
    const renderAll = async (refresh: boolean): Promise<void> => {
      rendered.clear();
      for (const target of spec.targets) {
        const access = clusters.get(target.name);
        if (access !== undefined && 'unavailable' in access) continue;
        // Each cluster's own discovery says which kinds it serves and which are namespaced.
        const client = access === undefined ? defaultClient : access.clients.apply;
        const path = targetPath(spec, target);
        const renderTargetSpec = {
          name: target.name,
          namespace: target.namespace ?? run.namespace,
          values: targetValues(source, target.name, target.values),
          patches: target.patches,
          data: target.data,
          ...(target.cluster === undefined ? {} : { cluster: target.cluster.name }),
        };
        const renderSource = { repo: spec.source.git.repo, revision: source.revision, path };
        const discovery = await client.discovery(refresh ? { refresh: true } : {});
        const engine = target.data === undefined ? engineSpecFor(spec, target, source.files, source.chart?.dir) : undefined;
        const repository = spec.source.helm?.repository;
        if (target.data === undefined)
          renderedBy.set(target.name, {
            engine: engine?.engine ?? 'handlebars',
            ...(source.chart === undefined || repository === undefined
              ? {}
              : { chart: `${repository.chart}@${source.chart.version} (${source.chart.digest})` }),
          });
        if (engine === undefined) {
          const render = (): KubernetesObject[] =>
            renderTarget({ files: source.files, path, values, target: renderTargetSpec, source: renderSource, discovery, cache: deps.templates });
          rendered.set(
            target.name,
            renderMemoOf(deps).render(
              {
                slot: `${run.namespace}/${run.object.metadata.name}\u0000${target.name}`,
                files: source.files,
                discovery,
                inputs: [path, values, renderTargetSpec, renderSource],
              },
              render,
            ),
          );
          continue;
        }
        if (deps.renderEngine === undefined)
          throw new StallError(
            Reason.RenderFailed,
            `${path === '' ? 'the repository root' : path} needs ${engine.engine}, and this operator runs without the render engine (syncline run --render-engine)`,
          );
        const rest = access === undefined ? deps.rest : access.clients.rest;
        rendered.set(
          target.name,
          await renderWithEngine({
            engine: deps.renderEngine,
            spec: engine,
            files: source.chart?.files ?? source.files,
            path,
            values,
            ...(source.chart === undefined ? {} : { chartDigest: source.chart.digest }),
            target: renderTargetSpec,
            source: renderSource,
            discovery,
            capabilities: engine.engine === 'helm' ? capabilitiesOf(discovery, await serverVersion(rest)) : {},
            releaseName: run.object.metadata.name,
            ...(deps.engineCache === undefined ? {} : { cache: deps.engineCache }),
          }),
        );
      }
    };
    try {
      await renderAll(false);
    } catch (error) {
      // A kind the cached discovery does not know may have been installed since (a CRD applied by
      // someone else): read discovery again once before calling the source invalid.
      if (!(error instanceof RenderError && error.reason === RenderErrorReason.UnknownKind)) throw error;
      await renderAll(true);
    }
  } catch (error) {
    if (error instanceof RenderError) {
      // What this operator refuses to let an engine do (a remote base, an exec function) names the sync refused:
      // the message travels beyond the object (events, logs, notifications).
      const refused = error.reason === RenderErrorReason.EngineRefused ? `ConfigSync ${run.namespace}/${run.object.metadata.name}: refused: ` : '';
      return { ok: false, outcome: stalled(run, Reason.RenderFailed, truncate(`${refused}${error.message}${withheldNote(source)}`), source.revision) };
    }
    if (error instanceof StallError) return { ok: false, outcome: stalled(run, error.reason, error.message, source.revision) };
    // The render process itself failed (not the repository's input): a fresh one starts on the retry.
    if (error instanceof EngineFailure) return { ok: false, outcome: failed(run, Reason.RenderFailed, error.message, { kind: 'retry' }) };
    return { ok: false, outcome: failed(run, Reason.RenderFailed, `rendering failed: ${safeError(error).message}`, { kind: 'retry' }) };
  }
  return { ok: true, value: rendered };
}

/** Said after a render error when encrypted files outside the rendered paths were left out (the error may be about one of them). */
function withheldNote(source: Source): string {
  const withheld = source.withheld ?? [];
  if (withheld.length === 0) return '';
  const shown = withheld.slice(0, 3).join(', ');
  return ` (left out of the render: ${withheld.length} encrypted file(s) outside the rendered paths that the sync's keys do not open: ${shown}${withheld.length > 3 ? ', …' : ''})`;
}

/** targets[].valuesFiles under targets[].values. */
function targetValues(source: Source, target: string, values: Values | undefined): Values | undefined {
  const files = source.valuesFiles?.targets.get(target);
  return files === undefined ? values : layerValues([files, values], { keepNulls: true });
}

function identityOf(deps: ConfigSyncReconcilerDeps, namespace: string, spec: ConfigSyncSpec | undefined): ApplyIdentity {
  const serviceAccountName = spec?.serviceAccountName ?? deps.defaultServiceAccount;
  return serviceAccountName === undefined ? undefined : { namespace, serviceAccountName };
}

/** Who writes a target of this sync, for the tenancy rule (a target in another cluster writes with that cluster's credentials). */
function actorOf(deps: ConfigSyncReconcilerDeps, namespace: string, spec: ConfigSyncSpec | undefined, cluster: string | undefined): Actor {
  return { objectNamespace: namespace, serviceAccount: identityOf(deps, namespace, spec)?.serviceAccountName, trusted: deps.trusted ?? new Set(), cluster };
}

/** The client that applies with the sync's identity (its ServiceAccount's rights, or the operator's). */
async function applyClientFor(run: SyncRun, revision: string): Promise<Step<ApplyClient>> {
  try {
    return { ok: true, value: await run.deps.applyClient(identityOf(run.deps, run.namespace, run.spec)) };
  } catch (error) {
    if (error instanceof ServiceAccountError) return { ok: false, outcome: stalled(run, Reason.ApplyFailed, error.message, revision) };
    throw error;
  }
}

/**
 * Plan, apply and prune every target at once (clusters in parallel); a target that fails fails alone. A
 * target removed from the spec is pruned where its inventory says it was applied.
 */
/** applyTarget's `noop` for one target: the sync's records and what the drift watches (of its cluster) hold. */
function targetNoop(
  noop: NonNullable<ConfigSyncReconcilerDeps['noop']>,
  key: string,
  remote: RemoteClients | undefined,
  stale: Set<string>,
): NonNullable<TargetApplyInput['noop']> {
  const { firstApply } = noop;
  return {
    records: noop.records,
    key,
    watched: (id: string) => noop.watched(id, remote, (why) => stale.add(why)),
    ...(firstApply === undefined
      ? {}
      : {
          firstApply: {
            applied: firstApply.applied,
            ownerSeen: (scope, ownerLabel) => firstApply.ownerSeen(scope, ownerLabel, remote),
            ...(firstApply.watch === undefined ? {} : { watch: (ids: readonly string[]) => firstApply.watch?.(ids, remote) ?? Promise.resolve() }),
          },
        }),
  };
}

async function reconcileTargets(
  run: SyncRun,
  client: ApplyClient,
  rendered: ReadonlyMap<string, KubernetesObject[]>,
  clusters: ClusterAccess,
  revision: string,
): Promise<TargetOutcome[]> {
  const previous = run.object.status ?? {};
  const previousInventory = new Map((previous.inventory ?? []).map((i) => [i.target, i]));
  const previousTargets = new Map((previous.targets ?? []).map((t) => [t.name, t]));
  const specNames = new Set(run.spec.targets.map((t) => t.name));
  const common = (name: string) => ({
    owner: { namespace: run.namespace, name: run.object.metadata.name, target: name },
    previous: previousTargets.get(name),
    now: run.now,
    metrics: run.deps.metrics,
    syncKey: `${run.namespace}/${run.object.metadata.name}`,
  });
  const { noop } = run.deps;
  // Targets that left the spec: a new target in the same cluster takes over their objects (a rename), before
  // they prune (below), so a renamed target's objects are handed over, never deleted and created again.
  const leaving = [...previousInventory.values()].filter((entry) => !specNames.has(entry.target) && entry.entries.length > 0);
  const handoffIn = (cluster: string | undefined): ReadonlySet<string> | undefined => {
    const owners = leaving
      .filter((e) => e.cluster === cluster)
      .map((e) => ownedBy({ namespace: run.namespace, name: run.object.metadata.name, target: e.target }));
    return owners.length === 0 ? undefined : new Set(owners);
  };
  const applyOne = async (target: ConfigSyncSpec['targets'][number]): Promise<TargetOutcome> => {
    const cluster = target.cluster?.name;
    const handoff = handoffIn(cluster);
    const inventory = previousInventory.get(target.name)?.entries;
    const access = clusters.get(target.name);
    const desired = rendered.get(target.name);
    if (desired === undefined || (access !== undefined && 'unavailable' in access)) {
      return unavailableTarget(
        { name: target.name, namespace: target.namespace, cluster },
        access !== undefined && 'unavailable' in access ? access.unavailable : 'not rendered',
        inventory,
        previousTargets.get(target.name),
      );
    }
    const remote = access?.clients;
    // A drift watch gone silent proves nothing: the target read instead, and says so (see drift-watches.ts).
    const stale = new Set<string>();
    // Hooks (syncline.dev/hook, argocd.argoproj.io/hook) run around the apply of the other objects (hook-run.ts).
    const applied = await applyTargetWithHooks(
      {
        revision,
        hookTimeoutMs: parseDuration(run.spec.timeout ?? DEFAULT_HEALTH_TIMEOUT),
        client: remote?.apply ?? client,
        target: {
          name: target.name,
          ...(target.namespace === undefined ? {} : { namespace: target.namespace }),
          ...(cluster === undefined ? {} : { cluster }),
        },
        desired,
        inventory,
        policy: run.spec.policy,
        ...(handoff === undefined ? {} : { handoff }),
        drift: run.spec.drift,
        prune: run.spec.prune,
        allowEmpty: run.spec.allowEmpty,
        ...(run.deps.beforeApply === undefined ? {} : { beforeApply: (ids: readonly string[]) => run.deps.beforeApply?.(ids, remote) ?? Promise.resolve() }),
        ...(noop === undefined
          ? {}
          : { noop: targetNoop(noop, `${run.namespace}/${run.object.metadata.name}/${target.name}@${cluster ?? ''}`, remote, stale) }),
        health: { wait: target.wait ?? run.spec.wait },
        tenancy: actorOf(run.deps, run.namespace, run.spec, cluster),
        ...common(target.name),
      },
      applyTarget,
    );
    const outcome =
      stale.size > 0 && applied.status.phase === 'Synced' ? { ...applied, status: { ...applied.status, message: truncate([...stale].join('; ')) } } : applied;
    if (remote !== undefined) {
      const unreachable = outcome.findings.find(isUnreachable);
      // Kept as the skipped runs will word it (unavailableTarget names the target again).
      if (unreachable !== undefined)
        run.deps.targetBackoff?.failed(backoffKey(run, target.name), unreachable.subject === target.name ? unreachable.reason : findingMessage(unreachable));
      else run.deps.targetBackoff?.succeeded(backoffKey(run, target.name));
      // Drift there is seen by watches in that cluster; when it cannot be watched, the refresh interval stands in.
      if (outcome.status.phase === 'Synced' && run.deps.remoteWatchesHealthy?.(remote) === false) {
        return withCluster(
          {
            ...outcome,
            status: { ...outcome.status, message: `cannot watch cluster ${remote.cluster} for drift; checked every ${run.spec.refreshInterval} instead` },
          },
          cluster,
        );
      }
      return withCluster(outcome, cluster);
    }
    // Here, a namespace the operator may not watch (or the watch budget has no room for) is read at every refresh.
    // The interval as the spec says it, not this run's jittered one: an unchanged message writes no status.
    // (A no-op the drift watches proved is watched, every object of it: nothing to ask.)
    const unwatched =
      outcome.status.phase === 'Synced' && !provenByWatches(outcome) ? run.deps.unwatchedDrift?.(desired.map((object) => objectId(object))) : undefined;
    if (unwatched !== undefined)
      return { ...outcome, status: { ...outcome.status, message: truncate(`${unwatched}; checked every ${run.spec.refreshInterval} instead`) } };
    return outcome;
  };
  const removed = async (entry: TargetInventory, applied: readonly TargetOutcome[]): Promise<TargetOutcome> => {
    // What a target in the spec renders in the same cluster but has not taken over yet (its apply failed, or
    // its wave was held back) is not pruned: it stays in this inventory, to be handed over on a later run. A
    // target there that was not rendered (its cluster unavailable) may want anything: nothing is pruned.
    const sameCluster = run.spec.targets.filter((t) => t.cluster?.name === entry.cluster);
    const { waiting, rest } = awaitingHandoff(entry, {
      wanted: sameCluster.some((t) => !rendered.has(t.name))
        ? 'all'
        : sameCluster.flatMap((t) => (rendered.get(t.name) ?? []).map((object) => objectId(object))),
      held: applied.filter((o) => o.inventory.cluster === entry.cluster).flatMap((o) => decodeInventory(o.inventory.entries).map((e) => e.id)),
    });
    let targetClient = client;
    if (entry.cluster !== undefined) {
      try {
        if (run.deps.remote === undefined) throw new Error('remote clusters are not enabled');
        targetClient = (await run.deps.remote.clients(run.namespace, entry.cluster)).apply;
      } catch (error) {
        return unavailableTarget(
          { name: entry.target, cluster: entry.cluster },
          `removed from the spec; not pruned yet: ${safeError(error).message}`,
          entry.entries,
          previousTargets.get(entry.target),
        );
      }
    }
    const outcome = await applyTarget({
      client: targetClient,
      target: { name: entry.target, ...(entry.cluster === undefined ? {} : { cluster: entry.cluster }) },
      desired: [],
      inventory: rest,
      prune: run.spec.prune,
      allowEmpty: true,
      tenancy: actorOf(run.deps, run.namespace, run.spec, entry.cluster),
      ...common(entry.target),
    });
    if (waiting.length === 0) return withCluster(outcome, entry.cluster);
    const kept = decodeInventory(outcome.inventory.entries);
    return withCluster(
      {
        ...outcome,
        status: {
          ...outcome.status,
          objects: kept.length + waiting.length,
          message: truncate(
            `removed from the spec; ${waiting.length} object(s) kept until a target in the spec takes them over: ${waiting.map((e) => readableId(e.id)).join(', ')}`,
          ),
        },
        inventory: { ...outcome.inventory, entries: encodeInventory([...kept, ...waiting]) },
      },
      entry.cluster,
    );
  };
  const applied = await Promise.all(run.spec.targets.map(applyOne));
  return [...applied, ...(await Promise.all(leaving.map((entry) => removed(entry, applied))))];
}

/**
 * A removed target's inventory split in two: the objects a target still in the spec wants but does not hold yet
 * (`waiting`: not pruned), and the rest (encoded, to prune as usual).
 */
function awaitingHandoff(
  entry: TargetInventory,
  targets: { wanted: readonly string[] | 'all'; held: readonly string[] },
): { waiting: InventoryEntry[]; rest: string[] } {
  const wanted = targets.wanted === 'all' ? { has: () => true } : new Set(targets.wanted);
  const held = new Set(targets.held);
  const waiting: InventoryEntry[] = [];
  const others: InventoryEntry[] = [];
  for (const e of decodeInventory(entry.entries)) {
    if (wanted.has(e.id) && !held.has(e.id)) waiting.push(e);
    else others.push(e);
  }
  return { waiting, rest: encodeInventory(others) };
}

/** Records the cluster with the inventory, so deletion and a removed target prune where they applied. */
function withCluster(outcome: TargetOutcome, cluster: string | undefined): TargetOutcome {
  return cluster === undefined ? outcome : { ...outcome, inventory: { ...outcome.inventory, cluster } };
}

/** A target that could not be tried: it keeps its inventory and last sync time, and says why. */
function unavailableTarget(
  target: { name: string; namespace?: string | undefined; cluster?: string | undefined },
  why: string,
  inventory: readonly string[] | undefined,
  previous: TargetStatus | undefined,
): TargetOutcome {
  return {
    status: {
      name: target.name,
      ...(target.cluster === undefined ? {} : { cluster: target.cluster }),
      ...(target.namespace === undefined ? {} : { namespace: target.namespace }),
      phase: 'Failed',
      objects: inventory?.length ?? 0,
      message: truncate(why),
      ...(previous?.lastSyncedTime === undefined ? {} : { lastSyncedTime: previous.lastSyncedTime }),
    },
    inventory: { target: target.name, entries: [...(inventory ?? [])], ...(target.cluster === undefined ? {} : { cluster: target.cluster }) },
    counts: emptyCounts(),
    ...sortFindings([{ cause: FindingCause.ClusterUnavailable, subject: target.name, reason: why }]),
    drift: [],
    orphaned: [],
    changed: false,
    changes: [],
  };
}

const steadyOutcomes = new SteadyOutcomes<ConfigSyncStatus>();

/** syncedOutcome, or the one kept from the last no-op resync when every input is the same (see steady-outcome.ts). */
function outcomeOf(
  run: SyncRun,
  revision: string,
  targets: readonly TargetOutcome[],
  desired: readonly KubernetesObject[],
  renderedBy: ReadonlyMap<string, RenderedBy>,
): Outcome {
  const inputs = {
    object: run.object,
    spec: run.spec,
    revision,
    targets,
    desired,
    renderedBy: JSON.stringify([...renderedBy]),
    refreshAdjusted: run.refreshAdjusted,
  };
  const kept = steadyOutcomes.status(inputs);
  if (kept !== undefined) return { status: kept, result: { kind: 'done', requeueAfterMs: run.refreshMs }, events: [] };
  const computed = withRenderedBy(syncedOutcome(run, revision, targets, desired), renderedBy);
  const outcome = { ...computed, status: withRevisionColumn(computed.status) };
  steadyOutcomes.keep(inputs, outcome, { stored: sameAsStored(outcome.status, run.object.status ?? {}), refreshMs: run.refreshMs });
  return outcome;
}

/** The status, requeue and events of a sync that got as far as applying. */
function syncedOutcome(run: SyncRun, revision: string, targets: readonly TargetOutcome[], allDesired: readonly KubernetesObject[]): Outcome {
  const { deps, object, spec, log, now } = run;
  const previous = object.status ?? {};
  const { counts, findings, failures, conflicts, drift, orphaned, changed, changes } = combineTargets(targets);
  deps.metrics.managedObjects.set(
    { namespace: run.namespace, name: object.metadata.name },
    targets.reduce((n, t) => n + t.status.objects, 0),
  );
  // A target removed from the spec stays listed only while its inventory still holds objects to prune: once they
  // are pruned or handed to a renamed target, this status write drops it (no later reconcile is needed for that).
  const inSpec = new Set(spec.targets.map((t) => t.name));
  const listed = targets.filter((t) => inSpec.has(t.status.name) || t.inventory.entries.length > 0);
  const applied = listed.filter((t) => inSpec.has(t.status.name) && t.status.phase === 'Synced').length;
  const ok = failures.length === 0 && conflicts.length === 0;
  // Later apply waves held back: the revision is not fully applied yet (not recorded as applied, no history).
  const complete = ok && targets.every((t) => t.status.phase !== 'Pending');
  const history: HistoryEntry[] = complete
    ? recordHistory(
        previous.history ?? [],
        { revision, appliedAt: now, objects: allDesired.length, digest: renderedDigests.digest(allDesired, digestRendered) },
        spec.historyLimit,
      )
    : (previous.history ?? []);
  const summary = `${counts.created} created, ${counts.configured} configured, ${counts.deleted} deleted`;
  const at = { generation: object.metadata.generation, now };
  // A revision whose later waves were held back last time is not new when this run goes on with it.
  const continuing = previous.lastAttemptedRevision === revision && (previous.targets ?? []).some((t) => t.phase === 'Pending');
  const revisionChanged = previous.sourceRevision !== revision && !continuing;
  const lastSyncedTime = ok && (changed || revisionChanged || previous.lastSyncedTime === undefined) ? now : previous.lastSyncedTime;
  let conditions = clampNotice(
    run,
    appliedConditions(
      previous.conditions ?? [],
      { failures, conflicts, drift },
      { readyMessage: `Applied revision ${revision}`, applied, total: spec.targets.length, at, refused: onlyRefused(targets) },
    ),
  );
  const waitOf = new Map(spec.targets.map((t) => [t.name, t.wait ?? spec.wait]));
  const judged = targets.flatMap((t) => (t.health === undefined ? [] : [{ name: t.status.name, wait: waitOf.get(t.status.name) ?? false, report: t.health }]));
  const health =
    judged.length === 0
      ? undefined
      : healthConditions({ conditions, targets: judged, lastSyncedTime, timeoutMs: parseDuration(spec.timeout ?? DEFAULT_HEALTH_TIMEOUT), at });
  if (health !== undefined) conditions = keepTransitions(previous.conditions, health.conditions);
  conditions = keepTransitions(previous.conditions, hookConditions(conditions, targets, at));

  const status: ConfigSyncStatus = {
    ...previous,
    observedGeneration: object.metadata.generation,
    lastSyncedTime,
    sourceRevision: complete ? revision : previous.sourceRevision,
    // The Ref and Revision columns: a printer column cannot shorten a string or test it for a SHA.
    drifted: drift.length,
    followedRef: complete ? followedRef(spec.source.git.revision) : previous.followedRef,
    lastAttemptedRevision: revision,
    appliedTargets: applied,
    conditions,
    targets: listed.map((t) => t.status),
    inventory: listed.map((t) => t.inventory),
    history,
    lastHandledReconcileAt: object.metadata.annotations?.[RECONCILE_REQUESTED_ANNOTATION] ?? previous.lastHandledReconcileAt,
  };
  const events: SyncEvent[] = orphaned.map((o) => ({ type: 'Warning', reason: Reason.NamespaceOrphaned, message: truncate(o) }));
  if (!ok) {
    log.info({ failures: failures.length, conflicts: conflicts.length, ...counts }, 'sync finished with failures');
    // Forbidden needs an RBAC change and a conflict a person's decision, not hammering: wait for the refresh interval.
    // A tenancy refusal too: it needs a ServiceAccount or a trusted namespace.
    const waitForPerson = findings.every((f) => !isTransient(f.cause));
    if (conflicts.length > 0)
      events.push({ type: 'Warning', reason: Reason.Conflict, message: truncate(`${conflicts.length} object(s) not applied: ${conflicts.join('; ')}`) });
    // The failures as the Ready condition lists them (what the other targets wrote is in the log line above):
    // the same failure next time is the same message, which counts up one Event.
    if (failures.length > 0)
      events.push({
        type: 'Warning',
        reason: onlyRefused(targets) ? Reason.NamespaceNotAllowed : hooksFailed(targets.map((t) => t.status)) ? Reason.HookFailed : Reason.ApplyFailed,
        message: truncate(`${failures.length} failed: ${failures.join('; ')}`),
      });
    return { status, result: waitForPerson ? { kind: 'wait', requeueAfterMs: run.refreshMs } : { kind: 'retry' }, events };
  }
  // A commit whose PreSync hooks run has written nothing yet: its Synced Event comes with the apply.
  const announce = changed || (revisionChanged && !hooksRunning(targets.map((t) => t.status)));
  if (announce) log.info({ revision, ...counts }, 'synced');
  else log.debug({ revision }, 'no changes');
  // Once per change (the event is recorded only with the status write it explains), naming what changed.
  if (announce)
    events.push({
      type: 'Normal',
      reason: 'Synced',
      message: truncate(`revision ${revision.slice(0, 12)}: ${summary}${changes.length === 0 ? '' : `: ${describeChanges(changes)}`}`),
      logged: true,
    });
  if (health?.failure !== undefined) events.push({ type: 'Warning', reason: Reason.HealthCheckFailed, message: health.failure });
  // Still converging: the objects' status changes wake this sync; the timeout's expiry is the latest re-check.
  const hookPoll = hooksRunning(targets.map((t) => t.status)) ? HOOK_POLL_MS : Infinity;
  return { status, result: { kind: 'done', requeueAfterMs: Math.min(run.refreshMs, health?.requeueAfterMs ?? Infinity, hookPoll) }, events };
}

/** The columns a printer column cannot compute (Revision, Hooks), written into the status. */
function withRevisionColumn(status: ConfigSyncStatus): ConfigSyncStatus {
  return withHooksColumn(withShortRevision(status));
}

/** The Hooks column (status.hookSummary), from the targets' hook records. */
function withHooksColumn(status: ConfigSyncStatus): ConfigSyncStatus {
  const column = hookSummary(status.targets ?? []);
  if (column === status.hookSummary) return status;
  const { hookSummary: _previous, ...rest } = status;
  return column === undefined ? rest : { ...rest, hookSummary: column };
}

/**
 * The Revision column (status.shortRevision): a printer column can neither shorten a string nor compare two, so
 * the applied commit and the one being tried, when it differs, are written out.
 */
function withShortRevision(status: ConfigSyncStatus): ConfigSyncStatus {
  const applied = status.sourceRevision?.slice(0, 7);
  const tried = status.lastAttemptedRevision?.slice(0, 7);
  const column = tried === undefined || tried === applied ? applied : applied === undefined ? `(trying ${tried})` : `${applied} (trying ${tried})`;
  if (column === status.shortRevision) return status;
  const { shortRevision: _previous, ...rest } = status;
  return column === undefined ? rest : { ...rest, shortRevision: column };
}

/** The ref a revision was resolved from, or "pinned" when the spec names a commit SHA. */
export function followedRef(revision: string): string {
  return /^[0-9a-f]{40}$/i.test(revision) ? 'pinned' : revision;
}

/** Conditions every outcome that got past the source carries: the clamp notice, and none of a previous stall. */
function baseConditions(run: SyncRun, conditions: readonly Condition[]): Condition[] {
  // Reconciling (set while waiting for health) ends with any outcome that did not get as far as the apply.
  return clampNotice(run, removeCondition(removeCondition(removeCondition(conditions, 'Stalled'), 'InvalidSource'), 'Reconciling'));
}

/** IntervalClamped says when the operator does not use spec.refreshInterval as written (and a resumed sync is no longer Suspended). */
function clampNotice(run: SyncRun, conditions: readonly Condition[]): Condition[] {
  const at = { generation: run.object.metadata.generation, now: run.now };
  conditions = removeCondition(conditions, 'Suspended');
  return run.refreshAdjusted === undefined
    ? removeCondition(conditions, 'IntervalClamped')
    : setCondition(conditions, { type: 'IntervalClamped', status: 'True', reason: Reason.IntervalClamped, message: run.refreshAdjusted }, at);
}

function stalled(run: SyncRun, reason: Reason, message: string, revision?: string): Outcome {
  const status = stalledStatus(run.deps, run.object, reason, message, revision);
  status.conditions = clampNotice(run, status.conditions ?? []);
  // Re-check at the refresh interval (the source may change: a push, a fixed template), never in a hot loop.
  return { status, result: { kind: 'wait', requeueAfterMs: run.refreshMs }, events: [{ type: 'Warning', reason, message: truncate(message) }] };
}

function stalledStatus(deps: ConfigSyncReconcilerDeps, object: ConfigSync, reason: Reason, message: string, revision?: string): ConfigSyncStatus {
  const previous = object.status ?? {};
  const at = { generation: object.metadata.generation, now: deps.clock.now().toISOString() };
  const short = truncate(message);
  let conditions: Condition[] = previous.conditions ?? [];
  conditions = removeCondition(conditions, 'Reconciling');
  conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason, message: short }, at);
  conditions = setCondition(conditions, { type: 'Stalled', status: 'True', reason, message: short }, at);
  conditions =
    reason === Reason.RenderFailed || reason === Reason.FetchFailed
      ? setCondition(conditions, { type: 'InvalidSource', status: 'True', reason, message: short }, at)
      : removeCondition(conditions, 'InvalidSource');
  return {
    ...previous,
    observedGeneration: object.metadata.generation,
    conditions,
    lastHandledReconcileAt: handledRequest(object),
    ...(revision !== undefined ? { lastAttemptedRevision: revision } : {}),
  };
}

function failed(run: SyncRun, reason: Reason, message: string, result: ReconcileOutcome): Outcome {
  const previous = run.object.status ?? {};
  const at = { generation: run.object.metadata.generation, now: run.now };
  const short = truncate(message);
  let conditions: Condition[] = baseConditions(run, previous.conditions ?? []);
  const input: ConditionInput = { type: 'Ready', status: 'False', reason, message: short };
  conditions = setCondition(conditions, input, at);
  conditions = setCondition(conditions, { ...input, type: 'Failed', status: 'True' }, at);
  return {
    status: { ...previous, observedGeneration: run.object.metadata.generation, conditions, lastHandledReconcileAt: handledRequest(run.object) },
    result,
    events: [{ type: 'Warning', reason, message: short }],
  };
}

/** A failed or stalled attempt handled the reconcile request too (as Flux records it): `syncline reconcile --wait` stops waiting. */
function handledRequest(object: ConfigSync): string | undefined {
  return object.metadata.annotations?.[RECONCILE_REQUESTED_ANNOTATION] ?? object.status?.lastHandledReconcileAt;
}

/** Deletion: prune everything this sync applied (deletionPolicy Delete) or leave it (Orphan), then let go. */
async function finalize(deps: ConfigSyncReconcilerDeps, object: ConfigSync, log: Logger): Promise<ReconcileOutcome> {
  if (!(object.metadata.finalizers ?? []).includes(FINALIZER)) return { kind: 'done' };
  const parsed = ConfigSyncSpec.safeParse(object.spec);
  const deletionPolicy = parsed.success ? parsed.data.deletionPolicy : 'Orphan';
  if (deletionPolicy === 'Delete') {
    const namespace = object.metadata.namespace ?? 'default';
    const client = await deps.applyClient(identityOf(deps, namespace, parsed.success ? parsed.data : undefined));
    const blocked: string[] = [];
    for (const { target, entries, cluster } of object.status?.inventory ?? []) {
      if (entries.length === 0) continue;
      const targetClient = await clusterClient(deps, { namespace, cluster, client }).catch((error: unknown) => {
        blocked.push(`${target}: cluster ${cluster ?? ''}: ${safeError(error).message}`);
        return undefined;
      });
      if (targetClient === undefined) continue;
      const { allowed, refused } = partitionInventory(actorOf(deps, namespace, parsed.success ? parsed.data : undefined, cluster), entries);
      if (refused.length > 0) {
        const message = truncate(
          `${refused.length} object(s) of target ${target} left in place: ${NAMESPACE_NOT_ALLOWED}: this ConfigSync may not delete outside its namespace (${refused.slice(0, 5).map(readableId).join(', ')})`,
        );
        await deps.events.record(object, { type: 'Warning', reason: Reason.NamespaceNotAllowed, message });
      }
      const outcome = await applyTarget({
        client: targetClient,
        target: { name: target },
        desired: [],
        inventory: allowed,
        owner: { namespace, name: object.metadata.name, target },
        prune: true,
        allowEmpty: true,
        // Every target of this sync goes: a Namespace holding only this sync's objects may go with them.
        pruneScope: 'sync',
        now: deps.clock.now().toISOString(),
        syncKey: `${namespace}/${object.metadata.name}`,
      });
      for (const orphan of outcome.orphaned) await deps.events.record(object, { type: 'Warning', reason: Reason.NamespaceOrphaned, message: truncate(orphan) });
      if (outcome.failures.length > 0) blocked.push(...outcome.failures);
    }
    // The hook objects the last hooked commits left: never in the inventory, proven by their records.
    for (const { name: target, cluster, hooks } of object.status?.targets ?? []) {
      if (hooks === undefined || hooks.length === 0) continue;
      const targetClient = await clusterClient(deps, { namespace, cluster, client }).catch((error: unknown) => {
        blocked.push(`${target}: hooks: cluster ${cluster ?? ''}: ${safeError(error).message}`);
        return undefined;
      });
      if (targetClient === undefined) continue;
      const tenancy = actorOf(deps, namespace, parsed.success ? parsed.data : undefined, cluster);
      const outcome = await deleteHookObjects({ client: targetClient, owner: { namespace, name: object.metadata.name, target }, hooks, tenancy });
      if (outcome.deleted.length > 0) log.info({ target, hooks: outcome.deleted.length }, 'deleted hook objects');
      blocked.push(...outcome.failures.map((f) => `${target}: ${f}`));
    }
    if (blocked.length > 0) {
      // The finalizer holds until every cluster has pruned (deletionPolicy Orphan releases it): say why.
      const message = truncate(`deletion waits: could not prune every target (deletionPolicy Orphan releases the objects): ${blocked.join('; ')}`);
      const at = { generation: object.metadata.generation, now: deps.clock.now().toISOString() };
      const conditions = setCondition(object.status?.conditions ?? [], { type: 'Ready', status: 'False', reason: Reason.PruneFailed, message }, at);
      if (await writeStatus(deps.rest, pathOf(object), object, { ...object.status, conditions }))
        await deps.events.record(object, { type: 'Warning', reason: Reason.PruneFailed, message });
      log.warn({ blocked: blocked.length }, 'could not delete every object; retrying');
      return { kind: 'retry' };
    }
  }
  await removeFinalizer(deps.rest, 'configsyncs', object, FINALIZER);
  log.info({ deletionPolicy }, 'finalized');
  return { kind: 'done' };
}

/** The client of a target's cluster: this cluster's (the sync's identity), or the RemoteCluster's. */
async function clusterClient(
  deps: ConfigSyncReconcilerDeps,
  input: { namespace: string; cluster: string | undefined; client: ApplyClient },
): Promise<ApplyClient> {
  if (input.cluster === undefined) return input.client;
  if (deps.remote === undefined) throw new Error('remote clusters are not enabled in this operator');
  return (await deps.remote.clients(input.namespace, input.cluster)).apply;
}

async function timed<T>(deps: ConfigSyncReconcilerDeps, operation: 'resolve' | 'fetch', run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await run();
  } finally {
    deps.metrics.gitDuration.observe({ operation }, (performance.now() - started) / 1000);
  }
}

/**
 * ±10 % of the interval, in steps of a hundredth of it: the syncs still spread over the fifth of an interval, and
 * their timers share Node's per-duration timer lists (a distinct duration per sync would give each its own list to
 * build and sort in, for every resync).
 */
function jittered(ms: number, random: () => number): number {
  const step = Math.max(1, Math.round(ms / 100));
  return Math.round((ms * (0.9 + random() * 0.2)) / step) * step;
}

/** Errors that may carry request details are reduced to their message; source-git and render redact theirs. */
export function safeError(error: unknown): { message: string; name?: string } {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { message: String(error) };
}

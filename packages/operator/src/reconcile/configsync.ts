// The ConfigSync reconciler: a thin shell (fetch the object, finalizer, suspend, always write status and
// metrics at the end) around step functions that each return early when there is nothing to do:
// resolve revision → fetch snapshot → render every target → plan → apply → prune → status.
// It reconciles from current state, never from the event that woke it, so running it twice changes nothing.
import {
  decodeInventory,
  digestRendered,
  encodeInventory,
  executePlan,
  planApply,
  readLive,
  recordHistory,
  type ApplyClient,
  type ChangeSet,
  type Discovery,
  type KubeObject as ApplyObject,
} from '@syncline/apply';
import { RenderError, RenderErrorReason, layerValues, parseValues, renderTarget, type TemplateCache, type KubernetesObject, type Values } from '@syncline/render';
import { GitSourceError, authFromSecretData, type GitAuth, type GitSource } from '@syncline/source-git';
import type { Logger } from 'pino';
import { ConfigSyncSpec, type Condition, type ConfigSync, type ConfigSyncStatus, type HistoryEntry, type TargetStatus } from '../api/v1alpha1.ts';
import type { ReconcileOutcome } from '../controller/queue.ts';
import type { EventRecorder } from '../kube/events.ts';
import { ServiceAccountError } from '../kube/errors.ts';
import { KubeApiError, type KubeRest } from '../kube/rest.ts';
import type { Metrics } from '../metrics.ts';
import { Reason, removeCondition, setCondition, type ConditionInput } from './conditions.ts';
import { parseDuration } from './duration.ts';

export const FINALIZER = 'syncline.dev/finalizer';
export const RECONCILE_REQUESTED_ANNOTATION = 'syncline.dev/reconcile-requested-at';

export type ApplyIdentity = { readonly namespace: string; readonly serviceAccountName: string } | undefined;

export type ConfigSyncReconcilerDeps = {
  readonly rest: KubeRest;
  readonly git: GitSource;
  /** An apply client for the operator itself (undefined) or impersonating a tenant's ServiceAccount. */
  readonly applyClient: (identity: ApplyIdentity) => Promise<ApplyClient>;
  readonly templates: TemplateCache;
  readonly clock: { now(): Date };
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly events: EventRecorder;
  /** The informer cache: current state by `namespace/name`. */
  readonly get: (key: string) => ConfigSync | undefined;
  /** Syncs without serviceAccountName apply as this account when set (multi-tenant clusters). */
  readonly defaultServiceAccount?: string;
  /** 0..1 source of jitter for the refresh interval. */
  readonly random?: () => number;
};

/** An error that a spec or source change must fix: no backoff, the sync waits for that change. */
class StallError extends Error {
  readonly reason: (typeof Reason)[keyof typeof Reason];
  constructor(reason: (typeof Reason)[keyof typeof Reason], message: string) {
    super(message);
    this.reason = reason;
  }
}

type Outcome = {
  status: ConfigSyncStatus;
  result: ReconcileOutcome;
  event?: { type: 'Normal' | 'Warning'; reason: string; message: string };
};

const configSyncPath = (namespace: string, name: string): string => `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs/${name}`;

export function createConfigSyncReconciler(deps: ConfigSyncReconcilerDeps): (key: string) => Promise<ReconcileOutcome> {
  return async (key) => {
    const object = deps.get(key);
    if (object === undefined) return { kind: 'done' };
    const started = performance.now();
    const log = deps.logger.child({ configsync: key });
    let label = 'success';
    try {
      if (object.metadata.deletionTimestamp !== undefined) return await finalize(deps, object, log);
      if (!(object.metadata.finalizers ?? []).includes(FINALIZER)) {
        await patchFinalizers(deps.rest, object, [...(object.metadata.finalizers ?? []), FINALIZER]);
        return { kind: 'done' }; // the update event brings us back with a fresh object
      }
      const parsed = ConfigSyncSpec.safeParse(object.spec);
      if (!parsed.success) {
        label = 'stalled';
        await writeStatus(deps, object, stalledStatus(deps, object, Reason.InvalidSpec, `invalid spec: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`));
        return { kind: 'stalled' };
      }
      const spec = parsed.data;
      if (spec.suspend) {
        label = 'suspended';
        return { kind: 'done' };
      }
      const outcome = await sync(deps, object, spec, log);
      label = outcome.result.kind === 'done' ? 'success' : outcome.result.kind;
      const wrote = await writeStatus(deps, object, outcome.status);
      // A failure is news once: repeats of an unchanged failure go to debug.
      if (outcome.event?.type === 'Warning') log[wrote ? 'info' : 'debug']({ reason: outcome.event.reason, message: outcome.event.message }, 'sync did not succeed');
      if (outcome.event !== undefined && wrote) await deps.events.record(object, outcome.event);
      return outcome.result;
    } catch (error) {
      label = 'error';
      log.warn({ err: safeError(error) }, 'reconcile failed');
      return { kind: 'retry' };
    } finally {
      deps.metrics.reconcileDuration.observe({ result: label }, (performance.now() - started) / 1000);
      deps.metrics.reconcileTotal.inc({ result: label });
    }
  };
}

async function sync(deps: ConfigSyncReconcilerDeps, object: ConfigSync, spec: ConfigSyncSpec, log: Logger): Promise<Outcome> {
  const namespace = object.metadata.namespace ?? 'default';
  const refreshMs = jittered(parseDuration(spec.refreshInterval), deps.random ?? Math.random);
  const previous = object.status ?? {};

  // Step 1: the source. A failure here never touches the cluster.
  let revision: string;
  let files: Awaited<ReturnType<GitSource['readPath']>>;
  try {
    const auth = await readGitAuth(deps.rest, namespace, spec.source.git.secretRef?.name);
    revision = await timed(deps, 'resolve', () => deps.git.resolveRevision({ repo: spec.source.git.repo, revision: spec.source.git.revision, auth }));
    const snapshot = await timed(deps, 'fetch', () => deps.git.fetchSnapshot({ repo: spec.source.git.repo, sha: revision, auth }));
    files = await deps.git.readPath(snapshot, spec.source.git.path);
  } catch (error) {
    if (error instanceof StallError) return stalled(deps, object, error.reason, error.message, refreshMs);
    if (error instanceof GitSourceError && !error.retryable) return stalled(deps, object, Reason.FetchFailed, error.message, refreshMs);
    const message = error instanceof GitSourceError ? error.message : `fetching the source failed: ${safeError(error).message}`;
    return failed(deps, object, Reason.FetchFailed, message, { kind: 'retry' });
  }

  // Step 2: render every target before applying any, so a bad template never half-applies.
  let values: Values;
  const rendered = new Map<string, KubernetesObject[]>();
  const defaultClient = await deps.applyClient(undefined);
  try {
    values = await readValues(deps.rest, namespace, spec);
    const renderAll = (discovery: Discovery): void => {
      rendered.clear();
      for (const target of spec.targets) {
        if (target.cluster !== undefined) continue;
        rendered.set(
          target.name,
          renderTarget({
            files,
            path: spec.source.git.path,
            values,
            target: { name: target.name, namespace: target.namespace ?? namespace, values: target.values, patches: target.patches, data: target.data },
            source: { repo: spec.source.git.repo, revision, path: spec.source.git.path },
            discovery,
            cache: deps.templates,
          }),
        );
      }
    };
    try {
      renderAll(await defaultClient.discovery());
    } catch (error) {
      // A kind the cached discovery does not know may have been installed since (a CRD applied by
      // someone else): read discovery again once before calling the source invalid.
      if (!(error instanceof RenderError && error.reason === RenderErrorReason.UnknownKind)) throw error;
      renderAll(await defaultClient.discovery({ refresh: true }));
    }
  } catch (error) {
    if (error instanceof RenderError) return stalled(deps, object, Reason.RenderFailed, error.message, refreshMs, revision);
    if (error instanceof StallError) return stalled(deps, object, error.reason, error.message, refreshMs, revision);
    return failed(deps, object, Reason.RenderFailed, `rendering failed: ${safeError(error).message}`, { kind: 'retry' });
  }

  // Step 3: plan, apply and prune per target.
  const identity: ApplyIdentity =
    spec.serviceAccountName !== undefined
      ? { namespace, serviceAccountName: spec.serviceAccountName }
      : deps.defaultServiceAccount !== undefined
        ? { namespace, serviceAccountName: deps.defaultServiceAccount }
        : undefined;
  let client: ApplyClient;
  try {
    client = identity === undefined ? defaultClient : await deps.applyClient(identity);
  } catch (error) {
    if (error instanceof ServiceAccountError) return stalled(deps, object, Reason.ApplyFailed, error.message, refreshMs, revision);
    throw error;
  }
  const now = deps.clock.now().toISOString();
  const previousInventory = new Map((previous.inventory ?? []).map((i) => [i.target, i.entries]));
  const previousTargets = new Map((previous.targets ?? []).map((t) => [t.name, t]));
  const inventory: { target: string; entries: string[] }[] = [];
  const targets: TargetStatus[] = [];
  const counts = { created: 0, configured: 0, deleted: 0, failed: 0, drifted: 0 };
  const failures: string[] = [];
  const driftReports: string[] = [];
  let allDesired: ApplyObject[] = [];

  for (const target of spec.targets) {
    const desired = rendered.get(target.name);
    const targetInventory = decodeInventory(previousInventory.get(target.name));
    if (desired === undefined) {
      // A remote cluster: RemoteCluster support is not built yet; say so instead of pretending.
      targets.push({ name: target.name, cluster: target.cluster?.name, namespace: target.namespace, phase: 'Failed', objects: 0, message: 'remote clusters (RemoteCluster) are not supported yet' });
      failures.push(`${target.name}: remote clusters are not supported yet`);
      inventory.push({ target: target.name, entries: encodeInventory(targetInventory) });
      continue;
    }
    allDesired = allDesired.concat(desired);
    const owner = { namespace, name: object.metadata.name, target: target.name };
    let changes: ChangeSet;
    try {
      const live = await readLive({ client, desired, inventory: targetInventory });
      const plan = planApply({ desired, inventory: targetInventory, live, owner, policy: spec.policy, drift: spec.drift, prune: spec.prune, allowEmpty: spec.allowEmpty });
      changes = await executePlan(plan, { client });
    } catch (error) {
      const message = `${target.name}: ${safeError(error).message}`;
      failures.push(message);
      targets.push({ name: target.name, namespace: target.namespace, phase: 'Failed', objects: targetInventory.length, message, lastSyncedTime: previousTargets.get(target.name)?.lastSyncedTime });
      inventory.push({ target: target.name, entries: encodeInventory(targetInventory) });
      continue;
    }
    inventory.push({ target: target.name, entries: encodeInventory(changes.inventory) });
    const targetFailures: string[] = [];
    if (changes.blocked !== undefined) targetFailures.push(changes.blocked);
    for (const entry of changes.entries) {
      if (entry.action === 'created') counts.created++;
      if (entry.action === 'configured') counts.configured++;
      if (entry.action === 'deleted') counts.deleted++;
      if (entry.action === 'failed') {
        counts.failed++;
        targetFailures.push(`${entry.id}: ${entry.reason ?? 'failed'}`);
      }
      if (entry.drift !== undefined && entry.drift.length > 0 && entry.action !== 'configured') {
        counts.drifted++;
        driftReports.push(`${entry.id} (${entry.drift.slice(0, 3).join(', ')})`);
      }
      if (entry.action !== 'unchanged') deps.metrics.objectsApplied.inc({ action: entry.action });
    }
    if (targetFailures.length > 0) deps.metrics.targetFailures.inc({ configsync: `${namespace}/${object.metadata.name}`, target: target.name });
    const ok = targetFailures.length === 0;
    const changed = changes.entries.some((e) => e.action !== 'unchanged');
    const before = previousTargets.get(target.name);
    targets.push({
      name: target.name,
      namespace: target.namespace,
      phase: ok ? 'Synced' : 'Failed',
      objects: changes.inventory.length,
      message: ok ? undefined : truncate(targetFailures.join('; ')),
      lastSyncedTime: ok && (changed || before?.phase !== 'Synced' || before.lastSyncedTime === undefined) ? now : before?.lastSyncedTime,
    });
    failures.push(...targetFailures.map((f) => `${target.name}: ${f}`));
  }

  deps.metrics.managedObjects.set({ configsync: `${namespace}/${object.metadata.name}` }, inventory.reduce((n, i) => n + decodeInventory(i.entries).length, 0));
  const applied = targets.filter((t) => t.phase === 'Synced').length;
  const changed = counts.created + counts.configured + counts.deleted > 0;
  const history: HistoryEntry[] =
    failures.length === 0
      ? recordHistory(previous.history ?? [], { revision, appliedAt: now, objects: allDesired.length, digest: digestRendered(allDesired) }, spec.historyLimit)
      : (previous.history ?? []);
  const summary = `${counts.created} created, ${counts.configured} configured, ${counts.deleted} deleted`;
  let conditions = previous.conditions ?? [];
  const at = { generation: object.metadata.generation, now };
  conditions = removeCondition(removeCondition(conditions, 'Stalled'), 'InvalidSource');
  conditions = removeCondition(conditions, 'Reconciling');
  if (failures.length === 0) {
    conditions = setCondition(conditions, { type: 'Ready', status: 'True', reason: Reason.Succeeded, message: `Applied revision ${revision}` }, at);
    conditions = setCondition(conditions, { type: 'Synced', status: 'True', reason: Reason.Succeeded, message: `${applied} target(s) synced` }, at);
    conditions = removeCondition(conditions, 'Failed');
  } else {
    const message = truncate(failures.join('; '));
    conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason: Reason.ApplyFailed, message }, at);
    conditions = setCondition(conditions, { type: 'Synced', status: 'False', reason: Reason.ApplyFailed, message: `${applied} of ${spec.targets.length} target(s) synced` }, at);
    conditions = setCondition(conditions, { type: 'Failed', status: 'True', reason: Reason.ApplyFailed, message }, at);
  }
  if (driftReports.length > 0) {
    conditions = setCondition(conditions, { type: 'Synced', status: 'False', reason: Reason.DriftDetected, message: truncate(`drifted: ${driftReports.join('; ')}`) }, at);
  }

  const revisionChanged = previous.sourceRevision !== revision;
  const status: ConfigSyncStatus = {
    ...previous,
    observedGeneration: object.metadata.generation,
    lastSyncedTime: failures.length === 0 && (changed || revisionChanged || previous.lastSyncedTime === undefined) ? now : previous.lastSyncedTime,
    sourceRevision: failures.length === 0 ? revision : previous.sourceRevision,
    lastAttemptedRevision: revision,
    appliedTargets: applied,
    conditions,
    targets,
    inventory,
    history,
    lastHandledReconcileAt: object.metadata.annotations?.[RECONCILE_REQUESTED_ANNOTATION] ?? previous.lastHandledReconcileAt,
  };
  if (failures.length > 0) {
    log.info({ failures: failures.length }, 'sync finished with failures');
    const onlyForbidden = failures.every((f) => /forbidden/i.test(f));
    return {
      status,
      // Forbidden needs an RBAC change, not hammering: wait for the refresh interval.
      result: onlyForbidden ? { kind: 'wait', requeueAfterMs: refreshMs } : { kind: 'retry' },
      event: { type: 'Warning', reason: Reason.ApplyFailed, message: truncate(`${summary}, ${counts.failed} failed: ${failures.join('; ')}`) },
    };
  }
  if (changed || revisionChanged) log.info({ revision, ...counts }, 'synced');
  else log.debug({ revision }, 'no changes');
  return {
    status,
    result: { kind: 'done', requeueAfterMs: refreshMs },
    event: changed || revisionChanged ? { type: 'Normal', reason: 'Synced', message: `revision ${revision.slice(0, 12)}: ${summary}` } : undefined,
  };
}

function stalled(deps: ConfigSyncReconcilerDeps, object: ConfigSync, reason: Reason, message: string, refreshMs: number, revision?: string): Outcome {
  const status = stalledStatus(deps, object, reason, message, revision);
  // Re-check at the refresh interval (the source may change: a push, a fixed template), never in a hot loop.
  return { status, result: { kind: 'wait', requeueAfterMs: refreshMs }, event: { type: 'Warning', reason, message: truncate(message) } };
}

function stalledStatus(deps: ConfigSyncReconcilerDeps, object: ConfigSync, reason: Reason, message: string, revision?: string): ConfigSyncStatus {
  const previous = object.status ?? {};
  const at = { generation: object.metadata.generation, now: deps.clock.now().toISOString() };
  const short = truncate(message);
  let conditions: Condition[] = previous.conditions ?? [];
  conditions = removeCondition(conditions, 'Reconciling');
  conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason, message: short }, at);
  conditions = setCondition(conditions, { type: 'Stalled', status: 'True', reason, message: short }, at);
  if (reason === Reason.RenderFailed || reason === Reason.FetchFailed) {
    conditions = setCondition(conditions, { type: 'InvalidSource', status: 'True', reason, message: short }, at);
  }
  return { ...previous, observedGeneration: object.metadata.generation, conditions, ...(revision !== undefined ? { lastAttemptedRevision: revision } : {}) };
}

function failed(deps: ConfigSyncReconcilerDeps, object: ConfigSync, reason: Reason, message: string, result: ReconcileOutcome): Outcome {
  const previous = object.status ?? {};
  const at = { generation: object.metadata.generation, now: deps.clock.now().toISOString() };
  const short = truncate(message);
  let conditions: Condition[] = removeCondition(removeCondition(previous.conditions ?? [], 'Stalled'), 'InvalidSource');
  const input: ConditionInput = { type: 'Ready', status: 'False', reason, message: short };
  conditions = setCondition(conditions, input, at);
  conditions = setCondition(conditions, { ...input, type: 'Failed', status: 'True' }, at);
  return { status: { ...previous, observedGeneration: object.metadata.generation, conditions }, result, event: { type: 'Warning', reason, message: short } };
}

/** Deletion: prune everything this sync applied (deletionPolicy Delete) or leave it (Orphan), then let go. */
async function finalize(deps: ConfigSyncReconcilerDeps, object: ConfigSync, log: Logger): Promise<ReconcileOutcome> {
  if (!(object.metadata.finalizers ?? []).includes(FINALIZER)) return { kind: 'done' };
  const parsed = ConfigSyncSpec.safeParse(object.spec);
  const deletionPolicy = parsed.success ? parsed.data.deletionPolicy : 'Orphan';
  if (deletionPolicy === 'Delete') {
    const namespace = object.metadata.namespace ?? 'default';
    const spec = parsed.success ? parsed.data : undefined;
    const identity: ApplyIdentity = spec?.serviceAccountName !== undefined ? { namespace, serviceAccountName: spec.serviceAccountName } : deps.defaultServiceAccount !== undefined ? { namespace, serviceAccountName: deps.defaultServiceAccount } : undefined;
    const client = await deps.applyClient(identity);
    for (const { target, entries } of object.status?.inventory ?? []) {
      const inventory = decodeInventory(entries);
      if (inventory.length === 0) continue;
      const live = await readLive({ client, desired: [], inventory });
      const plan = planApply({ desired: [], inventory, live, owner: { namespace, name: object.metadata.name, target }, prune: true, allowEmpty: true });
      const changes = await executePlan(plan, { client });
      const failedEntries = changes.entries.filter((e) => e.action === 'failed');
      if (failedEntries.length > 0) {
        log.warn({ target, failed: failedEntries.length }, 'could not delete every object; retrying');
        return { kind: 'retry' };
      }
    }
  }
  await patchFinalizers(deps.rest, object, (object.metadata.finalizers ?? []).filter((f) => f !== FINALIZER));
  log.info({ deletionPolicy }, 'finalized');
  return { kind: 'done' };
}

async function patchFinalizers(rest: KubeRest, object: ConfigSync, finalizers: string[]): Promise<void> {
  await rest.request({
    method: 'PATCH',
    path: configSyncPath(object.metadata.namespace ?? 'default', object.metadata.name),
    contentType: 'application/merge-patch+json',
    // resourceVersion makes this an optimistic update: a concurrent change fails it and we retry fresh.
    body: { metadata: { finalizers, resourceVersion: object.metadata.resourceVersion } },
  });
}

/** Writes status only when it differs from what is stored: a no-op resync writes nothing. */
async function writeStatus(deps: ConfigSyncReconcilerDeps, object: ConfigSync, status: ConfigSyncStatus): Promise<boolean> {
  const clean = JSON.parse(JSON.stringify(status)) as ConfigSyncStatus;
  if (canonical(clean) === canonical(object.status ?? {})) return false;
  try {
    await deps.rest.request({
      method: 'PATCH',
      path: `${configSyncPath(object.metadata.namespace ?? 'default', object.metadata.name)}/status`,
      contentType: 'application/merge-patch+json',
      body: { status: { ...nullOut(object.status ?? {}, clean), ...clean } },
    });
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404) return false;
    throw error;
  }
  return true;
}

/** Merge patch deletes a field only when told to: null out what the new status no longer has. */
function nullOut(before: object, after: object): Record<string, null> {
  const out: Record<string, null> = {};
  for (const key of Object.keys(before)) if (!(key in after)) out[key] = null;
  return out;
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1))) : v,
  );
}

async function readGitAuth(rest: KubeRest, namespace: string, secretName: string | undefined): Promise<GitAuth | undefined> {
  if (secretName === undefined) return undefined;
  const secret = await readObject<{ data?: Record<string, string> }>(rest, `/api/v1/namespaces/${namespace}/secrets/${secretName}`);
  if (secret === undefined) throw new StallError(Reason.FetchFailed, `the Secret ${namespace}/${secretName} named in spec.source.git.secretRef does not exist`);
  try {
    return authFromSecretData(decodeData(secret.data));
  } catch (error) {
    throw new StallError(Reason.FetchFailed, `the Secret ${namespace}/${secretName}: ${safeError(error).message}`);
  }
}

async function readValues(rest: KubeRest, namespace: string, spec: ConfigSyncSpec): Promise<Values> {
  const layers: (Values | undefined)[] = [spec.values];
  for (const source of spec.valuesFrom ?? []) {
    const path = `/api/v1/namespaces/${namespace}/${source.kind === 'Secret' ? 'secrets' : 'configmaps'}/${source.name}`;
    const found = await readObject<{ data?: Record<string, string> }>(rest, path);
    const data = found === undefined ? undefined : source.kind === 'Secret' ? decodeData(found.data) : found.data;
    const text = data?.[source.key];
    const origin = `${source.kind} ${namespace}/${source.name} key ${source.key}`;
    if (text === undefined) {
      if (source.optional) continue;
      throw new StallError(Reason.RenderFailed, `valuesFrom: ${origin} does not exist`);
    }
    layers.push(parseValues(text, origin));
  }
  return layerValues(layers);
}

async function readObject<T>(rest: KubeRest, path: string): Promise<T | undefined> {
  try {
    return await rest.request<T>({ method: 'GET', path });
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404) return undefined;
    throw error;
  }
}

function decodeData(data: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

async function timed<T>(deps: ConfigSyncReconcilerDeps, operation: 'resolve' | 'fetch', run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await run();
  } finally {
    deps.metrics.gitDuration.observe({ operation }, (performance.now() - started) / 1000);
  }
}

function jittered(ms: number, random: () => number): number {
  return Math.round(ms * (0.9 + random() * 0.2));
}

function truncate(text: string, max = 1024): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Errors that may carry request details are reduced to their message; source-git and render redact theirs. */
export function safeError(error: unknown): { message: string; name?: string } {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { message: String(error) };
}

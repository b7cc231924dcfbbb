// The reconciler of one mirroring source (label-driven, Secrets and ConfigMaps): a thin shell around steps.
// Read the source → resolve its target namespaces → per namespace decide who may write the name, build the
// desired replica and apply it through the shared applyTarget (owner marks, guarded prune, drift) → clean up
// replicas that should no longer be (deleted through the same engine, or marked stale) → report.
// Reconciles from current state only: the same function handles create, update, delete and resync, and a
// second run writes nothing. A key `Kind/ns/name@target` reconciles one target namespace of the source.
import { type EventRecorder, type KubeRest } from '@syncline/kube';
import {
  DEFAULT_FIELD_MANAGER,
  OWNED_BY_ANNOTATION,
  appliedBy,
  encodeInventory,
  objectId,
  ownedBy,
  pool,
  withOwnership,
  type ApplyClient,
  type KubeObject,
  type Owner,
  type Policy,
} from '@syncline/apply';
import type { Logger } from 'pino';
import type { ReconcileOutcome } from '@syncline/runtime';
import type { Metrics } from '../metrics.ts';
import { applyTarget, truncate, type TargetOutcome } from '../reconcile/target.ts';
import { contentFingerprint, type MirrorCacheObject } from './cache.ts';
import { claimOf, decideReplicaWrite, type SourceClaim } from './conflicts.ts';
import type { NamePattern } from './glob.ts';
import { formatSourceRef, isMirrorSource, type MirrorKeys, type SourceRef } from './labels.ts';
import { DATA_FIELDS, makeReplica, replicaExtraKeys, replicaReplacementReason } from './copy.ts';
import { MirrorStrategy, type MirrorKind } from './spec.ts';
import type { StalePolicy } from './stale.ts';
import { planReplicaCleanup, type ReplicaAction, type SourceState } from './stale.ts';
import { MirrorState, notAcceptedRows, resolveSource, type MirrorRow } from './status.ts';
import type { TrustedNamespaces } from '../tenancy.ts';
import type { MirrorNamespace, TargetResolution } from './targets.ts';

/** The owner a replica's apply marks carry: the source (kind and name) and the target namespace. */
export function mirrorOwner(kind: string, source: SourceRef, targetNamespace: string): Owner {
  return { namespace: source.namespace, name: `Mirror:${kind}:${source.name}`, target: targetNamespace };
}

/** The queue key of a source (`Kind/ns/name`), optionally narrowed to one target namespace (`@target`). */
export function mirrorQueueKey(kind: string, source: SourceRef, only?: string): string {
  return `${kind}/${formatSourceRef(source)}${only === undefined ? '' : `@${only}`}`;
}

export function parseMirrorQueueKey(key: string): { kind: MirrorKind; source: SourceRef; only?: string } | undefined {
  const at = key.indexOf('@');
  const base = at === -1 ? key : key.slice(0, at);
  const [kind, namespace, name, ...rest] = base.split('/');
  if ((kind !== 'Secret' && kind !== 'ConfigMap') || namespace === undefined || name === undefined || rest.length > 0) return undefined;
  return { kind, source: { namespace, name }, ...(at === -1 ? {} : { only: key.slice(at + 1) }) };
}

const PLURAL: Record<MirrorKind, string> = { Secret: 'secrets', ConfigMap: 'configmaps' };

export type MirrorReconcilerDeps = {
  readonly rest: KubeRest;
  readonly client: () => Promise<ApplyClient>;
  readonly clock: { now(): Date };
  readonly logger: Logger;
  readonly metrics: Pick<Metrics, 'objectsApplied' | 'targetFailures'>;
  readonly events: EventRecorder;
  readonly keys: MirrorKeys;
  readonly sourceNamespaces: readonly NamePattern[];
  /** Trusted namespaces (tenancy.ts): their sources need no consent from the namespaces they target. */
  readonly trusted: TrustedNamespaces;
  readonly stalePolicy: StalePolicy;
  readonly staleTtlMs?: number | undefined;
  /** Target namespaces written at once per source. */
  readonly namespaceConcurrency: number;
  /** The source cache (label-selected, metadata only) once it listed; undefined before. */
  readonly sources: (kind: MirrorKind) => readonly MirrorCacheObject[] | undefined;
  /** This source's replicas as the replica cache knows them. */
  readonly replicasOf: (kind: MirrorKind, source: SourceRef, only?: string) => readonly MirrorCacheObject[];
  /** Namespaces as the namespace watch knows them; undefined before it listed. */
  readonly namespaces: () => readonly MirrorNamespace[] | undefined;
  /** The fingerprint a replica will have once our write lands (its watch event then needs no reconcile). */
  readonly expect: (id: string, fingerprint: string) => void;
  /** The rows of a source (or of one of its namespaces) after a reconcile; undefined rows: the source is gone. */
  readonly report: (key: { kind: MirrorKind; source: SourceRef; only?: string }, rows: readonly MirrorRow[] | undefined) => void;
  /** True when `signature` differs from the last one noted under `key` (an Event once per change, not per resync). */
  readonly isNews: (key: string, signature: string) => boolean;
};

/** `group/Kind/namespace` of an object id: the unit readLive lists. */
const scopeOf = (id: string): string => id.slice(0, id.lastIndexOf('/'));

/** An ApplyClient whose reads of the given ids are answered from what this reconcile just read. */
function withKnownLive(base: ApplyClient, known: ReadonlyMap<string, KubeObject | undefined>): ApplyClient {
  const scopes = new Set([...known.keys()].map(scopeOf));
  return {
    discovery: (options) => base.discovery(options),
    list: async (scope, signal) => {
      const key = `${scope.group}/${scope.kind}/${scope.namespace}`;
      if (!scopes.has(key)) return base.list(scope, signal);
      return [...known].filter(([id, object]) => object !== undefined && scopeOf(id) === key).map(([, object]) => object as KubeObject);
    },
    get: (id, signal) => base.get(id, signal),
    apply: (object, options) => base.apply(object, options),
    jsonPatch: (id, operations, options) => base.jsonPatch(id, operations, options),
    delete: (id, options) => base.delete(id, options),
    waitEstablished: (name, options) => base.waitEstablished(name, options),
  };
}

type Step = { row: MirrorRow; failed: boolean };

export function createMirrorReconciler(deps: MirrorReconcilerDeps): (key: string) => Promise<ReconcileOutcome> {
  return async (key) => {
    const parsed = parseMirrorQueueKey(key);
    if (parsed === undefined) return { kind: 'done' };
    const { kind, source: ref, only } = parsed;
    const sources = deps.sources(kind);
    const namespaces = deps.namespaces();
    // Nothing is decided before both caches listed (and are heard from): an empty source cache would clean up every replica.
    if (sources === undefined || namespaces === undefined) return { kind: 'wait', requeueAfterMs: 1000 };
    const log = deps.logger.child({ mirror: key });
    const client = await deps.client();
    const sourceText = formatSourceRef(ref);
    const cached = sources.find((s) => s.metadata.namespace === ref.namespace && s.metadata.name === ref.name);

    // Step 1: the source, read fresh (its data is never cached).
    let state: SourceState | undefined;
    let source: KubeObject | undefined;
    let strategy: string = MirrorStrategy.Override;
    if (cached !== undefined) {
      source = await client.get(objectId({ apiVersion: 'v1', kind, metadata: { namespace: ref.namespace, name: ref.name } }));
      // Gone or un-labelled since the cache saw it: its watch event follows and decides.
      if (source === undefined || !isMirrorSource(source, deps.keys)) return { kind: 'done' };
      const resolved = resolveSource({ source, namespaces, keys: deps.keys, sourceNamespaces: deps.sourceNamespaces, trusted: deps.trusted });
      if ('invalid' in resolved) {
        // A typo must not wipe the replicas: they stay as they are until the spec is fixed.
        const row: MirrorRow = { kind, source: sourceText, namespace: '', state: MirrorState.Invalid, message: resolved.invalid };
        deps.report({ kind, source: ref }, [row]);
        if (deps.isNews(`${kind}/${sourceText}#invalid`, resolved.invalid)) {
          log.warn({ reason: resolved.invalid }, 'mirroring source is invalid');
          await deps.events.record(source, { type: 'Warning', reason: 'InvalidSpec', message: truncate(resolved.invalid) });
        }
        return { kind: 'stalled' };
      }
      deps.isNews(`${kind}/${sourceText}#invalid`, '');
      state = { kind: 'active', resolution: resolved.resolution };
      strategy = resolved.strategy;
    }

    // Step 2: write the replicas of the targeted namespaces.
    const steps: Step[] = [];
    if (state?.kind === 'active' && source !== undefined && state.resolution.sourceAllowed) {
      const claimants = claimantsOf({ kind, ref, sources, namespaces, deps });
      const targets = state.resolution.namespaces.filter((ns) => only === undefined || ns === only);
      const live = source;
      steps.push(
        ...(await pool(targets, deps.namespaceConcurrency, (namespace) =>
          writeReplica({ deps, client, kind, source: live, ref, namespace, strategy, claimants: claimants(namespace), log }),
        )),
      );
    }

    // Step 3: replicas that should no longer be, or no longer be stale.
    const replicas = deps.replicasOf(kind, ref, only);
    const plan = planReplicaCleanup({
      replicas,
      sources: state === undefined ? new Map() : new Map([[sourceText, state]]),
      now: deps.clock.now(),
      policy: deps.stalePolicy,
      staleTtlMs: deps.staleTtlMs,
      keys: deps.keys,
    });
    const cleanup = await pool(plan.actions, deps.namespaceConcurrency, (action) => cleanUp({ deps, client, kind, action, log }));
    const failed = steps.some((s) => s.failed) || cleanup.some((ok) => !ok);

    // Step 4: report (rows, a conflict Event once per change, the conflicts gauge).
    if (state === undefined) {
      deps.report({ kind, source: ref, ...(only === undefined ? {} : { only }) }, undefined);
    } else {
      const rows =
        state.kind === 'active' && !state.resolution.sourceAllowed
          ? [
              {
                kind,
                source: sourceText,
                namespace: '',
                state: MirrorState.NotAllowed,
                message: `namespace ${ref.namespace} may not hold mirroring sources (--mirror-source-namespaces)`,
              },
            ]
          : [
              ...steps.map((s) => s.row),
              ...(state.kind === 'active'
                ? notAcceptedRows(kind, sourceText, state.resolution, deps.keys).filter((r) => only === undefined || r.namespace === only)
                : []),
            ];
      deps.report({ kind, source: ref, ...(only === undefined ? {} : { only }) }, rows);
    }
    if (failed) return { kind: 'retry' };
    return plan.requeueAfterMs === undefined ? { kind: 'done' } : { kind: 'wait', requeueAfterMs: plan.requeueAfterMs };
  };
}

/** Other sources of the same kind and name that target a namespace (for "the first wins, stably"). */
function claimantsOf(input: {
  kind: MirrorKind;
  ref: SourceRef;
  sources: readonly MirrorCacheObject[];
  namespaces: readonly MirrorNamespace[];
  deps: MirrorReconcilerDeps;
}): (namespace: string) => SourceClaim[] {
  const others: { claim: SourceClaim; resolution: TargetResolution }[] = [];
  for (const other of input.sources) {
    if (other.metadata.name !== input.ref.name || other.metadata.namespace === input.ref.namespace) continue;
    const resolved = resolveSource({
      source: other,
      namespaces: input.namespaces,
      keys: input.deps.keys,
      sourceNamespaces: input.deps.sourceNamespaces,
      trusted: input.deps.trusted,
    });
    if ('invalid' in resolved || !resolved.resolution.sourceAllowed) continue;
    others.push({ claim: claimOf(other), resolution: resolved.resolution });
  }
  return (namespace) => others.filter((o) => o.resolution.namespaces.includes(namespace)).map((o) => o.claim);
}

async function writeReplica(input: {
  deps: MirrorReconcilerDeps;
  client: ApplyClient;
  kind: MirrorKind;
  source: KubeObject;
  ref: SourceRef;
  namespace: string;
  strategy: string;
  claimants: readonly SourceClaim[];
  log: Logger;
}): Promise<Step> {
  const { deps, client, kind, source, ref, namespace, log } = input;
  const sourceText = formatSourceRef(ref);
  const row = (state: MirrorState, message?: string): MirrorRow => ({
    kind,
    source: sourceText,
    namespace,
    state,
    ...(message === undefined ? {} : { message }),
  });
  const id = objectId({ apiVersion: 'v1', kind, metadata: { namespace, name: ref.name } });
  const owner = mirrorOwner(kind, ref, namespace);
  try {
    let live = await client.get(id);
    const decision = decideReplicaWrite({ source: claimOf(source), claimants: input.claimants, existing: live, keys: deps.keys });
    if (decision.action === 'skip') {
      const message =
        decision.reason === 'Foreign'
          ? `${kind} ${namespace}/${ref.name} exists and is not a replica of ${sourceText}: left alone`
          : `${kind} ${namespace}/${ref.name} is held by ${decision.holder ?? 'another source'} (it came first)`;
      return { row: row(MirrorState.Conflict, message), failed: false };
    }
    const ours = decision.action === 'update' && !decision.takeover ? live : undefined;
    const desired = makeReplica({
      source,
      targetNamespace: namespace,
      keys: deps.keys,
      strategy: input.strategy === MirrorStrategy.Patch ? MirrorStrategy.Patch : MirrorStrategy.Override,
      existingReplica: ours,
    });

    // An update the API server would refuse (immutable data, Secret type) or another source's leftover replica:
    // delete exactly the object we looked at, then create.
    const replace =
      live === undefined
        ? undefined
        : decision.action === 'update' && decision.takeover
          ? 'it is the replica of a source that no longer claims it'
          : replicaReplacementReason(live, desired);
    // Deleting asks for proof, not marks: the replica labels and the source annotation are copied along by
    // `kubectl get -o yaml`, so only an object our own apply is on may be deleted to make room.
    if (live !== undefined && replace !== undefined && !appliedBy(live, DEFAULT_FIELD_MANAGER)) {
      const message = `${kind} ${namespace}/${ref.name} carries replica marks, but Syncline never applied it (no server-side apply by field manager "${DEFAULT_FIELD_MANAGER}"), and writing it would mean deleting it (${replace}): left alone`;
      return { row: row(MirrorState.Conflict, message), failed: false };
    }
    if (live !== undefined && replace !== undefined) {
      await client.delete(id, { apiVersion: 'v1', ...(live.metadata.uid === undefined ? {} : { uid: live.metadata.uid }) });
      log.info({ namespace, reason: replace }, 'replacing the replica');
      live = undefined;
    }

    const marked = live?.metadata.annotations?.[OWNED_BY_ANNOTATION];
    const apply = (object: KubeObject, current: KubeObject | undefined): Promise<TargetOutcome> =>
      applyTarget({
        client: withKnownLive(client, new Map([[id, current]])),
        target: { name: namespace, namespace },
        desired: [object],
        // A replica has no recorded inventory: ours when it carries our mark and our own apply (a copy carrying
        // the mark alone is not ours, see @syncline/apply's provenOwnership).
        inventory:
          current !== undefined && current.metadata.annotations?.[OWNED_BY_ANNOTATION] === ownedBy(owner) && appliedBy(current, DEFAULT_FIELD_MANAGER)
            ? encodeInventory([{ id }])
            : [],
        owner,
        // A replica of this source without our owner mark (written before the marks, or by another tool under
        // the same prefix) is taken over; anything else that is not marked ours stays a conflict.
        policy: (current !== undefined && marked === undefined ? 'Adopt' : 'Sync') satisfies Policy,
        drift: 'Correct',
        prune: true,
        allowEmpty: true,
        now: deps.clock.now().toISOString(),
        metrics: deps.metrics,
        syncKey: mirrorQueueKey(kind, ref),
      });

    // Override: keys added by hand are not ours, so a server-side apply leaves them. Take them over first (a
    // forced apply with a value differs from theirs), then apply without them: the API server removes fields
    // only their last owner drops.
    const extra = live !== undefined && input.strategy !== MirrorStrategy.Patch ? replicaExtraKeys(live, desired) : [];
    if (live !== undefined && extra.length > 0) {
      const claimed = withExtraKeys(desired, live, extra);
      const first = await apply(claimed, live);
      if (first.failures.length > 0 || first.conflicts.length > 0) return outcomeStep(first, row);
      live = await client.get(id);
      log.info({ namespace, keys: extra.length }, 'removing keys the source does not have');
    }
    deps.expect(id, contentFingerprint(withOwnership(desired, owner)));
    const outcome = await apply(desired, live);
    if (outcome.changed) log.debug({ namespace }, 'replica written');
    return outcomeStep(outcome, row);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    log.warn({ namespace, err: message }, 'could not write the replica');
    return { row: row(MirrorState.Failed, truncate(message)), failed: true };
  }
}

function outcomeStep(outcome: TargetOutcome, row: (state: MirrorState, message?: string) => MirrorRow): Step {
  if (outcome.failures.length > 0) return { row: row(MirrorState.Failed, truncate(outcome.failures.join('; '))), failed: true };
  if (outcome.conflicts.length > 0) return { row: row(MirrorState.Conflict, truncate(outcome.conflicts.join('; '))), failed: false };
  return { row: row(MirrorState.Synced), failed: false };
}

/** `desired` plus the live replica's extra keys, each with a value that differs from the live one. */
function withExtraKeys(desired: KubeObject, live: KubeObject, extra: readonly string[]): KubeObject {
  const claimed: KubeObject = structuredClone(desired);
  for (const field of DATA_FIELDS[desired.kind] ?? []) {
    const liveMap = live[field] as Record<string, string> | undefined;
    for (const key of extra) {
      if (liveMap?.[key] === undefined) continue;
      const map = (claimed[field] as Record<string, string> | undefined) ?? {};
      // '' is valid in data, binaryData and a ConfigMap alike; when the hand-written value is '' itself, 'AA=='.
      map[key] = liveMap[key] === '' ? 'AA==' : '';
      claimed[field] = map;
    }
  }
  return claimed;
}

/** Executes one cleanup action; false when it failed (retried with backoff). */
async function cleanUp(input: { deps: MirrorReconcilerDeps; client: ApplyClient; kind: MirrorKind; action: ReplicaAction; log: Logger }): Promise<boolean> {
  const { deps, client, kind, action, log } = input;
  const id = objectId({ apiVersion: 'v1', kind, metadata: { namespace: action.namespace, name: action.name } });
  try {
    switch (action.type) {
      case 'delete': {
        // Through the engine's guarded prune: deleted only while it carries this source's owner mark and our own
        // apply (uid precondition); an object labelled as a replica without both is left and reported.
        const sourceRef = { namespace: action.source.split('/')[0] ?? '', name: action.source.split('/')[1] ?? '' };
        const live = await client.get(id);
        const outcome = await applyTarget({
          client: withKnownLive(client, new Map([[id, live]])),
          target: { name: action.namespace, namespace: action.namespace },
          desired: [],
          // No recorded inventory: the id is offered only when our apply is on it (the engine checks the mark).
          inventory: live === undefined || appliedBy(live, DEFAULT_FIELD_MANAGER) ? encodeInventory([{ id }]) : [],
          owner: mirrorOwner(kind, sourceRef, action.namespace),
          prune: true,
          allowEmpty: true,
          now: deps.clock.now().toISOString(),
          metrics: deps.metrics,
          syncKey: mirrorQueueKey(kind, sourceRef),
        });
        if (outcome.failures.length > 0) {
          log.warn({ namespace: action.namespace, err: outcome.failures.join('; ') }, 'could not delete the replica');
          return false;
        }
        if (outcome.counts.deleted > 0 && live !== undefined) log.info({ namespace: action.namespace, reason: action.reason }, 'replica deleted');
        else if (live !== undefined) log.debug({ namespace: action.namespace }, 'replica not deleted: it does not carry our owner mark and our own apply');
        return true;
      }
      case 'mark-stale':
      case 'unmark-stale': {
        // Only a replica our own apply is on is ours to mark: the replica labels alone are copied along with
        // `kubectl get -o yaml`, and an object someone made that way is not written.
        const live = await client.get(id);
        if (live === undefined) return true;
        if (!appliedBy(live, DEFAULT_FIELD_MANAGER)) {
          log.debug({ namespace: action.namespace }, `replica not ${action.type === 'mark-stale' ? 'marked' : 'unmarked'}: it does not carry our own apply`);
          return true;
        }
        // A metadata-only merge patch: the source is gone, so there is no desired replica to apply.
        await deps.rest.request({
          method: 'PATCH',
          path: `/api/v1/namespaces/${action.namespace}/${PLURAL[kind]}/${action.name}`,
          query: { fieldManager: 'syncline' },
          contentType: 'application/merge-patch+json',
          body: action.patch,
        });
        log.info({ namespace: action.namespace }, action.type === 'mark-stale' ? 'replica marked stale' : 'replica no longer stale');
        return true;
      }
    }
  } catch (error) {
    if ((error as { status?: number }).status === 404) return true;
    log.warn({ namespace: action.namespace, err: error instanceof Error ? error.message : String(error) }, `could not ${action.type} the replica`);
    return false;
  }
}

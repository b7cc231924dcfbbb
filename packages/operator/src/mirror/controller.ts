// The label-driven mirroring controller: label-selected watches of sources and replicas (Secrets and
// ConfigMaps, never the unrelated ones), a metadata-only Namespace watch, and its lane of the controller
// manager's queue (keys: sources), which only the leader works. Mirroring is cluster-wide by nature:
// `--namespace` scopes the CR watches only. /readyz fails while any of these watches is down (reflector's
// silent stop is the failure to beat).
import { Informer, type WatchBudget, type KubeObject as InformerObject, type EventRecorder, type KubeRest } from '@syncline/kube';
import type { ApplyClient } from '@syncline/apply';
import type { Logger } from 'pino';
import type { ControllerDeclaration, ControllerQueue, ControllerRegistry } from '@syncline/runtime';
import type { Metrics } from '../metrics.ts';
import { truncate } from '@syncline/runtime';
import { projectMirrorObject, type MirrorCacheObject } from './cache.ts';
import type { NamePattern } from './glob.ts';
import { formatSourceRef, parseSourceRef, replicaSelector, sourceSelector, type MirrorKeys, type SourceRef } from './labels.ts';
import { createMirrorReconciler, mirrorQueueKey, parseMirrorQueueKey } from './reconciler.ts';
import { MirrorKind } from './spec.ts';
import type { StalePolicy } from './stale.ts';
import { MirrorState, compareRows, resolveSource, type MirrorRow } from './status.ts';
import { mirrorNamespaces, namespaceProjection, type MirrorNamespace } from './targets.ts';
import type { TrustedNamespaces } from '../tenancy.ts';

export type MirrorControllerOptions = {
  readonly rest: KubeRest;
  /** The operator's own apply client (mirroring writes with the operator's identity). */
  readonly applyClient: () => Promise<ApplyClient>;
  readonly clock: { now(): Date };
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly events: EventRecorder;
  readonly keys: MirrorKeys;
  /** `--mirror-source-namespaces`: empty = every namespace may hold sources. */
  readonly sourceNamespaces: readonly NamePattern[];
  /** Trusted namespaces (tenancy.ts): their sources need no consent from the namespaces they target. */
  readonly trusted: TrustedNamespaces;
  readonly staleMode: StalePolicy;
  readonly staleTtlMs?: number | undefined;
  /** Enqueue every source this often (a missed event is repaired within it at worst). */
  readonly resyncMs: number;
  /** The process's watch budget, which mirroring's watches count against too. */
  readonly watchBudget?: WatchBudget;
  /** Sources reconciled at once (default 4). */
  readonly concurrency?: number;
  /** Target namespaces written at once per source (default 16, the apply engine's own). */
  readonly namespaceConcurrency?: number;
};

export type MirrorController = ControllerDeclaration<string> & {
  /** Every mirroring watch listed and alive. */
  readonly ready: () => boolean;
  /** Sources → replicas with their state, as this process last saw them (`syncline status --mirrors` reads the cluster). */
  mirrors(): MirrorRow[];
};

/** The controller name of mirroring (queue metrics, logs, liveness). */
export const MIRROR_CONTROLLER = 'mirror';

const KINDS = [MirrorKind.Secret, MirrorKind.ConfigMap] as const;
const PLURAL = { Secret: 'secrets', ConfigMap: 'configmaps' } as const;

/** Registers mirroring on the controller manager: its own lane (default 4 sources at once), started and led by it. */
export function registerMirrorController(controllers: ControllerRegistry, options: MirrorControllerOptions): MirrorController {
  return controllers.register(MIRROR_CONTROLLER, { concurrency: options.concurrency ?? 4 }, (queue) => mirrorController(queue, options));
}

function mirrorController(queue: ControllerQueue<string>, options: MirrorControllerOptions): MirrorController {
  const { rest, logger, keys } = options;
  const budget = options.watchBudget === undefined ? {} : { budget: options.watchBudget };
  const log = logger.child({ controller: MIRROR_CONTROLLER });
  const conflictsGauge = options.metrics.mirrorConflicts;

  const echoes = echoTracker();
  const rows = new Map<string, Map<string, MirrorRow>>(); // source key → target namespace ('' = the source) → row
  const noted = new Map<string, string>();
  const isNews = (key: string, signature: string): boolean => {
    if ((noted.get(key) ?? '') === signature) return false;
    if (signature === '') noted.delete(key);
    else noted.set(key, signature);
    return true;
  };

  const sourceInformers = new Map<MirrorKind, Informer>();
  const replicaInformers = new Map<MirrorKind, Informer>();
  for (const kind of KINDS) {
    const project = (object: InformerObject): InformerObject => projectMirrorObject({ ...object, apiVersion: object.apiVersion ?? 'v1', kind }, keys);
    sourceInformers.set(
      kind,
      new Informer({
        ...budget,
        rest,
        path: `/api/v1/${PLURAL[kind]}`,
        labelSelector: sourceSelector(keys),
        project,
        onEvent: (_type, object) => queue.add(mirrorQueueKey(kind, refOf(object))),
        onError: (error) => log.warn({ err: errorMessage(error), kind }, 'mirroring source watch failed; restarting'),
      }),
    );
    const replicas: Informer = new Informer({
      ...budget,
      rest,
      path: `/api/v1/${PLURAL[kind]}`,
      labelSelector: replicaSelector(keys),
      project,
      onEvent: (type, object) => {
        const source = parseSourceRef((object.metadata['annotations'] as Record<string, string> | undefined)?.[keys.source]);
        if (source === undefined) return;
        const id = `/${kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
        if (
          type !== 'DELETED' &&
          echoes.isEcho({ id, kind, source, namespace: object.metadata.namespace ?? '' }, (object as unknown as MirrorCacheObject).fingerprint)
        )
          return;
        // The first list: one reconcile per source (which sees all its replicas), not one per replica.
        queue.add(replicas.synced ? mirrorQueueKey(kind, source, object.metadata.namespace) : mirrorQueueKey(kind, source));
      },
      onError: (error) => log.warn({ err: errorMessage(error), kind }, 'mirroring replica watch failed; restarting'),
    });
    replicaInformers.set(kind, replicas);
  }

  const namespaceInformer = new Informer({
    ...budget,
    rest,
    path: '/api/v1/namespaces',
    project: namespaceProjection,
    onEvent: (type, object, previous) => {
      if (!namespaceInformer.synced || type === 'DELETED') return; // the first list: every source is reconciled anyway
      const name = object.metadata.name;
      if (
        type === 'MODIFIED' &&
        JSON.stringify(previous?.metadata['labels']) === JSON.stringify(object.metadata['labels']) &&
        previous?.metadata['deletionTimestamp'] === object.metadata['deletionTimestamp']
      )
        return;
      // Only the sources this namespace now matches, or that have a replica in it.
      for (const key of sourcesTouching(name, {
        namespaces: namespaceList() ?? [],
        sources: sourceList,
        replicas: (kind) => replicaInformers.get(kind)?.list() ?? [],
        keys,
        sourceNamespaces: options.sourceNamespaces,
        trusted: options.trusted,
      }))
        queue.add(key);
    },
    onError: (error) => log.warn({ err: errorMessage(error) }, 'mirroring namespace watch failed; restarting'),
  });
  const namespaceList = (): MirrorNamespace[] | undefined => (namespaceInformer.synced ? mirrorNamespaces(namespaceInformer.list()) : undefined);
  const sourceList = (kind: MirrorKind): MirrorCacheObject[] | undefined => {
    const informer = sourceInformers.get(kind);
    return informer?.synced === true ? (informer.list() as unknown as MirrorCacheObject[]) : undefined;
  };
  const allInformers = [...sourceInformers.values(), ...replicaInformers.values(), namespaceInformer];
  // A reconcile decides from these caches (which namespaces a source targets, which replicas to clean up) only
  // while their watches are heard from: one gone silent (a dropped stream) is restarted, and the reconcile waits
  // for it. Reopened, a watch is heard from at once, and what changed meanwhile arrives as events.
  const fresh = (...informers: (Informer | undefined)[]): boolean => informers.map((informer) => informer?.freshOrRestart() === true).every(Boolean);

  const report = conflictReporter({
    rows,
    isNews,
    gauge: conflictsGauge,
    log,
    events: options.events,
    source: (kind, key) => sourceInformers.get(kind)?.get(key),
  });

  const reconcile = createMirrorReconciler({
    rest,
    client: options.applyClient,
    clock: options.clock,
    logger: log,
    metrics: options.metrics,
    events: options.events,
    keys,
    sourceNamespaces: options.sourceNamespaces,
    trusted: options.trusted,
    stalePolicy: options.staleMode,
    staleTtlMs: options.staleTtlMs,
    namespaceConcurrency: options.namespaceConcurrency ?? 16,
    sources: (kind) => (fresh(sourceInformers.get(kind), replicaInformers.get(kind)) ? sourceList(kind) : undefined),
    replicasOf: (kind, source, only) => {
      const text = formatSourceRef(source);
      const informer = replicaInformers.get(kind);
      const candidates = only === undefined ? (informer?.list() ?? []) : [informer?.get(`${only}/${source.name}`)].filter((r) => r !== undefined);
      return (candidates as unknown as MirrorCacheObject[]).filter((r) => r.metadata.annotations?.[keys.source] === text);
    },
    namespaces: () => (fresh(namespaceInformer) ? namespaceList() : undefined),
    expect: echoes.expect,
    report,
    isNews,
  });

  /** Every source, and the source of every replica (a replica whose source is gone is cleaned up through its key). */
  const allKeys = (): string[] => {
    const out: string[] = [];
    for (const kind of KINDS) {
      for (const source of sourceInformers.get(kind)?.list() ?? []) out.push(mirrorQueueKey(kind, refOf(source)));
      for (const replica of replicaInformers.get(kind)?.list() ?? []) {
        const source = parseSourceRef((replica.metadata['annotations'] as Record<string, string> | undefined)?.[keys.source]);
        if (source !== undefined) out.push(mirrorQueueKey(kind, source));
      }
    }
    return out;
  };

  return {
    caches: allInformers,
    keys: allKeys,
    resyncKeys: allKeys,
    resyncMs: options.resyncMs,
    reconcile: (key) => {
      echoes.started(key);
      return reconcile(key);
    },
    ready: () => allInformers.every((i) => i.synced && i.healthy),
    mirrors: () => mirrorRows(rows, (kind) => (replicaInformers.get(kind)?.list() ?? []) as unknown as MirrorCacheObject[], keys),
  };
}

/**
 * Our own writes' watch events. `expect`: the fingerprint a replica will have once our write lands, and how many
 * runs had started then. A run that started later and covers the replica's namespace (all of its source's
 * namespaces, or that one) could not have seen the replica in the cache (to clean it up, say, when its namespace
 * stopped matching meanwhile): its event is then not taken for an echo.
 */
function echoTracker(): {
  expect: (id: string, fingerprint: string) => void;
  started: (queueKey: string) => void;
  isEcho: (replica: { id: string; kind: MirrorKind; source: SourceRef; namespace: string }, fingerprint: string) => boolean;
} {
  const expected = new Map<string, { fingerprint: string; at: number }>();
  let runsStarted = 0;
  /** The count of runs started when the latest run began, by `kind|source` (every namespace) or `kind|source|namespace`. */
  const runAt = new Map<string, number>();
  return {
    expect: (id, fingerprint) => {
      expected.set(id, { fingerprint, at: runsStarted });
    },
    started: (queueKey) => {
      const parsed = parseMirrorQueueKey(queueKey);
      if (parsed !== undefined)
        runAt.set(`${parsed.kind}|${formatSourceRef(parsed.source)}${parsed.only === undefined ? '' : `|${parsed.only}`}`, ++runsStarted);
    },
    isEcho: (replica, fingerprint) => {
      const tag = `${replica.kind}|${formatSourceRef(replica.source)}`;
      return isOwnEcho(expected.get(replica.id), fingerprint, Math.max(runAt.get(tag) ?? 0, runAt.get(`${tag}|${replica.namespace}`) ?? 0));
    },
  };
}

/**
 * Whether a replica's watch event is only the echo of our own write (`ours`: what that write will look like, and
 * how many runs had started when it was planned): same content, and no run covering the replica has started
 * since (`laterRun`: the count when the latest such run began). A later run read the cache without this replica,
 * so its event still wakes the source.
 */
export function isOwnEcho(ours: { fingerprint: string; at: number } | undefined, fingerprint: string, laterRun: number): boolean {
  return ours !== undefined && ours.fingerprint === fingerprint && laterRun <= ours.at;
}

/**
 * Keeps the rows of one source's replicas (the UI's mirror map and `mirrors()`), the conflict gauge, and one
 * Warning Event on the source per new set of conflicts (not on every reconcile that finds the same ones).
 */
function conflictReporter(deps: {
  readonly rows: Map<string, Map<string, MirrorRow>>;
  readonly isNews: (key: string, signature: string) => boolean;
  readonly gauge: MirrorControllerOptions['metrics']['mirrorConflicts'];
  readonly log: MirrorControllerOptions['logger'];
  readonly events: MirrorControllerOptions['events'];
  readonly source: (kind: MirrorKind, key: string) => InformerObject | undefined;
}): (key: { kind: MirrorKind; source: SourceRef; only?: string }, next: readonly MirrorRow[] | undefined) => void {
  return (key, next) => {
    const sourceKey = mirrorQueueKey(key.kind, key.source);
    if (next === undefined) {
      deps.rows.delete(sourceKey);
      deps.gauge.remove({ kind: key.kind, namespace: key.source.namespace, name: key.source.name });
      deps.isNews(`${sourceKey}#conflicts`, '');
      return;
    }
    let byNamespace = deps.rows.get(sourceKey);
    if (byNamespace === undefined || key.only === undefined) {
      byNamespace = new Map();
      deps.rows.set(sourceKey, byNamespace);
    }
    if (key.only !== undefined) byNamespace.delete(key.only);
    for (const row of next) byNamespace.set(row.namespace, row);
    const conflicts = [...byNamespace.values()].filter((r) => r.state === MirrorState.Conflict).sort(compareRows);
    deps.gauge.set({ kind: key.kind, namespace: key.source.namespace, name: key.source.name }, conflicts.length);
    const signature = conflicts.map((r) => `${r.namespace}: ${r.message ?? ''}`).join('\n');
    if (!deps.isNews(`${sourceKey}#conflicts`, signature) || conflicts.length === 0) return;
    const source = deps.source(key.kind, `${key.source.namespace}/${key.source.name}`);
    if (source === undefined) return;
    const message = truncate(
      `${conflicts.length} replica(s) not written, another object holds the name: ${conflicts.map((r) => r.message ?? r.namespace).join('; ')}`,
    );
    deps.log.warn({ source: sourceKey, conflicts: conflicts.length }, 'mirroring conflict');
    void deps.events.record(
      {
        apiVersion: 'v1',
        kind: key.kind,
        metadata: { name: source.metadata.name, namespace: source.metadata.namespace ?? '', uid: source.metadata['uid'] as string | undefined },
      },
      { type: 'Warning', reason: 'Conflict', message },
    );
  };
}

/** Every replica's row: those the reconciles reported, and the replicas left with no source (stale). */
function mirrorRows(
  rows: ReadonlyMap<string, ReadonlyMap<string, MirrorRow>>,
  replicasOf: (kind: MirrorKind) => MirrorCacheObject[],
  keys: MirrorControllerOptions['keys'],
): MirrorRow[] {
  const out = [...rows.values()].flatMap((m) => [...m.values()]);
  const listed = new Set(out.map((r) => `${r.kind}/${r.namespace}/${r.source.split('/')[1] ?? ''}`));
  for (const kind of KINDS) {
    for (const replica of replicasOf(kind)) {
      if (listed.has(`${kind}/${replica.metadata.namespace ?? ''}/${replica.metadata.name}`)) continue;
      const stale = replica.metadata.labels?.[keys.stale] === 'true';
      out.push({
        kind,
        source: replica.metadata.annotations?.[keys.source] ?? '?',
        namespace: replica.metadata.namespace ?? '',
        state: MirrorState.Stale,
        ...(stale ? { message: `source gone since ${replica.metadata.annotations?.[keys.staleSince] ?? '?'}` } : {}),
      });
    }
  }
  return out.sort(compareRows);
}

/** The queue keys of the sources a namespace's change concerns: those it now matches, and those with a replica in it. */
function sourcesTouching(
  name: string,
  deps: {
    readonly namespaces: MirrorNamespace[];
    readonly sources: (kind: MirrorKind) => MirrorCacheObject[] | undefined;
    readonly replicas: (kind: MirrorKind) => InformerObject[];
    readonly keys: MirrorControllerOptions['keys'];
    readonly sourceNamespaces: MirrorControllerOptions['sourceNamespaces'];
    readonly trusted: MirrorControllerOptions['trusted'];
  },
): string[] {
  const keys: string[] = [];
  for (const kind of KINDS) {
    const inNamespace = new Set(
      deps
        .replicas(kind)
        .filter((r) => r.metadata.namespace === name)
        .map((r) => (r.metadata['annotations'] as Record<string, string> | undefined)?.[deps.keys.source]),
    );
    for (const source of deps.sources(kind) ?? []) {
      const ref = refOf(source);
      const resolved = resolveSource({ source, namespaces: deps.namespaces, keys: deps.keys, sourceNamespaces: deps.sourceNamespaces, trusted: deps.trusted });
      if (inNamespace.has(formatSourceRef(ref)) || ('resolution' in resolved && resolved.resolution.namespaces.includes(name)))
        keys.push(mirrorQueueKey(kind, ref, name));
    }
  }
  return keys;
}

function refOf(object: { metadata: { name: string; namespace?: string } }): SourceRef {
  return { namespace: object.metadata.namespace ?? '', name: object.metadata.name };
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

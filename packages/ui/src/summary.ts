// What the web UI shows of a watched object: status and metadata only. Built field by field from an allow-list,
// so nothing the list does not name (spec.values, valuesFrom contents, credentials, a Secret's data) can reach a
// browser, and a repository URL loses any user:password part.
import type { KubeObject } from '@syncline/kube';
import type { WatchedKind } from '@syncline/operator/client';

import { UiState, type UiCondition, type UiObject } from './model.ts';

export { UiState, type UiObject };

type Loose = Record<string, unknown>;
const record = (value: unknown): Loose => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Loose) : {});
const list = (value: unknown): Loose[] => (Array.isArray(value) ? value.map(record) : []);
const text = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
const num = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);

/** A URL without its user and password (https://user:token@host/repo → https://host/repo). */
export function withoutCredentials(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1');
}

/** The four states the overview counts; Failed covers stalled and not-ready, Progressing a run in flight. */
export function stateOf(object: KubeObject, conditions: readonly UiCondition[]): UiState {
  if (record(object['spec'])['suspend'] === true) return UiState.Suspended;
  const ready = conditions.find((c) => c.type === 'Ready');
  const reconciling = conditions.find((c) => c.type === 'Reconciling')?.status === 'True';
  const generation = num(object.metadata['generation']);
  const observed = num(record(object['status'])['observedGeneration']);
  if (ready?.status === 'True') return generation !== undefined && observed !== undefined && observed < generation ? UiState.Progressing : UiState.Ready;
  if (ready?.status === 'False' && !reconciling) return UiState.Failed;
  return UiState.Progressing;
}

export function summarize(kind: WatchedKind, object: KubeObject): UiObject {
  const spec = record(object['spec']);
  const status = record(object['status']);
  const namespace = object.metadata.namespace ?? '';
  const conditions: UiCondition[] = list(status['conditions']).map((c) => ({
    type: text(c['type']) ?? '',
    status: text(c['status']) ?? 'Unknown',
    reason: text(c['reason']) ?? '',
    message: text(c['message']) ?? '',
    ...(text(c['lastTransitionTime']) === undefined ? {} : { lastTransitionTime: text(c['lastTransitionTime']) }),
  }));
  const state = stateOf(object, conditions);
  const ready = conditions.find((c) => c.type === 'Ready');
  const base: UiObject = {
    key: `${kind}/${namespace}/${object.metadata.name}`,
    kind,
    namespace,
    name: object.metadata.name,
    state,
    summary: state === UiState.Suspended ? 'suspended (spec.suspend: true)' : (ready?.message ?? 'no status yet'),
    ...(object.metadata.labels === undefined ? {} : { labels: { ...object.metadata.labels } }),
    ...(text(object.metadata['creationTimestamp']) === undefined ? {} : { createdAt: text(object.metadata['creationTimestamp']) }),
    ...(num(object.metadata['generation']) === undefined ? {} : { generation: num(object.metadata['generation']) }),
    ...(num(status['observedGeneration']) === undefined ? {} : { observedGeneration: num(status['observedGeneration']) }),
    suspended: spec['suspend'] === true,
    drifted: conditions.some((c) => c.type === 'Synced' && c.status === 'False' && c.reason === 'DriftDetected'),
    conditions,
    source: {},
    targets: [],
    history: [],
    facts: {},
  };
  const parts =
    kind === 'ConfigSync'
      ? configSyncParts(spec, status)
      : kind === 'ManifestSync'
        ? manifestSyncParts(spec, status)
        : kind === 'NamespaceReplication'
          ? replicationParts(spec, status, namespace)
          : remoteClusterParts(status, conditions);
  const summary = { ...base, ...parts };
  const attention = attentionOf(summary);
  return attention === undefined ? summary : { ...summary, attention };
}

const CONDITION_NEWS: Record<string, string> = { Stalled: 'stalled', Fenced: 'fenced', PruneHeld: 'deletion held' };

/** Why a person should look, or undefined: failed or stalled, a drift left alone, a copy or target that failed (a conflict names the holder), a held deletion, a fenced standby. */
export function attentionOf(o: Pick<UiObject, 'kind' | 'state' | 'summary' | 'drifted' | 'conditions' | 'targets'>): string | undefined {
  if (o.state === UiState.Suspended) return undefined;
  for (const c of o.conditions) {
    const news = CONDITION_NEWS[c.type];
    if (news !== undefined && c.status === 'True') return `${news}: ${c.message}`;
  }
  if (o.state === UiState.Failed) return o.kind === 'RemoteCluster' ? `unreachable: ${o.summary}` : o.summary;
  if (o.drifted) {
    const message = o.conditions.find((c) => c.type === 'Synced')?.message ?? '';
    return message.startsWith('drifted') ? message : `drifted: ${message}`;
  }
  if (o.kind === 'NamespaceReplication') return undefined;
  const failed = o.targets.find((t) => t.phase === 'Failed');
  if (failed !== undefined)
    return `${o.kind === 'ManifestSync' ? 'copy' : 'target'} ${failed.cluster === undefined ? '' : `${failed.cluster}/`}${failed.namespace ?? failed.name}: ${failed.message ?? failed.reason ?? 'failed'}`;
  return undefined;
}

/**
 * A target's HEALTH cell from status.targets[].health's counts, in Argo CD's words: Degraded when one failed,
 * else Progressing, else Unknown, else Healthy; with how many of the applied objects are so.
 */
export function healthText(health: Loose): string | undefined {
  const count = (key: string): number => num(health[key]) ?? 0;
  const total = count('healthy') + count('progressing') + count('failed') + count('unknown');
  if (Object.keys(health).length === 0) return undefined;
  if (count('failed') > 0) return `Degraded (${count('failed')} of ${total} failed)`;
  if (count('progressing') > 0) return `Progressing (${count('progressing')} of ${total})`;
  if (count('unknown') > 0) return `Unknown (${count('unknown')} of ${total} not read)`;
  return `Healthy (${count('healthy')} of ${total})`;
}

function configSyncParts(spec: Loose, status: Loose): Pick<UiObject, 'source' | 'targets' | 'history' | 'facts'> {
  const git = record(record(spec['source'])['git']);
  const statusTargets = list(status['targets']);
  const targets = list(spec['targets']).map((t) => {
    const name = text(t['name']) ?? '';
    const live = statusTargets.find((s) => s['name'] === name) ?? {};
    const health = record(live['health']);
    return compact({
      name,
      cluster: text(record(t['cluster'])['name']),
      namespace: text(t['namespace']) ?? text(live['namespace']),
      phase: text(live['phase']),
      objects: num(live['objects']),
      message: text(live['message']),
      health: healthText(health),
    });
  });
  return {
    source: compact({
      repo: withoutCredentials(text(git['repo']) ?? ''),
      ref: text(git['revision']),
      path: text(git['path']),
      followedRef: text(status['followedRef']),
      revision: text(status['sourceRevision']),
      lastAttemptedRevision: text(status['lastAttemptedRevision']),
    }),
    targets,
    history: list(status['history']).map((h) =>
      compact({ revision: text(h['revision']) ?? '', appliedAt: text(h['appliedAt']), objects: num(h['objects']), digest: text(h['digest']) }),
    ),
    facts: compact({ lastSyncedTime: text(status['lastSyncedTime']), appliedTargets: text(status['appliedTargets']) }),
  };
}

function manifestSyncParts(spec: Loose, status: Loose): Pick<UiObject, 'source' | 'targets' | 'facts'> {
  const ref = record(spec['sourceRef']);
  return {
    source: compact({ apiVersion: text(ref['apiVersion']), kind: text(ref['kind']), namespace: text(ref['namespace']), name: text(ref['name']) }),
    // The map of copies: where each went (namespace, cluster), whether it is current, and why not (a conflict
    // names the object that holds the name).
    targets: list(status['targets']).map((t) =>
      compact({
        name: text(t['name']) ?? text(t['namespace']) ?? '',
        cluster: text(t['cluster']),
        namespace: text(t['namespace']),
        phase: text(t['phase']),
        objects: num(t['objects']),
        message: text(t['message']),
        reason: text(t['reason']),
        lastSyncedTime: text(t['lastSuccessfulSyncTime']),
      }),
    ),
    facts: compact({ sourceResourceVersion: text(status['sourceResourceVersion']) }),
  };
}

function replicationParts(spec: Loose, status: Loose, namespace: string): Pick<UiObject, 'source' | 'targets' | 'facts'> {
  const facts: Record<string, string | undefined> = { mode: text(spec['mode']), failover: text(spec['failover']) };
  for (const [key, value] of Object.entries(status)) {
    // Scalars of status only (lag, last sync times, counts); lists and inventories stay out.
    if (key !== 'observedGeneration' && (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')) facts[key] = String(value);
  }
  const hold = record(status['pruneHold']);
  if (text(hold['token']) !== undefined)
    facts['pruneHold'] = `${text(hold['objects']) ?? '?'} deletion(s) held since ${text(hold['since']) ?? '?'} (${text(hold['reason']) ?? ''})`;
  const promotion = record(status['standbyPromotion']);
  if (text(promotion['at']) !== undefined) facts['standbyPromotion'] = `promoted at ${text(promotion['at']) ?? ''} by ${text(promotion['by']) ?? '?'}`;
  const destination = record(spec['destination']);
  facts['destination'] = `${text(record(destination['cluster'])['name']) ?? 'this cluster'}/${text(destination['namespace']) ?? namespace}`;
  if (text(spec['interval']) !== undefined && text(spec['mode']) === 'Interval') facts['interval'] = text(spec['interval']);
  const failed = list(status['failed']);
  if (failed.length > 0) facts['failedObjects'] = failed.map((f) => `${text(f['id']) ?? ''}: ${text(f['reason']) ?? ''}`).join('; ');
  return {
    source: compact({ namespace: text(spec['sourceNamespace']) ?? namespace, cluster: text(record(spec['sourceCluster'])['name']) }),
    targets: list(status['kinds']).map((k) => compact({ name: text(k['kind']) ?? '', objects: num(k['objects']) })),
    facts: compact(facts),
  };
}

function remoteClusterParts(status: Loose, conditions: readonly UiCondition[]): Pick<UiObject, 'source' | 'facts'> {
  const ready = conditions.find((c) => c.type === 'Ready');
  const reachable = ready === undefined ? undefined : ready.status === 'True' ? 'yes' : `no (${ready.reason})`;
  const facts: Record<string, string | undefined> = {
    reachable,
    serverVersion: text(status['serverVersion']),
    server: withoutCredentials(text(status['server']) ?? ''),
  };
  for (const [key, value] of Object.entries(status)) if (typeof value === 'string' && facts[key] === undefined && /time|probe/i.test(key)) facts[key] = value;
  return { source: {}, facts: compact(facts) };
}

/** Drops undefined and empty-string fields (the browser sees only what is known). */
function compact<T extends Record<string, unknown>>(value: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== '')) as { [K in keyof T]: Exclude<T[K], undefined> };
}

// What the web UI shows of a watched object: status and metadata only. Built field by field from an allow-list,
// so nothing the list does not name (spec.values, valuesFrom contents, credentials, a Secret's data) can reach a
// browser, and a repository URL loses any user:password part.
import type { KubeObject } from '@syncline/kube';
import type { WatchedKind } from '../manager.ts';

import { UiState, type UiCondition, type UiObject } from './model.ts';

export { UiState, type UiObject };

type Loose = Record<string, unknown>;
const record = (value: unknown): Loose => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Loose) : {});
const list = (value: unknown): Loose[] => (Array.isArray(value) ? value.map(record) : []);
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined);
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
    ...(text(object.metadata['creationTimestamp']) === undefined ? {} : { createdAt: text(object.metadata['creationTimestamp']) }),
    ...(num(object.metadata['generation']) === undefined ? {} : { generation: num(object.metadata['generation']) }),
    ...(num(status['observedGeneration']) === undefined ? {} : { observedGeneration: num(status['observedGeneration']) }),
    suspended: spec['suspend'] === true,
    conditions,
    source: {},
    targets: [],
    history: [],
    facts: {},
  };
  switch (kind) {
    case 'ConfigSync':
      return { ...base, ...configSyncParts(spec, status) };
    case 'ManifestSync':
      return { ...base, ...manifestSyncParts(spec, status) };
    case 'NamespaceReplication':
      return { ...base, ...replicationParts(spec, status, namespace) };
    case 'RemoteCluster':
      return { ...base, ...remoteClusterParts(status) };
  }
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
      health: text(health['status']),
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
    history: list(status['history']).map((h) => compact({ revision: text(h['revision']) ?? '', appliedAt: text(h['appliedAt']), objects: num(h['objects']), digest: text(h['digest']) })),
    facts: compact({ lastSyncedTime: text(status['lastSyncedTime']), appliedTargets: text(status['appliedTargets']) }),
  };
}

function manifestSyncParts(spec: Loose, status: Loose): Pick<UiObject, 'source' | 'targets' | 'facts'> {
  const ref = record(spec['sourceRef']);
  return {
    source: compact({ apiVersion: text(ref['apiVersion']), kind: text(ref['kind']), namespace: text(ref['namespace']), name: text(ref['name']) }),
    targets: list(status['targets']).map((t) => compact({ name: text(t['name']) ?? '', cluster: text(t['cluster']), namespace: text(t['namespace']), phase: text(t['phase']), objects: num(t['objects']), message: text(t['message']) })),
    facts: compact({ sourceResourceVersion: text(status['sourceResourceVersion']) }),
  };
}

function replicationParts(spec: Loose, status: Loose, namespace: string): Pick<UiObject, 'source' | 'targets' | 'facts'> {
  const facts: Record<string, string | undefined> = { mode: text(spec['mode']), failover: text(spec['failover']) };
  for (const [key, value] of Object.entries(status)) {
    // Scalars of status only (lag, last sync times, counts); lists and inventories stay out.
    if (key !== 'observedGeneration' && (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')) facts[key] = String(value);
  }
  return {
    source: compact({ namespace: text(spec['sourceNamespace']) ?? namespace, cluster: text(record(spec['sourceCluster'])['name']) }),
    targets: list(status['kinds']).map((k) => compact({ name: text(k['kind']) ?? '', objects: num(k['objects']) })),
    facts: compact(facts),
  };
}

function remoteClusterParts(status: Loose): Pick<UiObject, 'source' | 'facts'> {
  const facts: Record<string, string | undefined> = { serverVersion: text(status['serverVersion']), server: withoutCredentials(text(status['server']) ?? '') };
  for (const [key, value] of Object.entries(status)) if (typeof value === 'string' && facts[key] === undefined && /time|probe/i.test(key)) facts[key] = value;
  return { source: {}, facts: compact(facts) };
}

/** Drops undefined and empty-string fields (the browser sees only what is known). */
function compact<T extends Record<string, unknown>>(value: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== '')) as { [K in keyof T]: Exclude<T[K], undefined> };
}

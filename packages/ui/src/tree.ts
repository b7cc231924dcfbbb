// A ConfigSync's resource tree (as Argo CD draws one) and the commits of its deploys, computed on request.
// The tree starts from each target's inventory (what the sync applied, in this cluster) and follows
// ownerReferences down: a Deployment's ReplicaSets, their Pods, a CronJob's Jobs, with each node's health and
// latest Events. It shows whatever exists (a cluster without nodes has ReplicaSets and no Pods). Each target's
// hooks of its last hooked commit (status.targets[].hooks) hang beside the applied objects, each with its live
// object (a Job and its Pods) while that is still the one the sync created. Every object, child and Event list
// is shown only to a viewer who may read it; the rest is counted as hidden.
import { decodeInventory, healthOf, objectId, parseObjectId, type ApplyClient, type KubeObject as ApplyObject } from '@syncline/apply';
import type { KubeObject, KubeRest } from '@syncline/kube';
import type { GitSource, CommitMetadata } from '@syncline/source-git';
import type { ConfigSync, HookStatus } from '@syncline/api';
import { readGitAccess } from '@syncline/operator/client';
import type { UiCommit, UiTree, UiTreeHook, UiTreeNode } from './model.ts';

/** May the viewer `verb` this resource (namespace '' = cluster-wide; name absent = any)? */
export type MayRead = (ref: { verb: 'get' | 'list'; group: string; resource: string; namespace: string; name?: string }) => Promise<boolean>;

/** The kinds whose objects hang under applied ones, read per namespace (group, version, kind, plural). */
const CHILD_KINDS = [
  { group: 'apps', version: 'v1', kind: 'ReplicaSet', plural: 'replicasets' },
  { group: '', version: 'v1', kind: 'Pod', plural: 'pods' },
  { group: 'batch', version: 'v1', kind: 'Job', plural: 'jobs' },
] as const;
const EVENTS_PER_NODE = 5;
const MAX_NODES = 500;

type Owned = KubeObject & { metadata: KubeObject['metadata'] & { uid?: string; ownerReferences?: Array<{ uid?: string }> } };
type KubeEvent = {
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  lastTimestamp?: string;
  eventTime?: string;
  metadata: { creationTimestamp?: string };
  involvedObject?: { uid?: string };
};

export async function syncTree(input: { rest: KubeRest; client: ApplyClient; object: KubeObject; mayRead: MayRead }): Promise<UiTree> {
  const sync = input.object as unknown as ConfigSync;
  const discovery = await input.client.discovery();
  const namespaceCache = new Map<string, Promise<Namespace>>();
  const namespaceOf = (namespace: string): Promise<Namespace> => {
    let hit = namespaceCache.get(namespace);
    if (hit === undefined) namespaceCache.set(namespace, (hit = readNamespace(input, namespace)));
    return hit;
  };
  const targets: UiTree['targets'] = [];
  let budget = MAX_NODES;
  for (const entry of sync.status?.inventory ?? []) {
    const target = sync.spec.targets.find((t) => t.name === entry.target);
    if (entry.cluster !== undefined) {
      targets.push({ name: entry.target, cluster: entry.cluster, skipped: 'another cluster: its objects are read there', nodes: [], hidden: 0 });
      continue;
    }
    const nodes: UiTreeNode[] = [];
    let hidden = 0;
    for (const { id } of decodeInventory(entry.entries)) {
      if (budget-- <= 0) break;
      const ref = parseObjectId(id);
      const info = discovery.preferred(ref.group, ref.kind);
      if (info === undefined || !(await input.mayRead({ verb: 'get', group: info.group, resource: info.plural, namespace: ref.namespace, name: ref.name }))) {
        hidden++;
        continue;
      }
      const live = (await input.client.get(id)) as Owned | undefined;
      if (live === undefined) {
        nodes.push({
          kind: ref.kind,
          namespace: ref.namespace,
          name: ref.name,
          health: 'Missing',
          healthMessage: 'not in the cluster',
          events: [],
          children: [],
        });
        continue;
      }
      nodes.push(await nodeOf(live, ref.namespace === '' ? undefined : await namespaceOf(ref.namespace), 0));
    }
    const status = sync.status?.targets?.find((t) => t.name === entry.target && t.cluster === undefined);
    const hooks: UiTreeHook[] = [];
    for (const record of status?.hooks ?? []) {
      const hook = await hookOf(input, record, namespaceOf, budget-- > 0);
      if (hook === undefined) hidden++;
      else hooks.push(hook);
    }
    targets.push({
      name: entry.target,
      ...(target?.namespace === undefined ? {} : { namespace: target.namespace }),
      nodes,
      hidden,
      ...(status?.hooksRevision === undefined || status.hooks === undefined ? {} : { hooksRevision: status.hooksRevision, hooks }),
    });
  }
  return { targets };
}

/**
 * A hook as its record says (phase, duration, message) with its live object under it, or undefined when the viewer
 * may not get that kind there. An object under the hook's name that is not the one the sync created (another uid)
 * is not shown as the hook's.
 */
async function hookOf(
  input: { client: ApplyClient; mayRead: MayRead },
  record: HookStatus,
  namespaceOf: (namespace: string) => Promise<Namespace>,
  withObject: boolean,
): Promise<UiTreeHook | undefined> {
  const namespace = record.namespace ?? '';
  const slash = record.apiVersion.indexOf('/');
  const info = (await input.client.discovery()).preferred(slash === -1 ? '' : record.apiVersion.slice(0, slash), record.kind);
  if (info === undefined || !(await input.mayRead({ verb: 'get', group: info.group, resource: info.plural, namespace, name: record.name }))) return undefined;
  const hook: UiTreeHook = {
    hook: record.hook,
    kind: record.kind,
    namespace,
    name: record.name,
    phase: record.phase,
    ...(record.duration === undefined ? {} : { duration: record.duration }),
    ...(record.message === undefined ? {} : { message: record.message }),
    ...(record.startedAt === undefined ? {} : { startedAt: record.startedAt }),
  };
  if (!withObject || record.uid === undefined) return hook;
  const live = (await input.client.get(
    objectId({ apiVersion: record.apiVersion, kind: record.kind, metadata: { name: record.name, ...(namespace === '' ? {} : { namespace }) } }),
  )) as Owned | undefined;
  if (live === undefined || live.metadata.uid !== record.uid) return hook;
  return { ...hook, node: await nodeOf(live, namespace === '' ? undefined : await namespaceOf(namespace), 0) };
}

type Namespace = { children: Owned[]; events: Map<string, KubeEvent[]> | undefined };

/** The namespace's ReplicaSets, Pods and Jobs, and its Events by object, each only if the viewer may list them. */
async function readNamespace(input: { rest: KubeRest; mayRead: MayRead }, namespace: string): Promise<Namespace> {
  const children: Owned[] = [];
  for (const kind of CHILD_KINDS) {
    if (!(await input.mayRead({ verb: 'list', group: kind.group, resource: kind.plural, namespace }))) continue;
    const path = `${kind.group === '' ? '/api' : `/apis/${kind.group}`}/${kind.version}/namespaces/${namespace}/${kind.plural}`;
    const list = await input.rest.request<{ items: Owned[] }>({ method: 'GET', path }).catch(() => ({ items: [] }));
    children.push(...list.items.map((item) => ({ ...item, apiVersion: kind.group === '' ? kind.version : `${kind.group}/${kind.version}`, kind: kind.kind })));
  }
  let events: Map<string, KubeEvent[]> | undefined;
  if (await input.mayRead({ verb: 'list', group: '', resource: 'events', namespace })) {
    events = new Map();
    const list = await input.rest
      .request<{ items: KubeEvent[] }>({ method: 'GET', path: `/api/v1/namespaces/${namespace}/events` })
      .catch(() => ({ items: [] }));
    for (const event of list.items) {
      const uid = event.involvedObject?.uid;
      if (uid !== undefined) events.set(uid, [...(events.get(uid) ?? []), event]);
    }
  }
  return { children, events };
}

async function nodeOf(object: Owned, namespace: Namespace | undefined, depth: number): Promise<UiTreeNode> {
  const health = healthOf(object as unknown as ApplyObject);
  const uid = object.metadata.uid;
  const when = (e: KubeEvent): string => e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp ?? '';
  const events = (uid === undefined ? [] : (namespace?.events?.get(uid) ?? []))
    .sort((a, b) => when(b).localeCompare(when(a)))
    .slice(0, EVENTS_PER_NODE)
    .map((e) => ({ type: e.type ?? '', reason: e.reason ?? '', message: e.message ?? '', count: e.count ?? 1, at: when(e) }));
  const children =
    depth >= 3 || uid === undefined
      ? []
      : (namespace?.children ?? []).filter((child) => child.metadata.ownerReferences?.some((owner) => owner.uid === uid) === true);
  return {
    kind: object.kind ?? '',
    namespace: object.metadata.namespace ?? '',
    name: object.metadata.name,
    health: health.status,
    healthMessage: health.message,
    events,
    children: await Promise.all(children.map((child) => nodeOf(child, namespace, depth + 1))),
  };
}

/** Commits never change: their message and author are kept once read, by repository and SHA. */
const commitCache = new Map<string, UiCommit>();

/** The message and author of each deploy in the history (the ones Git still serves; the others left out). */
export async function deployCommits(input: { rest: KubeRest; git: GitSource; object: KubeObject }): Promise<Record<string, UiCommit>> {
  const sync = input.object as unknown as ConfigSync;
  const git = sync.spec.source.git;
  const { auth, connection } = await readGitAccess(input.rest, sync.metadata.namespace ?? 'default', git);
  const out: Record<string, UiCommit> = {};
  for (const { revision } of sync.status?.history ?? []) {
    const key = `${git.repo}@${revision}`;
    let commit = commitCache.get(key);
    if (commit === undefined) {
      try {
        const snapshot = await input.git.fetchSnapshot({ repo: git.repo, sha: revision, auth, connection });
        commit = uiCommit(await input.git.readCommit(snapshot));
      } catch {
        continue;
      }
      if (commitCache.size > 10_000) commitCache.clear();
      commitCache.set(key, commit);
    }
    out[revision] = commit;
  }
  return out;
}

function uiCommit(commit: CommitMetadata): UiCommit {
  const [subject = ''] = commit.message.split('\n');
  return { subject, message: commit.message.trimEnd(), author: commit.author.name, email: commit.author.email, time: commit.author.time };
}

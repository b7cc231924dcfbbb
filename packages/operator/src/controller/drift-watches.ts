// The drift watches: label-selected (OWNER_LABEL) watches of the kinds the syncs write, started before the first
// object of a kind is written, so an edit made right after the first apply is already seen as drift. What they
// hold also proves a resync a no-op without a single read (see @syncline/apply's unchanged.ts).
//
// Where a kind is watched:
// - by an operator that watches every namespace: once, cluster-wide;
// - in a remote cluster: once, everywhere (its credentials are the identity);
// - by an operator scoped to one namespace (--namespace): in that namespace, plus one watch per other namespace a
//   sync applies into (a namespace per application). Such a watch starts when a target first writes there and
//   stops once no sync's inventory holds objects of that kind there any more; each counts against the watch
//   budget. One the API server refuses (the operator may not list the kind there) or the budget has no room for
//   is tried again only after REFUSAL_RETRY_MS: until then the target says so in its status and its drift is
//   checked by reads at every refresh instead.
//
// A watch can also go silent without ending (a proxy or NAT that dropped the stream): its cache then proves
// nothing. `version` answers only from a watch heard from within WATCH_FRESH_MS (the API server's bookmark period
// and a margin: a live watch stays fresh on bookmarks alone); for a silent one it answers "not covered", so the
// target reads its objects (a LIST of its own kinds per namespace), restarts that watch, and says so in its status.
import { hash } from 'node:crypto';
import {
  DEFAULT_FIELD_MANAGER,
  OWNED_BY_ANNOTATION,
  OWNER_LABEL,
  decodeInventory,
  healthOf,
  parseObjectId,
  type ApplyClient,
  type Discovery,
  type KubeObject as ApplyObject,
  type ResourceInfo,
} from '@syncline/apply';
import { Informer, KubeApiError, WATCH_FRESH_MS, WatchBudgetError, objectKey, type KubeObject, type KubeRest, type WatchBudget } from '@syncline/kube';
import type { Logger } from 'pino';
import type { TargetInventory } from '@syncline/api';
import type { RemoteClients } from '../remote/clusters.ts';

/** How long an apply waits for a new drift watch to list before it writes anyway. */
const WATCH_SYNC_MS = 10_000;

/** How long a per-namespace watch that was refused (forbidden, or past the watch budget) is not tried again. */
export const REFUSAL_RETRY_MS = 5 * 60_000;

/**
 * How long a per-namespace watch started for an apply is kept without a user: the inventory naming its namespace
 * reaches the cache only with the status write that follows the apply.
 */
const FRESH_WATCH_GRACE_MS = 5 * 60_000;

export type DriftWatchesOptions = {
  readonly rest: KubeRest;
  readonly budget: WatchBudget;
  readonly logger: Pick<Logger, 'debug' | 'warn'>;
  /** The namespace the operator watches (--namespace); undefined: all namespaces. */
  readonly watchNamespace: string | undefined;
  /** The operator's own apply client (its discovery says where a kind is served). */
  readonly applyClient: () => Promise<ApplyClient>;
  /** Someone else changed or deleted an object carrying this owned-by annotation. */
  readonly onDrift: (ownedBy: string) => void;
  readonly now?: () => number;
};

export type DriftWatches = {
  /**
   * Watches the kinds (and, for a namespace-scoped operator, the namespaces) of `ids` before they are written or
   * first read, and waits (bounded) until each watch it started, or found still listing, has listed.
   * Throws WatchBudgetError when a kind-wide watch does not fit the budget: drift the apply writes would go unseen.
   */
  watch(ids: readonly string[], remote?: RemoteClients): Promise<void>;
  /**
   * Watches the kinds of everything `user`'s inventory names (in this cluster's watches), as `watch` does: after a
   * restart they are watched again, whether or not a run writes. Nothing to do, and nothing done, when it is the
   * very inventory of `user`'s last call, that call left every one of its kinds watched (nothing refused, no kind
   * unknown to discovery), and no watch has stopped since: then every watch it needs is still there.
   */
  watchInventory(user: string, inventory: readonly TargetInventory[] | undefined): Promise<void>;
  /** The per-namespace watches `user` (a queue key) needs are those of its inventory now; unused ones stop. */
  settle(user: string, inventory: readonly TargetInventory[] | undefined): void;
  /** `user` left: the per-namespace watches only it needed stop. */
  release(user: string): void;
  /**
   * The resourceVersion a synced, healthy and fresh watch holds for `id`; null when it holds none; undefined when
   * none covers it. A watch that covers it but was not heard from within WATCH_FRESH_MS answers undefined too:
   * it is restarted, and `onStale` hears why (for the target's status).
   */
  version(id: string, remote?: RemoteClients, onStale?: (why: string) => void): string | null | undefined;
  /**
   * Whether a synced, healthy and fresh watch holds an object of `scope` (a group, Kind and namespace) carrying
   * OWNER_LABEL `ownerLabel`: false when it holds none (an owner's LIST there would come back empty), undefined
   * when no such watch covers the scope.
   */
  ownerSeen(
    scope: { readonly group: string; readonly kind: string; readonly namespace: string },
    ownerLabel: string,
    remote?: RemoteClients,
  ): boolean | undefined;
  /** Why the drift of some of `ids` (in this cluster) cannot be watched, naming the kind and namespace; undefined when it can. */
  unwatched(ids: readonly string[]): string | undefined;
  /** Whether every drift watch in a remote cluster is listed and healthy. */
  remoteHealthy(remote: RemoteClients): boolean;
  stop(): Promise<void>;
};

/** `claimed`: an inventory has named its scope (until then a per-namespace watch is kept for FRESH_WATCH_GRACE_MS). */
type Watch = {
  readonly informer: Informer;
  readonly owners: OwnerIndex;
  readonly refused: Promise<void>;
  readonly startedAt: number;
  claimed: boolean;
  forbidden?: string;
};

/**
 * The objects of a watch's cache by namespace and OWNER_LABEL value, kept as the cache changes (every event the
 * informer sends, a relist's differences included, mirrors a change of its cache): whether an owner has anything
 * in a namespace is one look, not a walk over every watched object per first apply.
 */
type OwnerIndex = { update(type: string, object: KubeObject): void; has(namespace: string, owner: string): boolean };

function createOwnerIndex(): OwnerIndex {
  const members = new Map<string, Set<string>>();
  const placed = new Map<string, string>();
  return {
    update(type, object) {
      const key = objectKey(object);
      const before = placed.get(key);
      if (before !== undefined) {
        const set = members.get(before);
        set?.delete(key);
        if (set?.size === 0) members.delete(before);
        placed.delete(key);
      }
      const owner = (object.metadata['labels'] as Record<string, string> | undefined)?.[OWNER_LABEL];
      if (type === 'DELETED' || owner === undefined) return;
      const at = `${object.metadata.namespace ?? ''}/${owner}`;
      placed.set(key, at);
      members.set(at, (members.get(at) ?? new Set()).add(key));
    },
    has: (namespace, owner) => members.has(`${namespace}/${owner}`),
  };
}
type Refusal = { readonly at: number; readonly why: string };

/** What the drift watches hold between calls. */
type WatchState = {
  readonly watches: Map<string, Watch>;
  /** Per-namespace watches refused, by scope. */
  readonly refusals: Map<string, Refusal>;
  /** The per-namespace scopes each user's inventory holds. */
  readonly users: Map<string, ReadonlySet<string>>;
  /** cluster → the credentials version its watches use. */
  readonly clusterWatchKeys: Map<string, string>;
  readonly now: () => number;
  /** Counts the watches stopped (forgotten, or all of them): a watch once there may be missing since. */
  stopped: number;
};

function forgetWatch(state: WatchState, scope: string): void {
  const entry = state.watches.get(scope);
  state.watches.delete(scope);
  state.stopped++;
  void entry?.informer.stop();
}

/** The per-namespace watches no user holds (and not just started for an apply) stop. */
function sweepWatches(state: WatchState): void {
  const used = new Set<string>();
  for (const scopes of state.users.values()) for (const scope of scopes) used.add(scope);
  for (const [scope, entry] of state.watches) {
    if (scope.includes('|') || scope.split('/').length !== 3 || used.has(scope)) continue;
    if (!entry.claimed && state.now() - entry.startedAt < FRESH_WATCH_GRACE_MS) continue;
    forgetWatch(state, scope);
  }
  for (const scope of state.refusals.keys()) if (!used.has(scope)) state.refusals.delete(scope);
}

/** Whether a watch is listing for the first time, refused by nothing yet and within WATCH_SYNC_MS of its start (worth waiting for). */
function stillListing(entry: Watch, at: number): boolean {
  return !entry.informer.synced && entry.forbidden === undefined && at - entry.startedAt < WATCH_SYNC_MS;
}

/** A remote cluster's credentials changed: its watches, started with the old ones, stop. */
function stopStaleClusterWatches(state: WatchState, remote: RemoteClients): void {
  const before = state.clusterWatchKeys.get(remote.cluster);
  state.clusterWatchKeys.set(remote.cluster, remote.key);
  if (before === undefined || before === remote.key) return;
  for (const scope of [...state.watches.keys()]) if (scope.startsWith(`${before}|`)) forgetWatch(state, scope);
}

export function createDriftWatches(options: DriftWatchesOptions): DriftWatches {
  const { rest, budget, logger, watchNamespace } = options;
  const now = options.now ?? Date.now;
  const state: WatchState = { watches: new Map(), refusals: new Map(), users: new Map(), clusterWatchKeys: new Map(), now, stopped: 0 };
  const { watches, refusals, users } = state;
  const seen = new Map<string, string>();
  /** Each user's inventory whose kinds its last watchInventory left all watched, with the count of stopped watches then. */
  const covered = new Map<string, { readonly inventory: readonly TargetInventory[]; readonly stopped: number }>();
  const forget = (scope: string): void => forgetWatch(state, scope);
  const sweep = (): void => sweepWatches(state);

  /** The watch that covers an id: `group/Kind` (kind-wide), or `group/Kind/namespace` (one namespace of a namespace-scoped operator). */
  const scopeKey = (id: string, remote?: RemoteClients): string => {
    const { group, kind, namespace } = parseObjectId(id);
    if (remote !== undefined) return `${remote.key}|${group}/${kind}`;
    return perNamespace(namespace) ? `${group}/${kind}/${namespace}` : `${group}/${kind}`;
  };
  const perNamespace = (namespace: string): boolean => watchNamespace !== undefined && namespace !== '' && namespace !== watchNamespace;

  const start = (scope: string, spec: { group: string; info: ResourceInfo; namespace?: string | undefined; remote?: RemoteClients | undefined }): Watch => {
    const { info, namespace, remote } = spec;
    // Namespaced kinds are watched in the watched namespace only (namespace-scoped RBAC allows no more), or in
    // the one namespace this watch is for; in a remote cluster, everywhere.
    const where = namespace ?? (info.namespaced && remote === undefined ? watchNamespace : undefined);
    const refused = Promise.withResolvers<void>();
    const owners = createOwnerIndex();
    const informer = driftInformer({
      owners,
      rest: remote?.rest ?? rest,
      budget,
      path: `${spec.group === '' ? '/api' : `/apis/${spec.group}`}/${info.version}${where === undefined ? '' : `/namespaces/${where}`}/${info.plural}`,
      onDrift: options.onDrift,
      onError: (error) => {
        logger.debug({ err: error instanceof Error ? error.message : String(error), scope }, 'managed-object watch failed; restarting');
        if (!(error instanceof KubeApiError && error.status === 403)) return;
        const why = `forbidden: the operator may not list ${info.plural} ${where === undefined ? 'in every namespace' : `in namespace ${where}`}`;
        entry.forbidden = why;
        refused.resolve();
        if (namespace === undefined) return; // a kind-wide watch keeps trying (rights may be granted); its targets say why meanwhile
        refusals.set(scope, { at: now(), why });
        forget(scope);
      },
    });
    const entry: Watch = { informer, owners, refused: refused.promise, startedAt: now(), claimed: [...users.values()].some((scopes) => scopes.has(scope)) };
    watches.set(scope, entry);
    informer.start();
    return entry;
  };
  const watch = async (ids: readonly string[], remote?: RemoteClients): Promise<void> => {
    const discovery = await (remote?.apply ?? (await options.applyClient())).discovery();
    if (remote !== undefined) stopStaleClusterWatches(state, remote);
    // Watches already there that are still listing for the first time: joined, so a burst of new targets waits
    // for the one list the first of them started rather than each reading on its own meanwhile.
    const listing = new Set<Watch>();
    const { kindWide, namespaced } = missingWatches(ids, {
      discovery,
      scopeKey: (id) => scopeKey(id, remote),
      perNamespace: (namespace) => remote === undefined && perNamespace(namespace),
      // Only a new watch, or one within WATCH_SYNC_MS of its start, is waited for: one that cannot list (403 for a
      // cluster-scoped kind in namespace mode) must not delay every later apply; a refused namespace is not asked
      // again for a while.
      skip: (scope) => {
        const entry = watches.get(scope);
        if (entry !== undefined && stillListing(entry, now())) listing.add(entry);
        const refusal = refusals.get(scope);
        return entry !== undefined || (refusal !== undefined && now() - refusal.at < REFUSAL_RETRY_MS);
      },
    });
    // All or none: the drift of every kind about to be written is watched, or the apply fails naming the budget.
    budget.check(kindWide.size, `the drift watches of ${kindWide.size} kind(s) in ${remote === undefined ? 'this cluster' : `cluster ${remote.cluster}`}`);
    const started: Watch[] = [];
    for (const [scope, spec] of kindWide) started.push(start(scope, { ...spec, remote }));
    // A namespace past the budget is checked by reads instead (its targets say so): the apply goes on.
    for (const [scope, spec] of namespaced) {
      try {
        // A refusal stands until the watch lists: meanwhile the target keeps saying why (its status unchanged).
        started.push(start(scope, spec));
      } catch (error) {
        if (!(error instanceof WatchBudgetError)) throw error;
        refusals.set(scope, { at: now(), why: error.message });
      }
    }
    // Bounded: a kind we may not watch (403) must not hold the apply back; its drift waits for the next resync.
    await Promise.all([
      ...started.map((entry) => Promise.race([entry.informer.waitSynced(WATCH_SYNC_MS), entry.refused])),
      ...[...listing].map((entry) => Promise.race([entry.informer.waitSynced(Math.max(0, entry.startedAt + WATCH_SYNC_MS - now())), entry.refused])),
    ]);
  };
  return {
    watch,

    async watchInventory(user, inventory) {
      const known = covered.get(user);
      if (inventory !== undefined && known?.inventory === inventory && known.stopped === state.stopped) return;
      covered.delete(user);
      const stopped = state.stopped;
      const ids = (inventory ?? []).flatMap((target) => decodeInventory(target.entries).map((entry) => entry.id));
      if (ids.length === 0) return;
      await watch(ids);
      if (inventory !== undefined && ids.every((id) => watches.has(scopeKey(id)))) covered.set(user, { inventory, stopped });
    },

    settle(user, inventory) {
      if (watchNamespace === undefined) return; // every namespace is covered by the kind-wide watches
      // Most events of a sync are its own status writes with the same inventory: nothing to decode.
      const json = JSON.stringify(inventory ?? []);
      if (seen.get(user) === json) return;
      seen.set(user, json);
      const scopes = new Set(
        localIds(inventory)
          .filter((id) => perNamespace(parseObjectId(id).namespace))
          .map((id) => scopeKey(id)),
      );
      for (const scope of scopes) {
        const entry = watches.get(scope);
        if (entry !== undefined) entry.claimed = true;
      }
      const before = users.get(user);
      if (scopes.size === 0) users.delete(user);
      else users.set(user, scopes);
      if (before !== undefined && [...before].some((scope) => !scopes.has(scope))) sweep();
    },

    release(user) {
      seen.delete(user);
      covered.delete(user);
      if (!users.delete(user)) return;
      sweep();
    },

    version(id, remote, onStale) {
      const scope = scopeKey(id, remote);
      const entry = watches.get(scope);
      if (entry === undefined || !entry.informer.synced || !entry.informer.healthy) return undefined;
      const { kind, namespace, name } = parseObjectId(id);
      if (!entry.informer.isFresh(now())) {
        const heardAt = entry.informer.heardAt;
        if (entry.informer.restart(now()))
          logger.warn(
            { scope, silentSeconds: heardAt === undefined ? undefined : Math.round((now() - heardAt) / 1000) },
            'drift watch silent past the bookmark period; restarted, its targets read instead',
          );
        // No figure that changes from run to run: an unchanged message writes no status.
        onStale?.(
          `the drift watch of ${kind}${remote === undefined ? '' : ` in cluster ${remote.cluster}`} was not heard from within ${WATCH_FRESH_MS / 1000}s (restarted); read instead`,
        );
        return undefined;
      }
      return entry.informer.get(namespace === '' ? name : `${namespace}/${name}`)?.metadata.resourceVersion ?? null;
    },

    ownerSeen(scope, ownerLabel, remote) {
      const entry = watches.get(scopeKey(`${scope.group}/${scope.kind}/${scope.namespace}/-`, remote));
      if (entry === undefined || !entry.informer.isFresh(now())) return undefined;
      return entry.owners.has(scope.namespace, ownerLabel);
    },

    unwatched(ids) {
      return unwatchedReasons(ids, scopeKey, (scope) => {
        const entry = watches.get(scope);
        if (entry === undefined) return refusals.get(scope)?.why;
        if (!entry.informer.healthy) return entry.forbidden ?? refusals.get(scope)?.why;
        refusals.delete(scope); // watched now: a refusal of an earlier try is over
        return undefined;
      });
    },

    remoteHealthy(remote) {
      return [...watches].filter(([scope]) => scope.startsWith(`${remote.key}|`)).every(([, entry]) => entry.informer.synced && entry.informer.healthy);
    },

    async stop() {
      const all = [...watches.values()];
      watches.clear();
      state.stopped++;
      await Promise.all(all.map((entry) => entry.informer.stop()));
    },
  };
}

/** The object ids of an inventory applied in this cluster. */
function localIds(inventory: readonly TargetInventory[] | undefined): string[] {
  return (inventory ?? []).flatMap((target) => (target.cluster === undefined ? decodeInventory(target.entries).map((entry) => entry.id) : []));
}

/** One line per watch (kind and namespace) that covers some of `ids` and cannot watch, saying why; undefined when none. */
function unwatchedReasons(ids: readonly string[], scopeKey: (id: string) => string, why: (scope: string) => string | undefined): string | undefined {
  const reasons = new Map<string, string>();
  for (const id of ids) {
    const scope = scopeKey(id);
    const reason = reasons.has(scope) ? undefined : why(scope);
    if (reason === undefined) continue;
    const { kind, namespace } = parseObjectId(id);
    reasons.set(scope, `cannot watch ${kind} ${namespace === '' ? '(cluster-scoped)' : `in namespace ${namespace}`} for drift (${reason})`);
  }
  return reasons.size === 0 ? undefined : [...reasons.values()].join('; ');
}

/** The watches `ids` need that are not there yet: kind-wide ones, and per-namespace ones (a namespace-scoped operator). */
function missingWatches(
  ids: readonly string[],
  input: { discovery: Discovery; scopeKey: (id: string) => string; perNamespace: (namespace: string) => boolean; skip: (scope: string) => boolean },
): { kindWide: Map<string, { group: string; info: ResourceInfo }>; namespaced: Map<string, { group: string; info: ResourceInfo; namespace: string }> } {
  const kindWide = new Map<string, { group: string; info: ResourceInfo }>();
  const namespaced = new Map<string, { group: string; info: ResourceInfo; namespace: string }>();
  for (const id of ids) {
    const scope = input.scopeKey(id);
    if (kindWide.has(scope) || namespaced.has(scope) || input.skip(scope)) continue;
    const { group, kind, namespace } = parseObjectId(id);
    const info = input.discovery.preferred(group, kind);
    if (info === undefined) continue; // a kind served only once its CRD is applied: watched after this sync
    if (input.perNamespace(namespace)) namespaced.set(scope, { group, info, namespace });
    else kindWide.set(scope, { group, info });
  }
  return { kindWide, namespaced };
}

/** A label-selected watch of managed objects: a change someone else made wakes the owner the object names. */
function driftInformer(input: {
  rest: KubeRest;
  budget: WatchBudget;
  path: string;
  owners: OwnerIndex;
  onDrift: (ownedBy: string) => void;
  onError: (error: unknown) => void;
}): Informer {
  return new Informer({
    budget: input.budget,
    rest: input.rest,
    path: input.path,
    labelSelector: OWNER_LABEL,
    project: projectManaged,
    onEvent: (type, object, previous) => {
      input.owners.update(type, object);
      // Someone edited or deleted an object we manage: reconcile its owner (drift). ADDED is the initial
      // list or our own create: the apply that follows (or just ran) already covers it. A status-only
      // change (a controller's progress) matters only when it changes the object's health.
      const owner = (object.metadata['annotations'] as Record<string, string> | undefined)?.[OWNED_BY_ANNOTATION];
      if (owner === undefined || type === 'ADDED') return;
      if (type === 'MODIFIED' && previous !== undefined && sameButStatus(previous, object) && previous['health'] === object['health']) return;
      // Our own apply's write comes back as MODIFIED: the run that wrote it already judged it (and a drift
      // requeue per written object would double the work of every new commit).
      if (type === 'MODIFIED' && previous !== undefined && object['ownWriteAt'] !== undefined && object['ownWriteAt'] !== previous['ownWriteAt']) return;
      input.onDrift(owner);
    },
    onError: input.onError,
  });
}

/**
 * What a managed-object watch keeps: identity, the owner marks (OWNER_LABEL: whose objects a first apply need not
 * list, see ownerSeen; OWNED_BY_ANNOTATION), the generation and a digest of labels and annotations (a change to
 * either is drift), and the object's health in one line (kstatus).
 */
export function projectManaged(object: KubeObject): KubeObject {
  const metadata = object.metadata as Record<string, unknown>;
  const marks = JSON.stringify([metadata['labels'] ?? {}, metadata['annotations'] ?? {}]);
  const health = healthOf(object as ApplyObject);
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: {
      name: object.metadata.name,
      namespace: object.metadata.namespace,
      resourceVersion: object.metadata.resourceVersion,
      labels: pickOwnerLabel(object),
      annotations: pickOwner(object),
      generation: metadata['generation'],
    },
    marks: hash('sha256', marks, 'base64url').slice(0, 22),
    health: `${health.status}|${health.reason ?? ''}|${health.message}`,
    ownWriteAt: writtenLastBy(object, DEFAULT_FIELD_MANAGER),
  };
}

/**
 * The time of `manager`'s entry when it is the one, alone, with the latest time in the object's managedFields,
 * else undefined. An event whose object has a new such time was that manager's own write (our apply); one with
 * the same time as before was someone else's (e.g. removing a field of ours leaves them no entry). A tie
 * (another manager wrote within the same second) or an object without managedFields counts as someone else's.
 */
export function writtenLastBy(object: KubeObject, manager: string): string | undefined {
  const fields = (object.metadata as Record<string, unknown>)['managedFields'];
  if (!Array.isArray(fields)) return undefined;
  let latest = '';
  let latestIsOurs = false;
  for (const entry of fields as { manager?: unknown; time?: unknown; subresource?: unknown }[]) {
    const time = typeof entry.time === 'string' ? entry.time : '';
    const ours = entry.manager === manager && entry.subresource === undefined;
    if (time > latest) {
      latest = time;
      latestIsOurs = ours;
    } else if (time === latest && !ours) {
      latestIsOurs = false;
    }
  }
  return latest !== '' && latestIsOurs ? latest : undefined;
}

/**
 * Whether two versions of a managed object differ in status only: the generation (bumped by every spec or
 * data change of kinds that keep one) and the labels and annotations are the same. Kinds without a
 * generation (ConfigMaps, Secrets, Services) never count as status-only: every change of theirs is looked at.
 */
export function sameButStatus(before: KubeObject, after: KubeObject): boolean {
  const generation = after.metadata['generation'];
  return typeof generation === 'number' && before.metadata['generation'] === generation && before['marks'] === after['marks'];
}

function pickOwnerLabel(object: KubeObject): Record<string, string> {
  const owner = (object.metadata['labels'] as Record<string, string> | undefined)?.[OWNER_LABEL];
  return owner === undefined ? {} : { [OWNER_LABEL]: owner };
}

function pickOwner(object: KubeObject): Record<string, string> {
  const owner = (object.metadata['annotations'] as Record<string, string> | undefined)?.[OWNED_BY_ANNOTATION];
  return owner === undefined ? {} : { [OWNED_BY_ANNOTATION]: owner };
}

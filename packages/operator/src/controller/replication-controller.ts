// The NamespaceReplication controller: For(NamespaceReplication, this shard's), Owns(its standby copies: the
// drift watches), Watches(every replicated kind in the source namespace in Continuous mode, metadata only: the
// first change not yet replicated starts the lag clock; a ConfigSync or RemoteCluster whose Secrets become
// credentials; the RemoteCluster of its destination), and the heartbeat Leases of its standbys.
import { Informer, SharedWatches, WatchBudgetError, objectKey, type KubeObject } from '@syncline/kube';
import type { ConfigSync, NamespaceReplication, RemoteCluster } from '@syncline/api';
import { retireHeartbeat, startHeartbeats } from '../dr/heartbeat.ts';
import { DEFAULT_RESOURCE_TYPES, parseResourceType } from '../dr/transform.ts';
import { DEFAULT_INTERVAL_BOUNDS } from '../reconcile/configsync.ts';
import { DEFAULT_STANDBY_RULES, NAMESPACEREPLICATION_KEY_PREFIX, createNamespaceReplicationReconciler } from '../reconcile/namespacereplication.ts';
import type { RemoteClusters } from '../remote/clusters.ts';
import { allowedWrite } from '../tenancy.ts';
import { errorMessage, onlyStatusChanged, type Controller, type ControllerContext, type ControllerKeys } from './controller.ts';

type ReplicationKey = ControllerKeys['NamespaceReplication'];

export type ReplicationController = {
  readonly controller: Controller<ReplicationKey>;
  /** Wakes the NamespaceReplications that replicate `namespace` (a credential there changed). */
  readonly wakeReplicationsOf: (namespace: string) => void;
  /** Stops renewing the standbys' heartbeat Leases (first, at shutdown). */
  readonly stopHeartbeats: () => void;
};

/** The caches that say which Secrets are the operator's credentials (never replicated). */
export type CredentialCaches = { readonly remoteClusters: Informer; readonly configSyncs: Informer; readonly otherShards: Informer };

export function replicationController(
  ctx: ControllerContext<ReplicationKey>,
  input: { remote: RemoteClusters; credentials: CredentialCaches },
): ReplicationController {
  const { options, queue, logger } = ctx;
  const { remote, credentials } = input;
  const replicationKey = (object: { metadata: { name: string; namespace?: string } }): ControllerKeys['NamespaceReplication'] =>
    `${NAMESPACEREPLICATION_KEY_PREFIX}${objectKey(object)}`;
  const sources = replicationSources(ctx);

  const namespaceReplications: Informer = new Informer({
    budget: ctx.budget,
    rest: ctx.rest,
    path: ctx.collection('syncline.dev', 'v1alpha1', 'namespacereplications'),
    labelSelector: ctx.shardLabelSelector,
    onEvent: (type, object, previous) => {
      const nr = object as unknown as NamespaceReplication;
      ctx.notify('NamespaceReplication', type, object);
      const key = replicationKey(nr);
      if (type === 'DELETED') {
        if (options.drHeartbeat !== undefined && ctx.isLeader())
          void retireHeartbeat({ applyClient: () => options.applyClient(undefined), remote, logger }, nr);
        sources.set(key, []);
        ctx.drift.release(key);
        queue.forget(key);
        ctx.leftShard('namespacereplication', objectKey(nr));
        return;
      }
      ctx.drift.settle(key, nr.status?.inventory);
      void sources
        .watch(key, nr)
        .catch((error: unknown) => logger.debug({ err: errorMessage(error), namespacereplication: key }, 'could not watch the source namespace'));
      if (type === 'ADDED' || previous === undefined || !onlyStatusChanged(previous, object)) queue.add(key);
    },
    onError: (error) => logger.warn({ err: errorMessage(error) }, 'NamespaceReplication watch failed; restarting'),
  });
  const reconcileReplication = createNamespaceReplicationReconciler({
    rest: ctx.rest,
    applyClient: options.applyClient,
    remote,
    clock: options.clock,
    logger,
    metrics: ctx.metrics,
    events: options.events,
    get: (key) => namespaceReplications.get(key) as NamespaceReplication | undefined,
    ...(options.trusted === undefined ? {} : { trusted: options.trusted }),
    ...(options.standbyRules === undefined ? {} : { standbyRules: options.standbyRules }),
    replications: () => namespaceReplications.list() as unknown as NamespaceReplication[],
    intervalBounds: options.intervalBounds ?? DEFAULT_INTERVAL_BOUNDS,
    mirrorKeys: options.mirrorKeys,
    pendingSince: (key) => sources.pendingSince.get(`${NAMESPACEREPLICATION_KEY_PREFIX}${key}`),
    watchRefusal: (key) => sources.refusals.get(`${NAMESPACEREPLICATION_KEY_PREFIX}${key}`),
    beforeApply: (ids, cluster) => ctx.watchBeforeApply(ids, cluster),
    // Which Secrets are the operator's credentials is known once these caches have been read, and while their
    // watches are heard from (one gone silent is restarted; the pass waits for it).
    credentialHolders: () =>
      [credentials.remoteClusters, credentials.configSyncs, credentials.otherShards].map((informer) => informer.freshOrRestart()).every(Boolean)
        ? {
            remoteClusters: credentials.remoteClusters.list() as unknown as RemoteCluster[],
            configSyncs: [...(credentials.configSyncs.list() as unknown as ConfigSync[]), ...(credentials.otherShards.list() as unknown as ConfigSync[])],
            webhookSecret: options.webhookSecret,
          }
        : undefined,
  });
  const heartbeats =
    options.drHeartbeat === undefined
      ? undefined
      : startHeartbeats({
          rest: ctx.rest,
          applyClient: () => options.applyClient(undefined),
          remote,
          replications: () => namespaceReplications.list() as unknown as NamespaceReplication[],
          isLeader: ctx.isLeader,
          clock: options.clock,
          logger,
          standby: { trusted: options.trusted ?? new Set<string>(), rules: options.standbyRules ?? DEFAULT_STANDBY_RULES },
          ...options.drHeartbeat,
        });

  const controller: Controller<ReplicationKey> = {
    kind: 'NamespaceReplication',
    for: namespaceReplications,
    watches: [],
    namingCluster: (namespace, name) =>
      (namespaceReplications.list() as unknown as NamespaceReplication[])
        .filter((nr) => nr.metadata.namespace === namespace && (nr.spec as NamespaceReplication['spec'] | undefined)?.destination.cluster?.name === name)
        .map(replicationKey),
    keys: () => namespaceReplications.list().map(replicationKey),
    async reconcile(key) {
      // The source watches are settled before the run, so that it reports a refusal by the budget (and asks
      // again at every retry: others may have given watches back). Unchanged watches cost nothing here.
      const nr = namespaceReplications.get(key.slice(NAMESPACEREPLICATION_KEY_PREFIX.length)) as NamespaceReplication | undefined;
      if (nr !== undefined)
        await sources
          .watch(key, nr)
          .catch((error: unknown) => logger.debug({ err: errorMessage(error), namespacereplication: key }, 'could not watch the source namespace'));
      // The lag clock restarts with the changes seen from here on.
      const since = sources.pendingSince.get(key);
      const outcome = await reconcileReplication(key.slice(NAMESPACEREPLICATION_KEY_PREFIX.length));
      if (outcome.kind === 'done' && sources.pendingSince.get(key) === since) sources.pendingSince.delete(key);
      return outcome;
    },
    stop: () => sources.stop(),
  };
  return {
    controller,
    stopHeartbeats: () => heartbeats?.stop(),
    wakeReplicationsOf: (namespace) => {
      for (const nr of namespaceReplications.list() as unknown as NamespaceReplication[]) {
        if ((nr.spec.sourceNamespace ?? nr.metadata.namespace ?? 'default') === namespace) queue.add(replicationKey(nr));
      }
    },
  };
}

/** Continuous mode: every replicated kind of a replication's source namespace, watched metadata only. */
function replicationSources(ctx: ControllerContext<ReplicationKey>) {
  const { options, logger } = ctx;
  /** When the first change not yet replicated was seen, by queue key. */
  const pendingSince = new Map<string, number>();
  /** Why a replication's source watches were refused (the watch budget), for its status; by queue key. */
  const refusals = new Map<string, string>();
  const watches = new SharedWatches({
    budget: ctx.budget,
    rest: ctx.rest,
    wake: (key) => {
      if (!pendingSince.has(key)) pendingSince.set(key, Date.now());
      // The subscribers are this controller's keys: `set` below is the only way in.
      ctx.queue.add(key as ReplicationKey);
    },
    onError: (error, watch) => logger.debug({ err: errorMessage(error), watch }, 'replication source watch failed; restarting'),
  });
  const set = (key: ReplicationKey, specs: Parameters<SharedWatches['set']>[1]): void => {
    try {
      watches.set(key, specs);
      refusals.delete(key);
    } catch (error) {
      if (!(error instanceof WatchBudgetError)) throw error;
      refusals.set(key, error.message);
    }
  };
  const watch = async (key: ReplicationKey, nr: NamespaceReplication): Promise<void> => {
    const spec = nr.spec as NamespaceReplication['spec'] | undefined;
    if (spec === undefined || spec.mode === 'Interval' || spec.suspend === true || spec.failover === true) return set(key, []);
    const sourceNamespace = spec.sourceNamespace ?? nr.metadata.namespace ?? 'default';
    // A source the tenancy rule refuses is not watched either (the reconcile reports the refusal).
    const actor = { objectNamespace: nr.metadata.namespace ?? 'default', serviceAccount: undefined, trusted: options.trusted ?? new Set<string>() };
    if (!allowedWrite({ ...actor, targetNamespace: sourceNamespace }).allowed) return watches.set(key, []);
    if (spec.destination.cluster === undefined && !allowedWrite({ ...actor, targetNamespace: spec.destination.namespace ?? sourceNamespace }).allowed)
      return watches.set(key, []);
    const discovery = await (await options.applyClient(undefined)).discovery();
    const types = spec.resourceTypes === undefined ? DEFAULT_RESOURCE_TYPES : spec.resourceTypes.map(parseResourceType);
    set(
      key,
      types.flatMap((type) => {
        const info = discovery.preferred(type.group, type.kind);
        if (info === undefined || !info.namespaced) return [];
        return [
          {
            path: `${info.group === '' ? '/api' : `/apis/${info.group}`}/${info.version}/namespaces/${sourceNamespace}/${info.plural}`,
            project: (object: KubeObject) => ({
              apiVersion: object.apiVersion,
              kind: object.kind,
              metadata: { name: object.metadata.name, namespace: object.metadata.namespace, resourceVersion: object.metadata.resourceVersion },
            }),
          },
        ];
      }),
    );
  };
  return { pendingSince, refusals, set, watch, stop: () => watches.stop() };
}

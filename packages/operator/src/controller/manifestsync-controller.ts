// The ManifestSync controller: For(ManifestSync, this shard's), Owns(its copies: the drift watches),
// Watches(its source object: one single-object watch per source in Immediate mode; Namespace: a selector may
// match differently; RemoteCluster a target names).
import { Informer, WatchBudgetError, objectKey, withUnchangedSpec, withoutManagedFields } from '@syncline/kube';
import type { ManifestSync } from '@syncline/api';
import { mirrorNamespaces, namespaceProjection, type MirrorNamespace } from '../mirror/index.ts';
import { DEFAULT_INTERVAL_BOUNDS } from '../reconcile/configsync.ts';
import { MANIFESTSYNC_KEY_PREFIX, createManifestSyncReconciler } from '../reconcile/manifestsync.ts';
import type { RemoteClusters } from '../remote/clusters.ts';
import { allowedWrite } from '../tenancy.ts';
import { errorMessage, onlyStatusChanged, type Controller, type ControllerContext, type ControllerKeys } from './controller.ts';

type ManifestSyncKey = ControllerKeys['ManifestSync'];

export function manifestSyncController(ctx: ControllerContext<ManifestSyncKey>, remote: RemoteClusters): Controller<ManifestSyncKey> {
  const { options, queue, logger } = ctx;
  const manifestKey = (object: { metadata: { name: string; namespace?: string } }): ManifestSyncKey => `${MANIFESTSYNC_KEY_PREFIX}${objectKey(object)}`;
  const sources = sourceWatches(ctx);

  const manifestSyncs: Informer = new Informer({
    budget: ctx.budget,
    rest: ctx.rest,
    path: ctx.collection('syncline.dev', 'v1alpha1', 'manifestsyncs'),
    labelSelector: ctx.shardLabelSelector,
    // Nothing reads a sync's managedFields (its status and spec are what a reconcile reads): most of its bytes.
    // A status write keeps the spec the cache held: see withUnchangedSpec.
    project: (object, previous) => withUnchangedSpec(withoutManagedFields(object), previous),
    onEvent: (type, object, previous) => {
      const ms = object as unknown as ManifestSync;
      ctx.notify('ManifestSync', type, object);
      const key = manifestKey(ms);
      if (type === 'DELETED') {
        sources.unsubscribe(key);
        ctx.drift.release(key);
        queue.forget(key);
        ctx.leftShard('manifestsync', objectKey(ms));
        return;
      }
      ctx.drift.settle(key, ms.status?.inventory);
      void sources
        .watch(key, ms)
        .catch((error: unknown) =>
          logger[error instanceof WatchBudgetError ? 'warn' : 'debug']({ err: errorMessage(error), manifestsync: key }, 'could not watch the source'),
        );
      if (type === 'ADDED' || previous === undefined || !onlyStatusChanged(previous, object)) queue.add(key);
    },
    onError: (error) => logger.warn({ err: errorMessage(error) }, 'ManifestSync watch failed; restarting'),
  });

  /** Whether listing Namespaces failed (the operator may not, or the API server did not answer) before it first listed. */
  let namespacesFailed = false;
  const namespaces = new Informer({
    budget: ctx.budget,
    rest: ctx.rest,
    path: '/api/v1/namespaces',
    project: namespaceProjection,
    onEvent: (type, object, previous) => {
      // A namespace appeared, left, or changed its labels: selectors may now match differently.
      if (
        type === 'MODIFIED' &&
        JSON.stringify(previous?.metadata['labels']) === JSON.stringify(object.metadata['labels']) &&
        previous?.metadata['deletionTimestamp'] === object.metadata['deletionTimestamp']
      )
        return;
      for (const ms of manifestSyncs.list() as unknown as ManifestSync[]) {
        if ((ms.spec.targets as ManifestSync['spec']['targets'] | undefined)?.some((t) => t.namespaceSelector !== undefined) === true)
          queue.add(manifestKey(ms));
      }
    },
    onError: (error) => {
      namespacesFailed = true;
      logger.debug({ err: errorMessage(error) }, 'Namespace watch failed; restarting');
    },
  });
  const namespaceList = (): MirrorNamespace[] | undefined => (namespaces.synced ? mirrorNamespaces(namespaces.list()) : undefined);

  const reconcile = createManifestSyncReconciler({
    ...options,
    intervalBounds: options.intervalBounds ?? DEFAULT_INTERVAL_BOUNDS,
    get: (key) => manifestSyncs.get(key) as ManifestSync | undefined,
    namespaces: namespaceList,
    namespacesListing: () => !namespaces.synced && !namespacesFailed,
    remote,
    beforeApply: (ids, cluster) => ctx.watchBeforeApply(ids, cluster),
  });
  return {
    kind: 'ManifestSync',
    for: manifestSyncs,
    watches: [namespaces],
    namingCluster: (namespace, name) =>
      (manifestSyncs.list() as unknown as ManifestSync[])
        .filter(
          (ms) =>
            ms.metadata.namespace === namespace &&
            (ms.spec.targets as ManifestSync['spec']['targets'] | undefined)?.some((t) => t.cluster?.name === name) === true,
        )
        .map(manifestKey),
    keys: () => manifestSyncs.list().map(manifestKey),
    resyncKeys: () => manifestSyncs.list().map(manifestKey),
    reconcile: (key) => reconcile(key.slice(MANIFESTSYNC_KEY_PREFIX.length)),
    stop: () => sources.stop(),
  };
}

/** The source objects of Immediate-mode ManifestSyncs: one single-object watch per source, shared by the syncs copying it. */
function sourceWatches(ctx: ControllerContext<ManifestSyncKey>): {
  watch(key: ManifestSyncKey, ms: ManifestSync): Promise<void>;
  unsubscribe(key: ManifestSyncKey): void;
  stop(): Promise<void>;
} {
  const { options, queue, logger } = ctx;
  const watches = new Map<string, { informer: Informer; subscribers: Set<ManifestSyncKey> }>();
  const subscriptions = new Map<ManifestSyncKey, string>(); // ManifestSync key → source watch key
  const unsubscribe = (key: ManifestSyncKey): void => {
    const watched = subscriptions.get(key);
    subscriptions.delete(key);
    const entry = watched === undefined ? undefined : watches.get(watched);
    if (watched === undefined || entry === undefined) return;
    entry.subscribers.delete(key);
    if (entry.subscribers.size === 0) {
      watches.delete(watched);
      void entry.informer.stop();
    }
  };
  const watch = async (key: ManifestSyncKey, ms: ManifestSync): Promise<void> => {
    const ref = ms.spec.sourceRef as ManifestSync['spec']['sourceRef'] | undefined;
    if (ms.spec.syncPolicy?.mode === 'Interval' || ref === undefined || ms.metadata.deletionTimestamp !== undefined) {
      unsubscribe(key);
      return;
    }
    const namespace = ref.namespace ?? ms.metadata.namespace ?? 'default';
    // A source the tenancy rule refuses is not watched either (the reconcile reports the refusal).
    const serviceAccount = (ms.spec as { serviceAccountName?: string }).serviceAccountName ?? options.defaultServiceAccount;
    if (
      !allowedWrite({
        objectNamespace: ms.metadata.namespace ?? 'default',
        serviceAccount,
        trusted: options.trusted ?? new Set<string>(),
        targetNamespace: namespace,
      }).allowed
    )
      return unsubscribe(key);
    const info = (await (await options.applyClient(undefined)).discovery()).resource(ref.apiVersion, ref.kind);
    if (info === undefined || !info.namespaced) return unsubscribe(key);
    const watchKey = `${ref.apiVersion}/${ref.kind}/${namespace}/${ref.name}`;
    if (subscriptions.get(key) === watchKey) return;
    unsubscribe(key);
    subscriptions.set(key, watchKey);
    let entry = watches.get(watchKey);
    if (entry === undefined) {
      const subscribers = new Set<ManifestSyncKey>();
      const informer = new Informer({
        budget: ctx.budget,
        rest: ctx.rest,
        path: `${info.group === '' ? '/api' : `/apis/${info.group}`}/${info.version}/namespaces/${namespace}/${info.plural}`,
        fieldSelector: `metadata.name=${ref.name}`,
        // Metadata only: a Secret's data is read when a copy is made, never kept here.
        project: (object) => ({
          apiVersion: object.apiVersion,
          kind: object.kind,
          metadata: { name: object.metadata.name, namespace: object.metadata.namespace, resourceVersion: object.metadata.resourceVersion },
        }),
        onEvent: () => {
          for (const subscriber of subscribers) queue.add(subscriber);
        },
        onError: (error) => logger.debug({ err: errorMessage(error), source: watchKey }, 'source watch failed; restarting'),
      });
      entry = { informer, subscribers };
      watches.set(watchKey, entry);
      informer.start();
    }
    entry.subscribers.add(key);
  };
  return {
    watch,
    unsubscribe,
    async stop() {
      await Promise.all([...watches.values()].map((w) => w.informer.stop()));
    },
  };
}

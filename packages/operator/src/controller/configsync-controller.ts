// The ConfigSync controller: For(ConfigSync, this shard's), Owns(what it applies: the drift watches),
// Watches(Secret/ConfigMap it references; RemoteCluster a target names; ConfigSync it depends on), plus the
// other shards' ConfigSyncs (metadata and Git source only) that a push to this shard's webhook receiver wakes.
import { Informer, objectKey, withUnchangedSpec, withoutManagedFields } from '@syncline/kube';
import type { ConfigSync } from '@syncline/api';
import { createConfigSyncReconciler } from '../reconcile/configsync.ts';
import { createDecryptionContext } from '../reconcile/decryption.ts';
import { DependentsIndex } from '../reconcile/dependencies.ts';
import type { TargetNoop } from '../reconcile/target.ts';
import { createTargetBackoff } from '../remote/backoff.ts';
import type { RemoteClusters } from '../remote/clusters.ts';
import { otherShardsSelector } from '../shard.ts';
import { errorMessage, onlyStatusChanged, type Controller, type ControllerContext } from './controller.ts';

export type ConfigSyncController = {
  readonly controller: Controller;
  /** The other shards' ConfigSyncs (projected: metadata and spec.source.git). */
  readonly otherShards: Informer;
  /** A push (or the CLI) asks `key` to look at its source as it is now, then enqueues it. */
  requestFresh(key: string): void;
};

export function configSyncController(ctx: ControllerContext, remote: RemoteClusters): ConfigSyncController {
  const { options, queue, drift } = ctx;
  /** When a push or a change of the object last asked a ConfigSync (`namespace/name`) to look at its source now. */
  const freshRequests = new Map<string, number>();
  const requestFresh = (key: string): void => {
    freshRequests.set(key, options.clock.now().getTime());
    queue.add(key);
  };
  /** The last clean no-op of each ConfigSync target, by `namespace/name/target`; dropped with the sync. */
  const noopRecords = new Map<string, TargetNoop>();
  /**
   * The targets this process has applied, by the same keys: only their first apply may skip the owner's LIST (see
   * target.ts's FirstApply). Kept when a sync goes: one created again under its name may find objects the first
   * one wrote that the drift watch has not delivered yet, and lists. A key per target name the process has seen.
   */
  const appliedTargets = new Set<string>();
  const forgetNoops = (key: string): void => {
    for (const record of noopRecords.keys()) if (record.startsWith(`${key}/`)) noopRecords.delete(record);
  };
  const indexReferences = (object: ConfigSync, remove: boolean): void => {
    const namespace = object.metadata.namespace ?? 'default';
    ctx.references.index(
      ctx.queue,
      objectKey(object),
      remove
        ? []
        : [
            ...(object.spec.source.git.secretRef !== undefined ? [`${namespace}/Secret/${object.spec.source.git.secretRef.name}`] : []),
            ...(object.spec.source.git.proxySecretRef !== undefined ? [`${namespace}/Secret/${object.spec.source.git.proxySecretRef.name}`] : []),
            ...(object.spec.valuesFrom ?? []).map((v) => `${namespace}/${v.kind}/${v.name}`),
            // The SOPS key Secret: a new or rotated key reconciles at once, as a valuesFrom change does.
            ...(object.spec.decryption?.secretRef !== undefined ? [`${namespace}/Secret/${object.spec.decryption.secretRef.name}`] : []),
            // The chart's credentials: a fixed password is tried at once.
            ...(object.spec.source.helm?.repository?.secretRef !== undefined
              ? [`${namespace}/Secret/${object.spec.source.helm.repository.secretRef.name}`]
              : []),
          ],
    );
  };

  const dependents = new DependentsIndex();

  const configSyncs: Informer = new Informer({
    budget: ctx.budget,
    rest: ctx.rest,
    path: ctx.collection('syncline.dev', 'v1alpha1', 'configsyncs'),
    labelSelector: ctx.shardLabelSelector,
    // Nothing reads a sync's managedFields (its status and spec are what a reconcile reads): most of its bytes.
    // A status write (every reconcile's own comes back so) keeps the spec the cache held: see withUnchangedSpec.
    project: (object, previous) => withUnchangedSpec(withoutManagedFields(object), previous),
    onEvent: (type, object, previous) => {
      // The informer holds untyped objects; this path serves only ConfigSyncs, whose shape the CRD's schema enforces.
      const cs = object as unknown as ConfigSync;
      const key = objectKey(object);
      ctx.notify('ConfigSync', type, object);
      // What the spec names (its references, its dependencies) is indexed anew only for a new spec.
      if (type === 'DELETED' || previous?.['spec'] !== cs.spec) {
        indexReferences(cs, type === 'DELETED');
        dependents.set(key, type === 'DELETED' ? undefined : cs);
      }
      if (type === 'DELETED') {
        // Deleted (the finalizer already ran, on a MODIFIED with a deletionTimestamp) or relabelled to another
        // shard (no deletionTimestamp: nothing is pruned, the new shard adopts the inventory as it stands).
        queue.forget(key);
        drift.release(key);
        forgetNoops(key);
        freshRequests.delete(key);
        ctx.leftShard('configsync', key);
      } else {
        // The namespaces its inventory applied into are the ones its drift watches cover.
        drift.settle(key, cs.status?.inventory);
      }
      // Our own status writes come back as MODIFIED: they change nothing to act on.
      if (type !== 'DELETED' && (type === 'ADDED' || previous === undefined || !onlyStatusChanged(previous, object))) {
        // A new spec or a reconcile request looks at the source as it is from now on (a ref listing begun later).
        requestFresh(key);
        if (cs.spec.source.git.secretRef !== undefined) ctx.wakeReplicationsOf(cs.metadata.namespace ?? 'default');
      }
      // spec.dependsOn: a dependency that became Ready (or stopped being Ready, or left) wakes its dependents.
      if (type !== 'MODIFIED' || previous === undefined || readinessChanged(previous as unknown as ConfigSync, cs)) {
        for (const dependent of dependents.of(key)) queue.add(dependent);
      }
    },
    onError: (error) => ctx.logger.warn({ err: errorMessage(error) }, 'ConfigSync watch failed; restarting'),
  });

  const otherShards = new Informer({
    budget: ctx.budget,
    rest: ctx.rest,
    path: ctx.collection('syncline.dev', 'v1alpha1', 'configsyncs'),
    labelSelector: otherShardsSelector(options.shard),
    project: (object) => {
      const spec = object['spec'] as ConfigSync['spec'] | undefined;
      const git = spec?.source?.git;
      const keys = spec?.decryption?.secretRef;
      const chartAuth = spec?.source?.helm?.repository?.secretRef;
      return {
        apiVersion: object.apiVersion,
        kind: object.kind,
        metadata: { name: object.metadata.name, namespace: object.metadata.namespace, resourceVersion: object.metadata.resourceVersion },
        // secretRefs, decryption: a NamespaceReplication never copies another shard's Git or chart credentials or SOPS keys either.
        spec: {
          source: {
            git: { repo: git?.repo, revision: git?.revision, ...(git?.secretRef === undefined ? {} : { secretRef: git.secretRef }) },
            ...(chartAuth === undefined ? {} : { helm: { repository: { secretRef: chartAuth } } }),
          },
          ...(keys === undefined ? {} : { decryption: { secretRef: keys } }),
        },
      };
    },
    onEvent: () => undefined,
    onError: (error) => ctx.logger.debug({ err: errorMessage(error) }, "other shards' ConfigSync watch failed; restarting"),
  });

  const reconcile = createConfigSyncReconciler({
    ...options,
    // The key Secret's resourceVersion from the reference watch: a steady sync reuses its parsed keys without a GET.
    decryption: createDecryptionContext(
      options.decryption?.services ?? {},
      (namespace, name) => ctx.references.secret(namespace, name)?.metadata.resourceVersion,
    ),
    freshRequest: (key) => freshRequests.get(key),
    // A newer request (another push meanwhile) stands for the next run.
    freshRequestHandled: (key, at) => {
      if (freshRequests.get(key) === at) freshRequests.delete(key);
    },
    remote,
    targetBackoff: createTargetBackoff(),
    remoteWatchesHealthy: (cluster) => drift.remoteHealthy(cluster),
    unwatchedDrift: (ids) => drift.unwatched(ids),
    get: (key) => configSyncs.get(key) as ConfigSync | undefined,
    beforeApply: (ids, cluster) => ctx.watchBeforeApply(ids, cluster),
    noop: {
      records: noopRecords,
      watched: (id, cluster, onStale) => drift.version(id, cluster, onStale),
      firstApply: {
        applied: appliedTargets,
        ownerSeen: (scope, ownerLabel, cluster) => drift.ownerSeen(scope, ownerLabel, cluster),
        // A watch that does not fit the budget leaves the LIST; the write's beforeApply then fails the target saying so.
        watch: (ids, cluster) => ctx.watchBeforeApply(ids, cluster).catch(() => undefined),
      },
    },
  });

  const controller: Controller = {
    kind: 'ConfigSync',
    for: configSyncs,
    watches: [otherShards],
    namingCluster: (namespace, name) =>
      (configSyncs.list() as unknown as ConfigSync[])
        .filter((cs) => cs.metadata.namespace === namespace && cs.spec.targets.some((t) => t.cluster?.name === name))
        .map((cs) => objectKey(cs)),
    keys: () => configSyncs.list().map((o) => objectKey(o)),
    resyncKeys: () => configSyncs.list().map((o) => objectKey(o)),
    async reconcile(key) {
      const outcome = await reconcile(key);
      // After a restart the kinds of the inventory are watched again, whether or not this run wrote anything (a
      // resync with the inventory of the last call, whose kinds all stayed watched, does nothing: see watchInventory).
      const object = configSyncs.get(key) as ConfigSync | undefined;
      await drift
        .watchInventory(key, object?.status?.inventory)
        .catch((error: unknown) => ctx.logger.debug({ err: errorMessage(error) }, 'could not watch managed objects'));
      return outcome;
    },
  };
  return { controller, otherShards, requestFresh };
}

/** What dependents of a ConfigSync look at (see dependencyNotReady): a change wakes them. */
function readiness(cs: ConfigSync): readonly unknown[] {
  const ready = cs.status?.conditions?.find((c) => c.type === 'Ready');
  return [
    cs.metadata.generation,
    cs.status?.observedGeneration,
    ready?.status,
    ready?.reason,
    ready?.observedGeneration,
    cs.status?.sourceRevision,
    cs.status?.lastAttemptedRevision,
    cs.metadata.deletionTimestamp,
  ];
}

/** Whether what dependents of a ConfigSync look at changed (compared as read: every status write comes back through here). */
function readinessChanged(before: ConfigSync, after: ConfigSync): boolean {
  const was = readiness(before);
  const now = readiness(after);
  return was.some((value, i) => value !== now[i]);
}

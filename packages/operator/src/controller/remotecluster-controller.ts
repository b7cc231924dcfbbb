// The RemoteCluster controller: For(RemoteCluster), Watches(Secret: the kubeconfig it reads). RemoteClusters are
// probed on an interval and whenever a Secret they read changes; their clients are cached per credentials
// version (remote/clusters.ts) and lent to every controller with targets in other clusters.
import { Informer, objectKey, type KubeObject } from '@syncline/kube';
import type { RemoteCluster } from '@syncline/api';
import { DEFAULT_INTERVAL_BOUNDS } from '../reconcile/configsync.ts';
import { REMOTECLUSTER_KEY_PREFIX, createRemoteClusterReconciler } from '../reconcile/remotecluster.ts';
import { createRemoteClusters, type RemoteClusters } from '../remote/clusters.ts';
import { inShard } from '../shard.ts';
import { errorMessage, onlyStatusChanged, type Controller, type ControllerContext, type ControllerKeys } from './controller.ts';

export function remoteClusterController(ctx: ControllerContext<ControllerKeys['RemoteCluster']>): {
  controller: Controller<ControllerKeys['RemoteCluster']>;
  remote: RemoteClusters;
} {
  const { options, rest, logger, queue } = ctx;
  const remoteKey = (object: { metadata: { name: string; namespace?: string } }): ControllerKeys['RemoteCluster'] =>
    `${REMOTECLUSTER_KEY_PREFIX}${objectKey(object)}`;
  // Every shard watches every RemoteCluster (the syncs of any shard may target it), but only the shard its
  // label selects probes it and writes its status: one writer per object, as with the syncs.
  const probedHere = (rc: RemoteCluster): boolean => inShard(options.shard, rc.metadata.labels);
  const remoteClusters = new Informer({
    budget: ctx.budget,
    rest,
    path: ctx.collection('syncline.dev', 'v1alpha1', 'remoteclusters'),
    onEvent: (type, object, previous) => {
      const rc = object as unknown as RemoteCluster;
      ctx.notify('RemoteCluster', type, object);
      const key = remoteKey(rc);
      const namespace = rc.metadata.namespace ?? 'default';
      ctx.references.index(ctx.queue, key, type === 'DELETED' ? [] : remote.secretsOf(rc.spec).map((name) => `${namespace}/Secret/${name}`));
      if (type === 'DELETED' || !probedHere(rc)) queue.forget(key);
      else if (type === 'ADDED' || previous === undefined || !onlyStatusChanged(previous, object)) queue.add(key);
      // A Secret that became a credential leaves the standby now, not at the next relist.
      if (type !== 'DELETED' && (previous === undefined || !onlyStatusChanged(previous, object))) ctx.wakeReplicationsOf(namespace);
      // Appeared, left, reachable again (or no longer): every object with a target there runs now rather than
      // at its next retry; one that ran before this cache held the RemoteCluster would otherwise keep saying it
      // does not exist.
      const ready = (o: KubeObject | undefined): string | undefined =>
        (o as RemoteCluster | undefined)?.status?.conditions?.find((c) => c.type === 'Ready')?.status;
      if (type !== 'MODIFIED' || ready(previous) !== ready(object)) ctx.wakeNamingCluster(namespace, rc.metadata.name);
    },
    onError: (error) => logger.warn({ err: errorMessage(error) }, 'RemoteCluster watch failed; restarting'),
  });
  const remote = createRemoteClusters({
    rest,
    getRemoteCluster: (key) => remoteClusters.get(key) as RemoteCluster | undefined,
    secretVersion: (namespace, name) => ctx.references.secret(namespace, name)?.metadata.resourceVersion,
    allowInsecureHttp: options.allowInsecureRemote === true,
    allowInsecureTLS: options.allowInsecureRemote === true,
    ...(options.writeFence === undefined ? {} : { writeFence: options.writeFence }),
  });
  const reconcileRemote = createRemoteClusterReconciler({
    rest,
    remote,
    clock: options.clock,
    logger,
    events: options.events,
    get: (key) => remoteClusters.get(key) as RemoteCluster | undefined,
    intervalBounds: options.intervalBounds ?? DEFAULT_INTERVAL_BOUNDS,
  });
  const controller: Controller<ControllerKeys['RemoteCluster']> = {
    kind: 'RemoteCluster',
    for: remoteClusters,
    watches: [],
    keys: () => (remoteClusters.list() as unknown as RemoteCluster[]).filter(probedHere).map(remoteKey),
    reconcile: (key) => {
      const name = key.slice(REMOTECLUSTER_KEY_PREFIX.length);
      // A Secret it reads changed, but another shard probes it: that shard's own Secret watch wakes it.
      const rc = remoteClusters.get(name) as RemoteCluster | undefined;
      if (rc !== undefined && !probedHere(rc)) return Promise.resolve({ kind: 'done' });
      return reconcileRemote(name);
    },
  };
  return { controller, remote };
}

/** The RemoteClusters a metrics scrape reports: those this shard probes. */
export function probedRemoteClusters(shard: string | undefined, objects: readonly KubeObject[]): KubeObject[] {
  return objects.filter((o) => inShard(shard, (o as unknown as RemoteCluster).metadata.labels));
}

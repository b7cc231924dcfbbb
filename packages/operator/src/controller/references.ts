// Watches(Secret), Watches(ConfigMap): the Secrets and ConfigMaps objects reference (a ConfigSync's Git
// credentials and valuesFrom, a RemoteCluster's kubeconfig) wake the objects that reference them. Metadata only:
// Secret data never sits in this process's cache.
//
// A Secret watch gone silent (a dropped stream) would hide a rotation: asking for a Secret restarts a watch not
// heard from within WATCH_FRESH_MS, and the change it missed arrives as an event, waking the referencing objects.
import { Informer, type KubeObject, type KubeRest, type WatchBudget } from '@syncline/kube';
import type { Logger } from 'pino';
import type { ControllerQueue } from '@syncline/runtime';

export type ReferenceWatches = {
  /**
   * `key` (of the controller whose lane `queue` is) is woken when any of `refs` (`namespace/Kind/name`) changes;
   * replaces what `key` referenced before.
   */
  index(queue: ControllerQueue<string>, key: string, refs: readonly string[]): void;
  /** A Secret's metadata, as the watch last saw it (a watch gone silent is restarted: see the module comment). */
  secret(namespace: string, name: string): KubeObject | undefined;
  /** The watches (Secrets, one per namespace with --secret-namespaces; ConfigMaps). */
  readonly informers: readonly Informer[];
};

export function createReferenceWatches(input: {
  rest: KubeRest;
  budget: WatchBudget;
  logger: Logger;
  collection: (group: string, version: string, plural: string) => string;
  secretNamespaces: readonly string[] | undefined;
}): ReferenceWatches {
  const { rest, budget, logger } = input;
  // By reference, the keys it wakes, by the lane they belong to.
  const references = new Map<string, Map<ControllerQueue<string>, Set<string>>>();
  const informer = (kind: 'Secret' | 'ConfigMap', plural: string, namespace?: string): Informer =>
    new Informer({
      budget,
      rest,
      path: namespace === undefined ? input.collection('', 'v1', plural) : `/api/v1/namespaces/${namespace}/${plural}`,
      project: (object) => ({
        apiVersion: object.apiVersion,
        kind,
        metadata: { name: object.metadata.name, namespace: object.metadata.namespace, resourceVersion: object.metadata.resourceVersion },
      }),
      onEvent: (_type, object) => {
        for (const [queue, keys] of references.get(`${object.metadata.namespace ?? ''}/${kind}/${object.metadata.name}`) ?? [])
          for (const key of keys) queue.add(key);
      },
      onError: (error) => logger.warn({ err: error instanceof Error ? error.message : String(error) }, `${kind} watch failed; restarting`),
    });
  // One cluster-wide (or watchNamespace) watch, or one per namespace the operator may read Secrets in.
  const secrets = new Map<string, Informer>(
    input.secretNamespaces === undefined ? [['', informer('Secret', 'secrets')]] : input.secretNamespaces.map((n) => [n, informer('Secret', 'secrets', n)]),
  );
  const configMaps = informer('ConfigMap', 'configmaps');
  return {
    index(queue, key, refs) {
      for (const byQueue of references.values()) byQueue.get(queue)?.delete(key);
      for (const ref of refs) {
        const byQueue = references.get(ref) ?? new Map<ControllerQueue<string>, Set<string>>();
        const set = byQueue.get(queue) ?? new Set<string>();
        set.add(key);
        byQueue.set(queue, set);
        references.set(ref, byQueue);
      }
    },
    secret: (namespace, name) => {
      const informer = secrets.get(namespace) ?? secrets.get('');
      informer?.freshOrRestart();
      return informer?.get(`${namespace}/${name}`);
    },
    informers: [...secrets.values(), configMaps],
  };
}

// Watches(Secret), Watches(ConfigMap): the Secrets and ConfigMaps objects reference (a ConfigSync's Git
// credentials and valuesFrom, a RemoteCluster's kubeconfig) wake the objects that reference them. Metadata only:
// Secret data never sits in this process's cache.
//
// A Secret watch gone silent (a dropped stream) would hide a rotation: asking for a Secret restarts a watch not
// heard from within WATCH_FRESH_MS, and the change it missed arrives as an event, waking the referencing objects.
import { Informer, type KubeObject, type KubeRest, type WatchBudget } from '@syncline/kube';
import type { Logger } from 'pino';
import type { WorkQueue } from '@syncline/runtime';

export type ReferenceWatches = {
  /** `key` is woken when any of `refs` (`namespace/Kind/name`) changes; replaces what `key` referenced before. */
  index(key: string, refs: readonly string[]): void;
  /** A Secret's metadata, as the watch last saw it (a watch gone silent is restarted: see the module comment). */
  secret(namespace: string, name: string): KubeObject | undefined;
  /** The watches (Secrets, one per namespace with --secret-namespaces; ConfigMaps). */
  readonly informers: readonly Informer[];
};

export function createReferenceWatches(input: {
  rest: KubeRest;
  budget: WatchBudget;
  logger: Logger;
  queue: WorkQueue;
  collection: (group: string, version: string, plural: string) => string;
  secretNamespaces: readonly string[] | undefined;
}): ReferenceWatches {
  const { rest, budget, logger, queue } = input;
  const references = new Map<string, Set<string>>();
  const informer = (kind: 'Secret' | 'ConfigMap', plural: string, namespace?: string): Informer =>
    new Informer({
      budget,
      rest,
      path: namespace === undefined ? input.collection('', 'v1', plural) : `/api/v1/namespaces/${namespace}/${plural}`,
      project: (object) => ({ apiVersion: object.apiVersion, kind, metadata: { name: object.metadata.name, namespace: object.metadata.namespace, resourceVersion: object.metadata.resourceVersion } }),
      onEvent: (_type, object) => {
        for (const key of references.get(`${object.metadata.namespace ?? ''}/${kind}/${object.metadata.name}`) ?? []) queue.add(key);
      },
      onError: (error) => logger.warn({ err: error instanceof Error ? error.message : String(error) }, `${kind} watch failed; restarting`),
    });
  // One cluster-wide (or watchNamespace) watch, or one per namespace the operator may read Secrets in.
  const secrets = new Map<string, Informer>(input.secretNamespaces === undefined ? [['', informer('Secret', 'secrets')]] : input.secretNamespaces.map((n) => [n, informer('Secret', 'secrets', n)]));
  const configMaps = informer('ConfigMap', 'configmaps');
  return {
    index(key, refs) {
      for (const set of references.values()) set.delete(key);
      for (const ref of refs) {
        const set = references.get(ref) ?? new Set<string>();
        set.add(key);
        references.set(ref, set);
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

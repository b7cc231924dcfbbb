// Fixtures for the mirror unit tests: small object builders with the defaults a test does not care about.
import type { KubeObject } from '@syncline/apply';
import { mirrorKeys } from './labels.ts';
import type { MirrorNamespace } from './targets.ts';

export const keys = mirrorKeys();

export function secret(init: {
  namespace?: string;
  name?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  data?: Record<string, string>;
  type?: string;
  extra?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: init.name ?? 'db',
      namespace: init.namespace ?? 'dev',
      ...(init.labels === undefined ? {} : { labels: init.labels }),
      ...(init.annotations === undefined ? {} : { annotations: init.annotations }),
      ...init.metadata,
    },
    ...(init.type === undefined ? {} : { type: init.type }),
    ...(init.data === undefined ? {} : { data: init.data }),
    ...init.extra,
  };
}

export function configMap(init: {
  namespace?: string;
  name?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: init.name ?? 'app',
      namespace: init.namespace ?? 'dev',
      ...(init.labels === undefined ? {} : { labels: init.labels }),
      ...(init.annotations === undefined ? {} : { annotations: init.annotations }),
    },
    ...(init.data === undefined ? {} : { data: init.data }),
    ...(init.binaryData === undefined ? {} : { binaryData: init.binaryData }),
  };
}

/** A source Secret `dev/db` labelled for mirroring with the given annotations. */
export function source(annotations: Record<string, string>, labels: Record<string, string> = {}): KubeObject {
  return secret({ labels: { [keys.syncSource]: 'true', ...labels }, annotations, data: { password: 'cw==' } });
}

export function namespaces(...names: (string | MirrorNamespace)[]): MirrorNamespace[] {
  return names.map((entry) => (typeof entry === 'string' ? { name: entry } : entry));
}

/** A replica of `dev/db` (or `source`) as mirroring writes it. */
export function replicaOf(init: {
  namespace: string;
  source?: string;
  name?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  data?: Record<string, string>;
  uid?: string;
  resourceVersion?: string;
}): KubeObject {
  return secret({
    namespace: init.namespace,
    name: init.name ?? (init.source ?? 'dev/db').split('/')[1] ?? 'db',
    labels: { [keys.syncReplica]: 'true', ...init.labels },
    annotations: { [keys.source]: init.source ?? 'dev/db', ...init.annotations },
    ...(init.data === undefined ? {} : { data: init.data }),
    metadata: {
      ...(init.uid === undefined ? {} : { uid: init.uid }),
      ...(init.resourceVersion === undefined ? {} : { resourceVersion: init.resourceVersion }),
    },
  });
}

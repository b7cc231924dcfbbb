// What the mirror controller keeps of a Secret or ConfigMap in its long-lived caches: identity, the
// mirroring and ownership marks, and a fingerprint of the rest. Never a data value: sources are read with
// a GET when they are reconciled, replicas when they are written, so Secret data does not sit in memory.
import { createHash } from 'node:crypto';
import { APPLIED_DIGEST_ANNOTATION, OWNED_BY_ANNOTATION, OWNERSHIP_LABELS, type KubeObject } from '@syncline/apply';
import type { MirrorKeys } from './labels.ts';

/** A cached source or replica: metadata (only the keys mirroring reads) and a fingerprint of its content. */
export type MirrorCacheObject = KubeObject & {
  /** {@link contentFingerprint} of the object as the API server stored it. */
  readonly fingerprint: string;
};

function pick(map: unknown, wanted: (key: string) => boolean): Record<string, string> | undefined {
  if (typeof map !== 'object' || map === null) return undefined;
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(map as Record<string, unknown>)) if (wanted(key) && typeof value === 'string') out[key] = value;
  return Object.keys(out).length === 0 ? undefined : out;
}

const sortedJson = (value: unknown): string => {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${sortedJson(v)}`).join(',')}}`;
};

/**
 * sha256 of what a replica's consumers and the apply engine see: data, binaryData, type, immutable, labels and
 * annotations. A replica event whose fingerprint is the one we wrote is our own write coming back and needs no
 * reconcile; any other fingerprint (a hand edit, someone else's write) does. A wrong guess costs one no-op
 * reconcile, never a missed edit: only an exact match is skipped.
 */
export function contentFingerprint(object: KubeObject): string {
  const content = {
    data: object['data'] ?? {},
    binaryData: object['binaryData'] ?? {},
    type: object.kind === 'Secret' ? (typeof object['type'] === 'string' && object['type'] !== '' ? object['type'] : 'Opaque') : null,
    immutable: object['immutable'] === true,
    labels: object.metadata.labels ?? {},
    annotations: object.metadata.annotations ?? {},
  };
  return createHash('sha256').update(sortedJson(content)).digest('base64url');
}

/** The projection the source and replica informers store (see the module comment). */
export function projectMirrorObject(object: KubeObject, keys: MirrorKeys): MirrorCacheObject {
  const mine = (key: string): boolean => key.startsWith(`${keys.prefix}/`);
  const { metadata } = object;
  const labels = pick(metadata.labels, (key) => mine(key) || OWNERSHIP_LABELS.includes(key));
  const annotations = pick(metadata.annotations, (key) => mine(key) || key === OWNED_BY_ANNOTATION || key === APPLIED_DIGEST_ANNOTATION);
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: {
      name: metadata.name,
      ...(metadata.namespace === undefined ? {} : { namespace: metadata.namespace }),
      ...(metadata.uid === undefined ? {} : { uid: metadata.uid }),
      ...(metadata.resourceVersion === undefined ? {} : { resourceVersion: metadata.resourceVersion }),
      ...(typeof metadata['creationTimestamp'] === 'string' ? { creationTimestamp: metadata['creationTimestamp'] } : {}),
      ...(labels === undefined ? {} : { labels }),
      ...(annotations === undefined ? {} : { annotations }),
    },
    ...(typeof object['type'] === 'string' ? { type: object['type'] } : {}),
    ...(object['immutable'] === true ? { immutable: true } : {}),
    fingerprint: contentFingerprint(object),
  };
}

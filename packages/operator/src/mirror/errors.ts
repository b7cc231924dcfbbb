// One error type for the pure mirroring functions. The message always starts with the object it is about
// (`Secret dev/db: ...`) so an Event or condition built from it needs no more context, and it never carries a
// data value (sources are often Secrets).

export const MirrorErrorReason = {
  /** The mirroring labels/annotations of a source cannot be read (bad strategy, bad glob, no targets). */
  InvalidSpec: 'InvalidSpec',
  /** Label-driven mirroring handles Secrets and ConfigMaps only. */
  UnsupportedKind: 'UnsupportedKind',
  /** The object must never be copied (a service-account token Secret). */
  NotCopyable: 'NotCopyable',
  /** The existing object at the target is not a replica of this source: it is never overwritten. */
  NotOurReplica: 'NotOurReplica',
  /** A ManifestSync patch is not a JSON merge patch, or tries to move the copy (name/namespace). */
  InvalidPatch: 'InvalidPatch',
  /** The mirror prefix (a flag) is not a DNS subdomain. */
  InvalidPrefix: 'InvalidPrefix',
} as const;
export type MirrorErrorReason = (typeof MirrorErrorReason)[keyof typeof MirrorErrorReason];

export class MirrorError extends Error {
  override readonly name = 'MirrorError';
  readonly reason: MirrorErrorReason;
  /** `Kind namespace/name` of the object the error is about, or '' when it is about configuration. */
  readonly object: string;

  constructor(init: { reason: MirrorErrorReason; object: string; detail: string }) {
    super(init.object === '' ? init.detail : `${init.object}: ${init.detail}`);
    this.reason = init.reason;
    this.object = init.object;
  }
}

export function isMirrorError(error: unknown): error is MirrorError {
  return error instanceof MirrorError;
}

/** `Secret dev/db`: how errors, events and reports name an object. */
export function describeObject(object: { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } }): string {
  const kind = typeof object.kind === 'string' ? object.kind : 'object';
  const name = typeof object.metadata?.name === 'string' ? object.metadata.name : '?';
  const namespace = typeof object.metadata?.namespace === 'string' ? object.metadata.namespace : '';
  return namespace === '' ? `${kind} ${name}` : `${kind} ${namespace}/${name}`;
}

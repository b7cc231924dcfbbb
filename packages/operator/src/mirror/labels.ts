// The label and annotation names of label-driven mirroring, under a configurable prefix
// (`--mirror-prefix mirrorverse.dev` lets a cluster labelled for Mirrorverse switch without relabelling).
import { createHash } from 'node:crypto';
import { MirrorError, MirrorErrorReason } from './errors.ts';

export const DEFAULT_MIRROR_PREFIX = 'syncline.dev';

export interface MirrorKeys {
  readonly prefix: string;
  /** Label on a source: `"true"` opts the object in. */
  readonly syncSource: string;
  /** Annotation (comma-separated names and globs) or label (dash-separated names, the Mirrorverse form) on a source. */
  readonly targets: string;
  /** Annotation or label on a source, same two forms as `targets`: namespaces that never receive it. */
  readonly exclude: string;
  /** Annotation or label on a source: `override` (default) or `patch`. */
  readonly strategy: string;
  /** Label on a replica: `"true"`. What the replica watch selects. */
  readonly syncReplica: string;
  /** Annotation on a replica: `namespace/name` of its source, readable. */
  readonly source: string;
  /** Label on a replica: {@link sourceRefHash} of its source, so the replicas of one source are one selector. */
  readonly sourceHash: string;
  /** Label on a replica whose source is gone or no longer a source: `"true"`. */
  readonly stale: string;
  /** Annotation on a stale replica: when it became stale (RFC 3339; a label value cannot hold `:`). */
  readonly staleSince: string;
  /** Label on a namespace: `disabled` means it receives no replica. */
  readonly namespaceMirror: string;
  /**
   * Label on a namespace: `"true"` accepts replicas from sources in untrusted namespaces (a source in a
   * trusted namespace needs no such consent; see tenancy.ts).
   */
  readonly namespaceAccept: string;
}

/** `<prefix>/mirror: disabled` on a namespace. */
export const NAMESPACE_MIRROR_DISABLED = 'disabled';

// A DNS-1123 subdomain, as Kubernetes requires of a label/annotation prefix.
const SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function mirrorKeys(prefix: string = DEFAULT_MIRROR_PREFIX): MirrorKeys {
  if (!SUBDOMAIN.test(prefix)) {
    throw new MirrorError({
      reason: MirrorErrorReason.InvalidPrefix,
      object: '',
      detail: `mirror prefix ${JSON.stringify(prefix)} is not a DNS subdomain (e.g. syncline.dev)`,
    });
  }
  return {
    prefix,
    syncSource: `${prefix}/sync-source`,
    targets: `${prefix}/targets`,
    exclude: `${prefix}/exclude`,
    strategy: `${prefix}/strategy`,
    syncReplica: `${prefix}/sync-replica`,
    source: `${prefix}/source`,
    sourceHash: `${prefix}/source-hash`,
    stale: `${prefix}/stale`,
    staleSince: `${prefix}/stale-since`,
    namespaceMirror: `${prefix}/mirror`,
    namespaceAccept: `${prefix}/accept-replicas`,
  };
}

/** Every key a mirroring source or replica may carry; a copy strips them all (a copy never becomes a source). */
export function mirrorObjectKeys(keys: MirrorKeys): readonly string[] {
  return [keys.syncSource, keys.targets, keys.exclude, keys.strategy, keys.syncReplica, keys.source, keys.sourceHash, keys.stale, keys.staleSince];
}

export interface SourceRef {
  readonly namespace: string;
  readonly name: string;
}

/** `namespace/name`: the replica's source annotation, and the key maps of sources use. */
export function formatSourceRef(ref: SourceRef): string {
  return `${ref.namespace}/${ref.name}`;
}

/** The inverse of {@link formatSourceRef}; `undefined` for anything that is not exactly `namespace/name`. */
export function parseSourceRef(text: string | undefined): SourceRef | undefined {
  if (text === undefined) return undefined;
  const parts = text.split('/');
  if (parts.length !== 2) return undefined;
  const [namespace = '', name = ''] = parts;
  if (namespace === '' || name === '') return undefined;
  return { namespace, name };
}

/**
 * The value of the replica's `<prefix>/source-hash` label: the first 40 hex digits of sha256(`namespace/name`).
 *
 * Why a hash and not `source-namespace` + `source-name` labels: a label value holds at most 63 characters of
 * [A-Za-z0-9._-], and a Secret or ConfigMap name may be 253 characters long, so a name label would fail for
 * some sources; the hash always fits and the replicas of one source are one equality selector
 * (`<prefix>/source-hash=<hash>`, what a controller needs to list or delete them). The kind is not hashed:
 * replicas have the source's kind and are listed per kind. Anyone can compute it
 * (`printf dev/db | sha256sum | cut -c1-40`), and the readable `<prefix>/source: namespace/name` annotation is
 * what identifies the source (the label is only an index; see conflicts.ts). Same shape as the apply
 * engine's owner label.
 */
export function sourceRefHash(ref: SourceRef): string {
  return createHash('sha256').update(formatSourceRef(ref)).digest('hex').slice(0, 40);
}

/** A label selector (the string form a LIST/WATCH takes) for the replicas of one source, or of all sources. */
export function replicaSelector(keys: MirrorKeys, source?: SourceRef): string {
  const all = `${keys.syncReplica}=true`;
  return source === undefined ? all : `${all},${keys.sourceHash}=${sourceRefHash(source)}`;
}

/** A label selector for the sources (the source watch must select: unrelated Secrets stay out of memory). */
export function sourceSelector(keys: MirrorKeys): string {
  return `${keys.syncSource}=true`;
}

type Labelled = { readonly metadata?: { readonly labels?: Readonly<Record<string, string>> | undefined } | undefined };

export function isMirrorSource(object: Labelled, keys: MirrorKeys): boolean {
  return object.metadata?.labels?.[keys.syncSource] === 'true';
}

export function isMirrorReplica(object: Labelled, keys: MirrorKeys): boolean {
  return object.metadata?.labels?.[keys.syncReplica] === 'true';
}

/** Whether a namespace opted out of receiving replicas (`<prefix>/mirror: disabled`). */
export function isMirrorDisabled(namespace: { readonly labels?: Readonly<Record<string, string>> | undefined }, keys: MirrorKeys): boolean {
  return namespace.labels?.[keys.namespaceMirror] === NAMESPACE_MIRROR_DISABLED;
}

/** Whether a namespace accepts replicas from sources in untrusted namespaces (`<prefix>/accept-replicas: "true"`). */
export function acceptsReplicas(namespace: { readonly labels?: Readonly<Record<string, string>> | undefined }, keys: MirrorKeys): boolean {
  return namespace.labels?.[keys.namespaceAccept] === 'true';
}

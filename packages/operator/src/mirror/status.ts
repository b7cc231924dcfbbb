// The rows of `syncline status --mirrors` and of the controller's mirrors(): one per (source, target
// namespace), computed from labels and annotations of live objects only, so the CLI needs no operator.
import { OWNED_BY_ANNOTATION, type KubeObject } from '@syncline/apply';
import { claimOf, classifyExisting, decideTargetOwner, type SourceClaim } from './conflicts.ts';
import { isMirrorError } from './errors.ts';
import type { NamePattern } from './glob.ts';
import { formatSourceRef, parseSourceRef, type MirrorKeys } from './labels.ts';
import { parseMirrorSpec } from './spec.ts';
import { SkipReason, mayBeMirrorSource, resolveTargetNamespaces, type MirrorNamespace, type TargetResolution } from './targets.ts';
import { NAMESPACE_NOT_ALLOWED, type TrustedNamespaces } from '../tenancy.ts';

export const MirrorState = {
  /** The replica exists and is this source's. */
  Synced: 'synced',
  /** Its source is gone; the replica is labelled stale and left (`--mirror-stale mark`). */
  Stale: 'stale',
  /** Another object holds the name: a foreign object, or another source's replica. Never overwritten. */
  Conflict: 'conflict',
  /** Targeted, nothing there yet (being written, or the write failed). */
  Missing: 'missing',
  /** The write failed (controller rows only). */
  Failed: 'failed',
  /** The source's labels/annotations cannot be read; its replicas are left as they are. */
  Invalid: 'invalid',
  /**
   * The source's namespace may not be a source (`--mirror-source-namespaces`), or (a row per namespace) the
   * source's namespace is not trusted and the target namespace does not accept replicas: nothing is written.
   */
  NotAllowed: 'not-allowed',
} as const;
export type MirrorState = (typeof MirrorState)[keyof typeof MirrorState];

export interface MirrorRow {
  readonly kind: string;
  /** `namespace/name` of the source. */
  readonly source: string;
  /** The target namespace; '' for a row about the source itself (invalid, not allowed). */
  readonly namespace: string;
  readonly state: MirrorState;
  readonly message?: string;
}

export function compareRows(a: MirrorRow, b: MirrorRow): number {
  const x = `${a.kind}\u0000${a.source}\u0000${a.namespace}`;
  const y = `${b.kind}\u0000${b.source}\u0000${b.namespace}`;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** A source's resolution, or the MirrorError message when its spec does not parse. */
export function resolveSource(input: {
  readonly source: KubeObject;
  readonly namespaces: readonly MirrorNamespace[];
  readonly keys: MirrorKeys;
  readonly sourceNamespaces: readonly NamePattern[];
  /** Trusted namespaces (tenancy.ts): their sources need no consent from the namespaces they target. */
  readonly trusted: TrustedNamespaces;
}): { readonly resolution: TargetResolution; readonly strategy: string } | { readonly invalid: string } {
  try {
    const spec = parseMirrorSpec(input.source, input.keys);
    const resolution = resolveTargetNamespaces({
      spec,
      namespaces: input.namespaces,
      keys: input.keys,
      sourceNamespaceAllowed: mayBeMirrorSource(spec.source.namespace, input.sourceNamespaces),
      sourceTrusted: input.trusted.has(spec.source.namespace),
    });
    return { resolution, strategy: spec.strategy };
  } catch (error) {
    if (isMirrorError(error)) return { invalid: error.message };
    throw error;
  }
}

/**
 * Rows from live objects: every source (label-selected) against the namespaces, its replicas, and `occupied`
 * (objects found at targets that have no replica of the source: `kind/namespace/name` → the object, which
 * may be another source's replica or a foreign object). Replicas whose source is gone are listed as stale
 * when marked so, otherwise as `missing` source rows the controller will clean up.
 */
export function mirrorStatusRows(input: {
  readonly sources: readonly KubeObject[];
  readonly replicas: readonly KubeObject[];
  readonly namespaces: readonly MirrorNamespace[];
  readonly occupied: ReadonlyMap<string, KubeObject>;
  readonly keys: MirrorKeys;
  readonly sourceNamespaces: readonly NamePattern[];
  readonly trusted: TrustedNamespaces;
}): MirrorRow[] {
  const { keys } = input;
  const rows: MirrorRow[] = [];
  const replicaAt = new Map<string, KubeObject>(input.replicas.map((r) => [`${r.kind}/${r.metadata.namespace ?? ''}/${r.metadata.name}`, r]));
  const claims = new Map<string, SourceClaim[]>(); // kind/ns/name of a target → claimants
  const resolved = new Map<string, ReturnType<typeof resolveSource>>();
  for (const source of input.sources) {
    const key = `${source.kind}/${formatSourceRef(claimOf(source))}`;
    const result = resolveSource({ source, namespaces: input.namespaces, keys, sourceNamespaces: input.sourceNamespaces, trusted: input.trusted });
    resolved.set(key, result);
    if ('invalid' in result) continue;
    for (const namespace of result.resolution.namespaces) {
      const target = `${source.kind}/${namespace}/${source.metadata.name}`;
      claims.set(target, [...(claims.get(target) ?? []), claimOf(source)]);
    }
  }
  const seenReplicas = new Set<string>();
  for (const source of input.sources) {
    const ref = claimOf(source);
    const sourceText = formatSourceRef(ref);
    const result = resolved.get(`${source.kind}/${sourceText}`);
    if (result === undefined) continue;
    if ('invalid' in result) {
      rows.push({ kind: source.kind, source: sourceText, namespace: '', state: MirrorState.Invalid, message: result.invalid });
      continue;
    }
    if (!result.resolution.sourceAllowed) {
      rows.push({
        kind: source.kind,
        source: sourceText,
        namespace: '',
        state: MirrorState.NotAllowed,
        message: `namespace ${ref.namespace} may not hold mirroring sources (--mirror-source-namespaces)`,
      });
      continue;
    }
    rows.push(...notAcceptedRows(source.kind, sourceText, result.resolution, keys));
    for (const namespace of result.resolution.namespaces) {
      const target = `${source.kind}/${namespace}/${source.metadata.name}`;
      const existing = replicaAt.get(target) ?? input.occupied.get(target);
      const decision = decideTargetOwner({ claimants: claims.get(target) ?? [ref], existing, keys });
      const found = classifyExisting({ existing, source: ref, keys });
      if (found.kind === 'ours') {
        seenReplicas.add(target);
        const stale = existing?.metadata.labels?.[keys.stale] === 'true';
        rows.push({ kind: source.kind, source: sourceText, namespace, state: stale ? MirrorState.Stale : MirrorState.Synced });
      } else if (found.kind === 'foreign') {
        rows.push({
          kind: source.kind,
          source: sourceText,
          namespace,
          state: MirrorState.Conflict,
          message: `a ${source.kind} of that name exists and is not a replica${ownerNote(existing)}: left alone`,
        });
      } else if (found.kind === 'other-replica') {
        rows.push({ kind: source.kind, source: sourceText, namespace, state: MirrorState.Conflict, message: `held by the replica of ${found.source}` });
      } else if (decision.kind === 'owner' && formatSourceRef(decision.owner) !== sourceText) {
        rows.push({
          kind: source.kind,
          source: sourceText,
          namespace,
          state: MirrorState.Conflict,
          message: `${formatSourceRef(decision.owner)} targets it too and came first`,
        });
      } else {
        rows.push({ kind: source.kind, source: sourceText, namespace, state: MirrorState.Missing });
      }
    }
  }
  // Replicas no row above accounts for: stale ones (source gone) and ones about to be cleaned up.
  for (const replica of input.replicas) {
    const target = `${replica.kind}/${replica.metadata.namespace ?? ''}/${replica.metadata.name}`;
    if (seenReplicas.has(target)) continue;
    const ref = parseSourceRef(replica.metadata.annotations?.[keys.source]);
    const stale = replica.metadata.labels?.[keys.stale] === 'true';
    rows.push({
      kind: replica.kind,
      source: ref === undefined ? '?' : formatSourceRef(ref),
      namespace: replica.metadata.namespace ?? '',
      state: MirrorState.Stale,
      message: stale ? `source gone since ${replica.metadata.annotations?.[keys.staleSince] ?? '?'}` : 'no longer targeted or source gone: to be cleaned up',
    });
  }
  return rows.sort(compareRows);
}

/** A row per namespace the source targets that refuses it (untrusted source, no `<prefix>/accept-replicas`). */
export function notAcceptedRows(kind: string, source: string, resolution: TargetResolution, keys: MirrorKeys): MirrorRow[] {
  return resolution.skipped
    .filter((s) => s.reason === SkipReason.NotAccepted)
    .map((s) => ({
      kind,
      source,
      namespace: s.namespace,
      state: MirrorState.NotAllowed,
      message: `${NAMESPACE_NOT_ALLOWED}: namespace ${source.split('/')[0] ?? ''} is not trusted and ${s.namespace} does not accept replicas (label ${keys.namespaceAccept}: "true"); nothing written`,
    }));
}

function ownerNote(existing: KubeObject | undefined): string {
  const owner = existing?.metadata.annotations?.[OWNED_BY_ANNOTATION];
  return owner === undefined ? '' : ` (managed by ${owner})`;
}

export function formatMirrorRows(rows: readonly MirrorRow[]): string {
  const table = [
    ['KIND', 'SOURCE', 'TARGET', 'STATE', 'MESSAGE'],
    ...rows.map((r) => [r.kind, r.source, r.namespace === '' ? '-' : r.namespace, r.state, r.message ?? '']),
  ];
  const widths = table[0]?.map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length))) ?? [];
  return `${table
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

// Which namespaces receive a copy: label-driven mirroring's targets/exclude against the namespaces that exist,
// ManifestSync targets (names and label selectors), and which namespaces may be sources at all.
import type { KubeObject as InformerObject } from '@syncline/kube';
import { MirrorError, MirrorErrorReason } from './errors.ts';
import { matchesPattern, parsePatternList, type NamePattern } from './glob.ts';
import { acceptsReplicas, isMirrorDisabled, type MirrorKeys, type SourceRef } from './labels.ts';
import type { MirrorSpec, NamespaceList } from './spec.ts';

/** A namespace as the resolvers need it (from the namespace watch). */
export interface MirrorNamespace {
  readonly name: string;
  readonly labels?: Readonly<Record<string, string>> | undefined;
  /** `status.phase`: `Terminating` receives nothing. */
  readonly phase?: string | undefined;
  /** Set once the namespace is being deleted (before the phase says so). */
  readonly deletionTimestamp?: string | undefined;
}

/** What a Namespace informer keeps of each Namespace: what target selection reads, nothing more. */
export function namespaceProjection(object: InformerObject): InformerObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: object.metadata.name,
      resourceVersion: object.metadata.resourceVersion,
      labels: object.metadata['labels'],
      deletionTimestamp: object.metadata['deletionTimestamp'],
    },
    status: { phase: (object['status'] as { phase?: string } | undefined)?.phase },
  };
}

/** The namespaces a (projected) Namespace informer holds, as the resolvers need them. */
export function mirrorNamespaces(objects: readonly InformerObject[]): MirrorNamespace[] {
  return objects.map((n) => ({
    name: n.metadata.name,
    labels: n.metadata['labels'] as Record<string, string> | undefined,
    deletionTimestamp: n.metadata['deletionTimestamp'] as string | undefined,
    phase: (n['status'] as { phase?: string } | undefined)?.phase,
  }));
}

/** Why a namespace the targets matched receives nothing. */
export const SkipReason = {
  /** The source's own namespace (a copy there would be the source itself). */
  SourceNamespace: 'SourceNamespace',
  /** Being deleted: a write would fail and the replica would go with it. */
  Terminating: 'Terminating',
  /** Labelled `<prefix>/mirror: disabled`. */
  MirrorDisabled: 'MirrorDisabled',
  /** Matched by the source's exclude. */
  Excluded: 'Excluded',
  /**
   * The source's namespace is not trusted and the namespace did not opt in (`<prefix>/accept-replicas: "true"`):
   * nothing is written there, and a replica already there is left as it is while the source exists.
   */
  NotAccepted: 'NotAccepted',
  /** A `kube-*` namespace matched only by `*`, a glob or a selector: those take it by exact name only. */
  KubeNamespace: 'KubeNamespace',
  /** ManifestSync: two targets name the same (namespace, name); the first one keeps it. */
  DuplicateTarget: 'DuplicateTarget',
} as const;
export type SkipReason = (typeof SkipReason)[keyof typeof SkipReason];

export interface SkippedNamespace {
  readonly namespace: string;
  readonly reason: SkipReason;
}

/** A name in the label form that could be read more than one way (for an Event on the source). */
export interface DashedAmbiguity {
  /** The label value. */
  readonly value: string;
  /** The namespace it was read as at this place. */
  readonly chosen: string;
  /** Other existing namespaces that overlap it (a shorter name at the same place, or one crossing its end). */
  readonly alternatives: readonly string[];
}

export interface TargetResolution {
  /** False when `--mirror-source-namespaces` does not allow the source's namespace: nothing is targeted. */
  readonly sourceAllowed: boolean;
  /** Namespaces that receive a replica, sorted. */
  readonly namespaces: readonly string[];
  /** Namespaces the targets matched that receive nothing, and why; sorted by namespace. */
  readonly skipped: readonly SkippedNamespace[];
  /** Exact names (or label-form pieces) that name no existing namespace: they receive a replica once created. */
  readonly missing: readonly string[];
  readonly ambiguities: readonly DashedAmbiguity[];
}

export function isTerminating(namespace: MirrorNamespace): boolean {
  return namespace.phase === 'Terminating' || (namespace.deletionTimestamp !== undefined && namespace.deletionTimestamp !== '');
}

function isKubeNamespace(name: string): boolean {
  return name.startsWith('kube-');
}

export interface DashedNames {
  /** Existing namespaces, in the order the value names them. */
  readonly names: readonly string[];
  /** Runs of pieces that start no existing namespace name, joined with '-'. */
  readonly missing: readonly string[];
  readonly ambiguities: readonly DashedAmbiguity[];
}

/**
 * Read Mirrorverse's label form (`staging-prod`) against the namespaces that exist. Label values cannot hold
 * commas, so names are joined with '-', which namespace names contain too; the rule, deterministic and easy to
 * explain in an Event:
 *
 *   left to right, take the longest existing namespace name that starts at the current piece and ends at a dash
 *   or the end; a piece that starts no existing name is missing (consecutive missing pieces are reported as one
 *   name, e.g. `new-team`, which is what the source will receive once it exists).
 *
 * So with namespaces `team-a`, `team`, `a` and `prod`, `team-a-prod` reads as `team-a`, `prod` (not `team`, `a`,
 * `prod`). Where another existing name overlaps the chosen one (a shorter name at the same place, or a name
 * crossing its end, such as `a-prod` here) the choice is reported as an ambiguity, because the answer can
 * change when namespaces are created: the annotation form (`team-a,prod`) says exactly what is meant.
 * Greedy rather than "the reading that covers the most pieces": the latter flips between readings as
 * namespaces appear, the greedy one only ever gains names to its right.
 */
export function splitDashedNames(value: string, existing: ReadonlySet<string>): DashedNames {
  const pieces = value.split('-');
  const span = (from: number, to: number) => pieces.slice(from, to).join('-');
  const names: string[] = [];
  const missing: string[] = [];
  const ambiguities: DashedAmbiguity[] = [];
  let pending: string[] = [];
  const flushMissing = () => {
    const run = pending.join('-').replace(/^-+|-+$/g, '');
    if (run !== '') missing.push(run);
    pending = [];
  };
  let at = 0;
  while (at < pieces.length) {
    let end = -1;
    for (let to = pieces.length; to > at; to--) {
      if (existing.has(span(at, to))) {
        end = to;
        break;
      }
    }
    if (end === -1) {
      pending.push(pieces[at] ?? '');
      at++;
      continue;
    }
    flushMissing();
    const chosen = span(at, end);
    const alternatives = new Set<string>();
    for (let to = at + 1; to < end; to++) if (existing.has(span(at, to))) alternatives.add(span(at, to));
    for (let from = at + 1; from < end; from++) {
      for (let to = end + 1; to <= pieces.length; to++) if (existing.has(span(from, to))) alternatives.add(span(from, to));
    }
    if (alternatives.size > 0) ambiguities.push({ value, chosen, alternatives: [...alternatives].sort() });
    if (!names.includes(chosen)) names.push(chosen);
    at = end;
  }
  flushMissing();
  return { names, missing, ambiguities };
}

interface ListMatch {
  /** Namespace name → matched by an exact name (true) or only by a glob (false). */
  readonly matched: Map<string, boolean>;
  readonly missing: string[];
  readonly ambiguities: DashedAmbiguity[];
}

function matchList(list: NamespaceList, names: readonly string[], existing: ReadonlySet<string>): ListMatch {
  const matched = new Map<string, boolean>();
  if (list.form === 'dashed') {
    const read = splitDashedNames(list.value, existing);
    for (const name of read.names) matched.set(name, true);
    return { matched, missing: [...read.missing], ambiguities: [...read.ambiguities] };
  }
  const missing: string[] = [];
  for (const pattern of list.patterns) {
    if (!pattern.glob && !existing.has(pattern.text)) missing.push(pattern.text);
  }
  for (const name of names) {
    let exact = false;
    let globbed = false;
    for (const pattern of list.patterns) {
      if (!matchesPattern(pattern, name)) continue;
      if (pattern.glob) globbed = true;
      else exact = true;
    }
    if (exact || globbed) matched.set(name, exact);
  }
  return { matched, missing, ambiguities: [] };
}

export interface ResolveTargetsInput {
  readonly spec: Pick<MirrorSpec, 'source' | 'targets' | 'exclude'>;
  /** Every namespace of the cluster (the namespace watch). */
  readonly namespaces: readonly MirrorNamespace[];
  readonly keys: MirrorKeys;
  /** {@link mayBeMirrorSource} of the source's namespace; default true. */
  readonly sourceNamespaceAllowed?: boolean | undefined;
  /**
   * Whether the source's namespace is trusted (tenancy.ts: the operator's namespace, --trusted-namespaces).
   * An untrusted source reaches only the namespaces that accept replicas (`<prefix>/accept-replicas: "true"`).
   */
  readonly sourceTrusted: boolean;
}

/**
 * The namespaces a source's replicas belong in. Precedence, strongest first: the source's own namespace,
 * terminating, `<prefix>/mirror: disabled`, exclude (beats even an exact target name), `kube-*` only by
 * exact name, then (for a source in an untrusted namespace) the namespace's consent, `<prefix>/accept-replicas`. Deterministic: outputs are sorted, whatever order `namespaces` came in.
 */
export function resolveTargetNamespaces(input: ResolveTargetsInput): TargetResolution {
  const { spec, keys } = input;
  if (input.sourceNamespaceAllowed === false) return { sourceAllowed: false, namespaces: [], skipped: [], missing: [], ambiguities: [] };
  const byName = new Map<string, MirrorNamespace>();
  for (const namespace of input.namespaces) byName.set(namespace.name, namespace);
  const names = [...byName.keys()].sort();
  const existing = new Set(names);

  const targets = matchList(spec.targets, names, existing);
  const exclude = matchList(spec.exclude, names, existing);
  const excludedNames = new Set(exclude.matched.keys());
  const excludes = (name: string): boolean =>
    excludedNames.has(name) || (spec.exclude.form === 'list' && spec.exclude.patterns.some((p) => matchesPattern(p, name)));

  const receiving: string[] = [];
  const skipped: SkippedNamespace[] = [];
  for (const name of names) {
    const exact = targets.matched.get(name);
    if (exact === undefined) continue;
    const namespace = byName.get(name) as MirrorNamespace;
    const reason =
      name === spec.source.namespace
        ? SkipReason.SourceNamespace
        : isTerminating(namespace)
          ? SkipReason.Terminating
          : isMirrorDisabled(namespace, keys)
            ? SkipReason.MirrorDisabled
            : excludes(name)
              ? SkipReason.Excluded
              : !exact && isKubeNamespace(name)
                ? SkipReason.KubeNamespace
                : !input.sourceTrusted && !acceptsReplicas(namespace, keys)
                  ? SkipReason.NotAccepted
                  : undefined;
    if (reason === undefined) receiving.push(name);
    else skipped.push({ namespace: name, reason });
  }
  const missing = [...new Set(targets.missing)].filter((name) => name !== spec.source.namespace && !excludes(name)).sort();
  return { sourceAllowed: true, namespaces: receiving, skipped, missing, ambiguities: [...targets.ambiguities, ...exclude.ambiguities] };
}

/**
 * Read `--mirror-source-namespaces` (comma-separated names and globs). Empty means every namespace may be a
 * source. Unlike targets, a glob here does match `kube-*`: the flag is the cluster admin's own choice.
 */
export function parseMirrorSourceNamespaces(flag: string | readonly string[]): NamePattern[] {
  const { patterns, problems } = parsePatternList(typeof flag === 'string' ? flag : flag.join(','));
  if (problems.length > 0)
    throw new MirrorError({ reason: MirrorErrorReason.InvalidSpec, object: '', detail: `--mirror-source-namespaces: ${problems.join('; ')}` });
  return patterns;
}

export function mayBeMirrorSource(namespace: string, allowed: readonly NamePattern[]): boolean {
  return allowed.length === 0 || allowed.some((pattern) => matchesPattern(pattern, namespace));
}

// ---- ManifestSync targets ----

export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: string;
  readonly values?: readonly string[] | undefined;
}

/** metav1.LabelSelector. */
export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>> | undefined;
  readonly matchExpressions?: readonly LabelSelectorRequirement[] | undefined;
}

/** Kubernetes label-selector semantics: every term must hold; an empty selector matches everything. */
export function matchesLabelSelector(selector: LabelSelector, labels: Readonly<Record<string, string>> | undefined): boolean {
  const have = labels ?? {};
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (have[key] !== value) return false;
  for (const requirement of selector.matchExpressions ?? []) {
    const value = Object.prototype.hasOwnProperty.call(have, requirement.key) ? have[requirement.key] : undefined;
    const values = requirement.values ?? [];
    switch (requirement.operator) {
      case 'In':
      case 'NotIn':
        if (values.length === 0) {
          throw new MirrorError({
            reason: MirrorErrorReason.InvalidSpec,
            object: '',
            detail: `namespaceSelector: operator ${requirement.operator} on ${requirement.key} needs values`,
          });
        }
        if (requirement.operator === 'In' ? value === undefined || !values.includes(value) : value !== undefined && values.includes(value)) return false;
        break;
      case 'Exists':
        if (value === undefined) return false;
        break;
      case 'DoesNotExist':
        if (value !== undefined) return false;
        break;
      default:
        throw new MirrorError({
          reason: MirrorErrorReason.InvalidSpec,
          object: '',
          detail: `namespaceSelector: unknown operator ${JSON.stringify(requirement.operator)} (In, NotIn, Exists, DoesNotExist)`,
        });
    }
  }
  return true;
}

/** One ManifestSync target as the spec gives it (`namespace` or `namespaceSelector`). */
export interface CopyTargetSpec {
  readonly namespace?: string | undefined;
  readonly namespaceSelector?: LabelSelector | undefined;
  /** Rename: the copy's name (default: the source's). */
  readonly name?: string | undefined;
  readonly patch?: Readonly<Record<string, unknown>> | undefined;
  readonly cluster?: { readonly name: string } | undefined;
}

/** One concrete copy: where it goes, and from which entry of `targets`. */
export interface CopyTarget {
  /** Index into the spec's `targets`. */
  readonly index: number;
  readonly namespace: string;
  readonly name: string;
  readonly patch?: Readonly<Record<string, unknown>> | undefined;
  readonly cluster?: { readonly name: string } | undefined;
}

export interface CopyTargetResolution {
  /** Sorted by (cluster, namespace, name). */
  readonly targets: readonly CopyTarget[];
  readonly skipped: readonly (SkippedNamespace & { readonly index: number; readonly name: string })[];
}

/**
 * Expand ManifestSync targets into concrete (namespace, name) copies. A `namespace` target is taken as named
 * (a missing namespace fails at apply, per target); a `namespaceSelector` selects existing namespaces, never
 * `kube-*` ones (the same rule as mirroring's globs: name them). Terminating and `<prefix>/mirror: disabled`
 * namespaces receive nothing (the namespace owner's opt-out holds against a ManifestSync too). A copy onto the
 * source itself (same namespace, no rename, same cluster) is skipped, and when two entries produce the same
 * copy the earlier entry keeps it. Targets on another cluster are not checked against this cluster's namespaces.
 */
export function expandCopyTargets(input: {
  readonly source: SourceRef;
  readonly targets: readonly CopyTargetSpec[];
  readonly namespaces: readonly MirrorNamespace[];
  readonly keys: MirrorKeys;
}): CopyTargetResolution {
  const byName = new Map(input.namespaces.map((namespace) => [namespace.name, namespace] as const));
  const names = [...byName.keys()].sort();
  const seen = new Set<string>();
  const targets: CopyTarget[] = [];
  const skipped: (SkippedNamespace & { index: number; name: string })[] = [];
  input.targets.forEach((target, index) => {
    const name = target.name ?? input.source.name;
    const local = target.cluster === undefined;
    let chosen: { namespace: string; exact: boolean }[];
    if (target.namespace !== undefined) chosen = [{ namespace: target.namespace, exact: true }];
    else if (target.namespaceSelector !== undefined && local) {
      const selector = target.namespaceSelector;
      chosen = names.filter((ns) => matchesLabelSelector(selector, byName.get(ns)?.labels)).map((namespace) => ({ namespace, exact: false }));
    } else chosen = [];
    for (const { namespace, exact } of chosen) {
      const live = local ? byName.get(namespace) : undefined;
      const key = `${target.cluster?.name ?? ''}/${namespace}/${name}`;
      const reason =
        local && namespace === input.source.namespace && name === input.source.name
          ? SkipReason.SourceNamespace
          : live !== undefined && isTerminating(live)
            ? SkipReason.Terminating
            : live !== undefined && isMirrorDisabled(live, input.keys)
              ? SkipReason.MirrorDisabled
              : !exact && isKubeNamespace(namespace)
                ? SkipReason.KubeNamespace
                : seen.has(key)
                  ? SkipReason.DuplicateTarget
                  : undefined;
      if (reason !== undefined) {
        skipped.push({ index, namespace, name, reason });
        continue;
      }
      seen.add(key);
      targets.push({
        index,
        namespace,
        name,
        ...(target.patch === undefined ? {} : { patch: target.patch }),
        ...(target.cluster === undefined ? {} : { cluster: target.cluster }),
      });
    }
  });
  const order = (t: CopyTarget) => `${t.cluster?.name ?? ''}\u0000${t.namespace}\u0000${t.name}`;
  targets.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  return { targets, skipped };
}

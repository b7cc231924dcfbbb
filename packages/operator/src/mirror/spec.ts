// Reading a source object's mirroring labels and annotations into a spec, with errors that name the object.
import type { KubeObject } from '@syncline/apply';
import { MirrorError, MirrorErrorReason, describeObject } from './errors.ts';
import { parsePatternList, type NamePattern } from './glob.ts';
import type { MirrorKeys, SourceRef } from './labels.ts';

export const MirrorStrategy = {
  /** The replica's data is the source's data: keys the source lacks are removed. */
  Override: 'override',
  /** The source's keys are written; the replica's other keys are kept. */
  Patch: 'patch',
} as const;
export type MirrorStrategy = (typeof MirrorStrategy)[keyof typeof MirrorStrategy];

/** The kinds label-driven mirroring handles (any other kind goes through a ManifestSync). */
export const MirrorKind = { Secret: 'Secret', ConfigMap: 'ConfigMap' } as const;
export type MirrorKind = (typeof MirrorKind)[keyof typeof MirrorKind];

/** A set of namespaces as a source names it. */
export type NamespaceList =
  /** The annotation form: names and globs (`staging, prod, team-*`, `*` for all). */
  | { readonly form: 'list'; readonly patterns: readonly NamePattern[] }
  /**
   * The label form (Mirrorverse's `staging-prod`): dash-separated names, read against the namespaces that exist
   * (targets.ts, `splitDashedNames`), because a namespace name may itself hold dashes.
   */
  | { readonly form: 'dashed'; readonly value: string };

export interface MirrorSpec {
  readonly source: SourceRef;
  readonly kind: MirrorKind;
  readonly targets: NamespaceList;
  /** Empty list when the source excludes nothing. */
  readonly exclude: NamespaceList;
  readonly strategy: MirrorStrategy;
  /** Things worth an Event that do not stop mirroring (a label ignored for the annotation, a glob that cannot match). */
  readonly warnings: readonly string[];
}

/** The Secret type that is never copied (copy.ts refuses it too). */
export const SERVICE_ACCOUNT_TOKEN = 'kubernetes.io/service-account-token';

export const SOPS_KEYS_NEVER_COPIED =
  'a Secret holding SOPS decryption keys (*.agekey, *.asc, sops.vault-token, sops.aws-kms) is never copied: it is a credential the operator decrypts with for this namespace';

/** A Secret with the keys spec.decryption reads. Judged by its data's key names, never its values. */
export function isSopsKeySecret(object: KubeObject): boolean {
  const names = [object['data'], object['stringData']].flatMap((field) => (typeof field === 'object' && field !== null ? Object.keys(field) : []));
  return names.some((name) => name.endsWith('.agekey') || name.endsWith('.asc') || name === 'sops.vault-token' || name === 'sops.aws-kms');
}

const DASHED = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/**
 * The mirroring spec of a source, or a MirrorError (InvalidSpec, UnsupportedKind, NotCopyable) naming it.
 *
 * Each setting is read from the annotation, else from the label of the same name (Mirrorverse put everything in
 * labels; annotations can say more: commas, globs). When both are set the annotation wins and a warning says so.
 * A controller must not delete or mark replicas because a spec became invalid: a typo would otherwise wipe every
 * replica; it reports the error and leaves them until the spec is fixed or the source stops being one.
 */
export function parseMirrorSpec(object: KubeObject, keys: MirrorKeys): MirrorSpec {
  const who = describeObject(object);
  const fail = (reason: MirrorErrorReason, detail: string): never => {
    throw new MirrorError({ reason, object: who, detail });
  };
  const { metadata } = object;
  if (object.apiVersion !== 'v1' || (object.kind !== MirrorKind.Secret && object.kind !== MirrorKind.ConfigMap)) {
    return fail(
      MirrorErrorReason.UnsupportedKind,
      `label-driven mirroring handles v1 Secrets and ConfigMaps only (use a ManifestSync for ${object.apiVersion} ${object.kind})`,
    );
  }
  if (metadata.namespace === undefined || metadata.namespace === '') return fail(MirrorErrorReason.InvalidSpec, 'has no namespace');
  const labels = metadata.labels ?? {};
  const annotations = metadata.annotations ?? {};
  if (labels[keys.syncSource] !== 'true') {
    return fail(
      MirrorErrorReason.InvalidSpec,
      `is not a mirroring source (label ${keys.syncSource} is ${JSON.stringify(labels[keys.syncSource] ?? null)}, not "true")`,
    );
  }
  if (object.kind === MirrorKind.Secret && object.type === SERVICE_ACCOUNT_TOKEN) {
    return fail(
      MirrorErrorReason.NotCopyable,
      `a ${SERVICE_ACCOUNT_TOKEN} Secret is never mirrored (the token belongs to one service account in one namespace)`,
    );
  }
  if (object.kind === MirrorKind.Secret && isSopsKeySecret(object)) return fail(MirrorErrorReason.NotCopyable, SOPS_KEYS_NEVER_COPIED);

  const warnings: string[] = [];
  const setting = (key: string): { text: string; from: 'annotation' | 'label' } | undefined => {
    const annotation = annotations[key];
    const label = labels[key];
    if (annotation !== undefined) {
      if (label !== undefined && label !== annotation) warnings.push(`label ${key} is ignored: the annotation of the same name is set`);
      return { text: annotation, from: 'annotation' };
    }
    return label === undefined ? undefined : { text: label, from: 'label' };
  };

  const readList = (key: string, found: { text: string; from: 'annotation' | 'label' }): NamespaceList => {
    if (found.from === 'label') {
      if (!DASHED.test(found.text)) {
        fail(
          MirrorErrorReason.InvalidSpec,
          `label ${key}: ${JSON.stringify(found.text)} is not dash-separated namespace names (use the annotation for globs and lists)`,
        );
      }
      return { form: 'dashed', value: found.text };
    }
    const { patterns, problems } = parsePatternList(found.text);
    if (problems.length > 0) fail(MirrorErrorReason.InvalidSpec, `annotation ${key}: ${problems.join('; ')}`);
    for (const pattern of patterns) {
      if (pattern.glob && pattern.text.startsWith('kube-')) {
        warnings.push(`annotation ${key}: ${JSON.stringify(pattern.text)} never matches: kube-* namespaces are matched by exact name only`);
      }
    }
    return { form: 'list', patterns };
  };

  const targetsSetting = setting(keys.targets);
  if (targetsSetting === undefined) return fail(MirrorErrorReason.InvalidSpec, `names no targets (annotation ${keys.targets}, e.g. "staging,prod,team-*")`);
  const targets = readList(keys.targets, targetsSetting);
  if (targets.form === 'list' && targets.patterns.length === 0) fail(MirrorErrorReason.InvalidSpec, `annotation ${keys.targets} is empty`);

  const excludeSetting = setting(keys.exclude);
  const exclude: NamespaceList = excludeSetting === undefined ? { form: 'list', patterns: [] } : readList(keys.exclude, excludeSetting);

  const strategySetting = setting(keys.strategy);
  let strategy: MirrorStrategy = MirrorStrategy.Override;
  if (strategySetting !== undefined) {
    const value = strategySetting.text.trim();
    if (value !== MirrorStrategy.Override && value !== MirrorStrategy.Patch) {
      fail(MirrorErrorReason.InvalidSpec, `${strategySetting.from} ${keys.strategy}: ${JSON.stringify(strategySetting.text)} is not "override" or "patch"`);
    }
    strategy = value as MirrorStrategy;
  }

  return { source: { namespace: metadata.namespace, name: metadata.name }, kind: object.kind, targets, exclude, strategy, warnings };
}

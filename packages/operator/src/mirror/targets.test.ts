import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MirrorError } from './errors.ts';
import { parsePatternList } from './glob.ts';
import type { NamespaceList } from './spec.ts';
import {
  expandCopyTargets,
  matchesLabelSelector,
  mayBeMirrorSource,
  parseMirrorSourceNamespaces,
  resolveTargetNamespaces,
  splitDashedNames,
  type MirrorNamespace,
} from './targets.ts';
import { keys, namespaces } from './test-support.ts';

const list = (text: string): NamespaceList => ({ form: 'list', patterns: parsePatternList(text).patterns });
const dashed = (value: string): NamespaceList => ({ form: 'dashed', value });
const none: NamespaceList = { form: 'list', patterns: [] };

function resolve(
  targets: NamespaceList,
  cluster: MirrorNamespace[],
  options: { exclude?: NamespaceList; sourceNamespace?: string; sourceNamespaceAllowed?: boolean; sourceTrusted?: boolean } = {},
) {
  return resolveTargetNamespaces({
    spec: { source: { namespace: options.sourceNamespace ?? 'dev', name: 'db' }, targets, exclude: options.exclude ?? none },
    namespaces: cluster,
    keys,
    sourceNamespaceAllowed: options.sourceNamespaceAllowed,
    sourceTrusted: options.sourceTrusted ?? true,
  });
}

const cluster = namespaces('dev', 'staging', 'prod', 'team-a', 'team-b', 'team-ab', 'eu-prod', 'kube-system', 'kube-public', 'default');

describe('splitDashedNames (the label form)', () => {
  it('reads names that hold dashes, longest existing name first', () => {
    // given namespaces team-a, team, a and prod
    const existing = new Set(['team-a', 'team', 'a', 'prod']);
    // when the label says team-a-prod
    const read = splitDashedNames('team-a-prod', existing);
    // then it reads as team-a and prod, and says team was another reading
    expect(read.names).toEqual(['team-a', 'prod']);
    expect(read.missing).toEqual([]);
    expect(read.ambiguities).toEqual([{ value: 'team-a-prod', chosen: 'team-a', alternatives: ['team'] }]);
  });

  it('reports a name that crosses the chosen one as an ambiguity too', () => {
    const read = splitDashedNames('team-a-prod', new Set(['team-a', 'a-prod', 'team']));
    expect(read.names).toEqual(['team-a']);
    expect(read.missing).toEqual(['prod']);
    expect(read.ambiguities[0]?.alternatives).toEqual(['a-prod', 'team']);
  });

  it('reports pieces that start no existing name as one missing name per run', () => {
    const read = splitDashedNames('staging-new-team-prod', new Set(['staging', 'prod']));
    expect(read.names).toEqual(['staging', 'prod']);
    expect(read.missing).toEqual(['new-team']);
  });

  it('reads a plain list when no name holds a dash', () => {
    expect(splitDashedNames('staging-prod', new Set(['staging', 'prod', 'qa'])).names).toEqual(['staging', 'prod']);
  });

  it('gives the same reading whatever order the namespaces were listed in', () => {
    fc.assert(
      fc.property(
        fc.shuffledSubarray(['team-a', 'team', 'a', 'prod', 'a-prod', 'team-a-prod-x'], { minLength: 0 }),
        fc.array(fc.constantFrom('team', 'a', 'prod', 'x'), { minLength: 1, maxLength: 6 }),
        (names, pieces) => {
          const value = pieces.join('-');
          const once = splitDashedNames(value, new Set(names));
          const again = splitDashedNames(value, new Set([...names].reverse()));
          expect(again).toEqual(once);
          // only existing namespaces are chosen, each once, and nothing missing is an existing name
          for (const name of once.names) expect(names).toContain(name);
          expect(new Set(once.names).size).toBe(once.names.length);
          for (const name of once.missing) expect(names).not.toContain(name);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('resolveTargetNamespaces', () => {
  it('takes exact names and globs, sorted', () => {
    const result = resolve(list('staging,team-*,*-prod'), cluster);
    expect(result.namespaces).toEqual(['eu-prod', 'staging', 'team-a', 'team-ab', 'team-b']);
    expect(result.missing).toEqual([]);
  });

  it('reads ? as one character', () => {
    expect(resolve(list('team-?'), cluster).namespaces).toEqual(['team-a', 'team-b']);
  });

  it('takes every namespace for *, except the source namespace and kube-* ones', () => {
    // given `*`
    const result = resolve(list('*'), cluster);
    // then kube-system and kube-public are skipped, and so is dev (the source's own namespace)
    expect(result.namespaces).toEqual(['default', 'eu-prod', 'prod', 'staging', 'team-a', 'team-ab', 'team-b']);
    expect(result.skipped).toEqual([
      { namespace: 'dev', reason: 'SourceNamespace' },
      { namespace: 'kube-public', reason: 'KubeNamespace' },
      { namespace: 'kube-system', reason: 'KubeNamespace' },
    ]);
  });

  it('reaches, from an untrusted source namespace, only the namespaces that accept replicas', () => {
    // given a source in an untrusted namespace targeting every namespace, and one namespace that opted in
    const opted = cluster.map((n) => (n.name === 'team-a' ? { ...n, labels: { [keys.namespaceAccept]: 'true' } } : n));
    const result = resolve(list('*,kube-system'), opted, { sourceTrusted: false });
    // then only that namespace receives a replica; every other one is skipped as NotAccepted
    expect(result.namespaces).toEqual(['team-a']);
    expect(result.skipped.filter((s) => s.reason === 'NotAccepted').map((s) => s.namespace)).toEqual([
      'default',
      'eu-prod',
      'kube-system',
      'prod',
      'staging',
      'team-ab',
      'team-b',
    ]);
    // and a namespace's opt-out still beats its opt-in
    const both = opted.map((n) => (n.name === 'team-a' ? { ...n, labels: { [keys.namespaceAccept]: 'true', [keys.namespaceMirror]: 'disabled' } } : n));
    expect(resolve(list('*'), both, { sourceTrusted: false }).namespaces).toEqual([]);
  });

  it('takes kube-system by exact name only (not by kube-* either)', () => {
    expect(resolve(list('kube-*'), cluster).namespaces).toEqual([]);
    expect(resolve(list('*,kube-system'), cluster).namespaces).toContain('kube-system');
    expect(resolve(dashed('kube-system'), cluster).namespaces).toEqual(['kube-system']);
  });

  it('never targets the source namespace, even by name', () => {
    expect(resolve(list('dev,prod'), cluster).namespaces).toEqual(['prod']);
  });

  it('gives nothing to a namespace labelled mirror: disabled, even by exact name', () => {
    const withDisabled = [...cluster.filter((n) => n.name !== 'prod'), { name: 'prod', labels: { [keys.namespaceMirror]: 'disabled' } }];
    const result = resolve(list('prod,staging'), withDisabled);
    expect(result.namespaces).toEqual(['staging']);
    expect(result.skipped).toEqual([{ namespace: 'prod', reason: 'MirrorDisabled' }]);
  });

  it('gives nothing to a terminating namespace', () => {
    const result = resolve(
      list('*'),
      namespaces('dev', { name: 'old', phase: 'Terminating' }, { name: 'going', deletionTimestamp: '2026-01-01T00:00:00Z' }, 'new'),
    );
    expect(result.namespaces).toEqual(['new']);
    expect(result.skipped).toEqual([
      { namespace: 'dev', reason: 'SourceNamespace' },
      { namespace: 'going', reason: 'Terminating' },
      { namespace: 'old', reason: 'Terminating' },
    ]);
  });

  it('lets exclude win over an exact target name and over globs', () => {
    const result = resolve(list('prod,team-*,staging'), cluster, { exclude: list('prod,team-a*') });
    expect(result.namespaces).toEqual(['staging', 'team-b']);
    expect(result.skipped.map((s) => [s.namespace, s.reason])).toEqual([
      ['prod', 'Excluded'],
      ['team-a', 'Excluded'],
      ['team-ab', 'Excluded'],
    ]);
  });

  it('lets an exclude glob name kube-* namespaces (excluding is always safe)', () => {
    expect(resolve(list('kube-system,prod'), cluster, { exclude: list('kube-*') }).namespaces).toEqual(['prod']);
  });

  it('reads the label form against existing namespaces, exclude in label form too', () => {
    const result = resolve(dashed('team-a-prod-staging'), cluster, { exclude: dashed('staging') });
    expect(result.namespaces).toEqual(['prod', 'team-a']);
    expect(result.skipped).toEqual([{ namespace: 'staging', reason: 'Excluded' }]);
  });

  it('reports exact names that do not exist yet (they receive a replica once created), not excluded ones', () => {
    const before = resolve(list('prod,qa,perf'), cluster, { exclude: list('perf') });
    expect(before.namespaces).toEqual(['prod']);
    expect(before.missing).toEqual(['qa']);
    // when qa is created it is a target at once
    expect(resolve(list('prod,qa'), [...cluster, { name: 'qa' }]).namespaces).toEqual(['prod', 'qa']);
  });

  it('targets nothing when the source namespace may not be a source', () => {
    expect(resolve(list('*'), cluster, { sourceNamespaceAllowed: false })).toEqual({
      sourceAllowed: false,
      namespaces: [],
      skipped: [],
      missing: [],
      ambiguities: [],
    });
  });

  it('does not depend on the order namespaces are listed in', () => {
    fc.assert(
      fc.property(fc.shuffledSubarray(cluster, { minLength: cluster.length }), (shuffled) => {
        expect(resolve(list('*,kube-system'), shuffled, { exclude: list('team-b') })).toEqual(
          resolve(list('*,kube-system'), cluster, { exclude: list('team-b') }),
        );
      }),
      { numRuns: 50 },
    );
  });
});

describe('--mirror-source-namespaces', () => {
  it('allows every namespace when empty, else only matching ones (globs may name kube-*)', () => {
    expect(mayBeMirrorSource('anything', parseMirrorSourceNamespaces(''))).toBe(true);
    const allowed = parseMirrorSourceNamespaces('platform,shared-*,kube-*');
    expect(mayBeMirrorSource('shared-certs', allowed)).toBe(true);
    expect(mayBeMirrorSource('kube-system', allowed)).toBe(true);
    expect(mayBeMirrorSource('team-a', allowed)).toBe(false);
    expect(mayBeMirrorSource('platform', parseMirrorSourceNamespaces(['platform', 'ops']))).toBe(true);
  });

  it('refuses a bad entry, naming the flag', () => {
    expect(() => parseMirrorSourceNamespaces('ok,Bad')).toThrow(/--mirror-source-namespaces: "Bad"/);
  });
});

describe('matchesLabelSelector', () => {
  const labels = { env: 'prod', team: 'a' };
  it('follows Kubernetes semantics', () => {
    expect(matchesLabelSelector({}, labels)).toBe(true);
    expect(matchesLabelSelector({ matchLabels: { env: 'prod' } }, labels)).toBe(true);
    expect(matchesLabelSelector({ matchLabels: { env: 'dev' } }, labels)).toBe(false);
    expect(matchesLabelSelector({ matchExpressions: [{ key: 'env', operator: 'In', values: ['prod', 'staging'] }] }, labels)).toBe(true);
    expect(matchesLabelSelector({ matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] }, labels)).toBe(false);
    expect(matchesLabelSelector({ matchExpressions: [{ key: 'gone', operator: 'NotIn', values: ['x'] }] }, labels)).toBe(true);
    expect(matchesLabelSelector({ matchExpressions: [{ key: 'team', operator: 'Exists' }] }, labels)).toBe(true);
    expect(matchesLabelSelector({ matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] }, labels)).toBe(false);
    expect(matchesLabelSelector({ matchExpressions: [{ key: 'constructor', operator: 'Exists' }] }, labels)).toBe(false);
  });

  it('refuses unknown operators and In without values', () => {
    expect(() => matchesLabelSelector({ matchExpressions: [{ key: 'a', operator: 'Gt' }] }, labels)).toThrow(MirrorError);
    expect(() => matchesLabelSelector({ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] }, labels)).toThrow(/needs values/);
  });
});

describe('expandCopyTargets (ManifestSync)', () => {
  const all = namespaces(
    'dev',
    { name: 'staging', labels: { env: 'nonprod' } },
    { name: 'qa', labels: { env: 'nonprod' } },
    { name: 'off', labels: { env: 'nonprod', [keys.namespaceMirror]: 'disabled' } },
    { name: 'kube-system', labels: { env: 'nonprod' } },
    { name: 'gone', labels: { env: 'nonprod' }, phase: 'Terminating' },
  );
  const expand = (targets: Parameters<typeof expandCopyTargets>[0]['targets']) =>
    expandCopyTargets({ source: { namespace: 'dev', name: 'db' }, targets, namespaces: all, keys });

  it('expands a selector over existing namespaces, skipping kube-*, disabled and terminating ones', () => {
    const result = expand([{ namespaceSelector: { matchLabels: { env: 'nonprod' } }, patch: { data: { a: 'x' } } }]);
    expect(result.targets).toEqual([
      { index: 0, namespace: 'qa', name: 'db', patch: { data: { a: 'x' } } },
      { index: 0, namespace: 'staging', name: 'db', patch: { data: { a: 'x' } } },
    ]);
    expect(result.skipped.map((s) => [s.namespace, s.reason])).toEqual([
      ['gone', 'Terminating'],
      ['kube-system', 'KubeNamespace'],
      ['off', 'MirrorDisabled'],
    ]);
  });

  it('takes a named namespace as named (kube-system included, missing ones fail at apply), with a rename', () => {
    const result = expand([{ namespace: 'kube-system' }, { namespace: 'later', name: 'db-copy' }]);
    expect(result.targets).toEqual([
      { index: 0, namespace: 'kube-system', name: 'db' },
      { index: 1, namespace: 'later', name: 'db-copy' },
    ]);
  });

  it('skips the source itself, but allows a renamed copy beside it', () => {
    const result = expand([{ namespace: 'dev' }, { namespace: 'dev', name: 'db-copy' }]);
    expect(result.targets).toEqual([{ index: 1, namespace: 'dev', name: 'db-copy' }]);
    expect(result.skipped).toEqual([{ index: 0, namespace: 'dev', name: 'db', reason: 'SourceNamespace' }]);
  });

  it('keeps the first of two entries that produce the same copy', () => {
    const result = expand([{ namespace: 'qa' }, { namespaceSelector: { matchLabels: { env: 'nonprod' } } }]);
    expect(result.targets.map((t) => [t.index, t.namespace])).toEqual([
      [0, 'qa'],
      [1, 'staging'],
    ]);
    expect(result.skipped).toContainEqual({ index: 1, namespace: 'qa', name: 'db', reason: 'DuplicateTarget' });
  });

  it('keeps targets on another cluster without checking this cluster, and does not expand selectors there', () => {
    const result = expand([
      { namespace: 'dev', cluster: { name: 'east' } },
      { namespaceSelector: {}, cluster: { name: 'east' } },
    ]);
    expect(result.targets).toEqual([{ index: 0, namespace: 'dev', name: 'db', cluster: { name: 'east' } }]);
  });
});

import { describe, expect, it } from 'vitest';
import { MirrorError, MirrorErrorReason } from './errors.ts';
import { mirrorKeys } from './labels.ts';
import { parseMirrorSpec } from './spec.ts';
import { configMap, keys, secret, source } from './test-support.ts';

function errorOf(fn: () => unknown): MirrorError {
  try {
    fn();
  } catch (error) {
    if (error instanceof MirrorError) return error;
    throw error;
  }
  throw new Error('expected a MirrorError');
}

describe('parseMirrorSpec', () => {
  it('reads the annotation form: names and globs, override by default', () => {
    // given a source with comma-separated targets
    const spec = parseMirrorSpec(source({ [keys.targets]: 'staging, prod,team-*' }), keys);
    // then the targets are patterns and the strategy is override
    expect(spec).toEqual({
      source: { namespace: 'dev', name: 'db' },
      kind: 'Secret',
      targets: {
        form: 'list',
        patterns: [
          { text: 'staging', glob: false },
          { text: 'prod', glob: false },
          { text: 'team-*', glob: true },
        ],
      },
      exclude: { form: 'list', patterns: [] },
      strategy: 'override',
      warnings: [],
    });
  });

  it("reads Mirrorverse's label form (targets, exclude and strategy as labels)", () => {
    const spec = parseMirrorSpec(source({}, { [keys.targets]: 'staging-prod', [keys.exclude]: 'qa', [keys.strategy]: 'patch' }), keys);
    expect(spec.targets).toEqual({ form: 'dashed', value: 'staging-prod' });
    expect(spec.exclude).toEqual({ form: 'dashed', value: 'qa' });
    expect(spec.strategy).toBe('patch');
  });

  it('works under another prefix', () => {
    const mv = mirrorKeys('mirrorverse.dev');
    const spec = parseMirrorSpec(secret({ labels: { 'mirrorverse.dev/sync-source': 'true', 'mirrorverse.dev/targets': 'staging' } }), mv);
    expect(spec.targets).toEqual({ form: 'dashed', value: 'staging' });
  });

  it('prefers the annotation when both forms are set, and warns', () => {
    const spec = parseMirrorSpec(source({ [keys.targets]: 'staging,prod' }, { [keys.targets]: 'staging' }), keys);
    expect(spec.targets.form).toBe('list');
    expect(spec.warnings).toEqual([`label ${keys.targets} is ignored: the annotation of the same name is set`]);
  });

  it('reads a ConfigMap and the exclude annotation', () => {
    const object = configMap({ labels: { [keys.syncSource]: 'true' }, annotations: { [keys.targets]: '*', [keys.exclude]: 'prod-*,qa' } });
    const spec = parseMirrorSpec(object, keys);
    expect(spec.kind).toBe('ConfigMap');
    expect(spec.exclude).toEqual({
      form: 'list',
      patterns: [
        { text: 'prod-*', glob: true },
        { text: 'qa', glob: false },
      ],
    });
  });

  it('warns that a kube-* glob never matches', () => {
    const spec = parseMirrorSpec(source({ [keys.targets]: 'kube-*,staging' }), keys);
    expect(spec.warnings[0]).toContain('kube-* namespaces are matched by exact name only');
  });

  describe('refuses, naming the object and the key', () => {
    it('a strategy that is not override or patch', () => {
      const error = errorOf(() => parseMirrorSpec(source({ [keys.targets]: 'prod', [keys.strategy]: 'merge' }), keys));
      expect(error.reason).toBe(MirrorErrorReason.InvalidSpec);
      expect(error.message).toBe('Secret dev/db: annotation syncline.dev/strategy: "merge" is not "override" or "patch"');
    });

    it('a bad glob or name in the targets', () => {
      const error = errorOf(() => parseMirrorSpec(source({ [keys.targets]: 'prod,Staging,[ab]' }), keys));
      expect(error.message).toMatch(/^Secret dev\/db: annotation syncline\.dev\/targets: "Staging" is not a namespace name/);
      expect(error.message).toContain('"[ab]"');
    });

    it('a label form that is not dash-separated names', () => {
      const error = errorOf(() => parseMirrorSpec(source({}, { [keys.targets]: 'Staging_prod' }), keys));
      expect(error.message).toContain('label syncline.dev/targets: "Staging_prod" is not dash-separated namespace names');
    });

    it('no targets, or empty targets', () => {
      expect(errorOf(() => parseMirrorSpec(source({}), keys)).message).toContain('names no targets');
      expect(errorOf(() => parseMirrorSpec(source({ [keys.targets]: ' , ' }), keys)).message).toContain('is empty');
    });

    it('an object that is not labelled as a source', () => {
      const error = errorOf(() => parseMirrorSpec(secret({ annotations: { [keys.targets]: 'prod' } }), keys));
      expect(error.message).toContain('is not a mirroring source');
    });

    it('a kind other than Secret and ConfigMap', () => {
      const role = {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'r', namespace: 'dev', labels: { [keys.syncSource]: 'true' }, annotations: { [keys.targets]: '*' } },
      };
      expect(errorOf(() => parseMirrorSpec(role, keys)).reason).toBe(MirrorErrorReason.UnsupportedKind);
    });

    it('a Secret holding SOPS decryption keys', () => {
      const keysSecret = secret({ labels: { [keys.syncSource]: 'true' }, annotations: { [keys.targets]: '*' } });
      expect(errorOf(() => parseMirrorSpec({ ...keysSecret, data: { 'identity.agekey': 'eA==' } }, keys)).reason).toBe(MirrorErrorReason.NotCopyable);
    });

    it('a service-account token Secret', () => {
      const token = secret({ type: 'kubernetes.io/service-account-token', labels: { [keys.syncSource]: 'true' }, annotations: { [keys.targets]: '*' } });
      expect(errorOf(() => parseMirrorSpec(token, keys)).reason).toBe(MirrorErrorReason.NotCopyable);
    });
  });
});

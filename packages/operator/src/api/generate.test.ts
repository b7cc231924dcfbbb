import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigSyncSpec } from './v1alpha1.ts';
import { structuralSchema } from './crd.ts';
import { staleFiles } from './generate.ts';

describe('generated API files', () => {
  it('crds/ and docs/api.md match the zod schemas (run `pnpm generate` when this fails)', () => {
    expect(staleFiles(join(import.meta.dirname, '..', '..', '..', '..'))).toEqual([]);
  });

  it('keeps free-form values open and the target list keyed by name', () => {
    const schema = structuralSchema(ConfigSyncSpec) as { properties: Record<string, Record<string, unknown>> };
    expect(schema.properties['values']).toMatchObject({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
    expect(schema.properties['values']).not.toHaveProperty('additionalProperties');
    expect(schema.properties['targets']).toMatchObject({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] });
  });

  it('applies schema defaults when parsing a minimal spec', () => {
    const spec = ConfigSyncSpec.parse({ source: { git: { repo: 'https://example.com/r.git' } }, targets: [{ name: 'dev' }] });
    expect(spec).toMatchObject({ refreshInterval: '5m', prune: true, policy: 'Sync', drift: 'Correct', deletionPolicy: 'Delete', historyLimit: 10 });
    expect(spec.source.git.revision).toBe('main');
  });
});

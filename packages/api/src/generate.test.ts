import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigSyncSpec } from './v1alpha1.ts';
import { customResourceDefinitions, structuralSchema } from './crd.ts';
import { staleFiles } from './generate.ts';

describe('generated API files', () => {
  it('crds/ and docs/api.md match the zod schemas (run `pnpm generate` when this fails)', () => {
    expect(staleFiles(join(import.meta.dirname, '..', '..', '..'))).toEqual([]);
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

  describe('every CRD reads as a manual (kubectl explain)', () => {
    type Node = { [key: string]: unknown };
    /** Every property of an openAPIV3Schema, with its path (`.spec.targets[].name`). */
    const propertiesOf = (node: Node, path: string): Array<{ path: string; name: string; node: Node }> => {
      const out: Array<{ path: string; name: string; node: Node }> = [];
      for (const [name, child] of Object.entries((node['properties'] ?? {}) as Record<string, Node>)) {
        out.push({ path: `${path}.${name}`, name, node: child }, ...propertiesOf(child, `${path}.${name}`));
      }
      if (node['items'] !== undefined) out.push(...propertiesOf(node['items'] as Node, `${path}[]`));
      if (typeof node['additionalProperties'] === 'object') out.push(...propertiesOf(node['additionalProperties'] as Node, `${path}{}`));
      return out;
    };
    const crds = customResourceDefinitions().map((crd) => {
      const spec = crd['spec'] as {
        names: { kind: string };
        versions: Array<{ schema: { openAPIV3Schema: Node }; additionalPrinterColumns: Array<{ name: string; jsonPath: string }> }>;
      };
      const version = spec.versions[0];
      if (version === undefined) throw new Error('a CRD without versions');
      return { kind: spec.names.kind, root: version.schema.openAPIV3Schema, columns: version.additionalPrinterColumns };
    });
    const timestamps = new Set(['lastSyncedTime', 'lastSuccessfulSyncTime', 'appliedAt', 'lastTransitionTime', 'lastProbeTime', 'failedOverAt']);

    it.each(crds)('$kind: every property has a description', ({ root }) => {
      expect(typeof root['description']).toBe('string');
      // .metadata is ObjectMeta: the API server refuses a description there (kubectl explain shows ObjectMeta's).
      const missing = propertiesOf(root, '')
        .filter(({ path, node }) => path !== '.metadata' && (typeof node['description'] !== 'string' || node['description'] === ''))
        .map(({ path }) => path);
      expect(missing).toEqual([]);
    });

    it.each(crds)('$kind: timestamps are date-time and conditions a list-map keyed by type', ({ root }) => {
      const properties = propertiesOf(root, '');
      const times = properties.filter(({ name }) => timestamps.has(name));
      expect(times.length).toBeGreaterThan(0);
      for (const { path, node } of times) expect({ path, format: node['format'] }).toEqual({ path, format: 'date-time' });
      const conditions = properties.filter(({ path }) => path === '.status.conditions');
      expect(conditions).toHaveLength(1);
      expect(conditions[0]?.node).toMatchObject({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });
      expect((conditions[0]?.node['items'] as Node)['required']).toContain('type');
    });

    it("ConfigSync columns: what Flux's and Argo CD's lists show (Ready, Status, Revision, Drifted, Age); the rest with -o wide", () => {
      const configSync = crds.find((c) => c.kind === 'ConfigSync');
      expect(configSync?.columns.filter((c) => !('priority' in c)).map((c) => c.name)).toEqual(['Ready', 'Status', 'Revision', 'Drifted', 'Age']);
      expect(configSync?.columns.filter((c) => 'priority' in c).map((c) => c.name)).toEqual(['Ref', 'Suspended', 'Health', 'Hooks', 'Full Revision']);
    });
  });
});

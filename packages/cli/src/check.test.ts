// syncline check's judgements that need no cluster (test/e2e/cli-trace.int.test.ts runs the command).
import { describe, expect, it } from 'vitest';
import { customResourceDefinitions } from '@syncline/api';
import { compareCrd, versionResult } from './check.ts';

describe('check', () => {
  const [bundled] = customResourceDefinitions();
  const established = { conditions: [{ type: 'Established', status: 'True' }] };
  const live = (spec: unknown) => ({ metadata: { name: 'configsyncs.syncline.dev' }, spec, status: established }) as Parameters<typeof compareCrd>[1];

  it('a CRD equal to the bundled one is current; missing, not established or changed ones fail, naming what differs', () => {
    if (bundled === undefined) throw new Error('no CRDs');
    const spec = structuredClone(bundled['spec']) as { versions: Array<{ schema: { openAPIV3Schema: { properties: Record<string, unknown> } } }> };
    expect(compareCrd(bundled, live(spec))).toMatchObject({ ok: true });
    expect(compareCrd(bundled, undefined).text).toContain('not installed');
    expect(compareCrd(bundled, { ...live(spec), status: { conditions: [] } } as Parameters<typeof compareCrd>[1]).text).toContain('not Established');
    const older = structuredClone(spec);
    delete older.versions[0]?.schema.openAPIV3Schema.properties['status'];
    expect(compareCrd(bundled, live(older)).text).toContain('its schema differ');
  });

  it('Kubernetes 1.28 and newer pass', () => {
    expect(versionResult('v1.32.4').ok).toBe(true);
    expect(versionResult('v1.28.0-eks-1').ok).toBe(true);
    expect(versionResult('v1.27.9')).toEqual({ ok: false, text: 'Kubernetes v1.27.9 < 1.28.0' });
  });
});

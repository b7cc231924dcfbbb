// What the soak and the operator bench judge with: the Lease renewal check (from the Lease's states as a watch
// delivers them) and the namespace of every default kind a NamespaceReplication copies.
import type { KubeRest } from '@syncline/operator';
import { describe, expect, it } from 'vitest';
import { LeaseWatcher, type Lease } from '../../packages/operator/bench/_leases.ts';
import { DEFAULT_KIND_COUNT, defaultKindObjects, inNamespace } from '../../packages/operator/bench/_kinds.ts';

const unused = {} as KubeRest;
const at = (seconds: number): string => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds)).toISOString();
const lease = (holder: string, seconds: number, duration = 15): Lease => ({
  metadata: {},
  spec: { holderIdentity: holder, renewTime: at(seconds), leaseDurationSeconds: duration },
});

describe('LeaseWatcher', () => {
  it('counts renewals by one holder and finds none late when each comes within the lease duration', () => {
    // given renewals every 2 s, one after an outage of 12 s
    const watcher = new LeaseWatcher({ rest: unused, namespace: 'ns', name: 'l' });
    for (const s of [0, 2, 4, 16, 18]) watcher.observe(lease('a', s));

    // then none is late, and the largest gap is the outage's
    expect(watcher.renewals).toBe(4);
    expect(watcher.late).toEqual([]);
    expect(watcher.figures().maxGapMs).toBe(12_000);
  });

  it('reports a renewal later than the lease duration after the previous one', () => {
    const watcher = new LeaseWatcher({ rest: unused, namespace: 'ns', name: 'l' });
    for (const s of [0, 2, 18]) watcher.observe(lease('a', s));
    expect(watcher.late).toEqual([{ holder: 'a', gapMs: 16_000, periodMs: 15_000, at: at(18) }]);
  });

  it('does not count a change of holder, a release or a repeated state as a renewal', () => {
    const watcher = new LeaseWatcher({ rest: unused, namespace: 'ns', name: 'l' });
    watcher.observe(lease('a', 0));
    watcher.observe(lease('a', 0)); // the same state again (a re-list)
    watcher.observe(lease('b', 40)); // a handover after the leader died
    watcher.observe({ metadata: {}, spec: { holderIdentity: null, renewTime: null } }); // released
    watcher.observe(lease('b', 90)); // taken again by the same identity much later
    expect(watcher.renewals).toBe(0);
    expect(watcher.late).toEqual([]);
    expect(watcher.holders).toBe(3);
  });
});

describe('defaultKindObjects', () => {
  it('makes exactly the count asked for, with every default kind', () => {
    for (const count of [45, 1000]) {
      const objects = defaultKindObjects('shop', count);
      expect(objects).toHaveLength(count);
      expect(new Set(objects.map((o) => o.kind)).size).toBe(DEFAULT_KIND_COUNT);
      expect(new Set(objects.map((o) => `${o.kind}/${o.name}`)).size).toBe(count);
    }
    expect(DEFAULT_KIND_COUNT).toBe(15);
  });

  it('puts each object in its collection in the namespace, with a matching apiVersion and kind', () => {
    for (const o of defaultKindObjects('shop', 45)) {
      const apiVersion = o.body['apiVersion'] as string;
      expect(o.path).toBe(
        apiVersion === 'v1'
          ? `/api/v1/namespaces/shop/${o.path.split('/').at(-1) ?? ''}`
          : `/apis/${apiVersion}/namespaces/shop/${o.path.split('/').at(-1) ?? ''}`,
      );
      expect(o.body['kind']).toBe(o.kind);
      expect(inNamespace(o.path, 'shop', 'shop-standby')).toContain('/namespaces/shop-standby/');
    }
  });
});

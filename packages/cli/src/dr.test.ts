import { describe, expect, it } from 'vitest';
import { drStatusRows, formatAge, formatDrStatus } from './dr.ts';
import type { StandbyNamespace } from '@syncline/operator/client';

const owner = { namespace: 'apps', name: 'NamespaceReplication:shop', target: 'standby' };
const standby = (name: string, promotion?: { at: string; by: string }): StandbyNamespace => ({
  name,
  replication: `apps/${name}`,
  owner,
  promotion,
  object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
});
const now = Date.parse('2026-11-25T10:00:00Z');

describe('dr status', () => {
  it('shows per namespace: promoted, the newest heartbeat and its age, the last replicated change and its age', () => {
    const rows = drStatusRows(
      [standby('shop'), standby('blog', { at: '2026-11-25T09:58:00Z', by: 'alice' })],
      [
        { namespace: 'shop', name: 'old', replication: 'apps/shop', renewedAt: now - 90_000, lastChange: undefined, ready: 'True', held: false },
        {
          namespace: 'shop',
          name: 'syncline-heartbeat-shop',
          replication: 'apps/shop',
          renewedAt: now - 4_000,
          lastChange: '2026-11-25T09:00:00Z',
          ready: 'True',
          held: false,
        },
        { namespace: 'shop', name: 'foreign', replication: 'other/x', renewedAt: now, lastChange: undefined, ready: 'True', held: false },
      ],
      now,
    );
    expect(rows).toEqual([
      {
        namespace: 'shop',
        replication: 'apps/shop',
        promoted: false,
        lastHeartbeat: '2026-11-25T09:59:56.000Z',
        heartbeatAgeSeconds: 4,
        lastReplicatedChange: '2026-11-25T09:00:00.000Z',
        lastChangeAgeSeconds: 3600,
        replicationReady: 'True',
      },
      { namespace: 'blog', replication: 'apps/blog', promoted: true, promotedAt: '2026-11-25T09:58:00Z', promotedBy: 'alice' },
    ]);
    const table = formatDrStatus(rows);
    expect(table).toMatch(/^shop\s+apps\/shop\s+no\s+2026-11-25T09:59:56.000Z\s+4s\s+2026-11-25T09:00:00.000Z\s+1h0m\s+True$/m);
    expect(table).toMatch(/^blog\s+apps\/blog\s+yes \(2026-11-25T09:58:00Z by alice\)\s+never\s+-\s+unknown\s+-\s+unknown$/m);
  });

  it('prints ages as kubectl does', () => {
    expect([formatAge(5), formatAge(119), formatAge(150), formatAge(7200), formatAge(3 * 86400)]).toEqual(['5s', '119s', '2m30s', '2h0m', '3d']);
  });
});

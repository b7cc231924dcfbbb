import { describe, expect, it } from 'vitest';
import type { Access } from './auth.ts';
import { visibleMirrorRows } from './mirrors.ts';

describe('mirroring rows a viewer may see', () => {
  it('shows a row only when the viewer may list that kind where the source is and where the copy goes', async () => {
    // given a viewer who may list Secrets in team-a and team-b, and ConfigMaps nowhere
    const asked: string[] = [];
    const access: Access = {
      allowed: () => Promise.resolve(false),
      allowedResource: (_viewer, { resource, namespace }) => {
        asked.push(`${resource}/${namespace}`);
        return Promise.resolve(resource === 'secrets' && ['team-a', 'team-b'].includes(namespace));
      },
    };
    const rows = [
      { kind: 'Secret', source: 'team-a/db', namespace: 'team-b', state: 'synced' },
      { kind: 'Secret', source: 'team-a/db', namespace: 'team-c', state: 'conflict', message: 'a foreign Secret holds the name' },
      { kind: 'Secret', source: 'team-a/db', namespace: '', state: 'invalid' },
      { kind: 'Secret', source: 'team-c/other', namespace: 'team-a', state: 'synced' },
      { kind: 'ConfigMap', source: 'team-a/settings', namespace: 'team-b', state: 'synced' },
    ];
    // when filtered, then only rows with both ends visible (or the source's own row) are left
    expect(await visibleMirrorRows(access, { username: 'u', groups: [] }, rows)).toEqual([rows[0], rows[2]]);
    // and cluster-wide list rights were asked first
    expect(asked[0]).toBe('secrets/');
  });
});

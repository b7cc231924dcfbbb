import { describe, expect, it } from 'vitest';
import { completionScript } from './completion.ts';
import { age, evaluateJsonPath, formatTable, kindAndName, resolveKind } from './kinds.ts';

describe('kinds on the command line', () => {
  it('takes the plural, singular, kind and short name, case-insensitive, with or without the group', () => {
    for (const typed of ['configsyncs', 'configsync', 'ConfigSync', 'csync', 'configsyncs.syncline.dev']) expect(resolveKind(typed).kind).toBe('ConfigSync');
    expect(resolveKind('msync').kind).toBe('ManifestSync');
    expect(resolveKind('nsrepl').kind).toBe('NamespaceReplication');
    expect(resolveKind('rcluster').kind).toBe('RemoteCluster');
    expect(resolveKind('drpolicy').kind).toBe('NamespaceReplicationPolicy');
    expect(() => resolveKind('pods')).toThrow(/doesn't have a resource type "pods"/);
  });

  it('reads `NAME` as a ConfigSync and `KIND NAME` as that kind', () => {
    expect(kindAndName('web', undefined)).toMatchObject({ info: { kind: 'ConfigSync' }, name: 'web' });
    expect(kindAndName('msync', 'copy')).toMatchObject({ info: { kind: 'ManifestSync' }, name: 'copy' });
  });
});

describe('printer columns', () => {
  const object = {
    metadata: { name: 'web', namespace: 'ops', creationTimestamp: '2026-11-25T10:00:00Z' },
    spec: { suspend: false },
    status: {
      followedRef: 'main',
      shortRevision: 'abc1234',
      drifted: 0,
      sourceRevision: 'abc1234'.padEnd(40, '0'),
      conditions: [
        { type: 'Healthy', status: 'True', reason: 'Current' },
        { type: 'Ready', status: 'True', message: 'applied' },
      ],
    },
  };

  it('evaluates the JSONPath forms the CRDs use', () => {
    expect(evaluateJsonPath(object, ".status.conditions[?(@.type=='Ready')].status")).toBe('True');
    expect(evaluateJsonPath(object, '.status.followedRef')).toBe('main');
    expect(evaluateJsonPath(object, ".status.conditions[?(@.type=='Stalled')].status")).toBeUndefined();
    expect(evaluateJsonPath(object, '.spec.missing.deeper')).toBeUndefined();
    expect(evaluateJsonPath(object, '{.unsupported}')).toBeUndefined();
  });

  it('prints what kubectl prints: the columns, wide ones with -o wide, the namespace with -A', () => {
    const now = new Date('2026-11-25T12:30:00Z');
    const info = resolveKind('csync');
    expect(formatTable(info, [object], { wide: false, allNamespaces: false, now })).toBe(
      'NAME   READY   STATUS    REVISION   DRIFTED   AGE\nweb    True    applied   abc1234    0         150m\n',
    );
    const wide = formatTable(info, [object], { wide: true, allNamespaces: true, now }).split('\n');
    expect(wide[0]).toMatch(/^NAMESPACE\s+NAME\s+READY\s+STATUS\s+REVISION\s+DRIFTED\s+REF\s+SUSPENDED\s+HEALTH\s+HOOKS\s+FULL REVISION\s+AGE$/);
    expect(wide[1]).toMatch(/^ops\s+web\s+True\s+applied\s+abc1234\s+0\s+main\s+false\s+Current\s+abc1234000/);
  });

  it('ages as kubectl does', () => {
    expect([age(5_000), age(150_000), age(3 * 3600_000 + 5 * 60_000), age(30 * 3600_000), age(400 * 86400_000)]).toEqual([
      '5s',
      '2m30s',
      '3h5m',
      '30h',
      '400d',
    ]);
  });
});

describe('completion', () => {
  const input = {
    commands: [
      { name: 'get', description: 'list: things', flags: ['--selector', '-l'] },
      { name: 'version', description: 'versions', flags: ['--client'] },
    ],
    kinds: ['configsyncs', 'csync'],
    kindVerbs: ['get'],
    configSyncVerbs: ['status'],
  };
  it('each shell gets the subcommands, their flags and the kinds', () => {
    for (const shell of ['bash', 'zsh', 'fish'] as const) {
      const script = completionScript(shell, input);
      for (const word of ['get', 'version', '--selector', '--client', 'csync'])
        expect(script, `${shell}: ${word}`).toContain(word.replace(/^--/, shell === 'fish' ? '' : '--'));
    }
    // zsh descriptions escape the colon that separates name and description
    expect(completionScript('zsh', input)).toContain("'get:list\\: things'");
  });
});

describe('NamespaceReplication table', () => {
  it("shows the recovery point, then the standby's own view (heartbeat as the standby stored it, promoted or not)", () => {
    const info = resolveKind('nsrepl');
    const nr = {
      metadata: { name: 'gold-shop', namespace: 'ops', creationTimestamp: '2026-11-25T10:00:00Z' },
      spec: { sourceNamespace: 'shop', destination: { cluster: { name: 'dr' } }, mode: 'Continuous' },
      status: {
        lastSyncedTime: '2026-11-25T10:59:20Z',
        conditions: [
          { type: 'Ready', status: 'True', message: 'ok' },
          { type: 'Fenced', status: 'True' },
        ],
      },
      standbyView: { state: 'promoted', lastHeartbeat: '2026-11-25T10:59:55Z' },
    };
    const text = formatTable(info, [nr], { wide: false, allNamespaces: true, now: new Date('2026-11-25T11:00:00Z') });
    expect(text.split('\n')[0]?.split(/\s{2,}/)).toEqual([
      'NAMESPACE',
      'NAME',
      'SOURCE',
      'CLUSTER',
      'MODE',
      'READY',
      'FAILED OVER',
      'HELD',
      'LAST CHANGE',
      'FENCED',
      'HEARTBEAT',
      'STANDBY',
      'AGE',
    ]);
    // (FAILED OVER and HELD are empty here)
    expect(text.split('\n')[1]?.split(/\s{2,}/)).toEqual(['ops', 'gold-shop', 'shop', 'dr', 'Continuous', 'True', '40s', 'True', '5s', 'promoted', '60m']);
  });
});

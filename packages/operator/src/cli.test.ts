import { describe, expect, it } from 'vitest';
import type { ConfigSync } from './api/v1alpha1.ts';
import { formatStatus, rollbackRevision } from './cli.ts';

const sha = (c: string): string => c.repeat(40);
const sync = (history: string[]): ConfigSync =>
  ({
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'ConfigSync',
    metadata: { name: 'web', namespace: 'platform' },
    spec: { source: { git: { repo: 'https://x/y.git', revision: 'main', path: '' } }, targets: [{ name: 'dev' }, { name: 'prod' }] },
    status: {
      sourceRevision: history[0],
      appliedTargets: 2,
      conditions: [{ type: 'Ready', status: 'True', reason: 'ReconciliationSucceeded', message: 'Applied', lastTransitionTime: 't' }],
      history: history.map((revision) => ({ revision, appliedAt: 't', objects: 1, digest: 'd' })),
    },
  }) as unknown as ConfigSync;

describe('rollbackRevision', () => {
  it('goes back N applied revisions through status.history', () => {
    expect(rollbackRevision(sync([sha('c'), sha('b'), sha('a')]), { steps: '2' })).toBe(sha('a'));
  });

  it('takes a full SHA as given, lower-cased', () => {
    expect(rollbackRevision(sync([]), { to: sha('A') })).toBe(sha('a'));
  });

  it.each([
    [{}, /exactly one/],
    [{ to: sha('a'), steps: '1' }, /exactly one/],
    [{ to: 'abc123' }, /full 40-character/],
    [{ steps: '0' }, /positive/],
    [{ steps: '5' }, /has 2 revision\(s\)/],
  ])('refuses %j', (options, message) => {
    expect(() => rollbackRevision(sync([sha('b'), sha('a')]), options)).toThrow(message);
  });
});

describe('formatStatus', () => {
  it('prints one aligned row per ConfigSync with Ready, short revision and targets', () => {
    const text = formatStatus([sync([sha('b')])]);
    const [header, row] = text.trimEnd().split('\n');
    expect(header).toMatch(/^NAMESPACE\s+NAME\s+READY\s+REVISION\s+TARGETS\s+MESSAGE$/);
    expect(row).toMatch(/^platform\s+web\s+True\s+bbbbbbbbbbbb\s+2\/2\s+Applied$/);
  });
});

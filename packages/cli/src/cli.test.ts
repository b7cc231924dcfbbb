import { describe, expect, it } from 'vitest';
import type { ConfigSync } from '@syncline/api';
import { ApiError } from '@syncline/apply';
import { KIND_HELP, formatError } from './cli.ts';
import { crdDefinitions } from '@syncline/api';
import { formatStatus, revisionText, rollbackRevision } from './commands.ts';

const sha = (c: string): string => c.repeat(40);
const sync = (history: string[], digests?: string[]): ConfigSync =>
  ({
    apiVersion: 'syncline.dev/v1alpha1',
    kind: 'ConfigSync',
    metadata: { name: 'web', namespace: 'platform' },
    spec: { source: { git: { repo: 'https://x/y.git', revision: 'main', path: '' } }, targets: [{ name: 'dev' }, { name: 'prod' }] },
    status: {
      sourceRevision: history[0],
      appliedTargets: 2,
      conditions: [{ type: 'Ready', status: 'True', reason: 'ReconciliationSucceeded', message: 'Applied', lastTransitionTime: 't' }],
      history: history.map((revision, i) => ({ revision, appliedAt: 't', objects: 1, digest: digests?.[i] ?? `d-${revision}` })),
    },
  }) as unknown as ConfigSync;

describe('rollbackRevision', () => {
  it('goes back N applied revisions through status.history', () => {
    expect(rollbackRevision(sync([sha('c'), sha('b'), sha('a')]), { steps: '2' })).toBe(sha('a'));
  });

  it('steps over history entries whose render did not change (commits that changed nothing for this sync)', () => {
    // newest first: e and d rendered the same as c; b and a differ
    const history = [sha('e'), sha('d'), sha('c'), sha('b'), sha('a')];
    const digests = ['x', 'x', 'x', 'y', 'z'];
    expect(rollbackRevision(sync(history, digests), { steps: '1' })).toBe(sha('b'));
    expect(rollbackRevision(sync(history, digests), { steps: '2' })).toBe(sha('a'));
    expect(() => rollbackRevision(sync(history, digests), { steps: '3' })).toThrow(/has 3 distinct deploy\(s\)/);
    // the same render coming back later is a step again (a deploy of other content came between)
    expect(rollbackRevision(sync([sha('c'), sha('b'), sha('a')], ['x', 'y', 'x']), { steps: '2' })).toBe(sha('a'));
  });

  it('takes a full SHA as given, lower-cased', () => {
    expect(rollbackRevision(sync([]), { to: sha('A') })).toBe(sha('a'));
  });

  it.each([
    [{}, /exactly one/],
    [{ to: sha('a'), steps: '1' }, /exactly one/],
    [{ to: 'abc123' }, /full 40-character/],
    [{ steps: '0' }, /positive/],
    [{ steps: '5' }, /has 2 distinct deploy\(s\)/],
  ])('refuses %j', (options, message) => {
    expect(() => rollbackRevision(sync([sha('b'), sha('a')]), options)).toThrow(message);
  });
});

describe('formatStatus', () => {
  it('prints one aligned row per ConfigSync with Ready, health, short revision and targets', () => {
    const text = formatStatus([sync([sha('b')])]);
    const [header, row] = text.trimEnd().split('\n');
    expect(header).toMatch(/^NAMESPACE\s+NAME\s+READY\s+HEALTH\s+REVISION\s+TARGETS\s+MESSAGE$/);
    expect(row).toMatch(/^platform\s+web\s+True\s+-\s+bbbbbbbbbbbb\s+2\/2\s+Applied$/);
  });
});

describe('formatError', () => {
  it('words an API error as kubectl does, without the REST request', () => {
    const notFound = new ApiError({
      status: 404,
      reason: 'NotFound',
      message: 'GET /apis/syncline.dev/v1alpha1/namespaces/a/configsyncs/web: 404 configsyncs.syncline.dev "web" not found',
    });
    expect(formatError(notFound)).toBe('Error from server (NotFound): configsyncs.syncline.dev "web" not found');
    expect(formatError(new ApiError({ status: 403, reason: 'Unknown', message: 'PATCH /api/v1/x: 403 forbidden' }))).toBe(
      'Error from server (Forbidden): forbidden',
    );
    expect(formatError(new ApiError({ status: 0, reason: 'TransportError', message: 'GET /apis/x: socket hang up' }))).toBe(
      'Unable to connect to the server: socket hang up',
    );
  });

  it('says "Unable to connect" for a refused connection and "error:" otherwise', () => {
    expect(formatError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }))).toBe(
      'Unable to connect to the server: connect ECONNREFUSED 127.0.0.1:1',
    );
    expect(formatError(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }))).toBe('Unable to connect to the server: other side closed');
    expect(formatError(new Error('rollback needs exactly one of --to SHA or --steps N'))).toBe('error: rollback needs exactly one of --to SHA or --steps N');
  });
});

describe('revisionText', () => {
  it("is Flux's ref@sha1:sha, or sha1:sha for a pinned commit", () => {
    expect(revisionText('main', sha('a'))).toBe(`main@sha1:${sha('a')}`);
    expect(revisionText(sha('a'), sha('a'))).toBe(`sha1:${sha('a')}`);
    expect(revisionText('v1.2.0', 'b'.repeat(64))).toBe(`v1.2.0@sha256:${'b'.repeat(64)}`);
  });
});

describe('help texts', () => {
  it('name every kind the CRDs define, with its short names', () => {
    expect(KIND_HELP).toBe(crdDefinitions.map((d) => `${d.plural} (${d.shortNames.join(', ')})`).join(', '));
  });
});

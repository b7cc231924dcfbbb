import { describe, expect, it } from 'vitest';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { fileURLToPath } from 'node:url';
import { FindingCause, findingMessage, isTransient, isUnreachable, sortFindings } from './findings.ts';

describe('findings', () => {
  it('marks the tenancy rule as waiting for a person, and a remote cluster or a refused plan as worth a retry', () => {
    expect(isTransient(FindingCause.NotAllowed)).toBe(false);
    expect(isTransient(FindingCause.Forbidden)).toBe(false);
    expect(isTransient(FindingCause.Conflict)).toBe(false);
    expect(isTransient(FindingCause.ClusterUnavailable)).toBe(true);
    expect(isTransient(FindingCause.EmptyRender)).toBe(true);
    expect(isTransient(FindingCause.Transport)).toBe(true);
  });

  it('sorts conflicts from failures by cause, keeping the messages people read', () => {
    const sorted = sortFindings([
      { cause: FindingCause.EmptyRender, reason: 'refusing to prune' },
      { cause: FindingCause.NotOwned, subject: '/ConfigMap/a/x', reason: 'Conflict: the object exists and is not managed by Syncline' },
      { cause: FindingCause.Timeout, subject: '/ConfigMap/a/y', reason: 'Timeout: PATCH /api/v1/…: no answer within 30s' },
    ]);
    expect(sorted.failures).toEqual(['refusing to prune', '/ConfigMap/a/y: Timeout: PATCH /api/v1/…: no answer within 30s']);
    expect(sorted.conflicts).toEqual(['/ConfigMap/a/x: Conflict: the object exists and is not managed by Syncline']);
    expect(sorted.findings.filter(isUnreachable).map(findingMessage)).toEqual(['/ConfigMap/a/y: Timeout: PATCH /api/v1/…: no answer within 30s']);
  });
});

describe('the lint rule against deciding from error text in reconcilers', () => {
  const root = fileURLToPath(new URL('../../../../', import.meta.url));
  // Linted as if it were this very file: the rule applies to reconcilers and controllers.
  const filePath = fileURLToPath(new URL('./findings.ts', import.meta.url));
  // Without type information: the rule is syntax only, and a typed lint of the project takes half a minute.
  const eslint = new ESLint({ cwd: root, overrideConfig: tseslint.configs.disableTypeChecked });
  const flagged = async (code: string): Promise<number> => {
    const [result] = await eslint.lintText(code, { filePath });
    return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-syntax').length;
  };

  it.each([
    ['a prefix of a change set entry', "export const f = (entry: { reason?: string }) => entry.reason?.startsWith('Conflict:') === true;"],
    ['a regex over the failure messages', 'export const f = (failures: string[]) => failures.every((f) => /forbidden/i.test(f));'],
    ['a regex over an error message', 'export const f = (error: Error) => /Timeout|TransportError/.test(error.message);'],
    ['a substring of a message', "export const f = (message: string) => message.includes('404');"],
    ['splitting a failure apart', "export const f = (failure: string) => failure.split(': ')[0];"],
  ])(
    'flags %s',
    async (_what, code) => {
      expect(await flagged(code)).toBeGreaterThan(0);
    },
    60_000,
  );

  it('leaves matching on what a reconciler built itself alone (ids, keys, revisions)', async () => {
    expect(
      await flagged(
        "export const f = (id: string, key: string, revision: string) => id.startsWith('/Namespace/') || key.startsWith('ns/') || /^[0-9a-f]{40}$/.test(revision);",
      ),
    ).toBe(0);
  }, 60_000);
});

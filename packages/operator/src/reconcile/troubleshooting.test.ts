// docs/troubleshooting.md says, for every condition reason the operator sets, what it means and what to do.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Reason } from '@syncline/runtime';

const doc = readFileSync(join(import.meta.dirname, '..', '..', '..', '..', 'docs', 'troubleshooting.md'), 'utf8');

describe('docs/troubleshooting.md', () => {
  it('has a row for every condition reason', () => {
    const rows = new Set([...doc.matchAll(/^\| `([A-Za-z]+)` \|/gm)].map((m) => m[1]));
    expect(Object.values(Reason).filter((reason) => !rows.has(reason))).toEqual([]);
  });
});

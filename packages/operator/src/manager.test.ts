import { describe, expect, it } from 'vitest';
import type { Discovery } from '@syncline/apply';
import { readDiscoveryAhead } from './manager.ts';

describe('readDiscoveryAhead', () => {
  it('asks the client for its discovery once, at once; a failed read is left for the first render to read again', async () => {
    // given an apply client whose discovery read is counted
    let reads = 0;
    let settle: () => void = () => undefined;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const client = {
      discovery: (): Promise<Discovery> => {
        reads++;
        settle();
        return Promise.reject(new Error('connect ECONNREFUSED'));
      },
    };
    // when the manager starts, then discovery is read before any sync asks for it
    readDiscoveryAhead(() => Promise.resolve(client));
    await settled;
    expect(reads).toBe(1);
    // and its failure is swallowed (no unhandled rejection fails this test), as is a client that cannot be made
    readDiscoveryAhead(() => Promise.reject(new Error('no client')));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(reads).toBe(1);
  });
});

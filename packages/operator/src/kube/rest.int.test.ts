// The REST client against the real control plane: long-running watches never starve requests of sockets.
import { testKubeConfig, testNamespace } from '@syncline/test-support/kube';
import { describe, expect, it } from 'vitest';
import { createKubeRest } from './rest.ts';

/** `promise`, or a rejection naming `what` after `ms` (a request queued for a socket never times out by itself). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)));
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

describe('createKubeRest', () => {
  it('answers requests while more watches run than its request pool has sockets', async () => {
    await using ns = await testNamespace({ prefix: 'rest-watches' });
    const rest = await createKubeRest(testKubeConfig());
    const abort = new AbortController();
    // given 40 open watches (the request pool holds 32 sockets)
    const watches = Array.from({ length: 40 }, () => rest.watch(`/api/v1/namespaces/${ns.name}/configmaps`, { timeoutSeconds: 120 }, () => undefined, abort.signal).catch(() => undefined));
    try {
      // when requests are made, then they are answered
      const read = await within(rest.request<{ metadata: { name: string } }>({ method: 'GET', path: `/api/v1/namespaces/${ns.name}` }), 30_000, 'GET namespace');
      expect(read.metadata.name).toBe(ns.name);
      const created = await within(rest.request<{ metadata: { name: string } }>({ method: 'POST', path: `/api/v1/namespaces/${ns.name}/configmaps`, body: { metadata: { name: 'after-watches' } } }), 30_000, 'POST configmap');
      expect(created.metadata.name).toBe('after-watches');
    } finally {
      abort.abort();
      await Promise.all(watches);
    }
  });
});

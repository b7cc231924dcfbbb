// The REST client against the real control plane: watches have a connection pool of their own, so however
// many are open, a request (a status write, an Event, a Lease renewal) still gets a socket and an answer.
import { createTestCa, startConnectProxy } from '@syncline/test-support';
import { testKubeConfig, testNamespace } from '@syncline/test-support/kube';
import { describe, expect, it } from 'vitest';
import { createKubeRest } from './rest.ts';
import { connectionFromKubeConfig } from './transport.ts';

const WATCHES = 200;

describe('createKubeRest: watches and requests', () => {
  it(`answers requests while ${WATCHES} watches hold their streams open`, async () => {
    await using ns = await testNamespace({ prefix: 'watches' });
    const rest = await createKubeRest(testKubeConfig());
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${ns.name}/configmaps`,
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'seen' }, data: { a: '1' } },
    });

    // Given: 200 watches, each established (it has delivered the existing ConfigMap) and still open.
    const abort = new AbortController();
    const established = new Set<number>();
    const allEstablished = Promise.withResolvers<void>();
    const watches = Array.from({ length: WATCHES }, (_, i) =>
      rest.watch(
        `/api/v1/namespaces/${ns.name}/configmaps`,
        { timeoutSeconds: 600 },
        () => {
          established.add(i);
          if (established.size === WATCHES) allEstablished.resolve();
        },
        abort.signal,
      ),
    );
    try {
      await allEstablished.promise;

      // When: ordinary requests are made, each with its own deadline (which counts any wait for a socket).
      const read = await rest.request<{ data?: Record<string, string> }>({
        method: 'GET',
        path: `/api/v1/namespaces/${ns.name}/configmaps/seen`,
        timeoutMs: 30_000,
      });
      const writes = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          rest.request<{ metadata: { name: string } }>({
            method: 'POST',
            path: `/api/v1/namespaces/${ns.name}/configmaps`,
            body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `w-${i}` } },
            timeoutMs: 30_000,
          }),
        ),
      );

      // Then: every one is answered, and the watches are all still open.
      expect(read.data).toEqual({ a: '1' });
      expect(writes.map((w) => w.metadata.name).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `w-${i}`).sort());
      const ended = await Promise.race([Promise.any(watches).then(() => true), Promise.resolve(false)]);
      expect(ended).toBe(false);
    } finally {
      abort.abort();
      await Promise.allSettled(watches);
    }
  }, 180_000);
});

describe('createKubeRest: TLS', () => {
  it("trusts the connection's own CA only: the same API server is refused under another CA, for requests and watches", async () => {
    const connection = await connectionFromKubeConfig(testKubeConfig());
    const good = await createKubeRest(connection);
    expect(await good.request<{ kind: string }>({ method: 'GET', path: '/api/v1/namespaces/default' })).toMatchObject({ kind: 'Namespace' });
    const other = await createTestCa();
    const wrong = await createKubeRest({ ...connection, tls: { ...connection.tls, ca: Buffer.from(other.caCert) } });
    await expect(wrong.request({ method: 'GET', path: '/api/v1/namespaces/default', timeoutMs: 10_000 })).rejects.toThrow(/certificate/i);
    await expect(wrong.watch('/api/v1/namespaces', { timeoutSeconds: 5 }, () => undefined, new AbortController().signal)).rejects.toThrow(/certificate/i);
  });
});

describe('createKubeRest: proxy-url', () => {
  it("tunnels requests and watches through an http proxy (CONNECT), with the credentials of the proxy's URL", async () => {
    await using proxy = await startConnectProxy({ auth: { username: 'syncline', password: 'p@ss word' } });
    const connection = await connectionFromKubeConfig(testKubeConfig());
    const proxyUrl = new URL(proxy.url);
    proxyUrl.username = 'syncline';
    proxyUrl.password = encodeURIComponent('p@ss word');
    const rest = await createKubeRest({ ...connection, proxyUrl: proxyUrl.toString() });

    expect(await rest.request<{ kind: string }>({ method: 'GET', path: '/api/v1/namespaces/default' })).toMatchObject({ kind: 'Namespace' });
    const abort = new AbortController();
    const seen: unknown[] = [];
    await rest.watch(
      '/api/v1/namespaces',
      { fieldSelector: 'metadata.name=default', timeoutSeconds: 30 },
      (event) => {
        seen.push(event);
        abort.abort();
      },
      abort.signal,
    );

    expect(seen).toMatchObject([{ type: 'ADDED', object: { metadata: { name: 'default' } } }]);
    const server = new URL(connection.server);
    // one tunnel for the requests' pool, one for the watch's
    expect(proxy.tunnels()).toEqual([`${server.hostname}:${server.port}`, `${server.hostname}:${server.port}`]);
    expect(proxy.refused()).toBe(0);
  });
});

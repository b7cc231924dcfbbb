// A leader that cannot renew its Lease, against the real control plane: /healthz turns 500, every write of the
// process is fenced (the API server never sees it), reads go on, and the manager reconciles nothing more.
import { connectionFromKubeConfig, createEventRecorder, KubeApiError, createKubeRest, type KubeRest } from '@syncline/kube';
import { TemplateCache } from '@syncline/render';
import { createGitSource } from '@syncline/source-git';
import { testKubeConfig, testNamespace } from '@syncline/test-support/kube';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { installCrds } from '@syncline/runtime';
import { createApplyClients } from './cluster/identity.ts';
import { startManager } from './manager.ts';
import { createMetrics } from './metrics.ts';
import { mirrorKeys } from './mirror/labels.ts';
import { startProbeServer } from './server.ts';

const eventually = async <T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 60_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
};

describe('leader fencing', () => {
  it('a leader whose Lease renewals fail reports /healthz 500, fences every write of the process and stops leading', async () => {
    await using ns = await testNamespace({ prefix: 'fence' });
    const cacheDir = await mkdtemp(join(tmpdir(), 'syncline-fence-'));
    const connection = await connectionFromKubeConfig(testKubeConfig());
    const fence = new AbortController();
    const real = await createKubeRest(connection, { writeFence: fence.signal });
    await installCrds(real, { fieldManager: 'syncline-tests' });
    // The Lease's API stops answering this replica (a partition between it and the API server's lease path).
    let cut = false;
    const rest: KubeRest = {
      server: real.server,
      watch: (...args) => real.watch(...args),
      request: (req) =>
        cut && req.path.includes('/leases')
          ? Promise.reject(new KubeApiError({ status: 0, reason: 'TransportError', message: 'connection reset' }))
          : real.request(req),
    };
    const clock = { now: () => new Date() };
    const metrics = createMetrics();
    const logger = pino({ level: 'silent' });
    let lost = 0;
    const manager = startManager({
      rest,
      git: createGitSource({ cacheDir }),
      applyClient: createApplyClients({ connection, rest, clock, writeFence: fence.signal }),
      templates: new TemplateCache(),
      clock,
      logger,
      metrics,
      events: createEventRecorder({ rest, component: 'syncline', host: 'test', clock }),
      mirrorKeys: mirrorKeys(),
      concurrency: 2,
      watchNamespace: ns.name,
      writeFence: fence.signal,
      leaderElection: { namespace: ns.name, name: 'syncline-leader', identity: 'fence-test' },
      onLostLeadership: () => {
        lost++;
        fence.abort(new Error('this replica lost its leadership'));
      },
    });
    const probes = await startProbeServer({ address: '127.0.0.1:0', metrics, ready: () => manager.ready(), live: () => manager.live(), logger });
    const healthz = async (): Promise<number> => (await fetch(`http://${probes.address}/healthz`)).status;
    try {
      // Given: a leader that renews, and is live.
      await eventually(() => (manager.isLeader() ? true : undefined), 'leadership');
      expect(await healthz()).toBe(200);

      // When: its renewals fail past the renew deadline.
      cut = true;
      await eventually(() => (lost > 0 ? true : undefined), 'the leader to give up');

      // Then: /healthz fails and says why; it no longer leads; writes never reach the API server, reads do.
      expect(await healthz()).toBe(500);
      expect(await (await fetch(`http://${probes.address}/healthz`)).text()).toMatch(/lost leadership/);
      expect(manager.isLeader()).toBe(false);
      const write = await real
        .request({
          method: 'POST',
          path: `/api/v1/namespaces/${ns.name}/configmaps`,
          body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'after-fence' } },
        })
        .catch((e: unknown) => e);
      expect(write).toMatchObject({ reason: 'Fenced' });
      const apply = await (
        await createApplyClients({ connection, rest, clock, writeFence: fence.signal })(undefined)
      )
        .apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'after-fence', namespace: ns.name } }, { fieldManager: 'syncline', force: true })
        .catch((e: unknown) => e);
      expect(apply).toMatchObject({ reason: 'Fenced' });
      const unfenced = await createKubeRest(connection);
      const listed = await unfenced.request<{ items: { metadata: { name: string } }[] }>({ method: 'GET', path: `/api/v1/namespaces/${ns.name}/configmaps` });
      expect(listed.items.map((c) => c.metadata.name)).not.toContain('after-fence');
      expect(lost).toBe(1);
    } finally {
      await manager.stop();
      await probes.close();
      await rm(cacheDir, { recursive: true, force: true });
    }
  }, 180_000);
});

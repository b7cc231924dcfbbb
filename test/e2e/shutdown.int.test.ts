// End to end: SIGTERM while a reconcile hangs (its Git server accepts and never answers) still ends the
// operator within --shutdown-timeout, and the next operator starts on the same probe port (no EADDRINUSE).
import { startOperator } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace } from '@syncline/test-support/kube';
import { createServer, type Server, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { applyConfigSync, configSync, eventually, installCrds } from './harness.ts';

const freePort = async (): Promise<number> => {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  return port;
};

describe('shutdown', () => {
  it('SIGTERM ends the operator within its shutdown timeout while a reconcile hangs, and the next one binds the same port', async () => {
    await installCrds();
    await using ns = await testNamespace({ prefix: 'shutdown' });
    const sockets = new Set<Socket>();
    const silentGit: Server = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silentGit.listen(0, '127.0.0.1', resolve));
    const gitPort = (silentGit.address() as { port: number }).port;
    const probePort = await freePort();
    const args = ['--namespace', ns.name, '--probe-addr', `127.0.0.1:${probePort}`, '--shutdown-timeout', '5s'];
    try {
      // Given: an operator whose only reconcile is stuck fetching from a Git server that never answers.
      const first = await startOperator({ kubeconfig: testKubeconfigPath(), args });
      await applyConfigSync(
        configSync(ns.name, 'stuck', {
          source: { git: { repo: `http://127.0.0.1:${gitPort}/stuck.git`, revision: 'main', path: '.' } },
          refreshInterval: '1h',
          targets: [{ name: 'local', namespace: ns.name }],
        }),
      );
      await eventually(() => Promise.resolve(sockets.size > 0 ? true : undefined), 'the reconcile to be fetching', 60_000);

      // When: SIGTERM.
      const started = Date.now();
      await first.stop();
      const tookMs = Date.now() - started;

      // Then: it ended (the bound is 5 s; the margin is for a loaded machine), saying it left a reconcile behind.
      expect(tookMs).toBeLessThan(30_000);
      expect(await first.exited).toBe(1);
      expect(first.logs.some((l) => l['msg'] === 'reconciles still running at the shutdown timeout; exiting without them')).toBe(true);
      // And the next operator binds the same probe port.
      const second = await startOperator({ kubeconfig: testKubeconfigPath(), args });
      expect(second.probeAddress).toBe(`127.0.0.1:${probePort}`);
      expect((await fetch(`http://${second.probeAddress}/healthz`)).status).toBe(200);
      await second.stop();
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silentGit.close(resolve));
    }
  }, 180_000);
});

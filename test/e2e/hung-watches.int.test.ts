// End to end, the operator talking to the API server through a proxy that can freeze every watch stream open at
// that moment without closing it (a NAT or firewall that dropped the connection: no error, no end, silence).
// A hand edit of an applied object is corrected within seconds while the watches live; with every watch frozen
// it is still corrected within one refresh interval: a watch not heard from within the API server's bookmark
// period and a margin (WATCH_FRESH_MS) is given up, and no resync trusts its cache meanwhile.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { WATCH_FRESH_MS } from '@syncline/operator';
import { startGitServer, startOperator, startWatchHangProxy, type GitServer, type OperatorProcess, type WatchHangProxy } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, configSync, core, eventually, installCrds, waitForReady } from './harness.ts';

const run = promisify(execFile);

/** The sync's refresh interval: longer than WATCH_FRESH_MS, so "within one refresh interval" is the promise. */
const REFRESH_MS = 90_000;

const service = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', labels: { app: 'web' } },
  spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 8080, targetPort: 8080 }] },
};

describe('a hung watch hides drift for at most one refresh interval', () => {
  let git: GitServer;
  let ns: TestNamespace;
  let proxy: WatchHangProxy;
  let operator: OperatorProcess;
  let dir: string;

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    ns = await testNamespace({ prefix: 'hung' });
    dir = await mkdtemp(join(tmpdir(), 'syncline-hung-'));
    // The operator's kubeconfig names the proxy (the serving certificate names 127.0.0.1 on any port).
    const text = await readFile(testKubeconfigPath(), 'utf8');
    const server = /server: https:\/\/127\.0\.0\.1:(\d+)/.exec(text);
    if (server === null) throw new Error('the test kubeconfig names no loopback server');
    proxy = await startWatchHangProxy({ dataDir: dirname(testKubeconfigPath()), upstream: { host: '127.0.0.1', port: Number(server[1]) } });
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, text.replace(server[0], `server: https://127.0.0.1:${proxy.port}`), { mode: 0o600 });
    operator = await startOperator({ kubeconfig, args: ['--namespace', ns.name] });
    const repo = await git.createRepo('hung-watches');
    const sha = await repo.commit({ 'app/service.yaml': JSON.stringify(service) });
    await applyConfigSync(
      configSync(ns.name, 'web', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: `${REFRESH_MS / 1000}s`,
        policy: 'Sync',
        drift: 'Correct',
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );
    await waitForReady(ns.name, 'web', (c) => c.status?.sourceRevision === sha, 90_000);
  }, 240_000);
  afterAll(async () => {
    await operator.stop();
    await proxy.close();
    await ns[Symbol.asyncDispose]();
    await git.close();
    await rm(dir, { recursive: true, force: true });
  });

  const port = async (): Promise<number | undefined> => (await core.readNamespacedService({ name: 'web', namespace: ns.name })).spec?.ports?.[0]?.port;
  /** Patches the Service's port by hand with the real kubectl, and returns how long until it is Git's again (ms). */
  async function editAndTime(limitMs: number): Promise<number> {
    const { stdout } = await run(
      'kubectl',
      [
        '--kubeconfig',
        testKubeconfigPath(),
        '-n',
        ns.name,
        'patch',
        'service/web',
        '--type',
        'json',
        '-p',
        '[{"op":"replace","path":"/spec/ports/0/port","value":9999}]',
      ],
      { timeout: 60_000 },
    );
    const edited = Date.now();
    expect(stdout).toMatch(/service\/web patched/);
    await eventually(async () => ((await port()) === 8080 ? true : undefined), `the hand edit corrected within ${limitMs / 1000}s`, limitMs);
    return Date.now() - edited;
  }

  it('with live watches, an edit is corrected by the drift watch (well before a refresh)', async () => {
    const ms = await editAndTime(20_000);
    console.log(`corrected in ${(ms / 1000).toFixed(1)}s with live watches`);
    expect(ms).toBeLessThan(20_000);
  }, 60_000);

  it('with every watch stream frozen, an edit is still corrected within one refresh interval, and the frozen streams are given up', async () => {
    // Watches opened since the last test (or a restart) are frozen too: every one open now.
    await eventually(() => Promise.resolve(proxy.openWatches() > 0 ? true : undefined), 'the operator has watches open', 30_000);
    const frozen = proxy.hangOpenWatches();
    expect(frozen).toBeGreaterThan(0);
    const ms = await editAndTime(REFRESH_MS);
    console.log(
      `corrected in ${(ms / 1000).toFixed(1)}s with ${frozen} watch streams frozen (refresh interval ${REFRESH_MS / 1000}s, watches trusted for ${WATCH_FRESH_MS / 1000}s)`,
    );
    expect(ms).toBeLessThanOrEqual(REFRESH_MS);
    // The operator gave the frozen streams up by itself (the proxy never closes them).
    await eventually(() => Promise.resolve(proxy.tally().stillFrozen === 0 ? true : undefined), 'every frozen stream given up', WATCH_FRESH_MS + 30_000);
    const given = proxy.tally().abandoned.map((a) => a.afterMs);
    expect(given.length).toBe(frozen);
    expect(Math.max(...given)).toBeLessThanOrEqual(WATCH_FRESH_MS + 10_000);
  }, 300_000);
});

// The image itself: built from the Dockerfile with buildah (scripts/build-image.sh; cached by the hash of
// its inputs, so only the first run for given sources builds), then its ENTRYPOINT runs as the chart's pod
// would run it, as uid 1000 on a read-only root filesystem with emptyDir-like /tmp and cache, against the
// real control plane: `syncline run` applies a ConfigSync from the test Git server and `syncline status`,
// from the same image, reports it Ready.
import { startGitServer, startOperator, type GitServer, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, configMapData, configSync, installCrds, waitForReady } from '../e2e/harness.ts';
import { ensureImage, imageCommand, type BuiltImage } from './image.ts';

const CACHE_DIR = '/var/cache/syncline';

describe('the image (Dockerfile, built with buildah, run as uid 1000 on a read-only root)', () => {
  let image: BuiltImage;
  let hostDir: string;
  let git: GitServer;
  let ns: TestNamespace;
  let operator: OperatorProcess | undefined;
  let command: [string, ...string[]];

  beforeAll(async () => {
    image = await ensureImage({ onProgress: (line) => console.log(`[image] ${line}`) });
    console.log(`[image] ${image.buildSeconds === undefined ? 'from the cache' : `built in ${Math.round(image.buildSeconds)}s`}; ${(image.size.uncompressedBytes / 1e6).toFixed(1)} MB unpacked, ${(image.size.compressedBytes / 1e6).toFixed(1)} MB compressed`);
    // The kubeconfig, readable by the image's user, at /mnt/kubeconfig inside (as a Secret volume would be).
    hostDir = await mkdtemp(join(tmpdir(), 'syncline-image-run-'));
    await copyFile(testKubeconfigPath(), join(hostDir, 'kubeconfig'));
    await chmod(hostDir, 0o755);
    await chmod(join(hostDir, 'kubeconfig'), 0o644);
    command = imageCommand(image, { hostDir, writable: [CACHE_DIR] });
    await installCrds();
    git = await startGitServer();
    ns = await testNamespace({ prefix: 'image' });
  }, 60 * 60_000);
  afterAll(async () => {
    await operator?.stop();
    await ns?.[Symbol.asyncDispose]();
    await git?.close();
    if (hostDir !== undefined) await rm(hostDir, { recursive: true, force: true });
  });

  /** A one-shot command in the image (same user, mounts and environment as the operator). */
  const runInImage = (args: readonly string[], entrypoint = true): SpawnSyncReturns<string> => {
    const [executable, ...rest] = command;
    const prefix = entrypoint ? rest : rest.slice(0, -1);
    return spawnSync(executable, [...prefix, ...args], { encoding: 'utf8', timeout: 120_000 });
  };

  it('declares a non-root user, `syncline run` with the cache directory, and the Node flags', () => {
    expect(image.config.user).toMatchObject({ uid: 1000, gid: 1000 });
    expect(image.config.args).toEqual(['syncline', 'run', `--cache-dir=${CACHE_DIR}`]);
    expect(image.config.env).toEqual(expect.arrayContaining(['NODE_ENV=production', 'NODE_OPTIONS=--max-semi-space-size=8']));
    expect(image.config.cwd).toBe('/app');
  });

  it("ships the web UI's bundled page (what --ui-addr serves)", () => {
    for (const file of ['app.js', 'style.css']) expect(existsSync(join(image.rootfs, 'app', 'packages', 'operator', 'dist', 'ui', file)), file).toBe(true);
  });

  it('is no larger than 150 MB compressed (the registry transfer)', () => {
    expect(image.size.compressedBytes).toBeLessThanOrEqual(150 * 1e6);
  });

  it('runs as uid 1000 and cannot write its root filesystem, only its volumes', () => {
    const probe = runInImage(['/bin/sh', '-c', 'id -u; id -g; touch /app/x 2>&1 || true; touch /usr/local/bin/x 2>&1 || true; touch /var/cache/syncline/ok && echo cache-ok; touch /tmp/ok && echo tmp-ok'], false);
    expect(probe.stderr).toBe('');
    expect(probe.status).toBe(0);
    const lines = probe.stdout.trim().split('\n');
    expect(lines.slice(0, 2)).toEqual(['1000', '1000']);
    expect(lines.filter((l) => /Read-only file system/.test(l))).toHaveLength(2);
    expect(lines).toEqual(expect.arrayContaining(['cache-ok', 'tmp-ok']));
  });

  it('`syncline run` from the image syncs a ConfigSync, and `syncline status` from the image reports it Ready', async () => {
    // given a repository with a template, and the image's operator watching the test namespace
    const repo = await git.createRepo('image');
    const sha = await repo.commit({ 'app/cm.yaml.hbs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-image\ndata:\n  greeting: {{values.greeting}}\n' });
    operator = await startOperator({
      command,
      kubeconfig: '/mnt/kubeconfig',
      cacheDir: CACHE_DIR,
      args: ['--namespace', ns.name, '--webhook-addr', 'off'],
    });
    // it is the image's Node, as uid 1000, that answers
    const uid = /^Uid:\s+(\d+)/m.exec(await readFile(`/proc/${operator.pid}/status`, 'utf8'))?.[1];
    expect(uid).toBe('1000');
    expect((await stat(`/proc/${operator.pid}/root/usr/local/bin/node`)).isFile()).toBe(true);
    expect((await fetch(`http://${operator.probeAddress}/healthz`)).status).toBe(200);

    // when a ConfigSync is applied
    await applyConfigSync(configSync(ns.name, 'app', {
      source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
      values: { greeting: 'hello from the image' },
      targets: [{ name: 'here', namespace: ns.name }],
    }));

    // then it applies, the operator is ready, and the image's `syncline status` shows it Ready at the commit
    await waitForReady(ns.name, 'app', (cs) => cs.status?.sourceRevision === sha, 90_000);
    expect(await configMapData(ns.name, 'from-image')).toEqual({ greeting: 'hello from the image' });
    expect((await fetch(`http://${operator.probeAddress}/readyz`)).status).toBe(200);
    const status = runInImage(['status', '-n', ns.name, '--kubeconfig', '/mnt/kubeconfig']);
    expect(status.stderr).toBe('');
    expect(status.status).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^${ns.name}\\s+app\\s+True\\s+\\S+\\s+${sha.slice(0, 12)}\\s+1/1`, 'm'));
    // no error-level log line (pino's numeric 50+ or a string level)
    expect(operator.logs.filter((l) => (typeof l['level'] === 'number' ? l['level'] >= 50 : ['error', 'fatal'].includes(String(l['level']))))).toEqual([]);
  }, 180_000);
});

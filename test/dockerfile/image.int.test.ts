// The image itself: built from the Dockerfile with buildah (scripts/build-image.sh; cached by the hash of
// its inputs, so only the first run for given sources builds), then its ENTRYPOINT runs as the chart's pod
// would run it, as uid 1000 on a read-only root filesystem with emptyDir-like /tmp and cache, against the
// real control plane: `syncline run` applies a ConfigSync from the test Git server (a template, and a Kustomize
// overlay through the image's syncline-render) and `syncline status`, from the same image, reports them Ready.
import { startGitServer, startOperator, type GitServer, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, readlinkSync } from 'node:fs';
import { copyFile, chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { applyConfigSync, configMapData, configSync, installCrds, waitForReady } from '../e2e/harness.ts';
import { ensureImage, imageCommand, type BuiltImage } from './image.ts';

const CACHE_DIR = '/var/cache/syncline';
/** Where the chart's --render-engine points. */
const RENDER_ENGINE = '/usr/local/bin/syncline-render';

/** A Kustomize overlay: a base, a name prefix, a label and a generated ConfigMap (hash-suffixed by Kustomize). */
const KUSTOMIZE: Record<string, string> = {
  'base/kustomization.yaml': 'resources:\n  - cm.yaml\n',
  'base/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  tier: base\n',
  'overlay/kustomization.yaml':
    'resources:\n  - ../base\nnamePrefix: kust-\nlabels:\n  - pairs:\n      env: image\npatches:\n  - patch: |-\n      - op: replace\n        path: /data/tier\n        value: overlay\n    target:\n      kind: ConfigMap\n      name: settings\nconfigMapGenerator:\n  - name: generated\n    literals:\n      - color=blue\n',
};

/** A Helm chart whose template uses values, the release and a function of Sprig. */
const CHART: Record<string, string> = {
  'Chart.yaml': 'apiVersion: v2\nname: web\nversion: 0.1.0\n',
  'values.yaml': 'replicas: 1\ngreeting: hello\n',
  'templates/cm.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-web\ndata:\n  replicas: {{ .Values.replicas | quote }}\n  greeting: {{ .Values.greeting | upper | quote }}\n',
};

async function writeTree(dir: string, files: Record<string, string>): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), content);
  }
}

/** `syncline render` output: the documents, each with the engine named in the comment before it. */
function renderedObjects(stdout: string): { kind: unknown; name: unknown; labels: unknown; data: unknown }[] {
  return parseAllDocuments(stdout)
    .map((doc) => doc.toJS() as { kind?: unknown; metadata?: { name?: unknown; labels?: unknown }; data?: unknown } | null)
    .filter((object) => object !== null)
    .map((object) => ({ kind: object.kind, name: object.metadata?.name, labels: object.metadata?.labels, data: object.data }));
}

describe('the image (Dockerfile, built with buildah, run as uid 1000 on a read-only root)', () => {
  let image: BuiltImage;
  let hostDir: string;
  let git: GitServer;
  let ns: TestNamespace;
  let operator: OperatorProcess | undefined;
  let command: [string, ...string[]];

  beforeAll(async () => {
    image = await ensureImage({ onProgress: (line) => console.log(`[image] ${line}`) });
    console.log(
      `[image] ${image.buildSeconds === undefined ? 'from the cache' : `built in ${Math.round(image.buildSeconds)}s`}; ${(image.size.uncompressedBytes / 1e6).toFixed(1)} MB unpacked, ${(image.size.compressedBytes / 1e6).toFixed(1)} MB compressed`,
    );
    // The kubeconfig, readable by the image's user, at /mnt/kubeconfig inside (as a Secret volume would be).
    hostDir = await mkdtemp(join(tmpdir(), 'syncline-image-run-'));
    await copyFile(testKubeconfigPath(), join(hostDir, 'kubeconfig'));
    await chmod(hostDir, 0o755);
    await chmod(join(hostDir, 'kubeconfig'), 0o644);
    await writeTree(join(hostDir, 'kustomize'), KUSTOMIZE);
    await writeTree(join(hostDir, 'chart'), CHART);
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
    expect(image.config.env).toEqual(expect.arrayContaining(['NODE_ENV=production', 'NODE_OPTIONS=--max-semi-space-size=4', 'MALLOC_ARENA_MAX=2']));
    expect(image.config.cwd).toBe('/app');
  });

  it('runs `syncline` as JavaScript: the operator bundle, not the .ts sources (no TypeScript stripper in the process)', () => {
    expect(readlinkSync(join(image.rootfs, 'usr', 'local', 'bin', 'syncline'))).toBe('/app/packages/cli/dist/syncline/syncline.mjs');
    for (const file of ['syncline.mjs', 'index-pack-worker.mjs'])
      expect(existsSync(join(image.rootfs, 'app', 'packages', 'cli', 'dist', 'syncline', file)), file).toBe(true);
  });

  it("ships the web UI's bundled page (what --ui-addr serves)", () => {
    for (const file of ['app.js', 'style.css']) expect(existsSync(join(image.rootfs, 'app', 'packages', 'ui', 'dist', 'ui', file)), file).toBe(true);
  });

  it('carries the render process at the path the chart passes as --render-engine, root-owned and 0755', async () => {
    const engine = await stat(join(image.rootfs, RENDER_ENGINE));
    expect(engine.isFile()).toBe(true);
    expect([engine.uid, engine.gid, engine.mode & 0o7777]).toEqual([0, 0, 0o755]);
  });

  it('`syncline render` in the image renders a Kustomize overlay and a Helm chart through its syncline-render', () => {
    // the default engine path, as in the image: no --render-engine
    const overlay = runInImage(['render', '/mnt/kustomize/overlay', '--repo-root', '/mnt/kustomize']);
    expect(overlay.stderr).toBe('');
    expect(overlay.status).toBe(0);
    expect(overlay.stdout).toContain('# kustomize\n');
    const objects = renderedObjects(overlay.stdout);
    expect(objects).toHaveLength(2);
    expect(objects).toContainEqual({ kind: 'ConfigMap', name: 'kust-settings', labels: { env: 'image' }, data: { tier: 'overlay' } });
    // the generator's name carries Kustomize's hash of the ConfigMap
    const generated = objects.find((object) => String(object.name).startsWith('kust-generated-'));
    expect(String(generated?.name)).toMatch(/^kust-generated-[a-z0-9]{10}$/);
    expect(generated).toMatchObject({ kind: 'ConfigMap', labels: { env: 'image' }, data: { color: 'blue' } });

    const chart = runInImage(['render', '/mnt/chart', '--repo-root', '/mnt/chart', '--release-name', 'shop', '--set', 'replicas=3', '-n', 'store']);
    expect(chart.stderr).toBe('');
    expect(chart.status).toBe(0);
    expect(chart.stdout).toContain('# helm\n');
    expect(renderedObjects(chart.stdout)).toEqual([{ kind: 'ConfigMap', name: 'shop-web', labels: undefined, data: { replicas: '3', greeting: 'HELLO' } }]);
  });

  it('is no larger than 150 MB compressed (the registry transfer)', () => {
    expect(image.size.compressedBytes).toBeLessThanOrEqual(150 * 1e6);
  });

  it('runs as uid 1000 and cannot write its root filesystem, only its volumes', () => {
    const probe = runInImage(
      [
        '/bin/sh',
        '-c',
        'id -u; id -g; touch /app/x 2>&1 || true; touch /usr/local/bin/x 2>&1 || true; touch /var/cache/syncline/ok && echo cache-ok; touch /tmp/ok && echo tmp-ok',
      ],
      false,
    );
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
    const sha = await repo.commit({
      'app/cm.yaml.hbs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-image\ndata:\n  greeting: {{values.greeting}}\n',
      ...Object.fromEntries(Object.entries(KUSTOMIZE).map(([path, content]) => [`kust/${path}`, content])),
    });
    // the chart's arguments for the render process
    operator = await startOperator({
      command,
      kubeconfig: '/mnt/kubeconfig',
      cacheDir: CACHE_DIR,
      args: ['--namespace', ns.name, '--webhook-addr', 'off', `--render-engine=${RENDER_ENGINE}`],
    });
    // it is the image's Node, as uid 1000, that answers
    const uid = /^Uid:\s+(\d+)/m.exec(await readFile(`/proc/${operator.pid}/status`, 'utf8'))?.[1];
    expect(uid).toBe('1000');
    expect((await stat(`/proc/${operator.pid}/root/usr/local/bin/node`)).isFile()).toBe(true);
    expect((await fetch(`http://${operator.probeAddress}/healthz`)).status).toBe(200);

    // when a ConfigSync is applied, and one of a Kustomize overlay
    await applyConfigSync(
      configSync(ns.name, 'app', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        values: { greeting: 'hello from the image' },
        targets: [{ name: 'here', namespace: ns.name }],
      }),
    );
    await applyConfigSync(
      configSync(ns.name, 'kust', {
        source: { git: { repo: repo.url, revision: 'main', path: 'kust/overlay' } },
        targets: [{ name: 'here', namespace: ns.name }],
      }),
    );

    // then it applies, the operator is ready, and the image's `syncline status` shows it Ready at the commit
    await waitForReady(ns.name, 'app', (cs) => cs.status?.sourceRevision === sha, 90_000);
    expect(await configMapData(ns.name, 'from-image')).toEqual({ greeting: 'hello from the image' });
    // the overlay, rendered by the image's syncline-render, is applied too
    await waitForReady(ns.name, 'kust', (cs) => cs.status?.sourceRevision === sha, 90_000);
    expect(await configMapData(ns.name, 'kust-settings')).toEqual({ tier: 'overlay' });
    expect((await fetch(`http://${operator.probeAddress}/readyz`)).status).toBe(200);
    const status = runInImage(['status', '-n', ns.name, '--kubeconfig', '/mnt/kubeconfig']);
    expect(status.stderr).toBe('');
    expect(status.status).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^${ns.name}\\s+app\\s+True\\s+\\S+\\s+${sha.slice(0, 12)}\\s+1/1`, 'm'));
    expect(status.stdout).toMatch(new RegExp(`^${ns.name}\\s+kust\\s+True\\s+\\S+\\s+${sha.slice(0, 12)}\\s+1/1`, 'm'));
    // no error-level log line (pino's numeric 50+ or a string level)
    expect(operator.logs.filter((l) => (typeof l['level'] === 'number' ? l['level'] >= 50 : ['error', 'fatal'].includes(String(l['level']))))).toEqual([]);
  }, 180_000);
});

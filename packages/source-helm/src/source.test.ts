// Charts fetched from real servers on loopback: a Helm repository made by the real `helm package` and
// `helm repo index`, served over HTTPS with a private CA behind basic auth, and a CNCF distribution registry the
// real `helm push` writes to. What Syncline renders from a fetched chart equals `helm template` of the same
// chart from the same server; digests are verified; a resolution and an archive are fetched once.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { RenderEngine, createStaticDiscovery, renderWithEngine, EngineName } from '@syncline/render';
import {
  createTestCa,
  ensureHelm,
  ensureRenderEngine,
  helmPackage,
  startHelmRepository,
  startOciRegistry,
  type HelmRepository,
  type OciRegistry,
} from '@syncline/test-support';
import { ChartSourceError, ChartSourceErrorCode, createChartSource, type ChartSource } from './index.ts';
import { readChartArchive } from './archive.ts';

const run = promisify(execFile);
const progress = (line: string): void => console.log(`[source-helm] ${line}`);
const testdata = join(import.meta.dirname, 'testdata');
const auth = { username: 'reader', password: 'chart-reader-Secret-9' };

let engine: RenderEngine;
let helm: string;
let work: string;
let ca: Awaited<ReturnType<typeof createTestCa>>;
let repo: HelmRepository & { down: boolean };
let registry: OciRegistry;

/** The test chart at `version`, packaged by `helm package`. */
async function packageVersion(version: string, greeting = 'hello'): Promise<string> {
  const dir = join(work, `src-${version}`);
  cpSync(join(testdata, 'hello'), join(dir, 'hello'), { recursive: true });
  const chartYaml = join(dir, 'hello', 'Chart.yaml');
  writeFileSync(chartYaml, readFileSync(chartYaml, 'utf8').replace(/^version: .*$/m, `version: ${version}`));
  const values = join(dir, 'hello', 'values.yaml');
  writeFileSync(values, readFileSync(values, 'utf8').replace(/^greeting: .*$/m, `greeting: ${greeting}`));
  return helmPackage(join(dir, 'hello'), join(work, 'packages'), { onProgress: progress });
}

/** `helm template` (asynchronously: the servers it talks to run in this process). */
async function helmTemplate(args: readonly string[]): Promise<unknown[]> {
  const home = join(work, 'helm-home');
  const { stdout } = await run(helm, ['template', 'demo', ...args, '--namespace', 'shop'], {
    env: { PATH: process.env['PATH'] ?? '', HOME: home, HELM_CACHE_HOME: join(home, 'c'), HELM_CONFIG_HOME: join(home, 'f'), HELM_DATA_HOME: join(home, 'd') },
  });
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as unknown)
    .filter((o) => o !== null);
}

async function renderFetched(
  chart: { dir: string; files: readonly { path: string; content: Uint8Array }[]; digest: string },
  values?: Record<string, unknown>,
  targetValues?: Record<string, unknown>,
): Promise<unknown[]> {
  const objects = await renderWithEngine({
    engine,
    spec: { engine: EngineName.Helm, options: { chart: chart.dir, releaseName: 'demo', includeCRDs: true, skipTests: true } },
    files: chart.files,
    path: '',
    ...(values === undefined ? {} : { values }),
    target: { name: 'default', namespace: 'shop', ...(targetValues === undefined ? {} : { values: targetValues }) },
    source: { repo: 'https://git.example/repo', revision: 'a'.repeat(40), path: '' },
    discovery: createStaticDiscovery(),
    releaseName: 'demo',
    chartDigest: chart.digest,
  });
  return objects.map((o) => {
    // Syncline sets the target's namespace on namespaced objects; helm template leaves it out.
    const { namespace: _namespace, ...metadata } = o.metadata as Record<string, unknown>;
    return { ...o, metadata };
  });
}

const source = (extra: { cacheDir?: string } = {}): ChartSource =>
  createChartSource({ chooseVersion: (versions, version) => engine.chooseChartVersion(versions, version), allowInsecureHttp: true, ...extra });

beforeAll(async () => {
  engine = new RenderEngine({ binary: await ensureRenderEngine({ onProgress: progress }) });
  helm = await ensureHelm({ onProgress: progress });
  work = mkdtempSync(join(tmpdir(), 'syncline-source-helm-'));
  ca = await createTestCa();
  repo = await startHelmRepository({ auth, tls: ca.server, onProgress: progress });
  for (const [version, greeting] of [
    ['1.0.0', 'hello'],
    ['1.1.0', 'bonjour'],
    ['2.0.0-rc.1', 'hallo'],
  ] as const)
    cpSync(await packageVersion(version, greeting), join(repo.dir, `hello-${version}.tgz`));
  await repo.index();
  registry = await startOciRegistry({ onProgress: progress });
  await registry.push(await packageVersion('0.9.0', 'salut'), 'charts');
  await registry.push(await packageVersion('1.0.0+build.7', 'ciao'), 'charts');
}, 900_000);

afterAll(async () => {
  engine?.close();
  await repo?.close();
  await registry?.close();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('a Helm repository (index.yaml over HTTPS, basic auth, private CA)', () => {
  it('resolves a semver range as Helm does and renders what helm template renders', async () => {
    const chart = await source().fetchChart({ url: repo.url, chart: 'hello', version: '^1.0', auth, ca: ca.caCert });
    expect(chart.version).toBe('1.1.0');
    expect(chart.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const caFile = join(work, 'ca.crt');
    writeFileSync(caFile, ca.caCert);
    const expected = await helmTemplate([
      'hello',
      '--repo',
      repo.url,
      '--version',
      '^1.0',
      '--username',
      auth.username,
      '--password',
      auth.password,
      '--ca-file',
      caFile,
    ]);
    expect(await renderFetched(chart)).toEqual(expected);
    expect(JSON.stringify(expected)).toContain('bonjour');
  });

  it("null in the sync's or the target's values deletes the chart's default, as helm template -f does", async () => {
    const chart = await source().fetchChart({ url: repo.url, chart: 'hello', version: '1.0.0', auth, ca: ca.caCert });
    const sync = { greeting: null, settings: { color: 'red' } };
    const target = { settings: { size: null } };
    const caFile = join(work, 'ca.crt');
    writeFileSync(caFile, ca.caCert);
    writeFileSync(join(work, 'sync.json'), JSON.stringify(sync));
    writeFileSync(join(work, 'target.json'), JSON.stringify(target));
    const expected = await helmTemplate([
      'hello',
      '--repo',
      repo.url,
      '--version',
      '1.0.0',
      '--username',
      auth.username,
      '--password',
      auth.password,
      '--ca-file',
      caFile,
      '-f',
      join(work, 'sync.json'),
      '-f',
      join(work, 'target.json'),
    ]);
    const rendered = await renderFetched(chart, sync, target);
    expect(rendered).toEqual(expected);
    const configMap = rendered.find((o) => (o as { kind: string }).kind === 'ConfigMap') as { data: Record<string, string> };
    // greeting's default is gone: `quote` of nothing renders an empty YAML value, as with helm template.
    expect(configMap.data).toMatchObject({ color: 'red', greeting: null });
    expect(configMap.data['size']).toBeUndefined();
  });

  it('picks the newest release (no prerelease) for an empty version, and an exact prerelease when named', async () => {
    const charts = source();
    expect((await charts.fetchChart({ url: repo.url, chart: 'hello', version: '', auth, ca: ca.caCert })).version).toBe('1.1.0');
    expect((await charts.fetchChart({ url: repo.url, chart: 'hello', version: '2.0.0-rc.1', auth, ca: ca.caCert })).version).toBe('2.0.0-rc.1');
    const none = await charts.fetchChart({ url: repo.url, chart: 'hello', version: '>=3', auth, ca: ca.caCert }).catch((e: unknown) => e);
    expect(none).toBeInstanceOf(ChartSourceError);
    expect((none as ChartSourceError).code).toBe(ChartSourceErrorCode.VersionNotFound);
    expect((none as ChartSourceError).retryable).toBe(true);
    expect((none as Error).message).toContain('>=3');
  });

  it('wrong credentials stall with AuthFailed and the message carries no credential', async () => {
    const error = (await source()
      .fetchChart({ url: repo.url, chart: 'hello', version: '1.0.0', auth: { username: 'reader', password: 'not-the-password' }, ca: ca.caCert })
      .catch((e: unknown) => e)) as ChartSourceError;
    expect(error.code).toBe(ChartSourceErrorCode.AuthFailed);
    expect(error.retryable).toBe(false);
    expect(error.message).not.toContain('not-the-password');
    expect(error.message).toContain('index.yaml');
  });

  it('a server certificate from an unknown CA is UntrustedCertificate', async () => {
    const error = (await source()
      .fetchChart({ url: repo.url, chart: 'hello', version: '1.0.0', auth })
      .catch((e: unknown) => e)) as ChartSourceError;
    expect(error.code).toBe(ChartSourceErrorCode.UntrustedCertificate);
  });

  it('an archive whose digest differs from the index is refused (retried), and nothing is cached', async () => {
    const index = join(repo.dir, 'index.yaml');
    const original = readFileSync(index, 'utf8');
    // The index lists 1.0.0 with another archive's digest: a tampered or half-updated repository.
    const parsed = parse(original) as { entries: Record<string, { version: string; digest: string }[]> };
    const entry = parsed.entries['hello']?.find((e) => e.version === '1.0.0');
    if (entry === undefined) throw new Error('the index lists no hello 1.0.0');
    entry.digest = '0'.repeat(64);
    writeFileSync(index, stringify(parsed));
    try {
      const charts = source();
      const error = (await charts
        .fetchChart({ url: repo.url, chart: 'hello', version: '1.0.0', auth, ca: ca.caCert })
        .catch((e: unknown) => e)) as ChartSourceError;
      expect(error.code).toBe(ChartSourceErrorCode.DigestMismatch);
      expect(error.retryable).toBe(true);
      expect(error.message).toContain(`sha256:${'0'.repeat(64)}`);
    } finally {
      writeFileSync(index, original);
    }
  });

  it('resolves once per maxAge, downloads an archive once, and reads it back from the disk cache', async () => {
    const cacheDir = join(work, 'chart-cache');
    const charts = source({ cacheDir });
    const request = { url: repo.url, chart: 'hello', version: '1.0.0', auth, ca: ca.caCert, maxAgeMs: 60_000 };
    const before = repo.requests.length;
    const first = await charts.fetchChart(request);
    expect(repo.requests.slice(before)).toEqual(['GET /charts/index.yaml', 'GET /charts/hello-1.0.0.tgz']);
    const again = repo.requests.length;
    expect((await charts.fetchChart(request)).digest).toBe(first.digest);
    expect(repo.requests.length).toBe(again);
    // maxAge 0: the index is read again, the archive is not.
    await charts.fetchChart({ ...request, maxAgeMs: 0 });
    expect(repo.requests.slice(again)).toEqual(['GET /charts/index.yaml']);
    // Another process with the same cache directory finds the archive on disk.
    const fresh = source({ cacheDir });
    const reread = repo.requests.length;
    expect((await fresh.fetchChart(request)).files).toEqual(first.files);
    expect(repo.requests.slice(reread)).toEqual(['GET /charts/index.yaml']);
    expect(fresh.stats.downloads).toBe(0);
  });

  it('the disk cache keeps under its bound, the oldest archive out first', async () => {
    const cacheDir = join(work, 'small-cache');
    const charts = createChartSource({ chooseVersion: (versions, version) => engine.chooseChartVersion(versions, version), cacheDir, diskBytes: 1 });
    await charts.fetchChart({ url: repo.url, chart: 'hello', version: '1.0.0', auth, ca: ca.caCert });
    await charts.fetchChart({ url: repo.url, chart: 'hello', version: '1.1.0', auth, ca: ca.caCert });
    // A bound below one archive keeps none on disk; the charts were still served (from memory next time).
    expect(readdirSync(cacheDir).filter((f) => f.endsWith('.tgz'))).toEqual([]);
    const roomy = join(work, 'roomy-cache');
    const kept = createChartSource({ chooseVersion: (versions, version) => engine.chooseChartVersion(versions, version), cacheDir: roomy });
    const chart = await kept.fetchChart({ url: repo.url, chart: 'hello', version: '1.0.0', auth, ca: ca.caCert });
    expect(readdirSync(roomy)).toEqual([`${chart.digest.replace(':', '-')}.tgz`]);
  });

  it('an unreachable repository is Unreachable (retried)', async () => {
    repo.down = true;
    try {
      const error = (await source()
        .fetchChart({ url: repo.url, chart: 'hello', version: '1.0.0', auth, ca: ca.caCert })
        .catch((e: unknown) => e)) as ChartSourceError;
      expect(error.code).toBe(ChartSourceErrorCode.ServerError);
      expect(error.retryable).toBe(true);
    } finally {
      repo.down = false;
    }
    const closed = (await source()
      .fetchChart({ url: 'https://127.0.0.1:9/charts', chart: 'hello', version: '1.0.0' })
      .catch((e: unknown) => e)) as ChartSourceError;
    expect(closed.code).toBe(ChartSourceErrorCode.Unreachable);
    expect(closed.retryable).toBe(true);
  });

  it('plain http:// is refused unless the operator allows it', async () => {
    const strict = createChartSource({ chooseVersion: (versions, version) => engine.chooseChartVersion(versions, version) });
    const error = (await strict
      .fetchChart({ url: 'http://charts.example/stable', chart: 'hello', version: '1.0.0' })
      .catch((e: unknown) => e)) as ChartSourceError;
    expect(error.code).toBe(ChartSourceErrorCode.InvalidUrl);
    expect(error.retryable).toBe(false);
    const inUrl = (await strict
      .fetchChart({ url: 'https://user:pw-in-url@charts.example/stable', chart: 'hello', version: '1.0.0' })
      .catch((e: unknown) => e)) as ChartSourceError;
    expect(inUrl.code).toBe(ChartSourceErrorCode.InvalidUrl);
    expect(inUrl.message).not.toContain('pw-in-url');
  });
});

describe('an OCI registry (CNCF distribution, charts pushed by helm push)', () => {
  it('renders an exact version as helm template of the same oci:// reference does', async () => {
    const chart = await source().fetchChart({ url: `oci://${registry.host}/charts`, chart: 'hello', version: '0.9.0', insecure: true });
    expect(chart.version).toBe('0.9.0');
    const expected = await helmTemplate([`oci://${registry.host}/charts/hello`, '--version', '0.9.0', '--plain-http']);
    expect(await renderFetched(chart)).toEqual(expected);
    expect(JSON.stringify(expected)).toContain('salut');
  });

  it('resolves a range over the tags (build metadata stored as _), with the digest the registry names', async () => {
    const chart = await source().fetchChart({ url: `oci://${registry.host}/charts`, chart: 'hello', version: '>=0.9', insecure: true });
    expect(chart.version).toBe('1.0.0+build.7');
    const manifest = await fetch(`http://${registry.host}/v2/charts/hello/manifests/1.0.0_build.7`, {
      headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
    });
    expect(chart.digest).toBe(manifest.headers.get('docker-content-digest'));
    const expected = await helmTemplate([`oci://${registry.host}/charts/hello`, '--version', '>=0.9', '--plain-http']);
    expect(await renderFetched(chart)).toEqual(expected);
  });

  it('a pinned digest that differs is DigestMismatch (retried); the right one passes', async () => {
    const charts = source();
    const right = await charts.fetchChart({ url: `oci://${registry.host}/charts`, chart: 'hello', version: '0.9.0', insecure: true });
    const pinned = await charts.fetchChart({ url: `oci://${registry.host}/charts`, chart: 'hello', version: '0.9.0', insecure: true, digest: right.digest });
    expect(pinned.digest).toBe(right.digest);
    const error = (await charts
      .fetchChart({ url: `oci://${registry.host}/charts`, chart: 'hello', version: '0.9.0', insecure: true, digest: `sha256:${'1'.repeat(64)}` })
      .catch((e: unknown) => e)) as ChartSourceError;
    expect(error.code).toBe(ChartSourceErrorCode.DigestMismatch);
    expect(error.retryable).toBe(true);
  });

  it('a chart that is not in the registry is ChartNotFound; an insecure registry needs the operator flag', async () => {
    const missing = (await source()
      .fetchChart({ url: `oci://${registry.host}/charts`, chart: 'nothing', version: '1.0.0', insecure: true })
      .catch((e: unknown) => e)) as ChartSourceError;
    expect(missing.code).toBe(ChartSourceErrorCode.ChartNotFound);
    const strict = createChartSource({ chooseVersion: (versions, version) => engine.chooseChartVersion(versions, version) });
    const refused = (await strict
      .fetchChart({ url: `oci://${registry.host}/charts`, chart: 'hello', version: '0.9.0', insecure: true })
      .catch((e: unknown) => e)) as ChartSourceError;
    expect(refused.code).toBe(ChartSourceErrorCode.InvalidUrl);
  });
});

describe('chart archives', () => {
  const tar = (entries: { name: string; type?: string; body?: string }[]): Buffer => {
    const blocks: Buffer[] = [];
    for (const entry of entries) {
      const header = Buffer.alloc(512);
      header.write(entry.name, 0, 100, 'utf8');
      const body = Buffer.from(entry.body ?? '');
      header.write(body.length.toString(8).padStart(11, '0'), 124, 12, 'ascii');
      header.write(entry.type ?? '0', 156, 1, 'ascii');
      blocks.push(header, body, Buffer.alloc((512 - (body.length % 512)) % 512));
    }
    return gzipSync(Buffer.concat([...blocks, Buffer.alloc(1024)]));
  };
  const limits = { maxBytes: 1 << 20, maxFiles: 100 };

  it('reads a chart directory and refuses paths that leave it, links, and two directories', () => {
    expect(
      readChartArchive(
        tar([
          { name: 'web/Chart.yaml', body: 'name: web' },
          { name: 'web/templates/a.yaml', body: 'a' },
        ]),
        'x',
        limits,
      ).dir,
    ).toBe('web');
    for (const bad of [
      [{ name: '../Chart.yaml' }],
      [{ name: 'web/Chart.yaml' }, { name: 'web/../../etc/passwd' }],
      [{ name: 'web/Chart.yaml' }, { name: 'web/link', type: '2' }],
      [{ name: 'web/Chart.yaml' }, { name: 'api/Chart.yaml' }],
      [{ name: 'web/values.yaml' }],
    ]) {
      const error = (() => {
        try {
          readChartArchive(tar(bad), 'x', limits);
          return undefined;
        } catch (e) {
          return e;
        }
      })();
      expect(error, JSON.stringify(bad)).toBeInstanceOf(ChartSourceError);
      expect((error as ChartSourceError).code).toBe(ChartSourceErrorCode.InvalidChart);
    }
  });

  it('stops at its size limit', () => {
    const big = tar([{ name: 'web/Chart.yaml', body: 'x'.repeat(300_000) }]);
    expect(() => readChartArchive(big, 'x', { maxBytes: 100_000, maxFiles: 10 })).toThrow(/more than 100000 bytes/);
  });
});

// Charts from where Helm users keep them: a Helm repository (an index.yaml over HTTPS listing chart archives)
// or an OCI registry (oci://). A fetch resolves the version as Helm does (the render process chooses, with
// Helm's semver library), downloads the archive, verifies its digest (the index's, or the registry's manifest
// and blob digests, and spec.digest when pinned), and unpacks it in memory. Archives are cached by digest in
// memory and on disk; a resolution is reused while younger than the caller's maxAgeMs, so a resync within it
// asks the server nothing.
import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readChartArchive, type ChartFile } from './archive.ts';
import { ChartSourceError, ChartSourceErrorCode } from './errors.ts';
import { resolveFromRepository } from './repository.ts';
import { resolveFromRegistry } from './oci.ts';
import { normalizeDigest, redactUrl, sha256, where } from './names.ts';
import {
  defaultChartLimits,
  type ChartAuth,
  type ChartRequest,
  type FetchedChart,
  type ChartLimits,
  type ChartSourceOptions,
  type Resolution,
  type ResolveContext,
  type ChartSource,
} from './types.ts';

export { defaultChartLimits };
export type { ChartAuth, ChartRequest, FetchedChart, ChartLimits, ChartSourceOptions, Resolution, ResolveContext, ChartSource };

/** Where a request goes and who asks, without the secret itself: resolutions are shared only by equal requests. */
function requestKey(request: ChartRequest): string {
  const who = request.auth === undefined ? '' : createHash('sha256').update(`${request.auth.username}\0${request.auth.password}`).digest('hex');
  const ca = request.ca === undefined ? '' : createHash('sha256').update(request.ca).digest('hex');
  return JSON.stringify([request.url.replace(/\/+$/, ''), request.chart, request.version, request.digest ?? '', who, ca, request.insecure === true]);
}

export function createChartSource(options: ChartSourceOptions): ChartSource {
  const limits = { ...defaultChartLimits, ...options.limits };
  const now = options.now ?? (() => Date.now());
  const resolutions = new Map<string, { at: number; resolution: Resolution }>();
  const inflight = new Map<string, Promise<FetchedChart>>();
  const memory = new Map<string, { dir: string; files: readonly ChartFile[]; bytes: number }>();
  const memoryMax = options.memoryBytes ?? 64 << 20;
  let memoryBytes = 0;
  const stats = { resolutions: 0, downloads: 0 };

  const remember = (digest: string, chart: { dir: string; files: readonly ChartFile[] }): void => {
    const bytes = chart.files.reduce((sum, f) => sum + f.content.length, 0);
    if (bytes > memoryMax || memory.has(digest)) return;
    memory.set(digest, { ...chart, bytes });
    memoryBytes += bytes;
    for (const [key, entry] of memory) {
      if (memoryBytes <= memoryMax) break;
      memory.delete(key);
      memoryBytes -= entry.bytes;
    }
  };

  const resolve = async (request: ChartRequest): Promise<Resolution> => {
    const key = requestKey(request);
    const known = resolutions.get(key);
    if (known !== undefined && now() - known.at <= (request.maxAgeMs ?? 0)) return known.resolution;
    stats.resolutions++;
    const context: ResolveContext = {
      request,
      transport: options.transport,
      limits,
      chooseVersion: options.chooseVersion,
      allowInsecureHttp: options.allowInsecureHttp === true,
    };
    const resolution = request.url.startsWith('oci://') ? await resolveFromRegistry(context) : await resolveFromRepository(context);
    if (request.digest !== undefined && normalizeDigest(request.digest) !== resolution.digest) {
      throw new ChartSourceError(
        ChartSourceErrorCode.DigestMismatch,
        `${where(request)}@${resolution.version}: the digest is ${resolution.digest}, not ${normalizeDigest(request.digest)} as spec.source.helm.repository.digest says`,
      );
    }
    resolutions.set(key, { at: now(), resolution });
    if (resolutions.size > 1000) resolutions.delete(resolutions.keys().next().value ?? '');
    return resolution;
  };

  const archive = async (resolution: Resolution, label: string): Promise<{ dir: string; files: readonly ChartFile[] }> => {
    const digest = resolution.archive.digest;
    const cached = memory.get(digest);
    if (cached !== undefined) {
      memory.delete(digest);
      memory.set(digest, cached);
      return cached;
    }
    const file = options.cacheDir === undefined ? undefined : join(options.cacheDir, `${digest.replace(':', '-')}.tgz`);
    let bytes: Buffer | undefined = file === undefined ? undefined : await readFile(file).catch(() => undefined);
    // A damaged cache file is fetched again, never trusted.
    if (bytes !== undefined && sha256(bytes) !== digest) bytes = undefined;
    if (bytes === undefined) {
      stats.downloads++;
      bytes = await resolution.archive.fetch();
      const got = sha256(bytes);
      if (got !== digest)
        throw new ChartSourceError(
          ChartSourceErrorCode.DigestMismatch,
          `${label}: the archive downloaded has digest ${got}, not ${digest} as the ${label.startsWith('oci://') ? 'manifest' : 'index'} says`,
        );
      if (file !== undefined && options.cacheDir !== undefined) {
        await mkdir(options.cacheDir, { recursive: true });
        const aside = `${file}.${process.pid}.tmp`;
        await writeFile(aside, bytes);
        await rename(aside, file);
        await trimDiskCache(options.cacheDir, options.diskBytes ?? 512 << 20);
      }
    }
    const chart = readChartArchive(bytes, label, { maxBytes: limits.unpackedBytes, maxFiles: limits.files });
    remember(digest, chart);
    return chart;
  };

  const fetchChart = async (request: ChartRequest): Promise<FetchedChart> => {
    checkUrl(request, options.allowInsecureHttp === true);
    const resolution = await resolve(request);
    const label = `${where(request)}@${resolution.version}`;
    const chart = await archive(resolution, label);
    return { version: resolution.version, digest: resolution.digest, dir: chart.dir, files: chart.files };
  };

  return {
    stats,
    fetchChart: (request) => {
      // Syncs of the same chart woken together share one resolution and download.
      const key = `${requestKey(request)}\0${request.maxAgeMs ?? 0}`;
      const running = inflight.get(key);
      if (running !== undefined) return running;
      const started = fetchChart(request).finally(() => inflight.delete(key));
      inflight.set(key, started);
      return started;
    },
  };
}

/** Removes the oldest archives of the disk cache until it holds at most `maxBytes`. */
async function trimDiskCache(dir: string, maxBytes: number): Promise<void> {
  const files = await Promise.all(
    (await readdir(dir))
      .filter((name) => name.endsWith('.tgz'))
      .map(async (name) => ({
        path: join(dir, name),
        ...(await stat(join(dir, name)).then(
          (s) => ({ bytes: s.size, mtime: s.mtimeMs }),
          () => ({ bytes: 0, mtime: 0 }),
        )),
      })),
  );
  let total = files.reduce((sum, f) => sum + f.bytes, 0);
  for (const file of files.sort((a, b) => a.mtime - b.mtime)) {
    if (total <= maxBytes) break;
    await rm(file.path, { force: true });
    total -= file.bytes;
  }
}

function checkUrl(request: ChartRequest, allowInsecureHttp: boolean): void {
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    throw new ChartSourceError(ChartSourceErrorCode.InvalidUrl, `${redactUrl(request.url)} is not a URL`);
  }
  if (url.username !== '' || url.password !== '')
    throw new ChartSourceError(ChartSourceErrorCode.InvalidUrl, `${redactUrl(request.url)}: credentials go in secretRef, not in the URL`);
  if (url.protocol === 'oci:') {
    if (request.insecure === true && !allowInsecureHttp)
      throw new ChartSourceError(
        ChartSourceErrorCode.InvalidUrl,
        `${where(request)}: insecure (plain HTTP) registries are refused by this operator (--allow-insecure-http)`,
      );
    return;
  }
  if (url.protocol === 'http:' && !allowInsecureHttp)
    throw new ChartSourceError(
      ChartSourceErrorCode.InvalidUrl,
      `${where(request)}: http:// repositories are refused by this operator (https://, or --allow-insecure-http)`,
    );
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new ChartSourceError(ChartSourceErrorCode.InvalidUrl, `${redactUrl(request.url)}: a chart repository is https:// or oci://`);
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(request.chart))
    throw new ChartSourceError(ChartSourceErrorCode.InvalidUrl, `chart ${JSON.stringify(request.chart)} is not a chart name`);
}

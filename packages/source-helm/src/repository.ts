// A Helm chart repository: GET <url>/index.yaml, the chart's entries, the version Helm would pick, and where its
// archive is (a URL relative to the repository, or absolute) with the digest the index gives it. Basic auth goes
// to the repository's own origin only, as Helm does without --pass-credentials.
import { parse } from 'yaml';
import { ChartSourceError, ChartSourceErrorCode } from './errors.ts';
import { httpGet, statusError } from './http.ts';
import { normalizeDigest, redactUrl, where } from './names.ts';
import type { ResolveContext, Resolution } from './types.ts';

interface IndexEntry {
  version?: unknown;
  digest?: unknown;
  urls?: unknown;
}

export async function resolveFromRepository(context: ResolveContext): Promise<Resolution> {
  const { request, limits } = context;
  const base = request.url.replace(/\/+$/, '');
  const origin = new URL(base).origin;
  const authorization =
    request.auth === undefined ? undefined : { origin, value: `Basic ${Buffer.from(`${request.auth.username}:${request.auth.password}`).toString('base64')}` };
  const get = (url: string, what: string, maxBytes: number) =>
    httpGet(context.transport, {
      url,
      ...(authorization === undefined ? {} : { authorization }),
      ...(request.ca === undefined ? {} : { ca: request.ca }),
      maxBytes,
      timeoutMs: limits.timeoutMs,
      what,
    });
  // The index is named with the chart asked for: a refusal of the index is a refusal of that chart.
  const indexWhat = `${redactUrl(base)}/index.yaml (chart ${request.chart})`;
  const index = await get(`${base}/index.yaml`, indexWhat, limits.indexBytes);
  if (index.status !== 200) {
    const error = statusError(index.status, indexWhat);
    // No index at all is a wrong URL, not a chart yet to come.
    throw error.code === ChartSourceErrorCode.ChartNotFound
      ? new ChartSourceError(ChartSourceErrorCode.ServerError, `${indexWhat}: not found (HTTP 404): is this a Helm repository?`)
      : error;
  }
  let entries: IndexEntry[];
  try {
    const parsed = parse(index.body.toString('utf8'), { maxAliasCount: 100 }) as { entries?: Record<string, unknown> } | null;
    if (parsed === null || typeof parsed !== 'object' || typeof parsed.entries !== 'object' || parsed.entries === null) throw new Error('no entries');
    const listed = parsed.entries[request.chart];
    entries = Array.isArray(listed) ? (listed as IndexEntry[]) : [];
  } catch {
    throw new ChartSourceError(ChartSourceErrorCode.ServerError, `${indexWhat}: not a Helm repository index`);
  }
  if (entries.length === 0) throw new ChartSourceError(ChartSourceErrorCode.ChartNotFound, `${where(request)}: the repository's index has no such chart`);
  const versions = entries.flatMap((e) => (typeof e.version === 'string' ? [e.version] : []));
  let version: string;
  try {
    version = await context.chooseVersion(versions, request.version);
  } catch (error) {
    throw new ChartSourceError(
      ChartSourceErrorCode.VersionNotFound,
      `${where(request)}: ${error instanceof Error ? error.message.replace(/^helm: /, '') : 'no version matches'}`,
    );
  }
  const entry = entries.find((e) => e.version === version);
  const urls = Array.isArray(entry?.urls) ? entry.urls.filter((u): u is string => typeof u === 'string') : [];
  const first = urls[0];
  if (entry === undefined || first === undefined)
    throw new ChartSourceError(ChartSourceErrorCode.ServerError, `${where(request)}@${version}: the index lists no URL for it`);
  const listedDigest = typeof entry.digest === 'string' && entry.digest !== '' ? normalizeDigest(entry.digest) : undefined;
  const digest = listedDigest ?? (request.digest === undefined ? undefined : normalizeDigest(request.digest));
  if (digest === undefined)
    throw new ChartSourceError(
      ChartSourceErrorCode.DigestMismatch,
      `${where(request)}@${version}: the index gives no digest, so the download cannot be verified (pin one in spec.source.helm.repository.digest)`,
    );
  const archiveUrl = new URL(first, `${base}/`).toString();
  const label = `${where(request)}@${version}`;
  return {
    version,
    digest,
    archive: {
      digest,
      fetch: async () => {
        const response = await get(archiveUrl, label, limits.archiveBytes);
        if (response.status !== 200) throw statusError(response.status, label);
        return response.body;
      },
    },
  };
}

// A chart in an OCI registry, as `helm push` stores it: oci://host/path + chart is the repository
// host/path/chart, each version a tag (`+` written `_`), the manifest's layer of media type
// application/vnd.cncf.helm.chart.content.v1.tar+gzip the archive. The manifest is verified against the digest
// the registry names for it (and spec.digest), the layer against the digest the manifest names. Registries that
// want a token get one from the realm their 401 names (the Docker token flow), with the Secret's credentials.
import { ChartSourceError, ChartSourceErrorCode } from './errors.ts';
import { httpGet, statusError, type GetResponse } from './http.ts';
import { sha256, where } from './names.ts';
import type { ResolveContext, Resolution } from './types.ts';

const MANIFEST_TYPES = ['application/vnd.oci.image.manifest.v1+json', 'application/vnd.docker.distribution.manifest.v2+json'];
const CHART_LAYER_TYPES = new Set(['application/vnd.cncf.helm.chart.content.v1.tar+gzip', 'application/tar+gzip']);
const HELM_CONFIG_TYPE = 'application/vnd.cncf.helm.config.v1+json';

interface Manifest {
  config?: { mediaType?: string };
  layers?: { mediaType?: string; digest?: string; size?: number }[];
}

/** Parses `Bearer realm="...",service="...",scope="..."`. */
function challenge(header: string | undefined): { scheme: string; params: Record<string, string> } | undefined {
  if (header === undefined) return undefined;
  const match = /^(\w+)\s*(.*)$/s.exec(header.trim());
  if (match?.[1] === undefined) return undefined;
  const params: Record<string, string> = {};
  for (const m of (match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)) if (m[1] !== undefined && m[2] !== undefined) params[m[1]] = m[2];
  return { scheme: match[1].toLowerCase(), params };
}

export async function resolveFromRegistry(context: ResolveContext): Promise<Resolution> {
  const { request, limits } = context;
  const rest = request.url.replace(/^oci:\/\//, '').replace(/\/+$/, '');
  const slash = rest.indexOf('/');
  const host = slash === -1 ? rest : rest.slice(0, slash);
  const repository = `${slash === -1 ? '' : `${rest.slice(slash + 1)}/`}${request.chart}`;
  const origin = `${request.insecure === true ? 'http' : 'https'}://${host}`;
  const label = where(request);
  let authorization: string | undefined;
  const basic = request.auth === undefined ? undefined : `Basic ${Buffer.from(`${request.auth.username}:${request.auth.password}`).toString('base64')}`;
  const plain = (
    url: string,
    what: string,
    maxBytes: number,
    headers: Record<string, string>,
    auth: { origin: string; value: string } | undefined,
  ): Promise<GetResponse> =>
    httpGet(context.transport, {
      url,
      headers,
      ...(auth === undefined ? {} : { authorization: auth }),
      ...(request.ca === undefined ? {} : { ca: request.ca }),
      maxBytes,
      timeoutMs: limits.timeoutMs,
      what,
    });

  /** GET on the registry, answering one 401 with a token (Bearer) or the Secret's credentials (Basic). */
  const get = async (path: string, what: string, maxBytes: number, headers: Record<string, string> = {}): Promise<GetResponse> => {
    const url = `${origin}/v2/${path}`;
    let response = await plain(url, what, maxBytes, headers, authorization === undefined ? undefined : { origin, value: authorization });
    if (response.status !== 401) return response;
    const asked = challenge(response.headers['www-authenticate']);
    if (asked?.scheme === 'basic' && basic !== undefined) authorization = basic;
    else if (asked?.scheme === 'bearer' && asked.params['realm'] !== undefined) {
      const realm = new URL(asked.params['realm']);
      if (asked.params['service'] !== undefined) realm.searchParams.set('service', asked.params['service']);
      realm.searchParams.set('scope', asked.params['scope'] ?? `repository:${repository}:pull`);
      const token = await plain(
        realm.toString(),
        `${label}: the registry's token service`,
        1 << 20,
        {},
        basic === undefined ? undefined : { origin: realm.origin, value: basic },
      );
      if (token.status !== 200) throw statusError(token.status, `${label}: the registry's token service`);
      const body = JSON.parse(token.body.toString('utf8')) as { token?: string; access_token?: string };
      const value = body.token ?? body.access_token;
      if (value === undefined) throw new ChartSourceError(ChartSourceErrorCode.ServerError, `${label}: the registry's token service gave no token`);
      authorization = `Bearer ${value}`;
    } else return response;
    response = await plain(url, what, maxBytes, headers, { origin, value: authorization });
    return response;
  };

  const tags = await listTags(get, repository, label);
  let version: string;
  try {
    version = await context.chooseVersion(
      tags.map((t) => t.replaceAll('_', '+')),
      request.version,
    );
  } catch (error) {
    throw new ChartSourceError(
      ChartSourceErrorCode.VersionNotFound,
      `${label}: ${error instanceof Error ? error.message.replace(/^helm: /, '') : 'no version matches'}`,
    );
  }
  const tag = version.replaceAll('+', '_');
  const manifestWhat = `${label}:${tag}`;
  const manifestResponse = await get(`${repository}/manifests/${encodeURIComponent(tag)}`, manifestWhat, 4 << 20, { accept: MANIFEST_TYPES.join(', ') });
  if (manifestResponse.status !== 200) throw statusError(manifestResponse.status, manifestWhat);
  const digest = sha256(manifestResponse.body);
  const named = manifestResponse.headers['docker-content-digest'];
  if (named !== undefined && named.toLowerCase() !== digest)
    throw new ChartSourceError(
      ChartSourceErrorCode.DigestMismatch,
      `${manifestWhat}: the manifest received has digest ${digest}, not ${named} as the registry says`,
    );
  let manifest: Manifest;
  try {
    manifest = JSON.parse(manifestResponse.body.toString('utf8')) as Manifest;
  } catch {
    throw new ChartSourceError(ChartSourceErrorCode.ServerError, `${manifestWhat}: the manifest is not JSON`);
  }
  if (manifest.config?.mediaType !== HELM_CONFIG_TYPE)
    throw new ChartSourceError(
      ChartSourceErrorCode.InvalidChart,
      `${manifestWhat}: not a Helm chart (config media type ${manifest.config?.mediaType ?? 'missing'})`,
    );
  const layer = (manifest.layers ?? []).find((l) => l.mediaType !== undefined && CHART_LAYER_TYPES.has(l.mediaType));
  if (layer?.digest === undefined || !/^sha256:[0-9a-f]{64}$/.test(layer.digest))
    throw new ChartSourceError(ChartSourceErrorCode.InvalidChart, `${manifestWhat}: the manifest has no chart layer`);
  const layerDigest = layer.digest;
  return {
    version,
    digest,
    archive: {
      digest: layerDigest,
      fetch: async () => {
        const blob = await get(`${repository}/blobs/${layerDigest}`, `${manifestWhat}: the chart layer`, limits.archiveBytes);
        if (blob.status !== 200) throw statusError(blob.status, `${manifestWhat}: the chart layer`);
        return blob.body;
      },
    },
  };
}

/** Every tag of the repository (the registry pages them with a Link header). */
async function listTags(get: (path: string, what: string, maxBytes: number) => Promise<GetResponse>, repository: string, label: string): Promise<string[]> {
  const tags: string[] = [];
  let path: string | undefined = `${repository}/tags/list?n=1000`;
  for (let page = 0; path !== undefined && page < 20; page++) {
    const response = await get(path, `${label}: its tags`, 8 << 20);
    if (response.status === 404) throw new ChartSourceError(ChartSourceErrorCode.ChartNotFound, `${label}: no such repository in the registry`);
    if (response.status !== 200) throw statusError(response.status, `${label}: its tags`);
    const body = JSON.parse(response.body.toString('utf8')) as { tags?: unknown };
    if (Array.isArray(body.tags)) tags.push(...body.tags.filter((t): t is string => typeof t === 'string'));
    const next = /<\/v2\/([^>]+)>/.exec(response.headers['link'] ?? '')?.[1];
    path = next;
  }
  return tags;
}

// Registry credentials from a Docker config (`.dockerconfigjson`, what `kubectl create secret docker-registry`
// and `docker login` write): `auths` keyed by registry host, each with username+password or `auth`
// (base64 of username:password). The entry for the registry's host is used, as Flux's OCI HelmRepository and
// Docker pick it: the key may be a bare host[:port] or a URL (https://host/v1/). Failures name the Secret's key,
// never a value.
import { ChartSourceError, ChartSourceErrorCode } from './errors.ts';
import type { ChartAuth } from './types.ts';

/** The host[:port] a Docker config key names (`ghcr.io`, `https://index.docker.io/v1/`, `127.0.0.1:5000`). */
function keyHost(key: string): string {
  const trimmed = key.trim().toLowerCase();
  const withoutScheme = trimmed.replace(/^[a-z][a-z0-9+.-]*:\/\//, '');
  return withoutScheme.split('/')[0] ?? '';
}

/**
 * The credentials a Docker config holds for `registryHost` (host[:port] of an oci:// URL); `what` names the
 * Secret in messages. A config that is no JSON, or has no entry for the host, is InvalidAuth (stalling).
 */
export function credentialsFromDockerConfig(json: string, registryHost: string, what: string): ChartAuth {
  let config: unknown;
  try {
    config = JSON.parse(json);
  } catch {
    throw new ChartSourceError(ChartSourceErrorCode.InvalidAuth, `${what}: .dockerconfigjson is not JSON`);
  }
  const auths = typeof config === 'object' && config !== null ? (config as { auths?: unknown }).auths : undefined;
  if (typeof auths !== 'object' || auths === null) throw new ChartSourceError(ChartSourceErrorCode.InvalidAuth, `${what}: .dockerconfigjson has no auths`);
  const host = registryHost.toLowerCase();
  const entry = Object.entries(auths as Record<string, unknown>).find(([key]) => keyHost(key) === host)?.[1];
  if (typeof entry !== 'object' || entry === null)
    throw new ChartSourceError(ChartSourceErrorCode.InvalidAuth, `${what}: .dockerconfigjson has no entry for the registry ${registryHost}`);
  const { username, password, auth } = entry as { username?: unknown; password?: unknown; auth?: unknown };
  if (typeof username === 'string' && username !== '' && typeof password === 'string' && password !== '') return { username, password };
  if (typeof auth === 'string' && auth !== '') {
    const decoded = Buffer.from(auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0 && colon < decoded.length - 1) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  throw new ChartSourceError(
    ChartSourceErrorCode.InvalidAuth,
    `${what}: the .dockerconfigjson entry for ${registryHost} has neither username and password nor auth (base64 of username:password)`,
  );
}

/** host[:port] of an oci:// URL; undefined for any other URL. */
export function registryHostOf(url: string): string | undefined {
  if (!url.startsWith('oci://')) return undefined;
  return url.slice('oci://'.length).split('/')[0];
}

// The operator's environment proxy (HTTPS_PROXY, NO_PROXY), read as curl and Go read it: the proxy for https
// repositories unless NO_PROXY names the host. A ConfigSync's own proxySecretRef wins over it, as in Flux.
import { BlockList, isIP } from 'node:net';
import { GitSourceError, GitSourceErrorCode } from './errors.ts';

/** A forward proxy, `http://host:port` (or https://), with basic credentials if it wants them. */
export interface GitProxy {
  url: string;
  username?: string | undefined;
  password?: string | undefined;
}

/** A proxy for every https repository but those `bypass` names. */
export interface EnvironmentProxy {
  readonly proxy: GitProxy;
  /** True when NO_PROXY names `host` (a hostname or IP, without brackets) on `port`. */
  bypass(host: string, port: string): boolean;
}

/**
 * HTTPS_PROXY (or https_proxy) and NO_PROXY (or no_proxy) → the environment proxy, or undefined when none is
 * set. HTTP_PROXY is not read: Git over http:// is for tests only. NO_PROXY: comma-separated `*`, host names
 * (a leading dot or not, subdomains match), IPs, CIDR ranges, each optionally with `:port`.
 */
export function proxyFromEnvironment(env: Readonly<Record<string, string | undefined>>): EnvironmentProxy | undefined {
  const address = (env['HTTPS_PROXY'] ?? env['https_proxy'] ?? '').trim();
  if (address === '') return undefined;
  let url: URL;
  try {
    url = new URL(address.includes('://') ? address : `http://${address}`);
  } catch {
    throw new GitSourceError(GitSourceErrorCode.InvalidAuth, 'HTTPS_PROXY is not a URL (http://host:port)');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new GitSourceError(GitSourceErrorCode.InvalidAuth, 'HTTPS_PROXY must be an http:// or https:// URL');
  const username = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  const proxy: GitProxy = { url: url.origin, ...(username === '' ? {} : { username, password }) };
  const entries = (env['NO_PROXY'] ?? env['no_proxy'] ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '');
  return { proxy, bypass: noProxyMatcher(entries) };
}

function noProxyMatcher(entries: readonly string[]): (host: string, port: string) => boolean {
  if (entries.includes('*')) return () => true;
  const rules = entries.map((entry) => {
    // `[::1]:8443`, `host:8443`; a bare IPv6 address has colons but no port.
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
    const withPort = bracketed === null && isIP(entry) === 0 ? /^(.*?)(?::(\d+))?$/.exec(entry) : null;
    const name = bracketed?.[1] ?? withPort?.[1] ?? entry;
    const port = bracketed?.[2] ?? withPort?.[2];
    const cidr = /^(.+)\/(\d{1,3})$/.exec(name);
    if (cidr !== null && isIP(cidr[1] ?? '') !== 0) {
      const list = new BlockList();
      const family = isIP(cidr[1] ?? '') === 6 ? 'ipv6' : 'ipv4';
      list.addSubnet(cidr[1] ?? '', Number(cidr[2]), family);
      return { port, matches: (host: string) => isIP(host) !== 0 && list.check(host, isIP(host) === 6 ? 'ipv6' : 'ipv4') };
    }
    const domain = name.replace(/^\*?\./, '');
    return { port, matches: (host: string) => host === domain || (isIP(host) === 0 && host.endsWith(`.${domain}`)) };
  });
  return (host, port) => {
    const h = host.toLowerCase();
    return rules.some((rule) => (rule.port === undefined || rule.port === port) && rule.matches(h));
  };
}

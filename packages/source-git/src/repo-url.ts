// What a repo URL may be (https, or SSH: ssh://[user@]host[:port]/path and the scp-like user@host:path) and
// how it is shown (never with credentials). The scheme picks the transport, once.
import { GitSourceError, GitSourceErrorCode } from './errors.ts';

export interface HttpRepoUrl {
  kind: 'http';
  /** The URL handed to the transport: credentials removed. */
  url: string;
  /** scheme://host:port, for deciding where credentials may go. */
  origin: string;
  /** Basic credentials that were embedded in the URL (`https://user:pass@host/...`), if any. */
  embedded: { username: string; password: string } | undefined;
}

export interface SshRepoUrl {
  kind: 'ssh';
  /** How the repo is named (in messages and the cache key): ssh://user@host:port/path, or user@host:path as given. */
  url: string;
  user: string;
  /** A host name or IP address (IPv6 without brackets). */
  host: string;
  port: number;
  /** The path handed to `git-upload-pack` (absolute for ssh://…/path, home-relative for scp-like and ~ paths). */
  path: string;
}

export type RepoUrl = HttpRepoUrl | SshRepoUrl;

const supported = 'supported are https:// and ssh:// URLs and the scp-like user@host:path';
const defaultSshUser = 'git';

export function parseRepoUrl(input: string, allowInsecureHttp: boolean): RepoUrl {
  const repo = input.trim();
  const shown = (): string => JSON.stringify(repo.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, '$1***@'));
  const invalid = (why: string): GitSourceError => new GitSourceError(GitSourceErrorCode.InvalidRepoUrl, `${why}; ${supported}`);
  if (repo === '') throw invalid('the repo URL is empty');
  if (/^ext::/i.test(repo)) throw invalid(`repo ${shown()} uses the ext:: transport`);
  if (/[\s\0]/.test(repo)) throw invalid(`repo ${shown()} contains whitespace or control characters`);
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(repo)) {
    // scp-like syntax, as git reads it: no slash before the first colon, e.g. git@github.com:org/repo.git
    const scp = /^(?:([^@/:[\]]+)@)?(\[[^\]/]+\]|[^/:[\]@]+):(.*)$/.exec(repo);
    if (scp !== null) return scpLike(scp[1], scp[2] ?? '', scp[3] ?? '', repo, invalid);
  }
  let url: URL;
  try {
    url = new URL(repo);
  } catch {
    throw invalid(`repo ${shown()} is not a URL`);
  }
  switch (url.protocol) {
    case 'https:':
      break;
    case 'http:':
      if (allowInsecureHttp) break;
      throw invalid(`repo ${shown()} uses plain http`);
    case 'ssh:':
    case 'git+ssh:':
    case 'ssh+git:':
      return sshUrl(url, shown, invalid);
    default:
      throw invalid(`repo ${shown()} uses the ${url.protocol.slice(0, -1)} protocol`);
  }
  if (url.hostname === '') throw invalid(`repo ${shown()} names no host`);
  const embedded =
    url.username !== '' || url.password !== '' ? { username: decodeURIComponent(url.username), password: decodeURIComponent(url.password) } : undefined;
  url.username = '';
  url.password = '';
  url.hash = '';
  url.search = '';
  const clean = url.href.replace(/\/+$/, '');
  return { kind: 'http', url: clean, origin: url.origin, embedded };
}

function sshUrl(url: URL, shown: () => string, invalid: (why: string) => GitSourceError): SshRepoUrl {
  if (url.password !== '') throw invalid(`repo ${shown()} carries a password; SSH authenticates with the Secret's identity key`);
  if (url.search !== '' || url.hash !== '') throw invalid(`repo ${shown()} has a query or fragment`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw invalid(`repo ${shown()} names no host`);
  const user = url.username === '' ? defaultSshUser : decodeURIComponent(url.username);
  const port = url.port === '' ? 22 : Number.parseInt(url.port, 10);
  let path = decodeURIComponent(url.pathname);
  // git: ssh://host/~user/repo is relative to that user's home
  if (path.startsWith('/~')) path = path.slice(1);
  if (path === '/' || path === '') throw invalid(`repo ${shown()} names no repository path`);
  checkSshPart(user, 'user', invalid);
  checkSshPart(host, 'host', invalid);
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return { kind: 'ssh', url: `ssh://${user}@${hostPart}${port === 22 ? '' : `:${port}`}${url.pathname}`, user, host, port, path };
}

function scpLike(user: string | undefined, rawHost: string, path: string, repo: string, invalid: (why: string) => GitSourceError): SshRepoUrl {
  const host = rawHost.replace(/^\[(.*)\]$/, '$1');
  const name = user ?? defaultSshUser;
  if (host === '') throw invalid(`repo ${JSON.stringify(repo)} names no host`);
  if (path === '' || path === '/') throw invalid(`repo ${JSON.stringify(repo)} names no repository path`);
  checkSshPart(name, 'user', invalid);
  checkSshPart(host, 'host', invalid);
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return { kind: 'ssh', url: `${name}@${hostPart}:${path}`, user: name, host, port: 22, path };
}

/** A user or host that ssh would read as an option or that cannot be a name. */
function checkSshPart(value: string, what: string, invalid: (why: string) => GitSourceError): void {
  if (value.startsWith('-') || /[^A-Za-z0-9._:%~+-]/.test(value)) throw invalid(`the SSH ${what} ${JSON.stringify(value)} is not a valid name`);
}

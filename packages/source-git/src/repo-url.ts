// What a repo URL may be (https only: isomorphic-git has no SSH) and how it is shown (never with credentials).
import { GitSourceError, GitSourceErrorCode } from './errors.ts';

export interface RepoUrl {
  /** The URL handed to the transport: credentials removed. */
  url: string;
  /** scheme://host:port, for deciding where credentials may go. */
  origin: string;
  /** Basic credentials that were embedded in the URL (`https://user:pass@host/...`), if any. */
  embedded: { username: string; password: string } | undefined;
}

const httpsOnly = 'only https:// repository URLs are supported';

export function parseRepoUrl(input: string, allowInsecureHttp: boolean): RepoUrl {
  const repo = input.trim();
  const shown = (): string => JSON.stringify(repo.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, '$1***@'));
  if (repo === '') throw new GitSourceError(GitSourceErrorCode.InvalidRepoUrl, `the repo URL is empty; ${httpsOnly}`);
  if (/^ext::/i.test(repo)) throw new GitSourceError(GitSourceErrorCode.InvalidRepoUrl, `repo ${shown()} uses the ext:: transport; ${httpsOnly}`);
  // scp-like syntax, e.g. git@github.com:org/repo.git
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(repo) && /^[^/:]+@[^/:]+:/.test(repo)) {
    throw new GitSourceError(GitSourceErrorCode.InvalidRepoUrl, `repo ${shown()} is an SSH address; SSH is not supported (${httpsOnly})`);
  }
  let url: URL;
  try {
    url = new URL(repo);
  } catch {
    throw new GitSourceError(GitSourceErrorCode.InvalidRepoUrl, `repo ${shown()} is not a URL; ${httpsOnly}`);
  }
  switch (url.protocol) {
    case 'https:':
      break;
    case 'http:':
      if (allowInsecureHttp) break;
      throw new GitSourceError(GitSourceErrorCode.InvalidRepoUrl, `repo ${shown()} uses plain http; ${httpsOnly}`);
    case 'ssh:':
    case 'git+ssh:':
    case 'ssh+git:':
      throw new GitSourceError(GitSourceErrorCode.InvalidRepoUrl, `repo ${shown()} is an SSH URL; SSH is not supported (${httpsOnly})`);
    default:
      throw new GitSourceError(GitSourceErrorCode.InvalidRepoUrl, `repo ${shown()} uses the ${url.protocol.slice(0, -1)} protocol; ${httpsOnly}`);
  }
  if (url.hostname === '') throw new GitSourceError(GitSourceErrorCode.InvalidRepoUrl, `repo ${shown()} names no host; ${httpsOnly}`);
  const embedded =
    url.username !== '' || url.password !== ''
      ? { username: decodeURIComponent(url.username), password: decodeURIComponent(url.password) }
      : undefined;
  url.username = '';
  url.password = '';
  url.hash = '';
  url.search = '';
  const clean = url.href.replace(/\/+$/, '');
  return { url: clean, origin: url.origin, embedded };
}

// One key per repository however a URL spells it, so a push names the ConfigSyncs that follow it:
// `https://Git.Example.com/Org/Configs.git/`, `git@git.example.com:org/configs`,
// `ssh://git@git.example.com:22/org/configs.git` and `http://git.example.com/org/configs` are one repository.

/**
 * `host[:port]/path`, lower case, without scheme, credentials, `.git` or trailing slashes; undefined when the
 * text is no repository address. The path is lower-cased too: GitHub, GitLab, Gitea and Bitbucket treat
 * owner and repository names case-insensitively, and a wake too many costs one no-op reconcile while a
 * missed wake costs a whole refresh interval.
 */
export function repoKey(address: string): string | undefined {
  const text = address.trim();
  if (text === '') return undefined;
  let host: string;
  let path: string;
  // scp-like syntax: [user@]host:path (no scheme, no slash before the colon)
  const scp = /^(?:[^@/\s]+@)?([^/:\s]+):(?!\/\/)(.+)$/.exec(text);
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text) && scp !== null) {
    host = scp[1] ?? '';
    path = scp[2] ?? '';
  } else {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return undefined;
    }
    if (url.hostname === '') return undefined;
    const scheme = url.protocol.slice(0, -1).toLowerCase();
    // The port of an ssh or git address says nothing about where https is served: drop it. An http(s)
    // port other than the default is part of the address (test servers, self-hosted instances).
    const webScheme = scheme === 'http' || scheme === 'https';
    host = webScheme && url.port !== '' ? `${url.hostname}:${url.port}` : url.hostname;
    path = decodeURIComponent(url.pathname);
  }
  const normalized = path
    .replace(/^\/+|\/+$/g, '')
    .replace(/\/{2,}/g, '/')
    .replace(/\.git$/i, '')
    .replace(/\/+$/, '');
  if (normalized === '' || host === '') return undefined;
  return `${host}/${normalized}`.toLowerCase();
}

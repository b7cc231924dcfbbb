// Which ConfigSyncs a push wakes: those whose repo is the pushed repository and whose revision is a
// branch or tag the push moved. A full commit SHA is a pin and is never woken.
import type { ConfigSync } from '@syncline/api';
import type { Push } from './providers.ts';
import { repoKey } from './repo-key.ts';

const fullSha = /^[0-9a-f]{40}$/i;

/** `namespace/name` keys of the ConfigSyncs that follow a repository and ref the push moved. */
export function followersOf(push: Push, configSyncs: readonly ConfigSync[]): string[] {
  const repos = new Set(push.repos);
  const refs = new Set(push.refs);
  const keys: string[] = [];
  for (const cs of configSyncs) {
    const git = cs.spec?.source?.git;
    if (git === undefined || typeof git.repo !== 'string') continue;
    const key = repoKey(git.repo);
    if (key === undefined) continue;
    if (!repos.has(key) && !push.repoSuffixes.some((suffix) => key === suffix || key.endsWith(`/${suffix}`))) continue;
    if (!followsRef(typeof git.revision === 'string' ? git.revision.trim() : '', refs, push.defaultBranch)) continue;
    keys.push(`${cs.metadata.namespace ?? 'default'}/${cs.metadata.name}`);
  }
  return keys;
}

function followsRef(revision: string, refs: ReadonlySet<string>, defaultBranch: string | undefined): boolean {
  if (revision === '' || fullSha.test(revision)) return false;
  if (revision === 'HEAD') {
    // HEAD follows the default branch; when the payload does not say which that is, waking costs one no-op reconcile.
    return defaultBranch === undefined ? [...refs].some((r) => r.startsWith('refs/heads/')) : refs.has(`refs/heads/${defaultBranch}`);
  }
  if (revision.startsWith('refs/')) return refs.has(revision);
  // Like source-git's resolveRevision (and git rev-parse), a short name is a tag or a branch.
  return refs.has(`refs/heads/${revision}`) || refs.has(`refs/tags/${revision}`);
}

// Commit statuses on Git forges: where a repository's API is (derived from the repository URL a ConfigSync
// follows), the request each forge documents, and the state of each sync target's commit as its status says.
// Pure: no I/O, no clock.
import type { ConfigSync } from '@syncline/api';
import type { OutgoingRequest, ProviderCredentials } from './payloads.ts';
import { cut } from './payloads.ts';
import { createHash } from 'node:crypto';

export type ForgeType = 'github' | 'gitlab' | 'gitea' | 'forgejo' | 'bitbucket';
export type CommitState = 'pending' | 'success' | 'failure' | 'error';

/** A repository on a forge: its API base and its path there (owner/repo; GitLab: the full project path). */
export type ForgeRepository = { readonly api: string; readonly owner: string; readonly repo: string; readonly project: string; readonly web: string };

/**
 * The forge API of the repository a ConfigSync follows. `repoUrl` is https://host[:port]/[prefix/]owner/repo[.git],
 * ssh://[user@]host[:port]/owner/repo[.git] or user@host:owner/repo[.git]; the API is reached over https on the
 * host (an ssh port says nothing about it; an http:// repository keeps http and its port). `address` (the
 * NotificationProvider's spec.address) replaces the derived API base. GitHub: api.github.com, or host/api/v3 (Enterprise);
 * GitLab: host/api/v4 and the whole path as the project; Gitea and Forgejo: host/[prefix/]api/v1 (a
 * path prefix before owner/repo is where the forge is served); Bitbucket Cloud: api.bitbucket.org/2.0.
 */
export function forgeRepository(type: ForgeType, repoUrl: string, address?: string): ForgeRepository {
  const { origin, segments } = splitRepoUrl(repoUrl);
  if (segments.length < 2) throw new Error(`the repository URL has no owner/repository path to post commit statuses to`);
  const owner = segments[segments.length - 2] ?? '';
  const repo = segments[segments.length - 1] ?? '';
  const prefix = segments.slice(0, -2);
  const project = segments.join('/');
  const web = `${origin}/${project}`;
  const host = new URL(origin).hostname;
  const derived = ((): string => {
    switch (type) {
      case 'github':
        return host === 'github.com' ? 'https://api.github.com' : `${origin}/api/v3`;
      case 'gitlab':
        return `${origin}/api/v4`;
      case 'gitea':
      case 'forgejo':
        return `${origin}${prefix.map((p) => `/${p}`).join('')}/api/v1`;
      case 'bitbucket':
        return host === 'bitbucket.org' ? 'https://api.bitbucket.org/2.0' : `${origin}/2.0`;
    }
  })();
  return { api: (address ?? derived).replace(/\/+$/, ''), owner, repo, project, web };
}

/** scheme://host[:port] for the API and the path segments of the repository (.git and slashes stripped). */
function splitRepoUrl(input: string): { origin: string; segments: string[] } {
  const repo = input.trim();
  const scp = /^(?:[^@/:[\]]+@)?(\[[^\]/]+\]|[^/:[\]@]+):(?!\/\/)(.*)$/.exec(repo);
  if (scp !== null && !/^[a-z][a-z0-9+.-]*:\/\//i.test(repo)) return { origin: `https://${scp[1] ?? ''}`, segments: pathSegments(scp[2] ?? '') };
  let url: URL;
  try {
    url = new URL(repo);
  } catch {
    throw new Error('the repository URL is not a URL');
  }
  if (url.protocol === 'https:' || url.protocol === 'http:') return { origin: url.origin, segments: pathSegments(url.pathname) };
  if (/^(ssh|git\+ssh|ssh\+git):$/.test(url.protocol))
    return { origin: `https://${url.hostname.includes(':') ? `[${url.hostname}]` : url.hostname}`, segments: pathSegments(url.pathname) };
  throw new Error(`the repository URL's scheme ${url.protocol} names no forge`);
}

function pathSegments(path: string): string[] {
  return path
    .replace(/^~[^/]*\//, '')
    .replace(/\.git\/?$/, '')
    .split('/')
    .filter((s) => s !== '')
    .map((s) => decodeURIComponent(s));
}

/** The token a forge takes: the NotificationProvider's own, else the ConfigSync's Git credentials (bearerToken, or the password of username/password). */
export type ForgeCredentials = Pick<ProviderCredentials, 'token' | 'username' | 'password'>;

export type CommitStatus = {
  readonly sha: string;
  readonly state: CommitState;
  /** One per sync and target: syncline/<namespace>/<name>/<target>. */
  readonly context: string;
  readonly description: string;
  readonly targetUrl?: string | undefined;
};

/** The request that sets `status` on the forge, as each forge documents it. */
export function commitStatusRequest(type: ForgeType, repository: ForgeRepository, credentials: ForgeCredentials, status: CommitStatus): OutgoingRequest {
  const { api, owner, repo } = repository;
  const sha = encodeURIComponent(status.sha);
  const token = credentials.token ?? credentials.password;
  const description = cut(status.description, 140);
  const post = (url: string, headers: Record<string, string>, body: unknown): OutgoingRequest => ({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const needToken = (): string => {
    if (token === undefined || token === '')
      throw new Error(`${type} commit statuses need a token (the NotificationProvider Secret's token key, or the ConfigSync's Git credentials)`);
    return token;
  };
  const targetUrl = status.targetUrl === undefined ? {} : { target_url: status.targetUrl };
  switch (type) {
    case 'github':
      return post(
        `${api}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/statuses/${sha}`,
        { accept: 'application/vnd.github+json', authorization: `Bearer ${needToken()}`, 'x-github-api-version': '2022-11-28' },
        { state: status.state, context: status.context, description, ...targetUrl },
      );
    case 'gitea':
    case 'forgejo':
      return post(
        `${api}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/statuses/${sha}`,
        { authorization: `token ${needToken()}` },
        { state: status.state, context: status.context, description, ...targetUrl },
      );
    case 'gitlab':
      // GitLab's states: pending, running, success, failed, canceled (no error: a failure it is).
      return post(
        `${api}/projects/${encodeURIComponent(repository.project)}/statuses/${sha}`,
        { 'private-token': needToken() },
        { state: status.state === 'error' || status.state === 'failure' ? 'failed' : status.state, name: status.context, description, ...targetUrl },
      );
    case 'bitbucket': {
      // Bitbucket: a build status keyed by at most 40 characters, with a url it requires.
      const authorization =
        credentials.username !== undefined && credentials.username !== '' && credentials.password !== undefined && credentials.password !== ''
          ? `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`
          : `Bearer ${needToken()}`;
      const state = { pending: 'INPROGRESS', success: 'SUCCESSFUL', failure: 'FAILED', error: 'FAILED' }[status.state];
      return post(
        `${api}/repositories/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/commit/${sha}/statuses/build`,
        { authorization },
        { key: bitbucketKey(status.context), state, name: status.context, url: status.targetUrl ?? repository.web, description },
      );
    }
  }
}

/** Bitbucket keys are at most 40 characters: a longer context becomes its start and a hash of the whole. */
export function bitbucketKey(context: string): string {
  if (context.length <= 40) return context;
  return `${context.slice(0, 27)}-${createHash('sha256').update(context).digest('hex').slice(0, 12)}`;
}

export const commitContext = (namespace: string, name: string, target: string): string => `syncline/${namespace}/${name}/${target}`;

/**
 * The commit state of each target of a ConfigSync, from its status: the commit it last tried, Pending while a
 * target waits (or the sync waits for health), success once Synced (and healthy when it waits for health),
 * failure when the target (or the render) failed, error when the sync stalled before it could apply. Empty
 * while no commit was tried.
 */
export function commitStates(cs: Pick<ConfigSync, 'metadata' | 'spec' | 'status'>): { target: string; sha: string; state: CommitState; description: string }[] {
  const status = cs.status;
  const sha = status?.lastAttemptedRevision;
  if (status === undefined || sha === undefined || !/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(sha)) return [];
  const conditions = status.conditions ?? [];
  const condition = (type: string): { status: string; reason: string; message: string } | undefined => conditions.find((c) => c.type === type);
  const stalled = condition('Stalled');
  const ready = condition('Ready');
  const targets = cs.spec.targets.map((t) => t.name);
  if (stalled?.status === 'True') {
    const state: CommitState = stalled.reason === 'RenderFailed' ? 'failure' : 'error';
    return targets.map((target) => ({ target, sha, state, description: `${stalled.reason}: ${stalled.message}` }));
  }
  const byName = new Map((status.targets ?? []).map((t) => [t.name, t]));
  const waitingForHealth = condition('Reconciling')?.status === 'True';
  const unhealthy = ready?.status === 'False' && ready.reason === 'HealthCheckFailed';
  return targets.map((target) => {
    const line = byName.get(target);
    if (line === undefined || line.phase === 'Pending') return { target, sha, state: 'pending', description: `applying ${sha.slice(0, 12)}` };
    if (line.phase === 'Failed') return { target, sha, state: 'failure', description: line.message ?? 'the target failed' };
    if (unhealthy) return { target, sha, state: 'failure', description: ready.message };
    if (waitingForHealth) return { target, sha, state: 'pending', description: 'applied; waiting for health' };
    return { target, sha, state: 'success', description: `applied ${sha.slice(0, 12)} (${line.objects} objects)` };
  });
}

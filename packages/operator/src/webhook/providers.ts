// What each Git host sends: how a delivery is signed, what its id and event are, and how a push payload
// names the repository and the refs it moved. Parsing is strict about what we use and blind to the rest:
// a null, a missing field or a wrong type in a used field is a PayloadError (400), never a crash.
import type { IncomingHttpHeaders } from 'node:http';
import { z } from 'zod';
import { repoKey } from './repo-key.ts';
import { verifyHmacSha256, verifyToken } from './signature.ts';

export const Provider = { github: 'github', gitlab: 'gitlab', gitea: 'gitea', bitbucket: 'bitbucket', generic: 'generic' } as const;
export type Provider = (typeof Provider)[keyof typeof Provider];
export const providers: readonly Provider[] = Object.values(Provider);

export type Push = {
  readonly kind: 'push';
  /** repoKey()s of every address the payload gives for the repository. */
  readonly repos: readonly string[];
  /** Path suffixes that identify the repository when the payload has no address (Bitbucket Data Center: `scm/KEY/slug`). */
  readonly repoSuffixes: readonly string[];
  /** Full ref names moved by the push (`refs/heads/main`, `refs/tags/v1`). */
  readonly refs: readonly string[];
  /** The repository's default branch, when the payload says (wakes syncs that follow `HEAD`). */
  readonly defaultBranch?: string;
};
export type Delivery = Push | { readonly kind: 'ping' } | { readonly kind: 'ignored'; readonly event: string };

export class PayloadError extends Error {
  override readonly name = 'PayloadError';
}

export type ProviderSpec = {
  /** Checks the signature or token against the configured secrets (constant time). */
  verify(headers: IncomingHttpHeaders, body: Buffer, secrets: readonly string[]): boolean;
  /** The provider's delivery id, used to ignore replays; undefined when the request carries none. */
  deliveryId(headers: IncomingHttpHeaders): string | undefined;
  /** Classifies and parses a verified delivery. Throws PayloadError on bad input. */
  parse(headers: IncomingHttpHeaders, body: Buffer): Delivery;
};

const header = (headers: IncomingHttpHeaders, ...names: string[]): string | undefined => {
  for (const name of names) {
    const value = headers[name];
    if (typeof value === 'string') return value;
  }
  return undefined;
};

/** Delivery ids are echoed into logs and kept in memory: only short, plain ones are used. */
const cleanId = (value: string | undefined): string | undefined => (value !== undefined && /^[A-Za-z0-9{}._:-]{1,128}$/.test(value) ? value : undefined);

function parseJson(body: Buffer, contentType: string | undefined): unknown {
  let text = body.toString('utf8');
  // GitHub can be configured to send `payload=<json>` form bodies; the signature covers the raw body.
  if ((contentType ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    const payload = new URLSearchParams(text).get('payload');
    if (payload === null) throw new PayloadError('a form-encoded delivery has no payload field');
    text = payload;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new PayloadError('the body is not valid JSON');
  }
}

function parseWith<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new PayloadError(`${what}: ${issue === undefined ? 'invalid' : `${issue.path.join('.') || '(root)'}: ${issue.message}`}`);
  }
  return result.data;
}

const url = z.string().min(1).max(2048);
const ref = z.string().min(6).max(1024).startsWith('refs/');
const branchName = z.string().min(1).max(1024);

function keysOf(addresses: readonly (string | undefined | null)[]): string[] {
  const keys = new Set<string>();
  for (const address of addresses) {
    const key = address === undefined || address === null ? undefined : repoKey(address);
    if (key !== undefined) keys.add(key);
  }
  return [...keys];
}

function push(options: { repos: string[]; repoSuffixes?: string[]; refs: string[]; defaultBranch?: string | null }, what: string): Push {
  if (options.repos.length === 0 && (options.repoSuffixes ?? []).length === 0) throw new PayloadError(`${what}: the payload names no repository address`);
  return {
    kind: 'push',
    repos: options.repos,
    repoSuffixes: options.repoSuffixes ?? [],
    refs: options.refs,
    ...(options.defaultBranch !== undefined && options.defaultBranch !== null ? { defaultBranch: options.defaultBranch } : {}),
  };
}

// GitHub: https://docs.github.com/en/webhooks/webhook-events-and-payloads#push
const GitHubPush = z.object({
  ref,
  repository: z.object({
    clone_url: url.nullish(),
    ssh_url: url.nullish(),
    git_url: url.nullish(),
    html_url: url.nullish(),
    default_branch: branchName.nullish(),
  }),
});

const github: ProviderSpec = {
  verify: (headers, body, secrets) => verifyHmacSha256({ body, signature: header(headers, 'x-hub-signature-256'), secrets, prefix: 'sha256=' }),
  deliveryId: (headers) => cleanId(header(headers, 'x-github-delivery')),
  parse(headers, body) {
    const event = header(headers, 'x-github-event');
    if (event === undefined || event === '') throw new PayloadError('no X-GitHub-Event header');
    if (event === 'ping') return { kind: 'ping' };
    if (event !== 'push') return { kind: 'ignored', event };
    const payload = parseWith(GitHubPush, parseJson(body, header(headers, 'content-type')), 'GitHub push');
    const r = payload.repository;
    return push({ repos: keysOf([r.clone_url, r.ssh_url, r.git_url, r.html_url]), refs: [payload.ref], defaultBranch: r.default_branch }, 'GitHub push');
  },
};

// Gitea and Forgejo: GitHub-shaped payloads, their own headers. https://docs.gitea.com/usage/webhooks
const gitea: ProviderSpec = {
  verify: (headers, body, secrets) => verifyHmacSha256({ body, signature: header(headers, 'x-gitea-signature', 'x-forgejo-signature'), secrets }),
  deliveryId: (headers) => cleanId(header(headers, 'x-gitea-delivery', 'x-forgejo-delivery', 'x-gogs-delivery')),
  parse(headers, body) {
    const event = header(headers, 'x-gitea-event', 'x-forgejo-event', 'x-gogs-event');
    if (event === undefined || event === '') throw new PayloadError('no X-Gitea-Event header');
    if (event !== 'push') return { kind: 'ignored', event };
    const payload = parseWith(GitHubPush, parseJson(body, header(headers, 'content-type')), 'Gitea push');
    const r = payload.repository;
    return push({ repos: keysOf([r.clone_url, r.ssh_url, r.html_url]), refs: [payload.ref], defaultBranch: r.default_branch }, 'Gitea push');
  },
};

// GitLab: https://docs.gitlab.com/user/project/integrations/webhook_events/#push-events
const GitLabPush = z.object({
  object_kind: z.enum(['push', 'tag_push']),
  ref,
  project: z.object({
    git_http_url: url.nullish(),
    git_ssh_url: url.nullish(),
    web_url: url.nullish(),
    default_branch: branchName.nullish(),
  }),
});

const gitlab: ProviderSpec = {
  verify: (headers, _body, secrets) => verifyToken(header(headers, 'x-gitlab-token'), secrets),
  // Idempotency-Key (GitLab 17.4+) is the same across retries of one delivery. X-Gitlab-Event-UUID is not a
  // delivery id: recursive webhooks (a hook whose handler triggers another) share it, so deduplicating on it
  // would drop distinct deliveries. Older GitLab sends no key: nothing is deduplicated, the coalescer merges.
  deliveryId: (headers) => cleanId(header(headers, 'idempotency-key')),
  parse(headers, body) {
    const event = header(headers, 'x-gitlab-event');
    if (event === undefined || event === '') throw new PayloadError('no X-Gitlab-Event header');
    if (event !== 'Push Hook' && event !== 'Tag Push Hook' && event !== 'System Hook') return { kind: 'ignored', event };
    const json = parseJson(body, undefined);
    // System hooks carry every kind of event; only pushes matter.
    if (event === 'System Hook') {
      const kind = typeof json === 'object' && json !== null ? (json as Record<string, unknown>)['object_kind'] : undefined;
      if (kind !== 'push' && kind !== 'tag_push') return { kind: 'ignored', event: `System Hook ${typeof kind === 'string' ? kind : ''}`.trim() };
    }
    const payload = parseWith(GitLabPush, json, 'GitLab push');
    const p = payload.project;
    return push({ repos: keysOf([p.git_http_url, p.git_ssh_url, p.web_url]), refs: [payload.ref], defaultBranch: p.default_branch }, 'GitLab push');
  },
};

// Bitbucket Cloud (repo:push, https://support.atlassian.com/bitbucket-cloud/docs/event-payloads/) and
// Bitbucket Data Center (repo:refs_changed, https://confluence.atlassian.com/bitbucketserver/event-payload-938025882.html);
// both sign with X-Hub-Signature: sha256=<hex>.
const BitbucketCloudRef = z.object({ type: z.string(), name: branchName }).nullable();
const BitbucketCloudPush = z.object({
  push: z.object({ changes: z.array(z.object({ new: BitbucketCloudRef, old: BitbucketCloudRef })).max(1000) }),
  repository: z.object({ links: z.object({ html: z.object({ href: url }) }) }),
});
const BitbucketServerPush = z.object({
  changes: z.array(z.object({ ref: z.object({ id: ref }) })).max(1000),
  repository: z.object({
    slug: z.string().min(1).max(256),
    project: z.object({ key: z.string().min(1).max(256) }),
    links: z
      .object({
        clone: z
          .array(z.object({ href: url }))
          .max(20)
          .nullish(),
      })
      .nullish(),
  }),
});

const bitbucket: ProviderSpec = {
  verify: (headers, body, secrets) => verifyHmacSha256({ body, signature: header(headers, 'x-hub-signature'), secrets, prefix: 'sha256=' }),
  deliveryId: (headers) => cleanId(header(headers, 'x-request-uuid', 'x-request-id')),
  parse(headers, body) {
    const event = header(headers, 'x-event-key');
    if (event === undefined || event === '') throw new PayloadError('no X-Event-Key header');
    if (event === 'diagnostics:ping') return { kind: 'ping' };
    if (event === 'repo:push') {
      const payload = parseWith(BitbucketCloudPush, parseJson(body, undefined), 'Bitbucket push');
      const refs = payload.push.changes.flatMap((change) => {
        const moved = change.new ?? change.old;
        if (moved === null) return [];
        if (moved.type === 'branch') return [`refs/heads/${moved.name}`];
        if (moved.type === 'tag' || moved.type === 'annotated_tag') return [`refs/tags/${moved.name}`];
        return [];
      });
      return push({ repos: keysOf([payload.repository.links.html.href]), refs }, 'Bitbucket push');
    }
    if (event === 'repo:refs_changed') {
      const payload = parseWith(BitbucketServerPush, parseJson(body, undefined), 'Bitbucket push');
      const r = payload.repository;
      return push(
        {
          repos: keysOf((r.links?.clone ?? []).map((c) => c.href)),
          repoSuffixes: [`scm/${r.project.key}/${r.slug}`.toLowerCase()],
          refs: payload.changes.map((c) => c.ref.id),
        },
        'Bitbucket push',
      );
    }
    return { kind: 'ignored', event };
  },
};

// Ours, for anything else (CI jobs, mirrors): {"repo": "<clone URL>", "ref": "refs/heads/main"}, signed
// with X-Syncline-Signature: sha256=<hex HMAC-SHA256 of the body>.
const GenericPush = z.object({ repo: url, ref });

const generic: ProviderSpec = {
  verify: (headers, body, secrets) => verifyHmacSha256({ body, signature: header(headers, 'x-syncline-signature'), secrets, prefix: 'sha256=' }),
  deliveryId: (headers) => cleanId(header(headers, 'x-syncline-delivery')),
  parse(headers, body) {
    const event = header(headers, 'x-syncline-event') ?? 'push';
    if (event === 'ping') return { kind: 'ping' };
    if (event !== 'push') return { kind: 'ignored', event };
    const payload = parseWith(GenericPush, parseJson(body, undefined), 'push');
    const key = repoKey(payload.repo);
    if (key === undefined) throw new PayloadError('push: repo is not a repository address');
    return push({ repos: [key], refs: [payload.ref] }, 'push');
  },
};

export const providerSpecs: Readonly<Record<Provider, ProviderSpec>> = { github, gitlab, gitea, bitbucket, generic };

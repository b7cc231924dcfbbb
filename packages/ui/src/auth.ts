// Who a web UI viewer is and what they may do. Sign-in takes a Kubernetes bearer token and asks the API server
// who it belongs to (TokenReview); the token itself is never kept. Every later decision is a
// SubjectAccessReview for that user and their groups, so the UI never shows or does more than the viewer could
// with kubectl. Answers are cached briefly per user, kind and namespace.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { KubeRest } from '@syncline/kube';
import type { WatchedKind } from '@syncline/operator/client';

export type Viewer = { username: string; uid?: string; groups: string[]; extra?: Record<string, string[]> };
export type Session = { id: string; viewer: Viewer; csrf: string; expiresAt: number };

export const PLURALS: Record<WatchedKind, string> = {
  ConfigSync: 'configsyncs',
  ManifestSync: 'manifestsyncs',
  NamespaceReplication: 'namespacereplications',
  RemoteCluster: 'remoteclusters',
};

/** The TokenReview's answer: the viewer, or undefined when the API server does not accept the token. */
export async function reviewToken(rest: KubeRest, token: string): Promise<Viewer | undefined> {
  const review = await rest.request<{
    status?: { authenticated?: boolean; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } };
  }>({
    method: 'POST',
    path: '/apis/authentication.k8s.io/v1/tokenreviews',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
  });
  const user = review.status?.user;
  if (review.status?.authenticated !== true || user?.username === undefined || user.username === '') return undefined;
  return {
    username: user.username,
    groups: user.groups ?? [],
    ...(user.uid === undefined ? {} : { uid: user.uid }),
    ...(user.extra === undefined ? {} : { extra: user.extra }),
  };
}

export type Access = {
  /** May `viewer` do `verb` on `kind` in `namespace` ('' = across all namespaces)? */
  allowed(viewer: Viewer, request: { verb: string; kind: WatchedKind; namespace: string; name?: string }): Promise<boolean>;
  /** The same for any resource (`group` '' = core), e.g. the Secrets label-driven mirroring copies. */
  allowedResource(viewer: Viewer, request: { verb: string; group: string; resource: string; namespace: string; name?: string }): Promise<boolean>;
};

/** SubjectAccessReviews with a short per-user cache (a revoked right stops showing within `ttlMs`). */
export function createAccess(options: { rest: KubeRest; ttlMs?: number; now?: () => number }): Access {
  const ttl = options.ttlMs ?? 30_000;
  const now = options.now ?? Date.now;
  const cache = new Map<string, { at: number; answer: Promise<boolean> }>();
  const access: Access = {
    allowed: (viewer, { verb, kind, namespace, name }) =>
      access.allowedResource(viewer, { verb, group: 'syncline.dev', resource: PLURALS[kind], namespace, ...(name === undefined ? {} : { name }) }),
    allowedResource(viewer, { verb, group, resource, namespace, name }) {
      const key = JSON.stringify([viewer.username, viewer.uid, viewer.groups, verb, group, resource, namespace, name]);
      const hit = cache.get(key);
      if (hit !== undefined && now() - hit.at < ttl) return hit.answer;
      if (cache.size > 50_000) cache.clear();
      const answer = options.rest
        .request<{ status?: { allowed?: boolean } }>({
          method: 'POST',
          path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: {
              user: viewer.username,
              groups: viewer.groups,
              ...(viewer.uid === undefined ? {} : { uid: viewer.uid }),
              ...(viewer.extra === undefined ? {} : { extra: viewer.extra }),
              resourceAttributes: { group, resource, verb, namespace, ...(name === undefined ? {} : { name }) },
            },
          },
        })
        .then((review) => review.status?.allowed === true);
      // A failed review is not remembered: the next question asks again.
      answer.catch(() => cache.delete(key));
      cache.set(key, { at: now(), answer });
      return answer;
    },
  };
  return access;
}

/** Sessions in memory: an opaque id in an HttpOnly cookie, a CSRF token the page sends with every action. */
export function createSessions(options: { ttlMs?: number; now?: () => number; limit?: number } = {}): {
  create(viewer: Viewer): Session;
  get(id: string | undefined): Session | undefined;
  delete(id: string | undefined): void;
} {
  const ttl = options.ttlMs ?? 8 * 3600_000;
  const now = options.now ?? Date.now;
  // Bounded: with --ui-anonymous every new browser gets a session; the oldest go first past the limit.
  const limit = options.limit ?? 20_000;
  const sessions = new Map<string, Session>();
  return {
    create(viewer) {
      for (const [id, session] of sessions) if (session.expiresAt <= now()) sessions.delete(id);
      for (const id of sessions.keys()) {
        if (sessions.size < limit) break;
        sessions.delete(id);
      }
      const session = { id: randomBytes(32).toString('base64url'), viewer, csrf: randomBytes(32).toString('base64url'), expiresAt: now() + ttl };
      sessions.set(session.id, session);
      return session;
    },
    get(id) {
      const session = id === undefined ? undefined : sessions.get(id);
      if (session === undefined || session.expiresAt <= now()) return undefined;
      return session;
    },
    delete(id) {
      if (id !== undefined) sessions.delete(id);
    },
  };
}

export function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

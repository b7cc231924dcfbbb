// The web UI (`syncline run --ui-addr`): a sign-in page, the built page script and style, one Server-Sent Events
// stream per open page fed from the operator's own informers (no API-server read per viewer), and the actions.
// Every object a viewer receives is one they may `list` (SubjectAccessReview); every action one they may `patch`.
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { KubeObject } from '@syncline/kube';
import type { KubeRest } from '@syncline/kube';
import type { WatchedChange, WatchedKind } from '@syncline/operator/client';
import { RECONCILE_REQUESTED_ANNOTATION } from '@syncline/api';
import { listen } from '@syncline/operator/client';
import type { ActivityLog } from './activity.ts';
import { DiffError, createSyncDiffs, type DiffSource, type MayGet, type SyncDiffs } from './diffs.ts';
import { visibleMirrorRows } from './mirrors.ts';
import { deployCommits, syncTree, type MayRead } from './tree.ts';
import { BRIEF_FIELDS, type UiActivity, type UiMirrorRow } from './model.ts';
import { OidcError, createOidcSignIn, oidcSettingsFromFlags, type OidcSettings, type OidcSignIn } from './oidc.ts';
import { PLURALS, createAccess, createSessions, reviewToken, sameSecret, type Access, type Session, type Viewer } from './auth.ts';
import { summarize, type UiObject } from './summary.ts';

/** Where `pnpm build:ui` (src/build.ts) writes the page's script and style. */
export const UI_ASSETS_DIR = join(import.meta.dirname, '..', 'dist', 'ui');
const COOKIE = 'syncline_session';
/** The state of an OIDC sign-in under way; Lax, since the issuer's redirect back is a cross-site navigation. */
const OIDC_COOKIE = 'syncline_oidc';
/** Who an anonymous viewer is (--ui-anonymous): what RBAC grants unauthenticated requests, and no more. */
const ANONYMOUS: Viewer = { username: 'system:anonymous', groups: ['system:unauthenticated'] };
const KINDS = Object.keys(PLURALS) as WatchedKind[];
const MAX_FORM_BYTES = 16 * 1024;

const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  // same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on the page's own form posts.
  'Referrer-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-store',
};

export type UiSource = { watched(kind: WatchedKind): KubeObject[]; observe(listener: WatchedChange): () => void };
export type UiServer = { address: string; close(): Promise<void> };

/** One change, summarized once for every open page. */
type Change = { kind: WatchedKind; namespace: string } & ({ deleted: boolean; key: string; json: () => string } | { activity: UiActivity });
/** A page that reads this much less than it is sent is cut off (it reconnects and gets a fresh snapshot). */
const MAX_UNREAD_BYTES = 8 * 1024 * 1024;

/**
 * Each object's summary as JSON, made once per resourceVersion and shared by every open page: a hundred pages
 * cost one summary per change, and a snapshot is a join of strings already made.
 */
function createSummaryCache(): {
  json(kind: WatchedKind, object: KubeObject): string;
  brief(kind: WatchedKind, object: KubeObject): string;
  forget(key: string): void;
} {
  const cache = new Map<string, { version: string | undefined; json: string; brief: string }>();
  const entry = (kind: WatchedKind, object: KubeObject): { json: string; brief: string } => {
    const key = `${kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
    const version = object.metadata.resourceVersion;
    const hit = cache.get(key);
    if (hit !== undefined && version !== undefined && hit.version === version) return hit;
    const summary = summarize(kind, object) satisfies UiObject;
    const brief = Object.fromEntries(BRIEF_FIELDS.filter((f) => summary[f] !== undefined).map((f) => [f, summary[f]]));
    const made = {
      version,
      json: JSON.stringify(summary),
      brief: JSON.stringify({ ...brief, conditions: [], source: {}, targets: [], history: [], facts: {}, brief: true }),
    };
    cache.set(key, made);
    return made;
  };
  return {
    json: (kind, object) => entry(kind, object).json,
    brief: (kind, object) => entry(kind, object).brief,
    forget: (key) => void cache.delete(key),
  };
}
type Streams = Set<(change: Change) => void>;

type Context = {
  rest: KubeRest;
  source: UiSource;
  logger: Logger;
  access: Access;
  sessions: ReturnType<typeof createSessions>;
  assets: { js: Buffer; css: Buffer };
  activity?: ActivityLog;
  diffs?: SyncDiffs;
  diffSource?: DiffSource;
  oidc?: OidcSignIn;
  anonymous: boolean;
  summaries: ReturnType<typeof createSummaryCache>;
  mirrors?: () => readonly UiMirrorRow[];
};

export type UiServerOptions = {
  address: string;
  rest: KubeRest;
  source: UiSource;
  logger: Logger;
  assetsDir?: string;
  /** The Events this operator records (recent activity); absent = none shown. */
  activity?: ActivityLog;
  /** The operator's Git cache and client, for live and deploy diffs of a ConfigSync; absent = no diffs. */
  diffs?: DiffSource;
  /** OIDC sign-in beside the token one; absent = tokens only. */
  oidc?: OidcSettings;
  /** Viewers without a session are system:anonymous (off unless asked for: --ui-anonymous). */
  anonymous?: boolean;
  /** Label-driven mirroring's rows from the mirroring controller's memory; absent = mirroring off here. */
  mirrors?: () => readonly UiMirrorRow[];
};

export async function startUiServer(options: UiServerOptions): Promise<UiServer> {
  const dir = options.assetsDir ?? UI_ASSETS_DIR;
  if (!existsSync(join(dir, 'app.js'))) throw new Error(`--ui-addr: the web UI's assets are not built (${dir}/app.js is missing; run pnpm build:ui)`);
  const { diffs, oidc, anonymous, ...shared } = options;
  const context: Context = {
    ...shared,
    anonymous: anonymous === true,
    summaries: createSummaryCache(),
    ...(oidc === undefined ? {} : { oidc: createOidcSignIn({ settings: oidc, rest: options.rest }) }),
    access: createAccess({ rest: options.rest }),
    sessions: createSessions(),
    ...(diffs === undefined ? {} : { diffs: createSyncDiffs({ rest: options.rest, source: diffs }), diffSource: diffs }),
    assets: { js: readFileSync(join(dir, 'app.js')), css: readFileSync(join(dir, 'style.css')) },
  };
  const streams: Streams = new Set();
  const stopObserving = options.source.observe((kind, type, object) => {
    const namespace = object.metadata.namespace ?? '';
    const key = `${kind}/${namespace}/${object.metadata.name}`;
    if (type === 'DELETED') context.summaries.forget(key);
    if (streams.size === 0) return;
    const change: Change = { kind, namespace, deleted: type === 'DELETED', key, json: () => context.summaries.json(kind, object) };
    for (const stream of streams) stream(change);
  });
  const stopActivity = options.activity?.observe((entry) => {
    for (const stream of streams) stream({ kind: entry.kind, namespace: entry.namespace, activity: entry });
  });
  const server = createServer((req, res) => {
    route(context, streams, req, res).catch((error: unknown) => {
      options.logger.warn({ err: error instanceof Error ? error.message : String(error), path: pathOf(req) }, 'web UI request failed');
      if (!res.headersSent) json(res, 500, { error: 'internal error' });
      else res.end();
    });
  });
  const address = await listen(server, options.address);
  return {
    address,
    close: () =>
      new Promise((resolve) => {
        stopObserving();
        stopActivity?.();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** How viewers sign in, from the run flags: OIDC beside tokens when an issuer is given; anonymous only when asked. */
export function uiSignIn(
  flags: Parameters<typeof oidcSettingsFromFlags>[0] & { uiAnonymous?: boolean },
  podNamespace: string | undefined,
): Pick<UiServerOptions, 'oidc' | 'anonymous'> {
  const oidc = oidcSettingsFromFlags(flags, podNamespace ?? 'default');
  return { ...(oidc === undefined ? {} : { oidc }), anonymous: flags.uiAnonymous === true };
}

function pathOf(req: IncomingMessage): string {
  return (req.url ?? '/').split('?')[0] ?? '/';
}

async function route(context: Context, streams: Streams, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = pathOf(req);
  const method = req.method ?? 'GET';
  if (method === 'GET' && path === '/assets/app.js') return asset(res, 'text/javascript; charset=utf-8', context.assets.js);
  if (method === 'GET' && path === '/assets/app.css') return asset(res, 'text/css; charset=utf-8', context.assets.css);
  if (method === 'GET' && path === '/login')
    return html(res, 200, signInPage({ failed: new URL(req.url ?? '/', 'http://ui').searchParams.get('failed'), oidc: context.oidc !== undefined }));
  if (method === 'POST' && path === '/login') return signIn(context, req, res);
  if (method === 'GET' && path === '/oidc/login' && context.oidc !== undefined) return beginOidc(context, context.oidc, req, res);
  if (method === 'GET' && path === '/oidc/callback' && context.oidc !== undefined) return finishOidc(context, context.oidc, req, res);
  let session = context.sessions.get(cookie(req, COOKIE));
  if (session === undefined && context.anonymous && method === 'GET' && !path.startsWith('/api/')) {
    session = context.sessions.create(ANONYMOUS);
    res.setHeader('Set-Cookie', sessionCookie(req, session));
  }
  if (method === 'POST' && path === '/logout') {
    if (session !== undefined && sameOrigin(req)) context.sessions.delete(session.id);
    res.writeHead(303, { ...SECURITY_HEADERS, Location: '/login', 'Set-Cookie': `${COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0` }).end();
    return;
  }
  if (path.startsWith('/api/')) {
    if (session === undefined) return json(res, 401, { error: 'not signed in' });
    if (method === 'GET' && path === '/api/me') return json(res, 200, { username: session.viewer.username, csrf: session.csrf });
    if (method === 'GET' && path === '/api/events') return stream(context, streams, session, req, res);
    if (method === 'POST' && path === '/api/actions') return act(context, session, req, res);
    if (method === 'GET' && path === '/api/mirrors') {
      if (context.mirrors === undefined) return json(res, 200, { enabled: false, rows: [] });
      return json(res, 200, { enabled: true, rows: await visibleMirrorRows(context.access, session.viewer, context.mirrors()) });
    }
    const one = /^\/api\/objects\/([A-Za-z]+)\/([^/]+)\/([^/]+)$/.exec(path);
    if (method === 'GET' && one !== null)
      return showObject(context, session, { kind: one[1] ?? '', namespace: decodeURIComponent(one[2] ?? ''), name: decodeURIComponent(one[3] ?? '') }, res);
    const extra = /^\/api\/(tree|commits)\/ConfigSync\/([^/]+)\/([^/]+)$/.exec(path);
    if (method === 'GET' && extra !== null)
      return showTreeOrCommits(
        context,
        session,
        { which: extra[1] as 'tree' | 'commits', namespace: decodeURIComponent(extra[2] ?? ''), name: decodeURIComponent(extra[3] ?? '') },
        res,
      );
    const diff = /^\/api\/(diff|deploys)\/ConfigSync\/([^/]+)\/([^/]+)$/.exec(path);
    if (method === 'GET' && diff !== null)
      return showDiff(
        context,
        session,
        {
          which: diff[1] as 'diff' | 'deploys',
          namespace: decodeURIComponent(diff[2] ?? ''),
          name: decodeURIComponent(diff[3] ?? ''),
          query: new URL(req.url ?? '/', 'http://ui').searchParams,
        },
        res,
      );
    return json(res, 404, { error: 'not found' });
  }
  if (method !== 'GET') return json(res, 405, { error: 'method not allowed' });
  if (session === undefined) {
    res.writeHead(303, { ...SECURITY_HEADERS, Location: '/login' }).end();
    return;
  }
  html(res, 200, PAGE);
}

async function signIn(context: Context, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (!sameOrigin(req)) return html(res, 403, signInPage({ failed: 'token', oidc: context.oidc !== undefined }));
  const form = new URLSearchParams(await readBody(req, MAX_FORM_BYTES));
  const token = (form.get('token') ?? '').trim();
  // A review that fails (e.g. the operator may not create TokenReviews) is logged, never the token.
  const viewer =
    token === ''
      ? undefined
      : await reviewToken(context.rest, token).catch((error: unknown) => {
          context.logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'web UI sign-in: the TokenReview failed');
          return undefined;
        });
  if (viewer === undefined) {
    res.writeHead(303, { ...SECURITY_HEADERS, Location: '/login?failed=token' }).end();
    return;
  }
  const session = context.sessions.create(viewer);
  context.logger.info({ user: viewer.username }, 'web UI sign-in');
  res.writeHead(303, { ...SECURITY_HEADERS, Location: '/', 'Set-Cookie': sessionCookie(req, session) }).end();
}

const secureFlag = (req: IncomingMessage): string => (req.headers['x-forwarded-proto'] === 'https' ? '; Secure' : '');
const sessionCookie = (req: IncomingMessage, session: Session): string =>
  `${COOKIE}=${session.id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${8 * 3600}${secureFlag(req)}`;
/** This server as the browser reached it (a TLS-terminating proxy says https with X-Forwarded-Proto). */
const originOf = (req: IncomingMessage): string => `${req.headers['x-forwarded-proto'] === 'https' ? 'https' : 'http'}://${req.headers.host ?? 'localhost'}`;

async function beginOidc(context: Context, oidc: OidcSignIn, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let started: { url: string; state: string };
  try {
    started = await oidc.begin(oidc.redirectUrl(originOf(req)));
  } catch (error) {
    context.logger.warn(
      { err: error instanceof Error ? error.message : String(error) },
      'web UI OIDC sign-in could not start (discovery or the client secret)',
    );
    res.writeHead(303, { ...SECURITY_HEADERS, Location: '/login?failed=oidc' }).end();
    return;
  }
  res
    .writeHead(303, {
      ...SECURITY_HEADERS,
      Location: started.url,
      'Set-Cookie': `${OIDC_COOKIE}=${started.state}; HttpOnly; SameSite=Lax; Path=/oidc; Max-Age=600${secureFlag(req)}`,
    })
    .end();
}

async function finishOidc(context: Context, oidc: OidcSignIn, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const clear = `${OIDC_COOKIE}=; HttpOnly; SameSite=Lax; Path=/oidc; Max-Age=0`;
  let viewer: Viewer;
  try {
    viewer = await oidc.finish(new URL(req.url ?? '/', originOf(req)), cookie(req, OIDC_COOKIE));
  } catch (error) {
    // The exchange's details go to the log (never a token: openid-client's errors name fields, not values).
    context.logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'web UI OIDC sign-in refused');
    const failed = error instanceof OidcError ? error.message : "the issuer's answer did not check out";
    res.writeHead(303, { ...SECURITY_HEADERS, Location: `/login?failed=${encodeURIComponent(failed)}`, 'Set-Cookie': clear }).end();
    return;
  }
  const session = context.sessions.create(viewer);
  context.logger.info({ user: viewer.username, groups: viewer.groups.length, via: 'oidc' }, 'web UI sign-in');
  // A page, not a redirect: the session cookie is SameSite=Strict, and a redirect chain that began at the
  // issuer (another site) would not carry it to the next request; this page's own navigation does.
  res.writeHead(200, { ...SECURITY_HEADERS, 'Content-Type': 'text/html; charset=utf-8', 'Set-Cookie': [sessionCookie(req, session), clear] });
  res.end(
    `${HEAD}<meta http-equiv="refresh" content="0;url=/"></head><body><main class="signin"><p>Signed in as ${escapeHtml(viewer.username)}. <a href="/">Continue</a></p></main></body></html>`,
  );
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** May the viewer see objects of `kind` in `namespace`: `list` there, or across all namespaces. */
async function visible(access: Access, viewer: Viewer, kind: WatchedKind, namespace: string): Promise<boolean> {
  if (await access.allowed(viewer, { verb: 'list', kind, namespace: '' })) return true;
  return namespace !== '' && access.allowed(viewer, { verb: 'list', kind, namespace });
}

async function stream(context: Context, streams: Streams, session: Session, req: IncomingMessage, res: ServerResponse): Promise<void> {
  res.writeHead(200, { ...SECURITY_HEADERS, 'Content-Type': 'text/event-stream; charset=utf-8', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
  const sendJson = (event: string, json: string): void => {
    if (res.writableLength > MAX_UNREAD_BYTES) return void res.destroy();
    res.write(`event: ${event}\ndata: ${json}\n\n`);
  };
  const send = (event: string, data: unknown): void => sendJson(event, JSON.stringify(data));
  // Changes are queued until the snapshot went out, and sent in order after it.
  let chain = Promise.resolve();
  const onChange = (change: Change): void => {
    chain = chain
      .then(async () => {
        if (context.sessions.get(session.id) === undefined) return void res.end();
        if (!(await visible(context.access, session.viewer, change.kind, change.namespace))) return;
        if ('activity' in change) send('activity', change.activity);
        else if (change.deleted) send('delete', { key: change.key });
        else sendJson('upsert', change.json());
      })
      .catch(() => undefined);
  };
  streams.add(onChange);
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), 20_000);
  req.on('close', () => {
    streams.delete(onChange);
    clearInterval(heartbeat);
  });
  chain = chain.then(async () => {
    const objects: string[] = [];
    for (const kind of KINDS) {
      for (const object of context.source.watched(kind)) {
        // Brief: the overview's fields only; an object's page asks /api/objects for the rest.
        if (await visible(context.access, session.viewer, kind, object.metadata.namespace ?? '')) objects.push(context.summaries.brief(kind, object));
      }
    }
    const activity = [];
    for (const entry of context.activity?.recent() ?? []) {
      if (await visible(context.access, session.viewer, entry.kind, entry.namespace)) activity.push(entry);
    }
    const head = JSON.stringify({ username: session.viewer.username, csrf: session.csrf, activity });
    sendJson('snapshot', `${head.slice(0, -1)},"objects":[${objects.join(',')}]}`);
  });
  await chain;
}

/** One object's whole summary (the snapshot sends the overview's part), from the cache, for a viewer who may list it. */
async function showObject(context: Context, session: Session, request: { kind: string; namespace: string; name: string }, res: ServerResponse): Promise<void> {
  const kind = KINDS.find((k) => k === request.kind);
  const object =
    kind === undefined ? undefined : context.source.watched(kind).find((o) => o.metadata.namespace === request.namespace && o.metadata.name === request.name);
  // Not there and not visible read the same: a viewer learns nothing of objects they may not list.
  if (kind === undefined || object === undefined || !(await visible(context.access, session.viewer, kind, request.namespace)))
    return json(res, 404, { error: `${request.kind} ${request.namespace}/${request.name} is not there, or you may not list it` });
  res.writeHead(200, { ...SECURITY_HEADERS, 'Content-Type': 'application/json' }).end(context.summaries.json(kind, object));
}

/**
 * A ConfigSync's live diff against Git, or the diff between two deploys (?from=SHA&to=SHA), for a viewer who
 * may `get` it. The answer holds what Git renders and the live objects' fields Syncline writes, each object's
 * only if the viewer may `get` that object too; Secret values are masked.
 */
async function showDiff(
  context: Context,
  session: Session,
  request: { which: 'diff' | 'deploys'; namespace: string; name: string; query: URLSearchParams },
  res: ServerResponse,
): Promise<void> {
  const { namespace, name } = request;
  if (context.diffs === undefined) return json(res, 501, { error: 'this operator serves no diffs' });
  if (!(await context.access.allowed(session.viewer, { verb: 'get', kind: 'ConfigSync', namespace, name }))) {
    return json(res, 403, { error: `forbidden: ${session.viewer.username} may not get configsyncs in namespace ${namespace}` });
  }
  const object = context.source.watched('ConfigSync').find((o) => o.metadata.namespace === namespace && o.metadata.name === name);
  if (object === undefined) return json(res, 404, { error: `ConfigSync ${namespace}/${name} not found` });
  const mayGet: MayGet = (ref) => context.access.allowedResource(session.viewer, { verb: 'get', ...ref });
  try {
    if (request.which === 'diff') return json(res, 200, await context.diffs.live(object, mayGet));
    return json(res, 200, await context.diffs.deploys(object, { from: request.query.get('from') ?? '', to: request.query.get('to') ?? '' }, mayGet));
  } catch (error) {
    if (error instanceof DiffError) return json(res, 422, { error: error.message });
    throw error;
  }
}

/**
 * A ConfigSync's resource tree (its applied objects and what they own, with health and Events) or its deploys'
 * commits (message, author), for a viewer who may `get` it; each object of the tree only if they may read it.
 */
async function showTreeOrCommits(
  context: Context,
  session: Session,
  request: { which: 'tree' | 'commits'; namespace: string; name: string },
  res: ServerResponse,
): Promise<void> {
  const { namespace, name } = request;
  if (context.diffSource === undefined) return json(res, 501, { error: 'this operator serves no trees or commits' });
  if (!(await context.access.allowed(session.viewer, { verb: 'get', kind: 'ConfigSync', namespace, name }))) {
    return json(res, 403, { error: `forbidden: ${session.viewer.username} may not get configsyncs in namespace ${namespace}` });
  }
  const object = context.source.watched('ConfigSync').find((o) => o.metadata.namespace === namespace && o.metadata.name === name);
  if (object === undefined) return json(res, 404, { error: `ConfigSync ${namespace}/${name} not found` });
  if (request.which === 'commits') return json(res, 200, await deployCommits({ rest: context.rest, git: context.diffSource.git, object }));
  const mayRead: MayRead = (ref) => context.access.allowedResource(session.viewer, ref);
  return json(res, 200, await syncTree({ rest: context.rest, client: await context.diffSource.client(), object, mayRead }));
}

const ACTIONS = ['reconcile', 'suspend', 'resume', 'rollback', 'failover', 'failback'] as const;
type Action = (typeof ACTIONS)[number];

/**
 * The same changes the CLI makes (`syncline reconcile`, `syncline rollback --to SHA`, `syncline failover|failback`,
 * `kubectl patch … spec.suspend`),
 * once the viewer may patch the object.
 */
async function act(context: Context, session: Session, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const token = req.headers['x-csrf-token'];
  if (
    typeof token !== 'string' ||
    !sameSecret(token, session.csrf) ||
    !sameOrigin(req) ||
    !(req.headers['content-type'] ?? '').startsWith('application/json')
  ) {
    return json(res, 403, { error: 'forbidden: the request did not come from this page (CSRF check failed)' });
  }
  let body: { kind?: unknown; namespace?: unknown; name?: unknown; action?: unknown; revision?: unknown };
  try {
    body = JSON.parse(await readBody(req, MAX_FORM_BYTES)) as typeof body;
  } catch {
    return json(res, 400, { error: 'the body is not JSON' });
  }
  const { kind, namespace, name, action, revision } = body;
  if (
    typeof kind !== 'string' ||
    !KINDS.includes(kind as WatchedKind) ||
    typeof namespace !== 'string' ||
    typeof name !== 'string' ||
    !ACTIONS.includes(action as Action)
  ) {
    return json(res, 400, { error: 'expected {kind, namespace, name, action: reconcile|suspend|resume|rollback|failover|failback, revision (rollback)}' });
  }
  const watchedKind = kind as WatchedKind;
  const id = `${kind} ${namespace}/${name}`;
  if (action !== 'reconcile' && watchedKind === 'RemoteCluster') return json(res, 400, { error: `${id}: a RemoteCluster cannot be suspended` });
  if (action === 'rollback' && (watchedKind !== 'ConfigSync' || typeof revision !== 'string' || !/^[0-9a-f]{40}$/.test(revision))) {
    return json(res, 400, { error: `${id}: rollback takes a ConfigSync and a full 40-character commit SHA` });
  }
  if ((action === 'failover' || action === 'failback') && watchedKind !== 'NamespaceReplication')
    return json(res, 400, { error: `${id}: only a NamespaceReplication fails over` });
  const viewer = session.viewer;
  if (!(await context.access.allowed(viewer, { verb: 'patch', kind: watchedKind, namespace, name }))) {
    context.logger.info({ user: viewer.username, action, object: id }, 'web UI action refused (RBAC)');
    return json(res, 403, { error: `forbidden: ${viewer.username} may not patch ${PLURALS[watchedKind]} in namespace ${namespace}` });
  }
  const object = context.source.watched(watchedKind).find((o) => o.metadata.namespace === namespace && o.metadata.name === name);
  if (object === undefined) return json(res, 404, { error: `${id} not found` });
  const suspended = (object['spec'] as { suspend?: boolean } | undefined)?.suspend === true;
  if (action === 'reconcile' && suspended) return json(res, 409, { error: `${id} is suspended: a reconcile request would do nothing; resume it first` });
  const history = ((object['status'] as { history?: { revision?: string }[] } | undefined)?.history ?? []).map((h) => h.revision);
  if (action === 'rollback' && !history.includes(revision as string))
    return json(res, 409, { error: `${id}: ${String(revision)} is not in its deploy history` });
  const patch =
    action === 'reconcile'
      ? { metadata: { annotations: { [RECONCILE_REQUESTED_ANNOTATION]: new Date().toISOString() } } }
      : action === 'rollback'
        ? { spec: { source: { git: { revision } } } }
        : action === 'failover' || action === 'failback'
          ? { spec: { failover: action === 'failover' } }
          : { spec: { suspend: action === 'suspend' } };
  await context.rest.request({
    method: 'PATCH',
    path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/${PLURALS[watchedKind]}/${name}`,
    contentType: 'application/merge-patch+json',
    body: patch,
  });
  context.logger.info({ user: viewer.username, action, object: id }, 'web UI action');
  json(res, 200, { ok: true, message: `${action as Action} requested for ${id}` });
}

/** A browser sends Origin with every POST; one naming another site is refused (Host must match). */
function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

function cookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}

async function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new Error('request body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': 'application/json' }).end(JSON.stringify(value));
}

function html(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': 'text/html; charset=utf-8' }).end(body);
}

function asset(res: ServerResponse, type: string, body: Buffer): void {
  res.writeHead(200, { ...SECURITY_HEADERS, 'Cache-Control': 'no-cache', 'Content-Type': type }).end(body);
}

const HEAD =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark"><title>Syncline</title><link rel="stylesheet" href="/assets/app.css">';

const PAGE = `${HEAD}<script type="module" src="/assets/app.js"></script></head><body><div id="app" class="loading">Loading…</div></body></html>`;

function signInPage(options: { failed: string | null; oidc: boolean }): string {
  const { failed } = options;
  const why =
    failed === null
      ? ''
      : failed === '' || failed === 'token'
        ? 'The API server did not accept this token.'
        : failed === 'oidc'
          ? "The OIDC sign-in could not start; the operator's log says why."
          : `The OIDC sign-in failed: ${failed}`;
  return `${HEAD}</head><body><main class="signin"><h1>Syncline</h1>
${options.oidc ? '<p><a class="button oidc" href="/oidc/login">Sign in with OIDC</a></p><p class="hint">or with a token:</p>' : ''}
<form method="post" action="/login">
<label for="token">Kubernetes bearer token</label>
<textarea id="token" name="token" rows="4" autocomplete="off" spellcheck="false" required placeholder="kubectl create token NAME"></textarea>
${why === '' ? '' : `<p class="error" role="alert">${escapeHtml(why)}</p>`}
<button type="submit">Sign in</button>
<p class="hint">The token is checked with a TokenReview and not kept; what you see and may do follows your RBAC.</p>
</form></main></body></html>`;
}

// A real Git server for tests: a Node HTTP server on 127.0.0.1 in front of `git http-backend` (CGI), serving
// bare repos from a temp dir, so source-git is tested over the network exactly as users use it.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type GitServerAuth = { username: string; password: string } | { bearerToken: string };

/**
 * Fault injection. `only` limits it to one endpoint; `repo` to one repository. Of the requests that match,
 * `every: n` hits every n-th (counted from setBehavior), `times: n` only the first n hits, and
 * `probability` (with `seed`, a deterministic RNG) a random share; all of them combine.
 */
export type GitServerBehavior = (
  | { kind: 'hang' }
  | { kind: 'slow'; chunkBytes?: number; intervalMs?: number }
  | { kind: 'huge'; bytes: number }
  | { kind: 'endless' }
  /** An error status; `retryAfter` is sent as the Retry-After header (seconds or an HTTP-date). */
  | { kind: 'status'; status: number; retryAfter?: string }
  /**
   * The host rate-limits its client, as GitHub and GitLab do: a request the behavior fires on opens a window
   * of `seconds` in which it and every other matching request get `status` (default 429) with Retry-After
   * set to the window's remaining whole seconds. `times` counts windows.
   */
  | { kind: 'rateLimit'; seconds: number; status?: number }
  | { kind: 'redirect'; to: string }
  /** The connection is destroyed: before any response, or after `afterBytes` bytes of the real body. */
  | { kind: 'reset'; afterBytes?: number }
  /**
   * The real response, cut cleanly at a pkt-line boundary: the first `packets` pkt-lines (negative: all but
   * the last |packets|), or the first `fraction` of them; then the response ends, with a 0000 flush when
   * `flush` is true. Whatever cannot be parsed as pkt-lines is dropped.
   */
  | { kind: 'truncate'; packets?: number; fraction?: number; flush?: boolean }
  /** The upload-pack response with its pack rewritten (demultiplexed from, and put back into, side-band 1). */
  | { kind: 'pack'; transform: (pack: Buffer) => Buffer | Promise<Buffer> }
) & { only?: 'info/refs' | 'git-upload-pack'; repo?: string; every?: number; times?: number; probability?: number; seed?: number };

export interface RequestCounts {
  /** GET …/info/refs (ref advertisement: what a resolve costs) */
  infoRefs: number;
  /** POST …/git-upload-pack (what a fetch, or a protocol-v2 ls-refs, costs) */
  uploadPack: number;
}

export interface LoggedRequest {
  method: string;
  path: string;
  host: string;
  repo: string | undefined;
  hasAuthorization: boolean;
  status: number;
  /** When the request arrived (performance.now() of the test process). */
  at: number;
  /** Whether a fault of the behavior was injected into it. */
  faulted: boolean;
}

export type TreeFile = string | Uint8Array | null | { symlink: string };

export interface TestRepo {
  readonly name: string;
  /** Clone URL, e.g. http://127.0.0.1:1234/configs.git */
  readonly url: string;
  /** The bare repository on disk. */
  readonly dir: string;
  /** Commits on top of `branch` (default `main`; a new branch starts from `main`). `null` deletes a path. */
  commit(files: Record<string, TreeFile>, opts?: { message?: string; branch?: string }): Promise<string>;
  /**
   * Commits a root tree whose entries carry arbitrary names (`..`, `.git`, `a\\b`), which the porcelain
   * refuses to create: for testing that clients refuse them.
   */
  commitRawTree(entries: Array<{ name: string; content: string }>, opts?: { message?: string; branch?: string }): Promise<string>;
  tag(name: string, ref: string, opts?: { annotated?: boolean }): Promise<void>;
  setBranch(name: string, sha: string): Promise<void>;
  resolve(ref: string): Promise<string>;
  /** Runs git in the bare repo (escape hatch). */
  git(args: string[], input?: string | Uint8Array): Promise<string>;
}

export interface GitServer extends AsyncDisposable {
  /** Base URL, e.g. http://127.0.0.1:1234 (no trailing slash). */
  readonly url: string;
  /** The directory holding the bare repos (`<name>.git`), e.g. for serving them over SSH too. */
  readonly root: string;
  createRepo(name: string): Promise<TestRepo>;
  /** Requests seen so far, for one repo or all. */
  requests(repo?: string): RequestCounts;
  requestLog(): readonly LoggedRequest[];
  resetRequests(): void;
  setBehavior(behavior: GitServerBehavior | undefined): void;
  close(): Promise<void>;
}

const identity = {
  GIT_AUTHOR_NAME: 'Syncline Test',
  GIT_AUTHOR_EMAIL: 'test@syncline.invalid',
  GIT_COMMITTER_NAME: 'Syncline Test',
  GIT_COMMITTER_EMAIL: 'test@syncline.invalid',
};

/** An environment for git that ignores the machine's and the user's config, so it works on a fresh machine. */
export function gitEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    LANG: 'C',
    ...identity,
    ...extra,
  };
}

/** Runs git, resolving with stdout; rejects with stderr on a non-zero exit. */
export function runGit(args: string[], opts: { cwd?: string; input?: string | Uint8Array; env?: Record<string, string> } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd: opts.cwd, env: gitEnv(opts.env), stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
      else reject(new Error(`git ${args.join(' ')} exited ${String(code)}: ${Buffer.concat(err).toString('utf8').trim()}`));
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}

const repoNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * `auth`: what the server demands. `tls`: serve https with this key and certificate (PEM; e.g. from
 * createTestCa), so clients must trust the CA that signed it.
 */
export async function startGitServer(opts: { auth?: GitServerAuth; tls?: { key: string; cert: string } } = {}): Promise<GitServer> {
  const root = await mkdtemp(join(tmpdir(), 'syncline-git-'));
  const counts = new Map<string, RequestCounts>();
  const log: LoggedRequest[] = [];
  const sockets = new Set<Socket>();
  let behavior: GitServerBehavior | undefined;
  /** Matching requests and injected faults since setBehavior, and its RNG. */
  let matched = 0;
  let hits = 0;
  let rng: () => number = Math.random;
  /** End of the rate-limit window (performance.now()), when a `rateLimit` behavior opened one. */
  const limit = { until: 0 };
  const expectedAuth =
    opts.auth === undefined
      ? undefined
      : 'bearerToken' in opts.auth
        ? `Bearer ${opts.auth.bearerToken}`
        : `Basic ${Buffer.from(`${opts.auth.username}:${opts.auth.password}`).toString('base64')}`;

  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(err));
    });
  };
  const where: Backend = { root, authenticated: expectedAuth !== undefined };
  const server = opts.tls === undefined ? createServer(listener) : createHttpsServer({ key: opts.tls.key, cert: opts.tls.cert }, listener);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const baseUrl = `${opts.tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://placeholder');
    const match = /^\/([^/]+?)(?:\.git)?(\/.*)$/.exec(url.pathname);
    const repo = match?.[1];
    const rest = match?.[2] ?? '';
    const endpoint = rest === '/info/refs' ? 'info/refs' : rest === '/git-upload-pack' ? 'git-upload-pack' : undefined;
    const entry: LoggedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname + url.search,
      host: req.headers.host ?? '',
      repo,
      hasAuthorization: req.headers.authorization !== undefined,
      status: 0,
      at: performance.now(),
      faulted: false,
    };
    log.push(entry);
    res.on('finish', () => (entry.status = res.statusCode));
    if (repo !== undefined && endpoint !== undefined) {
      const c = counts.get(repo) ?? { infoRefs: 0, uploadPack: 0 };
      if (endpoint === 'info/refs') c.infoRefs++;
      else c.uploadPack++;
      counts.set(repo, c);
    }

    if (expectedAuth !== undefined && req.headers.authorization !== expectedAuth) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="syncline-test"', 'content-type': 'text/plain' });
      res.end('authentication required\n');
      return;
    }
    if (repo === undefined || !repoNamePattern.test(repo) || endpoint === undefined) {
      // Only the read side of smart HTTP is served; no dumb HTTP, no push.
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found\n');
      return;
    }

    const b = behavior;
    const matches = b !== undefined && (b.only === undefined || b.only === endpoint) && (b.repo === undefined || b.repo === repo);
    const limited = matches && b.kind === 'rateLimit' && performance.now() < limit.until;
    const applies = matches && (limited || fires(b));
    entry.faulted = applies;
    if (applies) {
      await serveFault(b, { where, req, res, url, endpoint, limit, limited });
      return;
    }
    await serveBackend(where, req, res, url);
  }

  /** Whether a matching request gets the fault (see GitServerBehavior: every, times, probability). */
  function fires(b: GitServerBehavior): boolean {
    matched++;
    if (b.every !== undefined && matched % b.every !== 0) return false;
    if (b.probability !== undefined && rng() >= b.probability) return false;
    if (b.times !== undefined && hits >= b.times) return false;
    hits++;
    return true;
  }

  const repos = new Map<string, TestRepo>();

  const gitServer: GitServer = {
    url: baseUrl,
    root,
    async createRepo(name) {
      if (!repoNamePattern.test(name) || name.endsWith('.git')) throw new Error(`invalid test repo name ${name}`);
      if (repos.has(name)) throw new Error(`test repo ${name} exists`);
      const dir = join(root, `${name}.git`);
      await runGit(['init', '--quiet', '--bare', '--initial-branch=main', dir]);
      // Fetching a commit that is not a branch tip (a pinned older SHA, a rollback) needs these; GitHub, GitLab
      // and Gitea allow it too.
      await runGit(['config', 'uploadpack.allowReachableSHA1InWant', 'true'], { cwd: dir });
      await runGit(['config', 'uploadpack.allowAnySHA1InWant', 'true'], { cwd: dir });
      await runGit(['config', 'http.receivepack', 'false'], { cwd: dir });
      const repo = createTestRepo(name, dir, `${baseUrl}/${name}.git`);
      repos.set(name, repo);
      return repo;
    },
    requests(repo) {
      if (repo !== undefined) return { ...(counts.get(repo) ?? { infoRefs: 0, uploadPack: 0 }) };
      const total = { infoRefs: 0, uploadPack: 0 };
      for (const c of counts.values()) {
        total.infoRefs += c.infoRefs;
        total.uploadPack += c.uploadPack;
      }
      return total;
    },
    requestLog: () => [...log],
    resetRequests() {
      counts.clear();
      log.length = 0;
    },
    setBehavior(b) {
      behavior = b;
      matched = 0;
      hits = 0;
      limit.until = 0;
      rng = b?.seed !== undefined ? seededRandom(b.seed) : Math.random;
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
      await rm(root, { recursive: true, force: true });
    },
    [Symbol.asyncDispose]() {
      return gitServer.close();
    },
  };
  return gitServer;
}

/** Where git http-backend serves from, and whether requests reached it authenticated. */
type Backend = { readonly root: string; readonly authenticated: boolean };
type BackendOptions = { slow?: { chunkBytes: number; intervalMs: number }; rewrite?: (body: Buffer) => Buffer | Promise<Buffer>; destroyAfter?: boolean };

/**
 * Runs git http-backend for the request. With `rewrite`, the body is collected whole and replaced by what
 * it returns (headers as the backend sent them, minus any content-length); `destroyAfter` then destroys the
 * connection instead of ending the response cleanly. `slow`: the body is written in chunks, paced.
 */
async function serveBackend(where: Backend, req: IncomingMessage, res: ServerResponse, url: URL, options: BackendOptions = {}): Promise<void> {
  const { slow, rewrite } = options;
  const env = gitEnv({
    GIT_PROJECT_ROOT: where.root,
    GIT_HTTP_EXPORT_ALL: '1',
    PATH_INFO: url.pathname,
    QUERY_STRING: url.search.replace(/^\?/, ''),
    REQUEST_METHOD: req.method ?? 'GET',
    CONTENT_TYPE: req.headers['content-type'] ?? '',
    REMOTE_USER: where.authenticated ? 'test' : '',
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
    SERVER_PROTOCOL: 'HTTP/1.1',
    GATEWAY_INTERFACE: 'CGI/1.1',
  });
  // http-backend undoes gzip request bodies itself when told the encoding; the body passes through as is.
  if (req.headers['content-length'] !== undefined) env['CONTENT_LENGTH'] = req.headers['content-length'];
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined) env['HTTP_CONTENT_ENCODING'] = encoding;
  const protocol = req.headers['git-protocol'];
  if (typeof protocol === 'string') env['HTTP_GIT_PROTOCOL'] = protocol;

  const child = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.on('error', () => undefined);
  req.pipe(child.stdin);
  const stderr: Buffer[] = [];
  child.stderr.on('data', (c: Buffer) => stderr.push(c));
  res.on('close', () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });

  let head = Buffer.alloc(0);
  let headersDone = false;
  const collected: Buffer[] = [];
  const emit = async (chunk: Buffer): Promise<void> => {
    if (rewrite === undefined) await write(res, chunk, slow);
    else collected.push(chunk);
  };
  for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
    if (headersDone) {
      await emit(chunk);
      continue;
    }
    head = Buffer.concat([head, chunk]);
    const sep = findHeaderEnd(head);
    if (sep === undefined) continue;
    headersDone = true;
    const headerText = head.subarray(0, sep.index).toString('latin1');
    let status = 200;
    const headers: Record<string, string> = {};
    for (const line of headerText.split(/\r?\n/)) {
      const i = line.indexOf(':');
      if (i < 0) continue;
      const key = line.slice(0, i).trim().toLowerCase();
      const value = line.slice(i + 1).trim();
      if (key === 'status') status = Number.parseInt(value, 10);
      else if (!(rewrite !== undefined && key === 'content-length')) headers[key] = value;
    }
    res.writeHead(status, headers);
    await emit(head.subarray(sep.index + sep.length));
  }
  if (!headersDone) {
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(`git http-backend failed: ${Buffer.concat(stderr).toString('utf8')}\n`);
    return;
  }
  if (rewrite !== undefined) {
    await write(res, await rewrite(Buffer.concat(collected)), undefined);
    if (options.destroyAfter === true) {
      // Let the bytes go out first, then cut the connection without ending the chunked body.
      await new Promise((resolve) => setTimeout(resolve, 20));
      req.socket.destroy();
      return;
    }
  }
  res.end();
}

/** Answers a request with the fault `b` injects (see GitServerBehavior). `limit`: the rate-limit window, shared across requests. */
async function serveFault(
  b: GitServerBehavior,
  at: {
    where: Backend;
    req: IncomingMessage;
    res: ServerResponse;
    url: URL;
    endpoint: 'info/refs' | 'git-upload-pack';
    limit: { until: number };
    limited: boolean;
  },
): Promise<void> {
  const { where, req, res, url, endpoint, limit, limited } = at;
  switch (b.kind) {
    case 'rateLimit': {
      if (!limited) limit.until = performance.now() + b.seconds * 1000;
      req.resume();
      const remaining = Math.max(1, Math.ceil((limit.until - performance.now()) / 1000));
      res.writeHead(b.status ?? 429, { 'content-type': 'text/plain', 'retry-after': String(remaining) });
      res.end('rate limited\n');
      return;
    }
    case 'hang':
      req.resume();
      return; // never answer; close() destroys the socket
    case 'status':
      req.resume();
      res.writeHead(b.status, { 'content-type': 'text/plain', ...(b.retryAfter === undefined ? {} : { 'retry-after': b.retryAfter }) });
      res.end(`injected status ${b.status}\n`);
      return;
    case 'reset':
      if (b.afterBytes === undefined) {
        req.resume();
        req.socket.destroy();
        return;
      }
      await serveBackend(where, req, res, url, { rewrite: (body) => body.subarray(0, b.afterBytes), destroyAfter: true });
      return;
    case 'truncate':
      await serveBackend(where, req, res, url, { rewrite: (body) => truncatePackets(body, b) });
      return;
    case 'pack':
      await serveBackend(where, req, res, url, { rewrite: (body) => rewritePack(body, b.transform) });
      return;
    case 'redirect':
      req.resume();
      res.writeHead(302, { location: b.to.replace(/\/$/, '') + url.pathname + url.search });
      res.end();
      return;
    case 'huge':
    case 'endless':
      req.resume();
      await sendJunk(res, endpoint, b.kind === 'huge' ? b.bytes : Infinity);
      return;
    case 'slow':
      await serveBackend(where, req, res, url, { slow: { chunkBytes: b.chunkBytes ?? 64, intervalMs: b.intervalMs ?? 100 } });
      return;
  }
}

function findHeaderEnd(buf: Buffer): { index: number; length: number } | undefined {
  const crlf = buf.indexOf('\r\n\r\n');
  const lf = buf.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { index: crlf, length: 4 };
  if (lf >= 0) return { index: lf, length: 2 };
  return undefined;
}

async function write(res: ServerResponse, chunk: Buffer, slow: { chunkBytes: number; intervalMs: number } | undefined): Promise<void> {
  if (chunk.length === 0) return;
  if (slow === undefined) {
    if (!res.write(chunk)) await drained(res);
    return;
  }
  for (let i = 0; i < chunk.length && !res.destroyed; i += slow.chunkBytes) {
    res.write(chunk.subarray(i, i + slow.chunkBytes));
    await new Promise((resolve) => setTimeout(resolve, slow.intervalMs));
  }
}

/**
 * A response that looks like Git smart HTTP but never ends (or ends after `bytes`): an advertisement with
 * ever more refs, or a side-band pack stream that keeps going. A client must give up on its own.
 */
async function sendJunk(res: ServerResponse, endpoint: 'info/refs' | 'git-upload-pack', bytes: number): Promise<void> {
  const advertisement = endpoint === 'info/refs';
  res.writeHead(200, {
    'content-type': advertisement ? 'application/x-git-upload-pack-advertisement' : 'application/x-git-upload-pack-result',
    'cache-control': 'no-cache',
  });
  const pkt = (payload: Buffer): Buffer => Buffer.concat([Buffer.from((payload.length + 4).toString(16).padStart(4, '0')), payload]);
  const head = advertisement
    ? Buffer.concat([
        pkt(Buffer.from('# service=git-upload-pack\n')),
        Buffer.from('0000'),
        pkt(Buffer.from(`${'1'.repeat(40)} HEAD\0side-band-64k ofs-delta shallow\n`)),
      ])
    : Buffer.concat([pkt(Buffer.from('NAK\n')), pkt(Buffer.concat([Buffer.from([1]), Buffer.from('PACK\0\0\0\x02\xff\xff\xff\xff', 'latin1')]))]);
  const body = advertisement
    ? Buffer.concat(Array.from({ length: 200 }, (_, i) => pkt(Buffer.from(`${'2'.repeat(40)} refs/heads/junk-${String(i).padStart(6, '0')}\n`))))
    : pkt(Buffer.concat([Buffer.from([1]), Buffer.alloc(60_000, 0x78)]));
  let sent = 0;
  let piece: Buffer = head;
  while (sent < bytes && !res.destroyed) {
    const chunk = bytes - sent >= piece.length ? piece : piece.subarray(0, bytes - sent);
    sent += chunk.length;
    if (!res.write(chunk)) await drained(res);
    piece = body;
  }
  res.end();
}

/** mulberry32: a small deterministic RNG for reproducible random faults. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Splits a body into whole pkt-lines (each with its 4-byte length); stops where the framing ends. */
export function splitPktLines(body: Buffer): Buffer[] {
  const packets: Buffer[] = [];
  let pos = 0;
  while (pos + 4 <= body.length) {
    const hex = body.toString('latin1', pos, pos + 4);
    if (!/^[0-9a-f]{4}$/.test(hex)) break;
    const len = Number.parseInt(hex, 16);
    const size = len < 4 ? 4 : len;
    if (pos + size > body.length) break;
    packets.push(body.subarray(pos, pos + size));
    pos += size;
  }
  return packets;
}

function truncatePackets(body: Buffer, b: { packets?: number; fraction?: number; flush?: boolean }): Buffer {
  const packets = splitPktLines(body);
  const keep =
    b.fraction !== undefined
      ? Math.floor(packets.length * b.fraction)
      : b.packets === undefined
        ? packets.length
        : b.packets < 0
          ? Math.max(0, packets.length + b.packets)
          : Math.min(b.packets, packets.length);
  return Buffer.concat([...packets.slice(0, keep), ...(b.flush === true ? [Buffer.from('0000')] : [])]);
}

/** Demultiplexes the pack out of an upload-pack response (side-band), transforms it, and puts it back. */
async function rewritePack(body: Buffer, transform: (pack: Buffer) => Buffer | Promise<Buffer>): Promise<Buffer> {
  const packets = splitPktLines(body);
  const prefix: Buffer[] = [];
  const pack: Buffer[] = [];
  let inPack = false;
  for (const p of packets) {
    const payload = p.subarray(4);
    if (!inPack) {
      prefix.push(p);
      if (/^(NAK|ACK )/.test(payload.toString('latin1', 0, 4))) inPack = true;
    } else if (payload[0] === 1) {
      pack.push(payload.subarray(1));
    }
  }
  if (!inPack) return body;
  const rewritten = await transform(Buffer.concat(pack));
  const out = [...prefix];
  for (let i = 0; i < rewritten.length; i += 65_515) {
    const chunk = rewritten.subarray(i, i + 65_515);
    out.push(Buffer.from((chunk.length + 5).toString(16).padStart(4, '0'), 'latin1'), Buffer.from([1]), chunk);
  }
  out.push(Buffer.from('0000'));
  return Buffer.concat(out);
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

export function createTestRepo(name: string, dir: string, url: string): TestRepo {
  const git = (args: string[], input?: string | Uint8Array): Promise<string> => runGit(args, { cwd: dir, ...(input === undefined ? {} : { input }) });

  async function tip(ref: string): Promise<string | undefined> {
    try {
      return (await git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`])).trim();
    } catch {
      return undefined;
    }
  }

  // Serialized: fast-import and update-ref on one repo must not interleave.
  let queue: Promise<unknown> = Promise.resolve();
  function serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = queue.then(fn, fn);
    queue = next.catch(() => undefined);
    return next;
  }

  return {
    name,
    url,
    dir,
    commit(files, opts = {}) {
      return serial(async () => {
        const branch = opts.branch ?? 'main';
        const parent = (await tip(`refs/heads/${branch}`)) ?? (await tip('refs/heads/main'));
        const stream = fastImportStream(`refs/heads/${branch}`, opts.message ?? 'test commit', parent, files);
        await git(['fast-import', '--quiet', '--force'], stream);
        const sha = await tip(`refs/heads/${branch}`);
        if (sha === undefined) throw new Error(`commit to ${branch} failed`);
        return sha;
      });
    },
    commitRawTree(entries, opts = {}) {
      return serial(async () => {
        const branch = opts.branch ?? 'main';
        const lines: string[] = [];
        for (const e of entries) {
          const blob = (await git(['hash-object', '-w', '--stdin'], e.content)).trim();
          lines.push(`100644 blob ${blob}\t${e.name}`);
        }
        // --missing skips mktree's object checks; git itself never validates entry names here.
        const tree = (await git(['mktree', '--missing'], lines.join('\n') + '\n')).trim();
        const parent = await tip(`refs/heads/${branch}`);
        const args = ['commit-tree', tree, '-m', opts.message ?? 'raw tree'];
        if (parent !== undefined) args.push('-p', parent);
        const sha = (await git(args)).trim();
        await git(['update-ref', `refs/heads/${branch}`, sha]);
        return sha;
      });
    },
    tag(tagName, ref, opts = {}) {
      return serial(async () => {
        const args = opts.annotated === true ? ['tag', '-f', '-a', '-m', `tag ${tagName}`, tagName, ref] : ['tag', '-f', tagName, ref];
        await git(args);
      });
    },
    setBranch(branch, sha) {
      return serial(async () => {
        await git(['update-ref', `refs/heads/${branch}`, sha]);
      });
    },
    async resolve(ref) {
      const sha = await tip(ref);
      if (sha === undefined) throw new Error(`unknown ref ${ref} in test repo ${name}`);
      return sha;
    },
    git,
  };
}

/** A `git fast-import` stream for one commit: the fastest way to write many files without a work tree. */
export function fastImportStream(ref: string, message: string, parent: string | undefined, files: Record<string, TreeFile>): Buffer {
  const parts: Buffer[] = [];
  const text = (s: string): void => void parts.push(Buffer.from(s, 'utf8'));
  const data = (content: Uint8Array): void => {
    text(`data ${content.byteLength}\n`);
    parts.push(Buffer.from(content.buffer, content.byteOffset, content.byteLength));
    text('\n');
  };
  const now = Math.floor(Date.now() / 1000);
  text(`commit ${ref}\n`);
  text(`committer ${identity.GIT_COMMITTER_NAME} <${identity.GIT_COMMITTER_EMAIL}> ${now} +0000\n`);
  data(Buffer.from(message, 'utf8'));
  if (parent !== undefined) text(`from ${parent}\n`);
  for (const [path, content] of Object.entries(files)) {
    const quoted = quotePath(path);
    if (content === null) text(`D ${quoted}\n`);
    else if (typeof content === 'string') {
      text(`M 100644 inline ${quoted}\n`);
      data(Buffer.from(content, 'utf8'));
    } else if (content instanceof Uint8Array) {
      text(`M 100644 inline ${quoted}\n`);
      data(content);
    } else {
      text(`M 120000 inline ${quoted}\n`);
      data(Buffer.from(content.symlink, 'utf8'));
    }
  }
  text('\n');
  return Buffer.concat(parts);
}

function quotePath(path: string): string {
  return /^[A-Za-z0-9._\-/]+$/.test(path) ? path : JSON.stringify(path);
}

/**
 * Writes one commit of `files` generated files of about `totalBytes` in all (YAML-like text, like a config
 * repo) to `repo`, for benchmarks. Content is varied enough that it packs like real config, not like zeros.
 */
export async function generateRepo(repo: TestRepo, opts: { files: number; totalBytes: number; branch?: string; message?: string }): Promise<string> {
  const perFile = Math.max(64, Math.floor(opts.totalBytes / opts.files));
  const files: Record<string, string> = {};
  let seed = 42;
  const rand = (): number => {
    seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
    return seed;
  };
  for (let i = 0; i < opts.files; i++) {
    const lines: string[] = [`apiVersion: v1`, `kind: ConfigMap`, `metadata:`, `  name: generated-${i}`, `data:`];
    let size = lines.join('\n').length;
    let k = 0;
    while (size < perFile) {
      const line = `  key${k++}: "${rand().toString(36)}${rand().toString(36)}${rand().toString(36)}"`;
      lines.push(line);
      size += line.length + 1;
    }
    files[`apps/team-${i % 50}/service-${i}/configmap.yaml`] = lines.join('\n') + '\n';
  }
  return repo.commit(files, { message: opts.message ?? `generated ${opts.files} files`, ...(opts.branch === undefined ? {} : { branch: opts.branch }) });
}

// A real Git forge for tests: Gitea, built from its Go module (the module proxy serves it like any other
// module) and cached by version under ~/.cache/syncline/gitea, run on 127.0.0.1 with sqlite in a temp dir.
// Tests get an admin with an API token, private repositories they push real commits to over HTTP,
// repository webhooks, and the commit-status API, all through the forge's own code.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, createHash } from 'node:crypto';
import { createWriteStream, existsSync, rmSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createTestRepo, runGit, type TestRepo, type TreeFile } from './git-server.ts';
import { downloadModules } from './go-tool.ts';

const run = promisify(execFile);

/** The Gitea release the tests run: its module version and go.sum hash (checked after download). */
export const GITEA_MODULE = { path: 'code.gitea.io/gitea', version: 'v1.26.0', sum: 'h1:fJP9dqLbzKrKWUVnCVTfVersZdVDuyJQLEDzCAOmKKA=' } as const;
/** Gitea's own release build tags for sqlite (cgo, mattn/go-sqlite3). */
const BUILD_TAGS = 'sqlite sqlite_unlock_notify';
const LDFLAGS = `-s -w -X main.Version=${GITEA_MODULE.version.slice(1)} -X "main.Tags=${BUILD_TAGS}"`;
/** What a non-bindata build reads at run time from its static root (the web frontend's assets are not needed for the API). */
const STATIC_DIRS = ['options', 'templates', 'public'] as const;

export type GiteaBinary = {
  /** The gitea executable. */
  readonly binary: string;
  /** Its STATIC_ROOT_PATH: the module's options, templates and public directories. */
  readonly staticRoot: string;
};

export type GiteaOptions = {
  /** Directory for the build cache; default `$XDG_CACHE_HOME/syncline` or `~/.cache/syncline`. */
  readonly cacheDir?: string;
  /** Called with one line of progress at a time (the first build takes minutes). */
  readonly onProgress?: (line: string) => void;
  /** How long to wait for readiness; default 180 s. */
  readonly startTimeoutMs?: number;
};

export type GiteaCommitState = 'pending' | 'success' | 'error' | 'failure' | 'warning';

/** A commit status as Gitea's API returns it (the fields tests look at). */
export type GiteaCommitStatus = {
  readonly id: number;
  readonly status: GiteaCommitState;
  readonly context: string;
  readonly description: string;
  readonly target_url: string;
  readonly creator?: { readonly login: string };
};

export type GiteaHook = {
  readonly id: number;
  readonly type: string;
  readonly active: boolean;
  readonly events: readonly string[];
  readonly config: Readonly<Record<string, string>>;
};

export interface GiteaRepo {
  readonly owner: string;
  readonly name: string;
  /** The HTTP clone URL Gitea reports (and puts in webhook payloads), e.g. http://127.0.0.1:3001/syncline/configs.git */
  readonly url: string;
  /** Commits on top of `branch` (default `main`) and pushes it to Gitea over HTTP with the admin's token. */
  commit(files: Record<string, TreeFile>, opts?: { message?: string; branch?: string }): Promise<string>;
  /** The commit a branch or tag points at, as Gitea sees it. */
  resolve(ref: string): Promise<string>;
  /** Adds a repository webhook of Gitea's own type (X-Gitea-Signature: hex HMAC-SHA256 of the body with `secret`). */
  addWebhook(options: { url: string; secret: string; events?: readonly string[] }): Promise<GiteaHook>;
  /** Gitea's *Test Delivery*: the hook is sent a push of the default branch's tip (Gitea has no ping event). */
  testWebhook(hookId: number): Promise<void>;
  /** POST /repos/{owner}/{repo}/statuses/{sha} with the admin's token. */
  createStatus(sha: string, status: { state: GiteaCommitState; context: string; description?: string; targetUrl?: string }): Promise<GiteaCommitStatus>;
  /** The commit's statuses (at most 50), newest first (GET /repos/{owner}/{repo}/commits/{sha}/statuses). */
  statuses(sha: string): Promise<GiteaCommitStatus[]>;
}

export interface Gitea extends AsyncDisposable {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:3001 */
  readonly url: string;
  /** The version Gitea reports (GET /api/v1/version). */
  readonly version: string;
  /** The site admin the repositories belong to, with its password and an API token of scope `all`. */
  readonly admin: { readonly username: string; readonly password: string; readonly token: string };
  readonly dataDir: string;
  readonly logPath: string;
  /** Creates a repository of the admin (private unless told otherwise), empty, default branch `main`. */
  createRepo(name: string, opts?: { private?: boolean }): Promise<GiteaRepo>;
  /**
   * An API call, as the admin unless `authorization` (the whole header value, e.g. `Basic …`) says otherwise:
   * `path` below /api/v1; throws on a non-2xx answer with Gitea's message.
   */
  api<T>(method: string, path: string, body?: unknown, opts?: { authorization?: string }): Promise<T>;
  /** Gitea's log so far. */
  log(): Promise<string>;
  stop(): Promise<void>;
}

function defaultCacheDir(): string {
  // Test-only helper: reading the environment here is the test harness's own composition root.
  const xdg = process.env['XDG_CACHE_HOME'];
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), 'syncline');
}

/** The cache key: the module version and hash and how it is built, so a change to any of them rebuilds. */
function buildKey(): string {
  return createHash('sha256')
    .update(JSON.stringify([GITEA_MODULE, BUILD_TAGS, LDFLAGS, STATIC_DIRS]))
    .digest('hex')
    .slice(0, 16);
}

/** The environment for the go command: the machine's own Go, modules resolved from go.mod as written. */
function goEnv(): NodeJS.ProcessEnv {
  return { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod -buildvcs=false', CGO_ENABLED: '1' };
}

/** Fetches the module's source into the module cache (from the module proxy) and checks its hash. */
async function downloadModule(): Promise<string> {
  const { stdout } = await run('go', ['mod', 'download', '-json', `${GITEA_MODULE.path}@${GITEA_MODULE.version}`], { env: goEnv(), maxBuffer: 1 << 20 });
  const info = JSON.parse(stdout) as { Dir?: string; Sum?: string; Error?: string };
  if (info.Error !== undefined) throw new Error(`go mod download ${GITEA_MODULE.path}@${GITEA_MODULE.version}: ${info.Error}`);
  if (info.Sum !== GITEA_MODULE.sum) throw new Error(`${GITEA_MODULE.path}@${GITEA_MODULE.version} has hash ${String(info.Sum)}, expected ${GITEA_MODULE.sum}`);
  if (info.Dir === undefined) throw new Error(`go mod download named no directory for ${GITEA_MODULE.path}`);
  return info.Dir;
}

/** `go build` in `dir`, at low CPU priority (the machine is shared with the tests running beside it). */
function goBuild(dir: string, output: string, onProgress: ((line: string) => void) | undefined): Promise<void> {
  const args = ['build', '-tags', BUILD_TAGS, `-ldflags=${LDFLAGS}`, '-o', output, '.'];
  const nice = spawnSync('nice', ['true']).status === 0;
  const started = Date.now();
  return new Promise<void>((resolve, reject) => {
    const child = spawn(nice ? 'nice' : 'go', nice ? ['-n', '10', 'go', ...args] : args, { cwd: dir, env: goEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const collect = (chunk: Buffer): void => {
      out = (out + chunk.toString()).slice(-8000);
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '' && !line.startsWith('go: downloading')) onProgress?.(line.trim());
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const tick = setInterval(() => onProgress?.(`still building Gitea… ${Math.round((Date.now() - started) / 1000)}s`), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(tick);
      if (code === 0) resolve();
      else reject(new Error(`go build of ${GITEA_MODULE.path}@${GITEA_MODULE.version} failed (exit ${code}):\n${out.slice(-4000)}`));
    });
  });
}

/**
 * Downloads Gitea's module and what its build imports into the module cache: network, not CPU, and safe beside
 * other downloads into the same module cache (the go command locks it), so it runs outside the build lock and
 * overlaps other builds. Returns the module's directory in the module cache.
 */
async function downloadGitea(options: Pick<GiteaOptions, 'onProgress'> = {}): Promise<string> {
  const started = Date.now();
  const moduleDir = await downloadModule();
  options.onProgress?.(`downloaded ${GITEA_MODULE.path}@${GITEA_MODULE.version} in ${Math.round((Date.now() - started) / 1000)}s`);
  await downloadModules(
    'Gitea',
    ['go', 'list', '-deps', '-tags', BUILD_TAGS, '.'],
    moduleDir,
    { ...goEnv(), GOFLAGS: '-mod=readonly -buildvcs=false' },
    options,
  );
  return moduleDir;
}

/**
 * Returns the Gitea binary and its static root, building them when the cache has none for this version.
 * A cold build downloads the module and its dependencies through the Go module proxy and compiles with
 * cgo (sqlite). `go install` refuses a module whose go.mod has replace directives, as Gitea's does, so
 * the module's source is copied out of the module cache and built as the main module.
 */
export async function ensureGiteaBinary(
  options: Pick<GiteaOptions, 'cacheDir' | 'onProgress'> & { readonly downloadOnly?: boolean } = {},
): Promise<GiteaBinary> {
  const root = join(options.cacheDir ?? defaultCacheDir(), 'gitea');
  const dir = join(root, buildKey());
  const result = { binary: join(dir, 'gitea'), staticRoot: join(dir, 'static') };
  if (existsSync(result.binary) && existsSync(join(result.staticRoot, 'templates'))) return result;

  const go = spawnSync('go', ['version'], { encoding: 'utf8', env: goEnv() });
  if (go.error !== undefined || go.status !== 0) {
    throw new Error(
      `Gitea for the forge tests is built from its Go module and needs Go (${GITEA_MODULE.path}@${GITEA_MODULE.version} wants 1.26.2 or newer); 'go version' failed`,
    );
  }
  const moduleDir = await downloadGitea(options);
  // Only the download (the integration setup warms the module cache this way while the control plane compiles).
  if (options.downloadOnly === true) return result;
  await mkdir(root, { recursive: true });
  // Concurrent runs (two vitest processes, two worktrees) build once: one holds the lock, the others wait for
  // its result. The build still happens aside and is renamed into place, so a crash leaves nothing half-built.
  await using _lock = await buildLock(`${dir}.lock`, options.onProgress);
  if (existsSync(result.binary) && existsSync(join(result.staticRoot, 'templates'))) return result;
  const aside = await mkdtemp(join(root, `${buildKey()}.build-`));
  try {
    options.onProgress?.(`building Gitea ${GITEA_MODULE.version} (first run on this machine; several minutes) with ${go.stdout.trim()}`);
    const started = Date.now();
    const src = join(aside, 'src');
    await cp(moduleDir, src, { recursive: true });
    // The module cache is read-only; the copy must be removable.
    await run('chmod', ['-R', 'u+w', src]);
    await goBuild(src, join(aside, 'gitea'), options.onProgress);
    await mkdir(join(aside, 'static'));
    for (const name of STATIC_DIRS) await rename(join(src, name), join(aside, 'static', name));
    await rm(src, { recursive: true, force: true });
    await chmod(aside, 0o755);
    try {
      await rename(aside, dir);
    } catch (error) {
      if (!existsSync(result.binary)) throw error;
    }
    options.onProgress?.(`built Gitea in ${Math.round((Date.now() - started) / 1000)}s`);
    return result;
  } finally {
    await rm(aside, { recursive: true, force: true });
  }
}

/** How often a waiting process looks whether the build lock was released. */
const LOCK_POLL_MS = 2_000;

/**
 * A lock between processes: a directory only one `mkdir` can create, holding the owner's pid. A lock whose
 * process is gone (killed mid-build) is taken over. Released on dispose.
 */
async function buildLock(path: string, onProgress: ((line: string) => void) | undefined): Promise<AsyncDisposable> {
  let told = false;
  for (;;) {
    try {
      await mkdir(path);
      await writeFile(join(path, 'pid'), String(process.pid));
      return { [Symbol.asyncDispose]: () => rm(path, { recursive: true, force: true }) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = Number(await readFile(join(path, 'pid'), 'utf8').catch(() => ''));
    if (Number.isInteger(owner) && owner > 0 && !processAlive(owner)) {
      await rm(path, { recursive: true, force: true });
      continue;
    }
    if (!told) onProgress?.(`waiting for the Gitea build of process ${owner > 0 ? owner : '(starting)'}`);
    told = true;
    await sleep(LOCK_POLL_MS);
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** app.ini for a private, offline, single-process Gitea: sqlite, no SSH, no mail, webhooks to loopback allowed. */
function appIni(options: { dataDir: string; staticRoot: string; port: number; runUser: string }): string {
  const { dataDir, port } = options;
  const secret = (): string => randomBytes(32).toString('hex');
  return `APP_NAME = Syncline test forge
RUN_USER = ${options.runUser}
RUN_MODE = prod
WORK_PATH = ${dataDir}

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = ${port}
ROOT_URL = http://127.0.0.1:${port}/
DOMAIN = 127.0.0.1
APP_DATA_PATH = ${join(dataDir, 'data')}
STATIC_ROOT_PATH = ${options.staticRoot}
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false
OFFLINE_MODE = true

[database]
DB_TYPE = sqlite3
PATH = ${join(dataDir, 'gitea.db')}
SQLITE_JOURNAL_MODE = WAL
SQLITE_TIMEOUT = 30000

[repository]
ROOT = ${join(dataDir, 'repositories')}
DEFAULT_BRANCH = main
DEFAULT_PRIVATE = private

[security]
INSTALL_LOCK = true
SECRET_KEY = ${secret()}
INTERNAL_TOKEN = ${secret()}
PASSWORD_HASH_ALGO = pbkdf2_hi
MIN_PASSWORD_LENGTH = 8
PASSWORD_COMPLEXITY = off

[oauth2]
ENABLED = false

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = true
DEFAULT_KEEP_EMAIL_PRIVATE = true

[webhook]
; the receivers under test listen on 127.0.0.1
ALLOWED_HOST_LIST = loopback
DELIVER_TIMEOUT = 30

[mailer]
ENABLED = false

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[actions]
ENABLED = false

[packages]
ENABLED = false

[git]
HOME_PATH = ${join(dataDir, 'git-home')}

[log]
MODE = console
LEVEL = Info
ROOT_PATH = ${join(dataDir, 'log')}
`;
}

/** Gitea refuses to run as root unless told; tests on CI run as root, and nothing here is exposed. */
function giteaEnv(dataDir: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: dataDir,
    GITEA_WORK_DIR: dataDir,
    LANG: 'C',
    ...(process.getuid?.() === 0 ? { GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT: 'true' } : {}),
  };
}

async function giteaCli(binary: string, dataDir: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await run(binary, ['--config', join(dataDir, 'app.ini'), '--work-path', dataDir, ...args], {
      env: giteaEnv(dataDir),
      timeout: 120_000,
      maxBuffer: 4 << 20,
    });
    return stdout;
  } catch (error) {
    const e = error as { stderr?: string; stdout?: string; message: string };
    throw new Error(`gitea ${args.slice(0, 3).join(' ')} failed: ${(e.stderr ?? '').slice(-2000) || e.message}`);
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts the web server and waits until /api/healthz answers; rejects with the log's tail when it exits first. */
async function startWeb(options: {
  binary: string;
  dataDir: string;
  url: string;
  logPath: string;
  timeoutMs: number;
}): Promise<{ child: ChildProcess; exited: Promise<number | null> }> {
  const log = createWriteStream(options.logPath, { flags: 'a' });
  const child = spawn(options.binary, ['web', '--config', join(options.dataDir, 'app.ini'), '--work-path', options.dataDir], {
    env: giteaEnv(options.dataDir),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    if (gone) {
      const tail = (await readFile(options.logPath, 'utf8').catch(() => '')).split('\n').slice(-30).join('\n');
      throw new Error(`gitea web exited (code ${child.exitCode}) before it was ready; last log lines:\n${tail}`);
    }
    try {
      const response = await fetch(`${options.url}/api/healthz`, { signal: AbortSignal.timeout(5_000) });
      if (response.ok) return { child, exited };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`gitea web did not become ready within ${options.timeoutMs / 1000}s; log: ${options.logPath}`);
    }
    await sleep(250);
  }
}

/**
 * Starts one Gitea on a free loopback port with its own data directory (removed on stop): install-locked,
 * registration off, sign-in required to see anything, and a site admin with an API token.
 */
export async function startGitea(options: GiteaOptions = {}): Promise<Gitea> {
  const built = await ensureGiteaBinary(options);
  const dataDir = await mkdtemp(join(tmpdir(), 'syncline-gitea-'));
  const logPath = join(dataDir, 'gitea.log');
  const admin = { username: 'syncline-admin', password: `pw-${randomBytes(12).toString('hex')}`, token: '' };
  let web: { child: ChildProcess; exited: Promise<number | null> } | undefined;
  const cleanup = (): void => {
    if (web !== undefined && web.child.exitCode === null) web.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    // The port is picked before Gitea binds it (ROOT_URL, which webhook payloads carry, must name it): a
    // race with another process is possible, so a start that fails is retried on another port.
    let url = '';
    for (let attempt = 1; web === undefined; attempt++) {
      const port = await freePort();
      url = `http://127.0.0.1:${port}`;
      await writeFile(join(dataDir, 'app.ini'), appIni({ dataDir, staticRoot: built.staticRoot, port, runUser: userInfo().username }));
      await chmod(join(dataDir, 'app.ini'), 0o600);
      if (attempt === 1) {
        await giteaCli(built.binary, dataDir, ['migrate']);
        const created = await giteaCli(built.binary, dataDir, [
          'admin',
          'user',
          'create',
          '--username',
          admin.username,
          '--password',
          admin.password,
          '--email',
          'admin@syncline.invalid',
          '--admin',
          '--must-change-password=false',
          '--access-token',
          '--access-token-name',
          'syncline-tests',
          '--access-token-scopes',
          'all',
        ]);
        const token = /Access token was successfully created\.\.\. ([0-9a-f]{40})/.exec(created)?.[1];
        if (token === undefined) throw new Error('gitea admin user create printed no access token');
        admin.token = token;
      }
      try {
        web = await startWeb({ binary: built.binary, dataDir, url, logPath, timeoutMs: options.startTimeoutMs ?? 180_000 });
      } catch (error) {
        if (attempt >= 3 || !/address already in use/.test((error as Error).message)) throw error;
      }
    }
    process.once('exit', cleanup);
    return await connect({ url, admin, dataDir, logPath, web });
  } catch (error) {
    cleanup();
    throw error;
  }
}

async function connect(state: {
  url: string;
  admin: Gitea['admin'];
  dataDir: string;
  logPath: string;
  web: { child: ChildProcess; exited: Promise<number | null> };
}): Promise<Gitea> {
  const { url, admin, dataDir, logPath, web } = state;
  const api = async <T>(method: string, path: string, body?: unknown, opts: { authorization?: string } = {}): Promise<T> => {
    const response = await fetch(`${url}/api/v1${path}`, {
      method,
      headers: {
        Authorization: opts.authorization ?? `token ${admin.token}`,
        Accept: 'application/json',
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`Gitea ${method} ${path}: ${response.status} ${text.slice(0, 500)}`);
    return (text === '' ? undefined : JSON.parse(text)) as T;
  };
  const { version } = await api<{ version: string }>('GET', '/version');
  const workRoot = join(dataDir, 'work');
  await mkdir(workRoot);
  // git authenticates pushes with the token as a Basic password, sent as a header so it is in no URL.
  const pushAuth = `http.extraHeader=Authorization: Basic ${Buffer.from(`${admin.username}:${admin.token}`).toString('base64')}`;

  const createRepo = async (name: string, opts: { private?: boolean } = {}): Promise<GiteaRepo> => {
    const created = await api<{ clone_url: string; owner: { login: string }; name: string }>('POST', '/user/repos', {
      name,
      private: opts.private ?? true,
      auto_init: false,
      default_branch: 'main',
    });
    const owner = created.owner.login;
    const repoPath = `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(created.name)}`;
    // Commits are made in a local bare repository (the test Git server's writer) and pushed from there.
    const localDir = join(workRoot, `${created.name}.git`);
    await runGit(['init', '--quiet', '--bare', '--initial-branch=main', localDir]);
    const local: TestRepo = createTestRepo(created.name, localDir, localDir);
    const git = (args: string[]): Promise<string> => runGit(['-c', pushAuth, ...args], { cwd: localDir });
    return {
      owner,
      name: created.name,
      url: created.clone_url,
      async commit(files, commitOpts = {}) {
        const branch = commitOpts.branch ?? 'main';
        // Whatever Gitea holds wins over the local copy (the forge may have moved a branch itself).
        await git(['fetch', '--quiet', created.clone_url, '+refs/heads/*:refs/heads/*']);
        const sha = await local.commit(files, commitOpts);
        await git(['push', '--quiet', created.clone_url, `${sha}:refs/heads/${branch}`]);
        return sha;
      },
      async resolve(ref) {
        const out = await git(['ls-remote', created.clone_url, ref]);
        const sha = out.split('\t')[0]?.trim();
        if (sha === undefined || sha === '') throw new Error(`${owner}/${created.name} has no ref ${ref}`);
        return sha;
      },
      addWebhook: (hook) =>
        api<GiteaHook>('POST', `${repoPath}/hooks`, {
          type: 'gitea',
          active: true,
          events: hook.events ?? ['push'],
          config: { url: hook.url, content_type: 'json', secret: hook.secret },
        }),
      testWebhook: (hookId) => api<undefined>('POST', `${repoPath}/hooks/${hookId}/tests`),
      createStatus: (sha, status) =>
        api<GiteaCommitStatus>('POST', `${repoPath}/statuses/${sha}`, {
          state: status.state,
          context: status.context,
          ...(status.description === undefined ? {} : { description: status.description }),
          ...(status.targetUrl === undefined ? {} : { target_url: status.targetUrl }),
        }),
      // Gitea orders by creation time in whole seconds; ids increase with every status, so they break ties.
      statuses: async (sha) => (await api<GiteaCommitStatus[]>('GET', `${repoPath}/commits/${sha}/statuses?limit=50`)).sort((a, b) => b.id - a.id),
    };
  };

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (web.child.exitCode === null) {
        web.child.kill('SIGTERM');
        const killer = setTimeout(() => web.child.kill('SIGKILL'), 30_000);
        await web.exited;
        clearTimeout(killer);
      }
      await rm(dataDir, { recursive: true, force: true });
    })();
    return stopping;
  };
  return {
    url,
    version,
    admin,
    dataDir,
    logPath,
    createRepo,
    api,
    log: () => readFile(logPath, 'utf8'),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

// Where tests get Helm charts from, as users do: an OCI registry (CNCF distribution, built from its Go module
// with the filesystem storage driver only, cached by content hash, on loopback) that the real `helm push` writes
// to, open over plain HTTP or private (HTTPS with a test CA, htpasswd basic auth or the Docker token flow), and a
// Helm repository (static files made by the real `helm package` and `helm repo index`) served over HTTP or
// HTTPS, behind basic auth when asked.
import { spawn, execFile } from 'node:child_process';
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import { createServer as createNetServer } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, normalize } from 'node:path';
import { promisify } from 'node:util';
import { ensureLocalGoBuild, moduleKey, type GoToolOptions } from './go-tool.ts';
import { ensureHelm } from './engine-tools.ts';

const run = promisify(execFile);

/** CNCF distribution, the reference OCI registry (docker's registry:3): test/support/registry requires this version. */
export const REGISTRY_VERSION = 'v3.1.2';

const registryModule = join(import.meta.dirname, '..', 'registry');

/**
 * The registry binary, built from test/support/registry (upstream's registry package with the filesystem driver
 * only: `go install .../cmd/registry` also links the Azure, GCS and S3 drivers, 612 s cold here against 232 s)
 * and cached by the hash of its go.mod, go.sum and main.go. One build at a time per machine.
 */
export function ensureRegistry(options: GoToolOptions = {}): Promise<string> {
  return ensureLocalGoBuild(
    {
      name: 'the registry',
      moduleDir: registryModule,
      cachePath: ['tools', 'registry', `${REGISTRY_VERSION}-${moduleKey(registryModule, ['go.mod', 'go.sum', 'main.go'], 12)}`],
      binaryName: 'registry',
      command: (out) => ['go', 'build', '-trimpath', '-ldflags=-s -w', '-o', out, '.'],
      env: { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
      what: `the registry (distribution ${REGISTRY_VERSION}) from its Go module`,
    },
    options,
  );
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface OciRegistry extends AsyncDisposable {
  /** host:port on 127.0.0.1 (plain HTTP, or HTTPS when started with `tls`). */
  readonly host: string;
  /** `helm push` of a packaged chart (.tgz) to oci://host/<repository> (after `helm registry login` when auth is on). */
  push(archive: string, repository: string): Promise<void>;
  /** The registry's own log (stderr), its last 64 KiB: what a test checks for leaked credentials. */
  readonly log: () => string;
  /** What the token service was asked (empty unless started with tokenAuth). */
  readonly tokenRequests: readonly TokenRequest[];
  close(): Promise<void>;
}

export interface OciRegistryOptions extends GoToolOptions {
  /** Users the registry's htpasswd access controller admits (bcrypt, hashed by the registry binary itself). */
  readonly auth?: { readonly username: string; readonly password: string };
  /** Serve HTTPS with this key and certificate (its CA is what helm and the sync trust). */
  readonly tls?: { readonly key: string; readonly cert: string; readonly ca: string };
  /**
   * With `auth` (and `tls`): the Docker token flow instead of htpasswd. The registry's 401 names a token service
   * (distribution's `auth.token`, trusting an ES256 key by its JWKS); the service, in this process, takes the
   * user's basic credentials and issues a signed JWT granting the scopes asked for.
   */
  readonly tokenAuth?: boolean;
}

/** A token request the token service answered: who asked (never the password), for what, and whether granted. */
export interface TokenRequest {
  readonly username: string;
  readonly scopes: readonly string[];
  readonly userAgent: string;
  readonly granted: boolean;
}

/** The registry's configuration: filesystem storage under `dir`, htpasswd auth and TLS when asked. */
function registryConfig(dir: string, port: number, options: OciRegistryOptions, token: { realm: string } | undefined): string {
  const lines = [
    'version: 0.1',
    'log:',
    '  level: info',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${join(dir, 'data')}`,
    '  delete:',
    '    enabled: true',
    'http:',
    `  addr: 127.0.0.1:${port}`,
  ];
  if (options.tls !== undefined) lines.push('  tls:', `    certificate: ${join(dir, 'tls.crt')}`, `    key: ${join(dir, 'tls.key')}`);
  if (token !== undefined)
    lines.push(
      'auth:',
      '  token:',
      `    realm: ${token.realm}`,
      `    service: ${TOKEN_SERVICE}`,
      `    issuer: ${TOKEN_ISSUER}`,
      `    jwks: ${join(dir, 'jwks.json')}`,
      '    signingalgorithms:',
      '      - ES256',
    );
  else if (options.auth !== undefined) lines.push('auth:', '  htpasswd:', '    realm: syncline-test-registry', `    path: ${join(dir, 'htpasswd')}`);
  return `${lines.join('\n')}\n`;
}

const TOKEN_SERVICE = 'syncline-test-registry';
const TOKEN_ISSUER = 'syncline-test-token-issuer';

/**
 * The token service of the Docker token flow: GET /token?service=…&scope=repository:name:pull,push with basic
 * credentials answers {token, access_token}, an ES256 JWT (kid in the header, the key in the registry's JWKS)
 * granting the scopes asked for; wrong credentials get 401. HTTPS with the registry's certificate.
 */
async function startTokenService(
  dir: string,
  auth: { username: string; password: string },
  tls: { key: string; cert: string },
): Promise<{ realm: string; requests: TokenRequest[]; close: () => Promise<void> }> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const kid = 'syncline-test-key';
  await writeFile(join(dir, 'jwks.json'), JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' }] }));
  const requests: TokenRequest[] = [];
  const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  const server = createHttpsServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://x');
    const header = req.headers.authorization ?? '';
    const decoded = header.startsWith('Basic ') ? Buffer.from(header.slice(6), 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    const username = colon === -1 ? '' : decoded.slice(0, colon);
    const granted = url.pathname === '/token' && colon !== -1 && username === auth.username && decoded.slice(colon + 1) === auth.password;
    const scopes = url.searchParams
      .getAll('scope')
      .flatMap((scope) => scope.split(' '))
      .filter((scope) => scope !== '');
    requests.push({ username, scopes, userAgent: req.headers['user-agent'] ?? '', granted });
    if (!granted)
      return void res.writeHead(401, { 'www-authenticate': 'Basic realm="token"', 'content-type': 'application/json' }).end('{"details":"unauthorized"}');
    const now = Math.floor(Date.now() / 1000);
    const access = scopes.flatMap((scope) => {
      const match = /^([a-z]+):(.+):([a-z*,]+)$/.exec(scope);
      return match === null ? [] : [{ type: match[1], name: match[2], actions: (match[3] ?? '').split(',') }];
    });
    const claims = {
      iss: TOKEN_ISSUER,
      sub: username,
      aud: url.searchParams.get('service') ?? '',
      exp: now + 300,
      nbf: now - 10,
      iat: now,
      jti: randomUUID(),
      access,
    };
    const signingInput = `${b64({ alg: 'ES256', typ: 'JWT', kid })}.${b64(claims)}`;
    const signature = sign('sha256', Buffer.from(signingInput), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
    const token = `${signingInput}.${signature}`;
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ token, access_token: token, expires_in: 300, issued_at: new Date().toISOString() }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  return {
    realm: `https://127.0.0.1:${address.port}/token`,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * A distribution registry on loopback with its storage in a temporary directory: plain HTTP without auth, or,
 * as private registries run, HTTPS with a private CA and basic auth checked against a bcrypt htpasswd file
 * (distribution's `auth.htpasswd`; its docs require TLS with it).
 */
export async function startOciRegistry(options: OciRegistryOptions = {}): Promise<OciRegistry> {
  const [binary, helm] = await Promise.all([ensureRegistry(options), ensureHelm(options)]);
  const dir = await mkdtemp(join(tmpdir(), 'syncline-registry-'));
  const port = await freePort();
  const env = { PATH: process.env['PATH'] ?? '', HOME: dir, OTEL_TRACES_EXPORTER: 'none' };
  const token =
    options.tokenAuth === true && options.auth !== undefined && options.tls !== undefined ? await startTokenService(dir, options.auth, options.tls) : undefined;
  if (options.tokenAuth === true && token === undefined) throw new Error('tokenAuth needs auth and tls');
  if (options.auth !== undefined && token === undefined) {
    const hashed = await new Promise<string>((resolve, reject) => {
      const child = execFile(binary, ['htpasswd', options.auth?.username ?? ''], { env }, (error, stdout, stderr) =>
        error === null ? resolve(stdout) : reject(new Error(`the registry's htpasswd: ${stderr}`)),
      );
      child.stdin?.end(options.auth?.password);
    });
    await writeFile(join(dir, 'htpasswd'), hashed);
  }
  if (options.tls !== undefined) {
    await writeFile(join(dir, 'tls.crt'), options.tls.cert);
    await writeFile(join(dir, 'tls.key'), options.tls.key);
    await writeFile(join(dir, 'ca.crt'), options.tls.ca);
  }
  await writeFile(join(dir, 'config.yml'), registryConfig(dir, port, options, token));
  const child = spawn(binary, ['serve', join(dir, 'config.yml')], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-65536)));
  const host = `127.0.0.1:${port}`;
  const origin = `${options.tls === undefined ? 'http' : 'https'}://${host}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the registry exited (${child.exitCode}): ${stderr}`);
    // Up is any answer from /v2/: 200 open, 401 with auth on.
    const ready = await probe(`${origin}/v2/`, options.tls?.ca);
    if (ready) break;
    if (Date.now() > deadline) throw new Error(`the registry did not answer within 60s: ${stderr}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const close = async (): Promise<void> => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    await token?.close();
    await rm(dir, { recursive: true, force: true });
  };
  const helmEnv = {
    PATH: process.env['PATH'] ?? '',
    HOME: dir,
    HELM_REGISTRY_CONFIG: join(dir, 'helm-registry.json'),
    HELM_CACHE_HOME: join(dir, 'helm-cache'),
    HELM_CONFIG_HOME: join(dir, 'helm-config'),
  };
  const transport = options.tls === undefined ? ['--plain-http'] : ['--ca-file', join(dir, 'ca.crt')];
  let loggedIn = false;
  return {
    host,
    log: () => stderr,
    tokenRequests: token?.requests ?? [],
    push: async (archive, repository) => {
      if (options.auth !== undefined && !loggedIn) {
        await new Promise<void>((resolve, reject) => {
          const login = execFile(
            helm,
            ['registry', 'login', host, '--username', options.auth?.username ?? '', '--password-stdin', ...transport],
            { env: helmEnv },
            (error, _stdout, stderr) => (error === null ? resolve() : reject(new Error(`helm registry login: ${stderr}`))),
          );
          login.stdin?.end(options.auth?.password);
        });
        loggedIn = true;
      }
      await run(helm, ['push', archive, `oci://${host}/${repository}`, ...transport], { env: helmEnv });
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** True when the URL answers at all (any status), trusting `ca` besides the system roots. */
function probe(url: string, ca: string | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const request = (url.startsWith('https:') ? httpsRequest : httpRequest)(
      url,
      { method: 'GET', ...(ca === undefined ? {} : { ca }), timeout: 5_000 },
      (response) => {
        response.resume();
        resolve(true);
      },
    );
    request.on('error', () => resolve(false));
    request.on('timeout', () => request.destroy());
    request.end();
  });
}

/** `helm package` of a chart directory into `into`: the archive's path. */
export async function helmPackage(chartDir: string, into: string, options: GoToolOptions = {}): Promise<string> {
  const helm = await ensureHelm(options);
  const { stdout } = await run(helm, ['package', chartDir, '--destination', into], { env: { PATH: process.env['PATH'] ?? '', HOME: into } });
  const match = /saved it to: (.+\.tgz)/.exec(stdout);
  if (match?.[1] === undefined) throw new Error(`helm package said: ${stdout}`);
  return match[1].trim();
}

export interface HelmRepository extends AsyncDisposable {
  /** The repository's URL (http(s)://127.0.0.1:port/charts). */
  readonly url: string;
  /** The directory served: put archives here and call index() again. */
  readonly dir: string;
  /** `helm repo index` of the directory (absolute chart URLs under url). */
  index(): Promise<void>;
  /** Requests seen, as method and path (the Authorization header never kept). */
  readonly requests: string[];
  close(): Promise<void>;
}

/**
 * A Helm chart repository as static files under /charts, made by the real `helm repo index`; basic auth when
 * `auth` is given, HTTPS when `tls` is. `down` makes it answer 503 to everything (an outage).
 */
export async function startHelmRepository(
  options: GoToolOptions & { auth?: { username: string; password: string }; tls?: { key: string; cert: string } } = {},
): Promise<HelmRepository & { down: boolean }> {
  const helm = await ensureHelm(options);
  const dir = await mkdtemp(join(tmpdir(), 'syncline-helm-repo-'));
  const requests: string[] = [];
  const state = { down: false };
  const expected = options.auth === undefined ? undefined : `Basic ${Buffer.from(`${options.auth.username}:${options.auth.password}`).toString('base64')}`;
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    requests.push(`${req.method ?? 'GET'} ${path}`);
    if (state.down) return void res.writeHead(503).end('down');
    if (expected !== undefined && req.headers.authorization !== expected) return void res.writeHead(401, { 'www-authenticate': 'Basic realm="charts"' }).end();
    const relative = normalize(decodeURIComponent(path)).replace(/^\/charts\//, '');
    if (!path.startsWith('/charts/') || relative.includes('..') || relative.includes('/')) return void res.writeHead(404).end();
    readFile(join(dir, relative)).then(
      (body) => res.writeHead(200, { 'content-type': relative.endsWith('.yaml') ? 'application/x-yaml' : 'application/gzip' }).end(body),
      () => res.writeHead(404).end(),
    );
  };
  const server: Server = options.tls === undefined ? createHttpServer(handler) : createHttpsServer({ key: options.tls.key, cert: options.tls.cert }, handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  const url = `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${address.port}/charts`;
  const close = async (): Promise<void> => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  };
  const repo = {
    url,
    dir,
    requests,
    index: async () => {
      await run(helm, ['repo', 'index', dir, '--url', url], { env: { PATH: process.env['PATH'] ?? '', HOME: dir } });
    },
    close,
    [Symbol.asyncDispose]: close,
    get down() {
      return state.down;
    },
    set down(value: boolean) {
      state.down = value;
    },
  };
  return repo;
}

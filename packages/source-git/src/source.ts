// resolveRevision, fetchSnapshot, readPath: the Git edge of Syncline. All I/O dependencies (transport, clock,
// cache dir, limits) are injected through `createGitSource`; nothing here reads process.env.
import { X509Certificate, createHash } from 'node:crypto';
import { mkdir, readdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { SnapshotCache, directoryBytes, snapshotFormat } from './cache.ts';
import { GitSourceError, GitSourceErrorCode, redact } from './errors.ts';
import type { HttpProxy, HttpTransport, RateLimitEvent, RetryPolicy, TransportLimits } from './http.ts';
import { HostGates, HttpStatusError, ProxyRefusedError, createHttpSession, defaultRetryPolicy, nodeHttpTransport } from './http.ts';
import { garbageCollector } from './gc.ts';
import { indexFetchedPack } from './index-pack-worker.ts';
import { ObjectType, PackError, PackReader, commitTree, ownBuffer, parseCommit, parseTree } from './pack.ts';
import type { CommitMetadata, TreeEntry } from './pack.ts';
import { fetchPack, httpUploadPack, listRefs as listAdvertisedRefs } from './upload-pack.ts';
import type { AdvertisedRef, Advertisement, UploadPackTransport } from './upload-pack.ts';
import { isSafeEntryName, parseRequestPath, resolveSymlinkTarget } from './paths.ts';
import { SharedListings } from './ref-listings.ts';
import { parseRepoUrl } from './repo-url.ts';
import type { RepoUrl } from './repo-url.ts';
import type { EnvironmentProxy, GitProxy } from './proxy-env.ts';

export type { GitProxy };
import { sshSecrets, sshUploadPack } from './ssh.ts';
import type { SshCredentials } from './ssh.ts';

/** Credentials: https basic or bearer, or an SSH key with the known_hosts that vouch for the server. */
export type GitAuth = { username: string; password: string } | { bearerToken: string } | SshAuth;

export interface SshAuth {
  /** The private key (OpenSSH or PEM). */
  identity: string;
  /** known_hosts lines for the server; its host key must be listed (no trust on first use). */
  knownHosts: string;
  /** The key's passphrase, if it is encrypted. */
  passphrase?: string | undefined;
  /** Where the key came from, for messages (e.g. `Secret team-a/git-auth`). */
  from?: string | undefined;
}

/**
 * How to reach an https repository, besides credentials: a private CA to trust (the Git Secret's `ca.crt`)
 * and a forward proxy (HTTP CONNECT). SSH repositories use neither (known_hosts is their trust).
 */
export interface GitConnection {
  /** PEM certificates trusted for the repository's server besides the system's roots. */
  caCert?: string | undefined;
  proxy?: GitProxy | undefined;
}

export interface GitSourceLimits {
  /** Bytes the server may send for one resolve or fetch (all responses together). */
  maxResponseBytes: number;
  /** Deadline of one resolve or fetch. */
  timeoutMs: number;
  /** A server silent for this long fails the operation. */
  idleTimeoutMs: number;
  /** Files one readPath may return. */
  maxFiles: number;
  /** Size of one file readPath may return. */
  maxFileBytes: number;
  /** Bytes one readPath may return in all. */
  maxTotalBytes: number;
}

export const defaultLimits: Readonly<GitSourceLimits> = Object.freeze({
  maxResponseBytes: 512 * 1024 * 1024,
  timeoutMs: 5 * 60_000,
  idleTimeoutMs: 60_000,
  maxFiles: 20_000,
  maxFileBytes: 16 * 1024 * 1024,
  maxTotalBytes: 256 * 1024 * 1024,
});

export interface Clock {
  now(): number;
}

export interface GitSourceOptions {
  /** Where snapshots live; survives restarts. One process per directory. */
  cacheDir: string;
  /** Bound of the snapshot cache in bytes (least recently used snapshots go first). Default 2 GiB. */
  cacheMaxBytes?: number;
  transport?: HttpTransport;
  clock?: Clock;
  limits?: Partial<GitSourceLimits>;
  /** How each HTTP request is retried on 429/5xx, resets and timeouts (defaults: 4 tries, 200 ms doubling, 30 s cap). */
  retry?: Partial<RetryPolicy>;
  /** Jitter source for retry backoff, [0, 1). Default Math.random. */
  random?: () => number;
  /** Accept http:// repo URLs. For tests against a loopback server only. */
  allowInsecureHttp?: boolean;
  /**
   * Told each time a host rate-limits us (HTTP 429 or 503 with Retry-After): every request to that host, from
   * any resolve or fetch, then waits until the time it named (for metrics and a log line).
   */
  onRateLimited?: (event: RateLimitEvent) => void;
  /** Told about every snapshot request: served from the cache or fetched (for metrics). */
  onFetch?: (event: { repo: string; sha: string; cached: boolean }) => void;
  /**
   * The process's proxy (see proxyFromEnvironment), for https repositories whose request names no proxy of its
   * own and whose host it does not bypass.
   */
  environmentProxy?: EnvironmentProxy | undefined;
}

export interface ResolveRequest {
  repo: string;
  revision: string;
  auth?: GitAuth | undefined;
  connection?: GitConnection | undefined;
  /**
   * Accept the repository's ref listing if it started at most this long ago (shared by every caller of the
   * same repo and credentials). Omitted or 0: list the refs now. Concurrent callers always share one request.
   * Callers passing W cause at most two listings in any 2·W (ref-listings.ts).
   */
  maxAgeMs?: number | undefined;
  /**
   * Accept a listing (done or in flight) that started at or after this time (epoch ms, the source's clock),
   * whatever `maxAgeMs` says: a webhook or reconcile request received at T is answered by any listing begun
   * after T, so 200 syncs woken by one push share one listing instead of making 200.
   */
  startedAfter?: number | undefined;
}

export interface FetchRequest {
  repo: string;
  sha: string;
  auth?: GitAuth | undefined;
  connection?: GitConnection | undefined;
}

/** A fetched commit, cached on disk. Read it with `readPath`. */
export interface Snapshot {
  /** The repo URL without credentials. */
  readonly repo: string;
  readonly sha: string;
  /** The cache directory holding it (opaque: a pack, not a work tree). */
  readonly dir: string;
}

/** One file of a snapshot, as render consumes it. */
export interface SnapshotFile {
  /** Repo-relative, '/'-separated. */
  path: string;
  content: Uint8Array;
}

export interface GitSource {
  /** A branch, tag (annotated tags peel to their commit) or full SHA → full commit SHA. */
  resolveRevision(req: ResolveRequest): Promise<string>;
  /** The commit's snapshot, fetched (depth 1) once per (repo, SHA) and cached on disk. */
  fetchSnapshot(req: FetchRequest): Promise<Snapshot>;
  /** The files under `path` (a directory or one file), sorted by path. */
  readPath(snapshot: Snapshot, path: string): Promise<SnapshotFile[]>;
  /** The snapshot's commit: author, committer and message. */
  readCommit(snapshot: Snapshot): Promise<CommitMetadata>;
}

const fullSha = /^[0-9a-f]{40}$/i;

/** Bytes of files readPath keeps in memory for the next sync that reads the same snapshot and path. */
const READ_MEMO_BYTES = 32 * 1024 * 1024;

/**
 * Turns a Kubernetes Secret's `data` (base64 values) into Git credentials: `identity` + `known_hosts` (and
 * `password` as the key's passphrase, as in Flux) for SSH, else `bearerToken`, else `username` + `password`.
 * `from` names the Secret in messages.
 */
export function authFromSecretData(data: Readonly<Record<string, string>> | undefined, from?: string): GitAuth {
  const decode = (key: string): string | undefined => {
    const v = data?.[key];
    return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
  };
  const identity = decode('identity');
  if (identity !== undefined && identity.trim() !== '') {
    const knownHosts = decode('known_hosts');
    if (knownHosts === undefined || knownHosts.trim() === '') {
      throw new GitSourceError(
        GitSourceErrorCode.InvalidAuth,
        "the auth Secret has an identity but no known_hosts key; add the server's host key (e.g. from ssh-keyscan, checked out of band): host keys are never trusted on first use",
      );
    }
    const passphrase = decode('password');
    return { identity, knownHosts, ...(passphrase === undefined || passphrase === '' ? {} : { passphrase }), ...(from === undefined ? {} : { from }) };
  }
  const bearerToken = decode('bearerToken');
  if (bearerToken !== undefined && bearerToken !== '') return { bearerToken };
  const username = decode('username');
  const password = decode('password');
  if (username !== undefined && password !== undefined && username !== '' && password !== '') return { username, password };
  throw new GitSourceError(
    GitSourceErrorCode.InvalidAuth,
    'the auth Secret needs identity and known_hosts keys (SSH), a bearerToken key, or both username and password keys',
  );
}

/**
 * A Git Secret's `data` as a whole: its credentials (see authFromSecretData; none when it holds no credential
 * key, e.g. a public repository behind a private CA) and its `ca.crt` (PEM, as Flux's GitRepository reads it),
 * trusted for the repository's https server besides the system's roots.
 */
export function gitAccessFromSecretData(
  data: Readonly<Record<string, string>> | undefined,
  from?: string,
): { auth: GitAuth | undefined; caCert: string | undefined } {
  const encodedCa = data?.['ca.crt'];
  const caCert = encodedCa === undefined ? undefined : Buffer.from(encodedCa, 'base64').toString('utf8');
  if (caCert !== undefined) checkCertificates(caCert, 'ca.crt');
  const credentialKeys = ['identity', 'bearerToken', 'username', 'password'];
  const hasCredentials = credentialKeys.some((key) => data?.[key] !== undefined);
  if (!hasCredentials && caCert !== undefined) return { auth: undefined, caCert };
  return { auth: authFromSecretData(data, from), caCert };
}

/**
 * A proxy Secret's `data` (base64 values, Flux's proxySecretRef keys): `address` (required, http:// or
 * https://host:port), `username` and `password` (basic authentication to the proxy, both or neither).
 */
export function proxyFromSecretData(data: Readonly<Record<string, string>> | undefined): GitProxy {
  const decode = (key: string): string | undefined => {
    const v = data?.[key];
    return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8').trim();
  };
  const address = decode('address');
  if (address === undefined || address === '')
    throw new GitSourceError(GitSourceErrorCode.InvalidAuth, 'the proxy Secret needs an address key (http://host:port)');
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    throw new GitSourceError(GitSourceErrorCode.InvalidAuth, "the proxy Secret's address is not a URL (http://host:port)");
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || (url.pathname !== '/' && url.pathname !== '') || url.username !== '' || url.password !== '') {
    throw new GitSourceError(
      GitSourceErrorCode.InvalidAuth,
      "the proxy Secret's address must be http://host:port or https://host:port (credentials go in its username and password keys)",
    );
  }
  const username = decode('username');
  const password = decode('password');
  if ((username === undefined || username === '') !== (password === undefined || password === '')) {
    throw new GitSourceError(GitSourceErrorCode.InvalidAuth, 'the proxy Secret needs both username and password keys, or neither');
  }
  return { url: url.origin, ...(username === undefined || username === '' ? {} : { username, password }) };
}

/** PEM text that must hold at least one X.509 certificate, each parseable. */
function checkCertificates(pem: string, key: string): void {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0)
    throw new GitSourceError(GitSourceErrorCode.InvalidAuth, `the Secret's ${key} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch {
      throw new GitSourceError(GitSourceErrorCode.InvalidAuth, `the Secret's ${key} holds a certificate that does not parse`);
    }
  }
}

/** The transport's view of a proxy; its credentials join the operation's secrets (never in an error). */
function proxyOf(proxy: GitProxy, secrets: string[]): HttpProxy {
  if (proxy.username === undefined || proxy.password === undefined) return { url: proxy.url };
  const encoded = Buffer.from(`${proxy.username}:${proxy.password}`).toString('base64');
  secrets.push(proxy.password, encoded, `${proxy.username}:${proxy.password}`);
  return { url: proxy.url, authorization: `Basic ${encoded}` };
}

interface Operation {
  shownRepo: string;
  ca: string | undefined;
  proxy: HttpProxy | undefined;
  url: string;
  target: RepoUrl;
  ssh: SshCredentials | undefined;
  authorization: string | undefined;
  secrets: string[];
  /** The first limit or timeout the transport guard raised, which wins over whatever the protocol code made of it. */
  failure: GitSourceError | undefined;
}

/** The proxy the environment (HTTPS_PROXY, NO_PROXY) names for `origin`, if any. */
function environmentProxyFor(env: EnvironmentProxy | undefined, origin: string): GitProxy | undefined {
  if (env === undefined) return undefined;
  const url = new URL(origin);
  // Over http:// (tests against a loopback server) the environment's HTTPS_PROXY does not apply.
  if (url.protocol !== 'https:') return undefined;
  return env.bypass(url.hostname.replace(/^\[|\]$/g, ''), url.port === '' ? '443' : url.port) ? undefined : env.proxy;
}

/** One request's repository, credentials, CA and proxy, checked: the Operation a resolve or fetch runs with. */
function prepareOperation(input: {
  repo: string;
  auth: GitAuth | undefined;
  connection: GitConnection | undefined;
  allowInsecureHttp: boolean;
  environmentProxy: EnvironmentProxy | undefined;
  /** parseRepoUrl, or a memo of it. */
  parse?: (repo: string, allowInsecureHttp: boolean) => RepoUrl;
}): Operation {
  const { repo, auth, connection, allowInsecureHttp } = input;
  const parsed = (input.parse ?? parseRepoUrl)(repo, allowInsecureHttp);
  const secrets: string[] = [];
  if (parsed.kind === 'ssh') {
    if (connection?.proxy !== undefined)
      throw new GitSourceError(GitSourceErrorCode.InvalidAuth, `${parsed.url}: a proxy is supported for https repositories only`);
    if (auth === undefined || !('identity' in auth)) {
      throw new GitSourceError(
        GitSourceErrorCode.InvalidAuth,
        `${parsed.url}: an SSH repo needs spec.source.git.secretRef naming a Secret with identity (a private key) and known_hosts keys${auth === undefined ? '' : '; the Secret holds https credentials'}`,
      );
    }
    secrets.push(...sshSecrets(auth));
    return {
      shownRepo: parsed.url,
      ca: undefined,
      proxy: undefined,
      url: parsed.url,
      target: parsed,
      ssh: auth,
      authorization: undefined,
      secrets,
      failure: undefined,
    };
  }
  if (auth !== undefined && 'identity' in auth) {
    throw new GitSourceError(
      GitSourceErrorCode.InvalidAuth,
      `${parsed.url}: the auth Secret holds an SSH identity, but the repo is an https URL; use its ssh:// or user@host:path address`,
    );
  }
  let authorization: string | undefined;
  const basic = auth !== undefined && 'bearerToken' in auth ? undefined : (auth ?? parsed.embedded);
  if (auth !== undefined && 'bearerToken' in auth) {
    authorization = `Bearer ${auth.bearerToken}`;
    secrets.push(auth.bearerToken);
  } else if (basic !== undefined) {
    const pair = `${basic.username}:${basic.password}`;
    const encoded = Buffer.from(pair).toString('base64');
    authorization = `Basic ${encoded}`;
    secrets.push(pair, encoded, basic.password);
  }
  if (parsed.embedded !== undefined) secrets.push(parsed.embedded.password, `${parsed.embedded.username}:${parsed.embedded.password}`);
  const chosen = connection?.proxy ?? environmentProxyFor(input.environmentProxy, parsed.origin);
  const proxy = chosen === undefined ? undefined : proxyOf(chosen, secrets);
  return { shownRepo: parsed.url, ca: connection?.caCert, proxy, url: parsed.url, target: parsed, ssh: undefined, authorization, secrets, failure: undefined };
}

/**
 * Fetches `sha` into `dir` and proves the result complete before the caller may cache it: the pack is
 * checked and indexed by us (index-pack.ts) and every tree and blob the commit reaches must be in it.
 * A pack that fails any check is the server's fault and transient (ServerError): nothing is cached, and
 * the next fetch asks again.
 */
async function fetchInto(input: { op: Operation; sha: string; dir: string; connect: () => UploadPackTransport; maxObjectBytes: number }): Promise<void> {
  const { op, sha, dir } = input;
  const packDir = join(dir, 'objects', 'pack');
  await mkdir(packDir, { recursive: true });
  const incoming = join(packDir, 'incoming.pack');
  const incomplete = (err: unknown): GitSourceError =>
    new GitSourceError(GitSourceErrorCode.ServerError, `${op.shownRepo}: the pack the server sent for ${sha} is incomplete or damaged: ${errorText(err)}`);
  try {
    const http = input.connect();
    const packBytes = await fetchPack({ transport: http, sha, packPath: incoming, shownRepo: op.shownRepo });
    // The response's chunks (a pack's worth) are garbage now; a young-generation collection, a millisecond
    // or so, frees them before the indexer adds its own peak.
    garbageCollector()?.({ type: 'minor' });
    const incomingIdx = join(packDir, 'incoming.idx');
    const outcome = await indexFetchedPack(
      { packPath: incoming, idxPath: incomingIdx, commit: sha, maxObjectBytes: input.maxObjectBytes },
      packBytes,
      http.signal,
    ).catch((err: unknown) => {
      throw http.signal.aborted ? new GitSourceError(GitSourceErrorCode.Timeout, `${op.shownRepo}: the operation timed out`) : err;
    });
    if (!outcome.ok) {
      if (outcome.kind === 'tooLarge') {
        throw new GitSourceError(
          GitSourceErrorCode.LimitExceeded,
          `${op.shownRepo}: commit ${sha} holds an object of ${outcome.size} bytes, over the limit of ${input.maxObjectBytes} bytes`,
        );
      }
      throw new PackError(outcome.message);
    }
    const name = `pack-${outcome.checksum}`;
    await rename(incoming, join(packDir, `${name}.pack`));
    await rename(incomingIdx, join(packDir, `${name}.idx`));
  } catch (err) {
    if (err instanceof PackError) throw incomplete(err);
    throw err;
  }
}

/**
 * What readPath read lately, by snapshot and path: a snapshot never changes (it is a commit), and a fleet of
 * syncs on one repo and path reads the same few files once per commit instead of once per sync (1,000 syncs:
 * 1,000 opens of the pack). Least recently used first out, bounded by the bytes of the files held; a failed
 * read is not remembered.
 */
class ReadMemo {
  readonly #entries = new Map<string, { files: Promise<SnapshotFile[]>; bytes: number }>();
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  async read(key: string, load: () => Promise<SnapshotFile[]>): Promise<SnapshotFile[]> {
    const known = this.#entries.get(key);
    if (known !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, known);
      return [...(await known.files)];
    }
    const entry = { files: load(), bytes: 0 };
    this.#entries.set(key, entry);
    try {
      const files = await entry.files;
      if (this.#entries.get(key) === entry) {
        entry.bytes = files.reduce((n, f) => n + f.content.byteLength + f.path.length, 0);
        this.#bytes += entry.bytes;
        for (const oldest of this.#entries.keys()) {
          if (this.#bytes <= this.#maxBytes || oldest === key) break;
          this.#forget(oldest);
        }
      }
      return [...files];
    } catch (err) {
      if (this.#entries.get(key) === entry) this.#forget(key);
      throw err;
    }
  }

  #forget(key: string): void {
    const known = this.#entries.get(key);
    if (known === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= known.bytes;
  }
}

/** How long after a listing a fetch over HTTP trusts the capabilities it advertised (see `capabilities` in createGitSource). */
const CAPABILITIES_FRESH_MS = 60_000;

/** A parsed repo URL as the memo hands it out: nothing can change it for the next caller. */
function deepFreeze<T extends object>(value: T): T {
  for (const field of Object.values(value)) if (typeof field === 'object' && field !== null) Object.freeze(field);
  return Object.freeze(value);
}

/** How many distinct URLs, and accesses, the source remembers the hash of (the syncs' repositories and credentials). */
const HASH_MEMO_ENTRIES = 1_000;

export function createGitSource(options: GitSourceOptions): GitSource {
  const limits: GitSourceLimits = { ...defaultLimits, ...options.limits };
  const transport = options.transport ?? nodeHttpTransport;
  const clock = options.clock ?? { now: () => Date.now() };
  const allowInsecureHttp = options.allowInsecureHttp ?? false;
  const retry: RetryPolicy = { ...defaultRetryPolicy, ...options.retry };
  const random = options.random ?? Math.random;
  const cache = new SnapshotCache({ dir: options.cacheDir, maxBytes: options.cacheMaxBytes ?? 2 * 1024 ** 3, now: () => clock.now() });
  const inFlight = new Map<string, { work: Promise<Snapshot>; access: string }>();
  const readMemo = new ReadMemo(READ_MEMO_BYTES);
  const gates = new HostGates({ onClosed: options.onRateLimited });

  // A repo URL is parsed (a WHATWG URL and its setters) for every resolve and fetch, at every resync of every sync,
  // for a handful of distinct URLs: each distinct one is parsed once (bounded, like the hashes below). A URL that
  // does not parse throws every time. The parsed URL is only read.
  const repoUrls = new Map<string, RepoUrl>();
  const parse = (repo: string): RepoUrl => {
    let parsed = repoUrls.get(repo);
    if (parsed === undefined) {
      parsed = deepFreeze(parseRepoUrl(repo, allowInsecureHttp));
      if (repoUrls.size >= HASH_MEMO_ENTRIES) repoUrls.clear();
      repoUrls.set(repo, parsed);
    }
    return parsed;
  };
  const prepare = (repo: string, auth: GitAuth | undefined, connection: GitConnection | undefined): Operation =>
    prepareOperation({ repo, auth, connection, allowInsecureHttp, environmentProxy: options.environmentProxy, parse });

  /**
   * One resolve's or fetch's way to git-upload-pack, chosen by the URL's scheme: its deadline, byte budget and
   * retries. `known`: the server's capabilities from this access's latest listing (HTTP fetches skip their own).
   */
  function uploadPack(op: Operation, known?: ReadonlySet<string>): UploadPackTransport {
    const onFailure = (err: GitSourceError): void => {
      op.failure ??= err;
    };
    const bounds: TransportLimits = {
      maxResponseBytes: limits.maxResponseBytes,
      timeoutMs: limits.timeoutMs,
      idleTimeoutMs: limits.idleTimeoutMs,
      retry,
      random,
      shownRepo: op.shownRepo,
      onFailure,
    };
    if (op.target.kind === 'ssh') {
      if (op.ssh === undefined) throw new GitSourceError(GitSourceErrorCode.InvalidAuth, `${op.shownRepo}: no SSH credentials`);
      return sshUploadPack({ target: op.target, credentials: op.ssh, ...bounds });
    }
    const session = createHttpSession({
      transport,
      origin: op.target.origin,
      authorization: op.authorization,
      allowInsecureHttp,
      gates,
      ca: op.ca,
      proxy: op.proxy,
      ...bounds,
    });
    return httpUploadPack(session, op.url, op.shownRepo, known);
  }

  async function guarded<T>(
    req: { repo: string; auth?: GitAuth | undefined; connection?: GitConnection | undefined },
    what: string,
    fn: (op: Operation) => Promise<T>,
  ): Promise<T> {
    const { repo, auth } = req;
    let op: Operation | undefined;
    try {
      op = prepare(repo, auth, req.connection);
      const result = await fn(op);
      if (op.failure !== undefined) throw op.failure;
      return result;
    } catch (err) {
      throw toGitSourceError(op?.failure ?? err, op, what, auth);
    }
  }

  // The hashes below are asked for at every resync of every sync, for a handful of distinct inputs: remembered
  // (bounded: cleared whole when full, then computed again).
  const urlHashes = new Map<string, string>();
  const accessKeys = new Map<string, string>();
  const remembered = (memo: Map<string, string>, input: string, compute: () => string): string => {
    let value = memo.get(input);
    if (value === undefined) {
      if (memo.size >= HASH_MEMO_ENTRIES) memo.clear();
      memo.set(input, (value = compute()));
    }
    return value;
  };

  function cacheKey(url: string, sha: string): string {
    return `${remembered(urlHashes, url, () => createHash('sha256').update(url).digest('hex').slice(0, 16))}-${sha}`;
  }

  /**
   * Who asks, as far as the Git server can tell: the repository with the request's credentials, trusted CA and
   * proxy. A listing is shared only under the same access, and a commit another request fetched (or the cache
   * holds) is handed out only to an access that has itself listed this repository: a sync with wrong or no
   * credentials, or a CA that does not verify the server, fails as it would alone, never reading what someone
   * else's access fetched.
   */
  const accessKey = (op: Operation, req: { auth?: GitAuth | undefined; connection?: GitConnection | undefined }): string => {
    const access = JSON.stringify([req.auth ?? null, req.connection?.caCert ?? null, req.connection?.proxy ?? null]);
    return remembered(accessKeys, `${op.url}\0${access}`, () => createHash('sha256').update(op.url).update('\0').update(access).digest('hex'));
  };
  // A listing is shared by every sync of the repository until the next one: its refs are indexed by name once,
  // not at every resolve (a repository may advertise thousands of tags).
  const indexedListings = new WeakMap<readonly AdvertisedRef[], ReadonlyMap<string, AdvertisedRef>>();
  const refsByName = (refs: readonly AdvertisedRef[]): ReadonlyMap<string, AdvertisedRef> => {
    let byName = indexedListings.get(refs);
    if (byName === undefined) indexedListings.set(refs, (byName = new Map(refs.map((r) => [r.ref, r]))));
    return byName;
  };
  /** Accesses that listed or fetched from a repository in this process (bounded by the syncs' distinct credentials). */
  const proven = new Set<string>();
  // Shared per access; see ref-listings.ts for the freshness rule and the bound it gives.
  const listings = new SharedListings<Advertisement>({ now: () => clock.now() });
  /**
   * The capabilities each access's latest listing advertised, and when: a fetch over HTTP within
   * CAPABILITIES_FRESH_MS of it words its request from them instead of asking for the advertisement again (the
   * new commit a push announced: resolved by one listing, fetched by one POST right after). A fetch that fails with
   * them forgets them and tries once more the usual way (the advertisement, then the request).
   */
  const capabilities = new Map<string, { readonly set: ReadonlySet<string>; readonly at: number }>();
  const listRefs = async (op: Operation, req: Pick<ResolveRequest, 'auth' | 'connection' | 'maxAgeMs' | 'startedAfter'>): Promise<Advertisement> => {
    const key = accessKey(op, req);
    const advertisement = await listings.get(key, { maxAgeMs: req.maxAgeMs ?? 0, startedAfter: req.startedAfter }, () =>
      listAdvertisedRefs(uploadPack(op)).then((listed) => {
        capabilities.set(key, { set: listed.capabilities, at: clock.now() });
        return listed;
      }),
    );
    proven.add(key);
    return advertisement;
  };
  const knownCapabilities = (op: Operation, access: string): ReadonlySet<string> | undefined => {
    const known = capabilities.get(access);
    return op.target.kind !== 'ssh' && known !== undefined && clock.now() - known.at <= CAPABILITIES_FRESH_MS ? known.set : undefined;
  };

  async function resolveRevision(req: ResolveRequest): Promise<string> {
    return guarded(req, `resolving revision ${JSON.stringify(req.revision)}`, async (op) => {
      const revision = req.revision.trim();
      if (revision === '')
        throw new GitSourceError(GitSourceErrorCode.InvalidRevision, `${op.shownRepo}: the revision is empty; give a branch, a tag or a full commit SHA`);
      if (fullSha.test(revision)) {
        // A pin: it resolves to itself once we know the commit exists, which fetching it proves (and caches).
        const snapshot = await fetchSnapshot({ repo: req.repo, sha: revision, auth: req.auth, connection: req.connection });
        return snapshot.sha;
      }
      const byName = refsByName((await listRefs(op, req)).refs);
      // Git's own order (git rev-parse): exact, then tags, then branches.
      const candidates = revision === 'HEAD' || revision.startsWith('refs/') ? [revision] : [`refs/tags/${revision}`, `refs/heads/${revision}`];
      for (const name of candidates) {
        const ref = byName.get(name);
        if (ref !== undefined) return ref.peeled ?? ref.oid;
      }
      if (/^[0-9a-f]{4,39}$/i.test(revision)) {
        throw new GitSourceError(
          GitSourceErrorCode.InvalidRevision,
          `${op.shownRepo}: revision "${revision}" looks like a short commit SHA; give the full 40-character SHA, a branch or a tag`,
        );
      }
      throw new GitSourceError(GitSourceErrorCode.RevisionNotFound, `${op.shownRepo}: no branch or tag named "${revision}"`);
    });
  }

  async function fetchSnapshot(req: FetchRequest): Promise<Snapshot> {
    return guarded(req, `fetching commit ${req.sha}`, async (op) => {
      if (!fullSha.test(req.sha)) {
        throw new GitSourceError(GitSourceErrorCode.InvalidRevision, `${op.shownRepo}: "${req.sha.slice(0, 64)}" is not a full 40-character commit SHA`);
      }
      const sha = req.sha.toLowerCase();
      const key = cacheKey(op.url, sha);
      const access = accessKey(op, req);
      // What another access fetched (in flight, or in the cache) is handed out only to an access that has listed
      // this repository itself; one that fetches the commit itself proves its access by doing so.
      const proveAccess = async (): Promise<void> => {
        if (!proven.has(access)) await listRefs(op, { auth: req.auth, connection: req.connection, maxAgeMs: 0 });
      };
      const pending = inFlight.get(key);
      if (pending !== undefined) {
        if (pending.access === access) return pending.work;
        await proveAccess();
        // Another access's fetch that failed (its credentials, its CA) says nothing of this one: it fetches itself.
        const shared = await pending.work.catch(() => undefined);
        if (shared !== undefined) return shared;
      }
      const work = (async (): Promise<Snapshot> => {
        await cache.load();
        if (cache.has(key)) await proveAccess();
        const hit = await cache.touch(key);
        options.onFetch?.({ repo: op.shownRepo, sha, cached: hit !== undefined });
        if (hit !== undefined) return { repo: op.url, sha, dir: hit.dir };
        const scratch = await cache.scratch();
        const known = knownCapabilities(op, access);
        const fetchWith = (advertised: ReadonlySet<string> | undefined): Promise<void> =>
          fetchInto({ op, sha, dir: scratch, connect: () => uploadPack(op, advertised), maxObjectBytes: limits.maxResponseBytes });
        try {
          await fetchWith(known).catch(async (err: unknown) => {
            // Worded from a listing's capabilities, the request may not suit the server (one that wants its
            // advertisement asked for first, or whose capabilities changed): once more, as a fetch without a listing.
            if (
              known === undefined ||
              (err instanceof GitSourceError && (err.code === GitSourceErrorCode.Timeout || err.code === GitSourceErrorCode.LimitExceeded))
            )
              throw err;
            if (capabilities.get(access)?.set === known) capabilities.delete(access);
            op.failure = undefined;
            await fetchWith(undefined);
          });
          const entry = await cache.commit(key, scratch, { repo: op.url, sha, bytes: await directoryBytes(scratch), format: snapshotFormat });
          proven.add(access);
          return { repo: op.url, sha, dir: entry.dir };
        } catch (err) {
          await cache.discard(scratch);
          throw err;
        }
      })();
      inFlight.set(key, { work, access });
      try {
        return await work;
      } finally {
        if (inFlight.get(key)?.work === work) inFlight.delete(key);
      }
    });
  }

  /** The files under `path`, from the memo when this snapshot's path was read lately (callers share them: read only). */
  function readPath(snapshot: Snapshot, path: string): Promise<SnapshotFile[]> {
    return readMemo.read(`${snapshot.dir}\0${path}`, () => readPathFromPack(cache, limits, snapshot, path));
  }

  function readCommit(snapshot: Snapshot): Promise<CommitMetadata> {
    return readCommitFromPack(cache, snapshot);
  }

  return { resolveRevision, fetchSnapshot, readPath, readCommit };
}

/** The commit object of a cached snapshot, the snapshot pinned while it is read. */
async function readCommitFromPack(cache: SnapshotCache, snapshot: Snapshot): Promise<CommitMetadata> {
  const key = snapshot.dir.split(/[\\/]/).pop() ?? '';
  await cache.load();
  const known = (await cache.touch(key)) !== undefined;
  cache.pin(key);
  try {
    const reader = known ? await openPack(snapshot.dir) : undefined;
    if (reader === undefined)
      throw new GitSourceError(GitSourceErrorCode.SnapshotUnavailable, `snapshot of ${snapshot.sha} in ${snapshot.repo} is no longer cached; fetch it again`);
    try {
      const commit = await reader.read(snapshot.sha, {
        maxBytes: 1024 * 1024,
        onTooLarge: (size) => new GitSourceError(GitSourceErrorCode.LimitExceeded, `${snapshot.repo} at ${snapshot.sha}: the commit object is ${size} bytes`),
      });
      if (commit === undefined || commit.type !== ObjectType.commit)
        throw new GitSourceError(
          GitSourceErrorCode.SnapshotUnavailable,
          `${snapshot.repo} at ${snapshot.sha}: the commit is missing from the cached snapshot; fetch it again`,
        );
      return parseCommit(commit.data);
    } finally {
      await reader.close();
    }
  } finally {
    cache.unpin(key);
  }
}

/** The files under `path` in a cached snapshot, the snapshot pinned while they are read. */
async function readPathFromPack(cache: SnapshotCache, limits: GitSourceLimits, snapshot: Snapshot, path: string): Promise<SnapshotFile[]> {
  const shown = JSON.stringify(path);
  const key = snapshot.dir.split(/[\\/]/).pop() ?? '';
  let known = false;
  try {
    const segments = parseRequestPath(path);
    await cache.load();
    known = (await cache.touch(key)) !== undefined;
    cache.pin(key);
    try {
      const reader = known ? await openPack(snapshot.dir) : undefined;
      if (reader === undefined) {
        throw new GitSourceError(GitSourceErrorCode.SnapshotUnavailable, `snapshot of ${snapshot.sha} in ${snapshot.repo} is no longer cached; fetch it again`);
      }
      try {
        return await new TreeReader(reader, snapshot, limits).files(segments, shown);
      } finally {
        await reader.close();
      }
    } finally {
      cache.unpin(key);
    }
  } catch (err) {
    const error =
      err instanceof GitSourceError
        ? err
        : new GitSourceError(GitSourceErrorCode.SnapshotUnavailable, `reading path ${shown} of ${snapshot.sha} in ${snapshot.repo} failed: ${errorText(err)}`);
    // A snapshot that turns out inconsistent (an object missing or damaged) must not stay a cache hit that
    // fails every read: drop it, so the retry this error asks for really fetches again.
    if (error.code === GitSourceErrorCode.SnapshotUnavailable && known) await cache.remove(key);
    throw error;
  }
}

async function openPack(gitdir: string): Promise<PackReader | undefined> {
  let names: string[];
  try {
    names = await readdir(join(gitdir, 'objects', 'pack'));
  } catch {
    return undefined;
  }
  const pack = names.find((n) => n.endsWith('.pack'));
  if (pack === undefined) return undefined;
  const base = join(gitdir, 'objects', 'pack', pack.slice(0, -'.pack'.length));
  return PackReader.open(`${base}.pack`, `${base}.idx`);
}

const symlinkMode = '120000';
const treeMode = '40000';
const gitlinkMode = '160000';
const maxSymlinkHops = 40;

type Located = { kind: 'tree'; oid: string } | { kind: 'blob'; oid: string };

/** Walks the trees of one snapshot: lexical paths only, every entry name checked, symlinks kept inside. */
class TreeReader {
  readonly #pack: PackReader;
  readonly #snapshot: Snapshot;
  readonly #limits: GitSourceLimits;
  readonly #trees = new Map<string, TreeEntry[]>();
  #files = 0;
  #bytes = 0;
  #lastYield = performance.now();

  constructor(pack: PackReader, snapshot: Snapshot, limits: GitSourceLimits) {
    this.#pack = pack;
    this.#snapshot = snapshot;
    this.#limits = limits;
  }

  async files(segments: string[], shownPath: string): Promise<SnapshotFile[]> {
    const located = await this.#locate(segments, shownPath);
    const out: SnapshotFile[] = [];
    if (located.kind === 'blob') {
      out.push({ path: segments.join('/'), content: await this.#blob(located.oid, segments.join('/')) });
    } else {
      await this.#walk(located.oid, segments, out);
    }
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  async #object(oid: string, type: ObjectType, maxBytes: number, shownPath: string) {
    const obj = await this.#pack.read(oid, {
      maxBytes,
      onTooLarge: (size) =>
        new GitSourceError(GitSourceErrorCode.LimitExceeded, `${this.#where()}: ${shownPath} is ${size} bytes, over the limit of ${maxBytes} bytes per file`),
    });
    if (obj === undefined || obj.type !== type) {
      throw new GitSourceError(
        GitSourceErrorCode.SnapshotUnavailable,
        `${this.#where()}: object for ${shownPath} is missing from the cached snapshot; it was dropped, fetch it again`,
      );
    }
    return obj.data;
  }

  #where(): string {
    return `${this.#snapshot.repo} at ${this.#snapshot.sha}`;
  }

  async #tree(oid: string, shownDir: string): Promise<TreeEntry[]> {
    const cached = this.#trees.get(oid);
    if (cached !== undefined) return cached;
    const entries = parseTree(await this.#object(oid, ObjectType.tree, 64 * 1024 * 1024, shownDir || '/'));
    for (const e of entries) {
      if (!isSafeEntryName(e.name)) {
        throw new GitSourceError(
          GitSourceErrorCode.UnsafePath,
          `${this.#where()}: tree entry ${JSON.stringify(e.name)} in ${shownDir === '' ? 'the repository root' : shownDir} is not allowed ('..', '.git' and names with '\\' are refused)`,
        );
      }
    }
    this.#trees.set(oid, entries);
    return entries;
  }

  async #rootTree(): Promise<string> {
    return commitTree(await this.#object(this.#snapshot.sha, ObjectType.commit, 64 * 1024 * 1024, 'the commit'));
  }

  /** Resolves a repo path to a tree or blob, following symlinks (only within the repository). */
  async #locate(segments: readonly string[], shownPath: string): Promise<Located> {
    let path = [...segments];
    let hops = 0;
    restart: for (;;) {
      let current: Located = { kind: 'tree', oid: await this.#rootTree() };
      for (let i = 0; i < path.length; i++) {
        const name = path[i] ?? '';
        if (current.kind !== 'tree') break;
        const dir = path.slice(0, i);
        const entry: TreeEntry | undefined = (await this.#tree(current.oid, dir.join('/'))).find((e) => e.name === name);
        if (entry === undefined) break;
        if (entry.mode === symlinkMode) {
          if (++hops > maxSymlinkHops) throw new GitSourceError(GitSourceErrorCode.UnsafePath, `${this.#where()}: too many symlinks resolving ${shownPath}`);
          const linkPath = [...dir, name].join('/');
          const target = (await this.#object(entry.oid, ObjectType.blob, 4096, linkPath)).toString('utf8');
          path = [...resolveSymlinkTarget(dir, target, linkPath), ...path.slice(i + 1)];
          continue restart;
        }
        if (entry.mode === gitlinkMode) {
          throw new GitSourceError(
            GitSourceErrorCode.UnsupportedEntry,
            `${this.#where()}: ${[...dir, name].join('/')} is a submodule; submodules are not supported`,
          );
        }
        current = entry.mode === treeMode ? { kind: 'tree', oid: entry.oid } : { kind: 'blob', oid: entry.oid };
        if (i === path.length - 1) return current;
      }
      if (path.length === 0) return current;
      throw new GitSourceError(GitSourceErrorCode.PathNotFound, `${this.#where()}: path ${shownPath} does not exist`);
    }
  }

  async #walk(treeOid: string, dir: string[], out: SnapshotFile[]): Promise<void> {
    for (const entry of await this.#tree(treeOid, dir.join('/'))) {
      // Reads of small objects are synchronous (pack.ts readRange): let the operator's other work in now and then.
      if (performance.now() - this.#lastYield > 20) {
        await nextTurn();
        this.#lastYield = performance.now();
      }
      const segments = [...dir, entry.name];
      const path = segments.join('/');
      switch (entry.mode) {
        case treeMode:
          await this.#walk(entry.oid, segments, out);
          break;
        case gitlinkMode:
          // A submodule has no content in this repository; it renders as nothing.
          break;
        case symlinkMode: {
          const located = await this.#locate(segments, JSON.stringify(path));
          if (located.kind === 'tree') {
            throw new GitSourceError(
              GitSourceErrorCode.UnsupportedEntry,
              `${this.#where()}: symlink ${path} points at a directory; only symlinks to files are supported`,
            );
          }
          out.push({ path, content: await this.#blob(located.oid, path) });
          break;
        }
        default:
          out.push({ path, content: await this.#blob(entry.oid, path) });
      }
    }
  }

  async #blob(oid: string, path: string): Promise<Uint8Array> {
    if (++this.#files > this.#limits.maxFiles) {
      throw new GitSourceError(GitSourceErrorCode.LimitExceeded, `${this.#where()}: the path holds more than ${this.#limits.maxFiles} files`);
    }
    // Each file pins only its own bytes (pack.ts copies zlib's output out of its 16 KiB chunks).
    const data = ownBuffer(await this.#object(oid, ObjectType.blob, this.#limits.maxFileBytes, path));
    this.#bytes += data.length;
    if (this.#bytes > this.#limits.maxTotalBytes) {
      throw new GitSourceError(GitSourceErrorCode.LimitExceeded, `${this.#where()}: the path holds more than ${this.#limits.maxTotalBytes} bytes`);
    }
    return data;
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Every error leaving the package: a GitSourceError with a code, naming the repo, credentials redacted. */
function toGitSourceError(err: unknown, op: Operation | undefined, what: string, auth: GitAuth | undefined): GitSourceError {
  const secrets = [...(op?.secrets ?? [])];
  if (auth !== undefined) secrets.push(...('bearerToken' in auth ? [auth.bearerToken] : 'identity' in auth ? sshSecrets(auth) : [auth.password]));
  const shownRepo = op?.shownRepo ?? 'the repository';
  const make = (code: GitSourceErrorCode, message: string): GitSourceError => new GitSourceError(code, redact(message, secrets));
  const fromStatus = (status: number): GitSourceError => {
    if (status === 401 || status === 403)
      return make(GitSourceErrorCode.AuthFailed, `${shownRepo}: ${what}: the server refused the credentials (HTTP ${status})`);
    if (status === 404) return make(GitSourceErrorCode.RepoNotFound, `${shownRepo}: ${what}: repository not found (HTTP 404)`);
    return make(GitSourceErrorCode.ServerError, `${shownRepo}: ${what}: the server answered HTTP ${status}`);
  };
  if (err instanceof GitSourceError) return make(err.code, err.message);
  if (err instanceof HttpStatusError) return fromStatus(err.statusCode);
  if (err instanceof ProxyRefusedError) {
    return make(err.statusCode === 407 ? GitSourceErrorCode.AuthFailed : GitSourceErrorCode.Unreachable, `${shownRepo}: ${what}: ${err.message}`);
  }
  const e = err as { code?: unknown; name?: unknown; cause?: { code?: unknown } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return make(GitSourceErrorCode.Timeout, `${shownRepo}: ${what}: timed out`);
  const netCode = typeof e.cause?.code === 'string' ? e.cause.code : typeof e.code === 'string' ? e.code : undefined;
  if (
    netCode !== undefined &&
    /^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|CERT_UNTRUSTED|ERR_TLS_CERT_ALTNAME_INVALID|CERT_HAS_EXPIRED)$/.test(
      netCode,
    )
  ) {
    return make(
      GitSourceErrorCode.UntrustedCertificate,
      `${shownRepo}: ${what}: the server's TLS certificate is not trusted (${netCode}); if a private CA signed it, put that CA in the Git Secret's ca.crt key`,
    );
  }
  if (
    netCode !== undefined &&
    /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|EHOSTUNREACH|ENETUNREACH|UND_ERR_SOCKET|UND_ERR_CONNECT_TIMEOUT)$/.test(netCode)
  ) {
    return make(GitSourceErrorCode.Unreachable, `${shownRepo}: ${what}: cannot reach the server (${netCode})`);
  }
  const detail = errorText(err);
  return make(GitSourceErrorCode.ServerError, `${shownRepo}: ${what}: ${detail.length > 300 ? `${detail.slice(0, 300)}…` : detail}`);
}

// A private CA (the Git Secret's ca.crt) and a forward proxy (HTTP CONNECT), against the real Git server
// serving https with a certificate that CA signed, and a real tunnelling proxy.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestCa, startConnectProxy, startGitServer, type ConnectProxy, type GitServer, type TestCa, type TestRepo } from '@syncline/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  GitSourceErrorCode,
  createGitSource,
  gitAccessFromSecretData,
  proxyFromEnvironment,
  proxyFromSecretData,
  type EnvironmentProxy,
  type GitSource,
} from './index.ts';
import { failure, text } from './test-support.ts';

const b64 = (value: string): string => Buffer.from(value).toString('base64');

let ca: TestCa;
let server: GitServer;
let repo: TestRepo;
let sha: string;
let scratch: string;
let counter = 0;

beforeAll(async () => {
  ca = await createTestCa();
  server = await startGitServer({ tls: ca.server, auth: { username: 'ci', password: 's3cret-pass' } });
  repo = await server.createRepo('private-ca');
  sha = await repo.commit({ 'app/cm.yaml': 'kind: ConfigMap\n' });
  scratch = await mkdtemp(join(tmpdir(), 'source-git-tls-'));
}, 60_000);
afterAll(async () => {
  await server.close();
  await rm(scratch, { recursive: true, force: true });
});

const source = (environmentProxy?: EnvironmentProxy): GitSource =>
  createGitSource({ cacheDir: join(scratch, `c${counter++}`), retry: { attempts: 1 }, environmentProxy });
const auth = { username: 'ci', password: 's3cret-pass' };

describe('a private CA (ca.crt)', { timeout: 60_000 }, () => {
  it('is refused without the CA, with a message that says where the CA goes', async () => {
    expect(server.url.startsWith('https://')).toBe(true);
    const error = await failure(source().resolveRevision({ repo: repo.url, revision: 'main', auth }));
    expect(error.code).toBe(GitSourceErrorCode.UntrustedCertificate);
    expect(error.message).toContain('ca.crt');
    expect(error.retryable).toBe(true);
  });

  it('resolves and fetches with the CA trusted for the repository', async () => {
    const git = source();
    const connection = { caCert: ca.caCert };
    expect(await git.resolveRevision({ repo: repo.url, revision: 'main', auth, connection })).toBe(sha);
    const snapshot = await git.fetchSnapshot({ repo: repo.url, sha, auth, connection });
    expect(text(await git.readPath(snapshot, 'app'))).toEqual({ 'app/cm.yaml': 'kind: ConfigMap\n' });
  });

  it('another CA does not vouch for the server', async () => {
    const other = await createTestCa();
    const error = await failure(source().resolveRevision({ repo: repo.url, revision: 'main', auth, connection: { caCert: other.caCert } }));
    expect(error.code).toBe(GitSourceErrorCode.UntrustedCertificate);
  });
});

describe('a forward proxy', { timeout: 60_000 }, () => {
  let proxy: ConnectProxy;
  let guarded: ConnectProxy;
  beforeAll(async () => {
    proxy = await startConnectProxy();
    guarded = await startConnectProxy({ auth: { username: 'proxy-user', password: 'proxy-pass-42' } });
  });
  afterAll(async () => {
    await proxy.close();
    await guarded.close();
  });

  it('carries every request through a CONNECT tunnel, TLS to the server verified inside it', async () => {
    const git = source();
    const connection = { caCert: ca.caCert, proxy: { url: proxy.url } };
    const before = server.requests('private-ca');
    expect(await git.resolveRevision({ repo: repo.url, revision: 'main', auth, connection })).toBe(sha);
    await git.fetchSnapshot({ repo: repo.url, sha, auth, connection });
    const after = server.requests('private-ca');
    const requests = after.infoRefs + after.uploadPack - before.infoRefs - before.uploadPack;
    expect(requests).toBeGreaterThanOrEqual(2);
    // One tunnel per request, each to the Git server.
    const host = new URL(server.url).host;
    expect(proxy.tunnels()).toHaveLength(requests);
    expect(new Set(proxy.tunnels())).toEqual(new Set([host]));
  });

  it('still verifies the server inside the tunnel', async () => {
    const error = await failure(source().resolveRevision({ repo: repo.url, revision: 'main', auth, connection: { proxy: { url: proxy.url } } }));
    expect(error.code).toBe(GitSourceErrorCode.UntrustedCertificate);
  });

  it("sends the proxy's credentials to the proxy only, and never shows them", async () => {
    const refused = await failure(
      source().resolveRevision({
        repo: repo.url,
        revision: 'main',
        auth,
        connection: { caCert: ca.caCert, proxy: { url: guarded.url, username: 'proxy-user', password: 'wrong-pass-77' } },
      }),
    );
    expect(refused.code).toBe(GitSourceErrorCode.AuthFailed);
    expect(refused.message).toContain('407');
    expect(refused.message).not.toContain('wrong-pass-77');
    expect(guarded.refused()).toBe(1);

    const connection = { caCert: ca.caCert, proxy: { url: guarded.url, username: 'proxy-user', password: 'proxy-pass-42' } };
    expect(await source().resolveRevision({ repo: repo.url, revision: 'main', auth, connection })).toBe(sha);
    expect(guarded.tunnels().length).toBeGreaterThanOrEqual(1);
    // The Git server saw Git's credentials only (the proxy's header stays with the CONNECT).
    expect(server.requestLog().every((r) => r.hasAuthorization)).toBe(true);
  });

  it('a proxy that cannot be reached is an Unreachable, retryable failure', async () => {
    const gone = await startConnectProxy();
    await gone.close();
    const error = await failure(
      source().resolveRevision({ repo: repo.url, revision: 'main', auth, connection: { caCert: ca.caCert, proxy: { url: gone.url } } }),
    );
    expect(error.code).toBe(GitSourceErrorCode.Unreachable);
    expect(error.retryable).toBe(true);
  });

  it('is refused for SSH repositories', async () => {
    const error = await failure(
      source().resolveRevision({
        repo: 'ssh://git@example.invalid/repo.git',
        revision: 'main',
        auth: { identity: 'k', knownHosts: 'h' },
        connection: { proxy: { url: proxy.url } },
      }),
    );
    expect(error.code).toBe(GitSourceErrorCode.InvalidAuth);
    expect(error.message).toContain('https repositories only');
  });
});

describe('reading the Secrets', () => {
  it('a Git Secret with ca.crt and credentials, or ca.crt alone', () => {
    expect(gitAccessFromSecretData({ 'ca.crt': b64(ca.caCert), username: b64('ci'), password: b64('pw') })).toEqual({
      auth: { username: 'ci', password: 'pw' },
      caCert: ca.caCert,
    });
    expect(gitAccessFromSecretData({ 'ca.crt': b64(ca.caCert) })).toEqual({ auth: undefined, caCert: ca.caCert });
    expect(gitAccessFromSecretData({ bearerToken: b64('t') })).toEqual({ auth: { bearerToken: 't' }, caCert: undefined });
  });

  it('a ca.crt that is not a certificate is a clear error', () => {
    expect(() => gitAccessFromSecretData({ 'ca.crt': b64('not a cert') })).toThrow(/ca\.crt holds no PEM certificate/);
    expect(() => gitAccessFromSecretData({ 'ca.crt': b64('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n') })).toThrow(/does not parse/);
  });

  it('a proxy Secret: address, and username with password or neither', () => {
    expect(proxyFromSecretData({ address: b64('http://proxy.corp:3128') })).toEqual({ url: 'http://proxy.corp:3128' });
    expect(proxyFromSecretData({ address: b64('http://proxy.corp:3128'), username: b64('u'), password: b64('p') })).toEqual({
      url: 'http://proxy.corp:3128',
      username: 'u',
      password: 'p',
    });
    expect(() => proxyFromSecretData({})).toThrow(/needs an address key/);
    expect(() => proxyFromSecretData({ address: b64('socks5://proxy:1080') })).toThrow(/must be http:\/\/host:port/);
    expect(() => proxyFromSecretData({ address: b64('http://u:p@proxy:3128') })).toThrow(/credentials go in its username and password keys/);
    expect(() => proxyFromSecretData({ address: b64('http://proxy:3128'), username: b64('u') })).toThrow(/both username and password/);
  });
});

describe("the operator's environment proxy (HTTPS_PROXY, NO_PROXY)", { timeout: 60_000 }, () => {
  let proxy: ConnectProxy;
  let other: ConnectProxy;
  beforeAll(async () => {
    proxy = await startConnectProxy({ auth: { username: 'env-user', password: 'env-pass' } });
    other = await startConnectProxy();
  });
  afterAll(async () => {
    await proxy.close();
    await other.close();
  });

  it('routes https repositories through HTTPS_PROXY (its credentials from the URL) unless NO_PROXY names the host', async () => {
    const connection = { caCert: ca.caCert };
    const withCredentials = proxy.url.replace('http://', 'http://env-user:env-pass@');
    const before = proxy.tunnels().length;
    expect(await source(proxyFromEnvironment({ HTTPS_PROXY: withCredentials })).resolveRevision({ repo: repo.url, revision: 'main', auth, connection })).toBe(
      sha,
    );
    expect(proxy.tunnels().length).toBe(before + 1);

    for (const noProxy of ['127.0.0.1', '127.0.0.0/8', `127.0.0.1:${new URL(server.url).port}`, 'example.com,*']) {
      const env = proxyFromEnvironment({ https_proxy: withCredentials, no_proxy: noProxy });
      expect(await source(env).resolveRevision({ repo: repo.url, revision: 'main', auth, connection }), noProxy).toBe(sha);
    }
    expect(proxy.tunnels().length).toBe(before + 1);
  });

  it("a ConfigSync's own proxy wins over the environment's", async () => {
    const before = other.tunnels().length;
    const env = proxyFromEnvironment({ HTTPS_PROXY: proxy.url });
    expect(await source(env).resolveRevision({ repo: repo.url, revision: 'main', auth, connection: { caCert: ca.caCert, proxy: { url: other.url } } })).toBe(
      sha,
    );
    expect(other.tunnels().length).toBe(before + 1);
  });

  it('reads NO_PROXY as curl and Go do', () => {
    const env = proxyFromEnvironment({ HTTPS_PROXY: 'proxy.corp:3128', NO_PROXY: '.svc.cluster.local, example.com,10.0.0.0/8,git.internal:8443,::1' });
    expect(env?.proxy).toEqual({ url: 'http://proxy.corp:3128' });
    const bypass = (host: string, port = '443'): boolean => env?.bypass(host, port) ?? false;
    expect([
      bypass('gitea.tools.svc.cluster.local'),
      bypass('example.com'),
      bypass('git.example.com'),
      bypass('10.2.3.4'),
      bypass('git.internal', '8443'),
      bypass('::1'),
    ]).toEqual([true, true, true, true, true, true]);
    expect([bypass('github.com'), bypass('notexample.com'), bypass('11.0.0.1'), bypass('git.internal', '443')]).toEqual([false, false, false, false]);
    expect(proxyFromEnvironment({})).toBeUndefined();
    expect(() => proxyFromEnvironment({ HTTPS_PROXY: 'socks5://proxy:1080' })).toThrow(/http:\/\/ or https:\/\//);
  });
});

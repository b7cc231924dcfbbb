// source-git over SSH against a real sshd (Debian's OpenSSH on loopback, test/support) serving
// git-upload-pack for the same bare repos the HTTP test server serves. No Kubernetes needed.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { GitServer, SshGitServer, SshKeyPair } from '@syncline/test-support';
import { generateSshKey, startGitServer, startSshGitServer } from '@syncline/test-support';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createGitSource } from './index.ts';
import type { GitAuth, GitSourceError as GitSourceErrorType, GitSourceOptions } from './index.ts';
import { failure, text } from './test-support.ts';

const run = promisify(execFile);

let http: GitServer;
let ssh: SshGitServer;
let scratch: string;
let stranger: SshKeyPair;
let counter = 0;

beforeAll(async () => {
  http = await startGitServer();
  // The first run on a machine without sshd downloads and unpacks openssh-server: give it time.
  ssh = await startSshGitServer({ root: http.root });
  scratch = await mkdtemp(join(tmpdir(), 'source-git-ssh-test-'));
  stranger = await generateSshKey('not-authorized');
}, 240_000);
afterAll(async () => {
  await ssh.close();
  await http.close();
  await rm(scratch, { recursive: true, force: true });
});

async function newRepo() {
  const repo = await http.createRepo(`sshrepo${++counter}`);
  return { repo, url: ssh.url(repo.name) };
}

async function newSource(opts: Partial<GitSourceOptions> = {}) {
  return createGitSource({ cacheDir: await mkdtemp(join(scratch, 'cache-')), retry: { attempts: 1 }, ...opts });
}

const auth = (over: Partial<Extract<GitAuth, { identity: string }>> = {}): GitAuth => ({
  identity: ssh.userKey.privateKey,
  knownHosts: `${ssh.knownHosts}\n`,
  from: 'Secret ns/git-auth',
  ...over,
});

const connections = (): number =>
  ssh
    .log()
    .split('\n')
    .filter((l) => l.includes('Accepted publickey')).length;

/** Every string of a private key that must never show up anywhere. */
function keyParts(key: SshKeyPair): string[] {
  return [key.privateKey, ...key.privateKey.split('\n').filter((l) => l.length >= 8 && !l.startsWith('-----'))];
}

describe('Git over SSH', { timeout: 60_000 }, () => {
  it('resolves a branch and an annotated tag, fetches by SHA, and reads the same files as over https', async () => {
    // given
    const { repo, url } = await newRepo();
    const first = await repo.commit({ 'apps/web/a.yaml': 'a: 1\n', 'b.txt': 'b' });
    const second = await repo.commit({ 'apps/web/a.yaml': 'a: 2\n' });
    await repo.tag('v1', first, { annotated: true });
    const source = await newSource();

    // when
    const main = await source.resolveRevision({ repo: url, revision: 'main', auth: auth() });
    const tag = await source.resolveRevision({ repo: url, revision: 'v1', auth: auth() });
    const pinned = await source.resolveRevision({ repo: url, revision: first, auth: auth() });
    const snapshot = await source.fetchSnapshot({ repo: url, sha: main, auth: auth() });
    const old = await source.fetchSnapshot({ repo: url, sha: first, auth: auth() });
    const https = await newSource({ allowInsecureHttp: true });
    const overHttps = await https.fetchSnapshot({ repo: repo.url, sha: main });

    // then
    expect(main).toBe(second);
    expect(tag).toBe(first);
    expect(pinned).toBe(first);
    expect(snapshot.repo).toBe(url);
    expect(text(await source.readPath(snapshot, 'apps'))).toEqual({ 'apps/web/a.yaml': 'a: 2\n' });
    expect(text(await source.readPath(old, ''))).toEqual({ 'apps/web/a.yaml': 'a: 1\n', 'b.txt': 'b' });
    expect(text(await source.readPath(snapshot, ''))).toEqual(text(await https.readPath(overHttps, '')));
  });

  it('shares one fetch among concurrent callers and serves the next from the snapshot cache', async () => {
    // given
    const { repo, url } = await newRepo();
    const sha = await repo.commit({ 'a.yaml': 'a' });
    const source = await newSource();
    const before = connections();

    // when
    const snapshots = await Promise.all(Array.from({ length: 20 }, () => source.fetchSnapshot({ repo: url, sha, auth: auth() })));
    const again = await source.fetchSnapshot({ repo: url, sha, auth: auth() });

    // then
    expect(new Set(snapshots.map((s) => s.dir)).size).toBe(1);
    expect(again.dir).toBe(snapshots[0]?.dir);
    expect(connections() - before).toBe(1);
  });

  it('accepts a hashed known_hosts entry (ssh-keygen -H)', async () => {
    // given
    const { repo, url } = await newRepo();
    const sha = await repo.commit({ 'a.yaml': 'a' });
    const file = join(scratch, `known_hosts-${counter}`);
    await writeFile(file, `${ssh.knownHosts}\n`);
    await run('ssh-keygen', ['-H', '-f', file]);
    const hashed = await readFile(file, 'utf8');
    expect(hashed).toMatch(/^\|1\|/);
    const source = await newSource();

    // when / then
    expect(await source.resolveRevision({ repo: url, revision: 'main', auth: auth({ knownHosts: hashed }) })).toBe(sha);
  });

  it.each(['ecdsa-sha2-nistp256', 'ssh-rsa'] as const)('negotiates the host key known_hosts lists when it has only the %s one', async (type) => {
    // given a server offering ed25519, ecdsa and rsa host keys, and known_hosts with one of them
    const { repo, url } = await newRepo();
    const sha = await repo.commit({ 'a.yaml': 'a' });
    const source = await newSource();

    // when / then
    expect(await source.resolveRevision({ repo: url, revision: 'main', auth: auth({ knownHosts: `${ssh.knownHostsByType[type]}\n` }) })).toBe(sha);
  });

  it('refuses a server whose host key known_hosts does not list, naming fingerprints only', async () => {
    // given
    const { repo, url } = await newRepo();
    await repo.commit({ 'a.yaml': 'a' });
    const otherHost = await generateSshKey('other-host');
    const wrong = `[127.0.0.1]:${ssh.port} ${otherHost.publicKey}\n`;
    const source = await newSource();

    // when
    const mismatch = await failure(source.resolveRevision({ repo: url, revision: 'main', auth: auth({ knownHosts: wrong }) }));
    const unknown = await failure(source.resolveRevision({ repo: url, revision: 'main', auth: auth({ knownHosts: `127.0.0.1 ${otherHost.publicKey}\n` }) }));

    // then
    expect(mismatch.code).toBe('AuthFailed');
    expect(mismatch.retryable).toBe(false);
    expect(mismatch.message).toMatch(
      new RegExp(`host key for 127\\.0\\.0\\.1:${ssh.port} does not match known_hosts \\(the server offered ssh-ed25519 SHA256:`),
    );
    expect(mismatch.message).not.toContain(ssh.knownHosts.split(' ')[2]);
    expect(unknown.code).toBe('AuthFailed');
    expect(unknown.message).toMatch(/known_hosts has no entry for \[127\.0\.0\.1\]:\d+ .*never trusted on first use/);
  });

  it('refuses a key the server does not accept with a clear message, and the key shows up nowhere', async () => {
    // given
    const { repo, url } = await newRepo();
    await repo.commit({ 'a.yaml': 'a' });
    const source = await newSource();
    const written: string[] = [];
    const spies = [
      vi.spyOn(process.stdout, 'write').mockImplementation((chunk: unknown) => (written.push(String(chunk)), true)),
      vi.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown) => (written.push(String(chunk)), true)),
      ...(['log', 'info', 'warn', 'error', 'debug'] as const).map((m) =>
        vi.spyOn(console, m).mockImplementation((...args: unknown[]) => void written.push(args.map(String).join(' '))),
      ),
    ];

    // when
    let err: GitSourceErrorType;
    try {
      err = await failure(source.resolveRevision({ repo: url, revision: 'main', auth: auth({ identity: stranger.privateKey }) }));
    } finally {
      for (const spy of spies) spy.mockRestore();
    }

    // then
    expect(err.code).toBe('AuthFailed');
    expect(err.retryable).toBe(false);
    expect(err.message).toBe(`${url}: ssh authentication as ${ssh.user}@127.0.0.1:${ssh.port} failed: the server refused the key from Secret ns/git-auth`);
    const everything = [err.message, err.stack ?? '', JSON.stringify(err), ...written, ssh.log()].join('\n');
    for (const part of keyParts(stranger)) expect(everything).not.toContain(part);
  });

  it('uses an encrypted key with its passphrase, and says so when the passphrase is missing', async () => {
    // given
    const { repo, url } = await newRepo();
    const sha = await repo.commit({ 'a.yaml': 'a' });
    const locked = await generateSshKey('encrypted', 'correct horse battery');
    await ssh.authorize(locked.publicKey);
    const source = await newSource();

    // when
    const resolved = await source.resolveRevision({
      repo: url,
      revision: 'main',
      auth: auth({ identity: locked.privateKey, passphrase: 'correct horse battery' }),
    });
    const without = await failure(source.resolveRevision({ repo: url, revision: 'main', auth: auth({ identity: locked.privateKey }) }));

    // then
    expect(resolved).toBe(sha);
    expect(without.code).toBe('InvalidAuth');
    expect(without.message).toMatch(/the identity in Secret ns\/git-auth is not a usable private key \(.*passphrase/i);
    for (const part of keyParts(locked)) expect(without.message).not.toContain(part);
  });

  it('refuses an identity that is not a private key without quoting it', async () => {
    // given
    const { repo, url } = await newRepo();
    await repo.commit({ 'a.yaml': 'a' });
    const source = await newSource();
    const garbage = '-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-key-but-secret-looking-material\n-----END OPENSSH PRIVATE KEY-----\n';

    // when
    const err = await failure(source.resolveRevision({ repo: url, revision: 'main', auth: auth({ identity: garbage }) }));

    // then
    expect(err.code).toBe('InvalidAuth');
    expect(err.message).toMatch(/the identity in Secret ns\/git-auth is not a usable private key/);
    expect(err.message).not.toContain('not-a-key-but-secret-looking-material');
  });

  it('reports a repository the server does not have, and an unreachable server as transient', async () => {
    // given
    const source = await newSource();
    const closedPort = ssh.port === 1 ? 2 : 1;

    // when
    const missing = await failure(source.resolveRevision({ repo: ssh.url('no-such-repo'), revision: 'main', auth: auth() }));
    const unreachable = await failure(
      source.resolveRevision({
        repo: `ssh://git@127.0.0.1:${closedPort}/r.git`,
        revision: 'main',
        auth: auth({ knownHosts: `[127.0.0.1]:${closedPort} ${ssh.knownHosts.split(' ').slice(1).join(' ')}` }),
      }),
    );

    // then
    expect(missing.message).toMatch(/repository not found \(fatal: 'no-such-repo.git' does not appear to be a git repository\)/);
    expect(missing.code).toBe('RepoNotFound');
    expect(missing.retryable).toBe(false);
    expect(unreachable.code).toBe('Unreachable');
    expect(unreachable.retryable).toBe(true);
  });
});

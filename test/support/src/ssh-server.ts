// A real SSH Git server for tests: Debian's OpenSSH sshd on 127.0.0.1 with generated host and user keys,
// whose only command is `git-upload-pack` on the bare repos of a directory (the test Git server's root, so
// the same repo is served over HTTP and SSH). The machine may have no sshd: then the openssh-server package
// is fetched with `apt-get download` and unpacked (not installed) into ~/.cache/syncline/openssh/<version>.
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { access, appendFile, chmod, mkdir, mkdtemp, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SshKeyPair {
  /** The private key, OpenSSH format (what a Secret's `identity` holds). */
  privateKey: string;
  /** `ssh-ed25519 AAAA… comment` */
  publicKey: string;
}

export interface SshGitServer extends AsyncDisposable {
  readonly host: string;
  readonly port: number;
  /** The account clients log in as (root when the tests run as root, else the current user). */
  readonly user: string;
  /** ssh://user@127.0.0.1:port/<name>.git: the repo `<name>.git` under the served directory. */
  url(repoName: string): string;
  /** The known_hosts line for this server's ed25519 host key: `[127.0.0.1]:port ssh-ed25519 AAAA…`. */
  readonly knownHosts: string;
  /** The known_hosts line for each of its host keys (it offers ed25519, ecdsa and rsa), by key type. */
  readonly knownHostsByType: Readonly<Record<'ssh-ed25519' | 'ecdsa-sha2-nistp256' | 'ssh-rsa', string>>;
  /** The key pair the server accepts. */
  readonly userKey: SshKeyPair;
  /** Lets one more public key in (`ssh-ed25519 AAAA…`). */
  authorize(publicKey: string): Promise<void>;
  /** sshd's log so far (LogLevel VERBOSE). */
  log(): string;
  close(): Promise<void>;
}

/** Generates an ed25519 key pair with ssh-keygen (encrypted when given a passphrase). */
export async function generateSshKey(comment = 'syncline-test', passphrase = ''): Promise<SshKeyPair> {
  const dir = await mkdtemp(join(tmpdir(), 'syncline-sshkey-'));
  try {
    const file = join(dir, 'key');
    await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', passphrase, '-C', comment, '-f', file]);
    return { privateKey: await readFile(file, 'utf8'), publicKey: (await readFile(`${file}.pub`, 'utf8')).trim() };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface Sshd {
  sshd: string;
  /** Where the unpacked package lives ('' for the machine's own sshd). */
  prefix: string;
  env: NodeJS.ProcessEnv;
}

let sshdPromise: Promise<Sshd> | undefined;

/** Finds sshd: the machine's, else Debian's package unpacked into the cache (shared by processes, race-safe). */
export function ensureSshd(): Promise<Sshd> {
  sshdPromise ??= locateSshd().catch((err: unknown) => {
    sshdPromise = undefined;
    throw err;
  });
  return sshdPromise;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

async function locateSshd(): Promise<Sshd> {
  if (await exists('/usr/sbin/sshd')) return { sshd: '/usr/sbin/sshd', prefix: '', env: { ...process.env } };
  const version = await candidateVersion('openssh-server');
  const root = join(homedir(), '.cache', 'syncline', 'openssh', version.replace(/[^A-Za-z0-9.+~-]/g, '_'));
  if (!(await exists(join(root, 'usr', 'sbin', 'sshd')))) {
    const work = await mkdtemp(join(tmpdir(), 'syncline-openssh-'));
    try {
      const extracted = join(work, 'root');
      await mkdir(extracted);
      // Bookworm's sshd links libwrap (TCP wrappers), which a client-only machine lacks; later releases do not.
      const packages = ['openssh-server', ...((await hasCandidate('libwrap0')) ? ['libwrap0'] : [])];
      for (const pkg of packages) {
        await run('apt-get', ['download', pkg], { cwd: work }).catch(async () => {
          await run('apt-get', ['update', '-qq']);
          await run('apt-get', ['download', pkg], { cwd: work });
        });
      }
      for (const deb of (await readdir(work)).filter((n) => n.endsWith('.deb'))) await run('dpkg-deb', ['-x', join(work, deb), extracted]);
      await mkdir(join(root, '..'), { recursive: true });
      // Extracted aside, then renamed: a racing process either wins the rename or finds the directory there.
      await rename(extracted, root).catch(async (err: unknown) => {
        if (!(await exists(join(root, 'usr', 'sbin', 'sshd')))) throw err;
      });
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
  const libs = [join(root, 'lib', 'x86_64-linux-gnu'), join(root, 'usr', 'lib', 'x86_64-linux-gnu'), join(root, 'lib'), join(root, 'usr', 'lib')];
  const env = { ...process.env, LD_LIBRARY_PATH: [...libs, process.env['LD_LIBRARY_PATH'] ?? ''].filter((p) => p !== '').join(':') };
  return { sshd: join(root, 'usr', 'sbin', 'sshd'), prefix: root, env };
}

async function candidateVersion(pkg: string): Promise<string> {
  const read = async (): Promise<string | undefined> => {
    const { stdout } = await run('apt-cache', ['policy', pkg]);
    const m = /Candidate:\s*(\S+)/.exec(stdout);
    return m?.[1] === undefined || m[1] === '(none)' ? undefined : m[1];
  };
  let version = await read();
  if (version === undefined) {
    await run('apt-get', ['update', '-qq']);
    version = await read();
  }
  if (version === undefined) throw new Error(`no sshd on this machine and apt has no ${pkg} package to download`);
  return version;
}

async function hasCandidate(pkg: string): Promise<boolean> {
  const { stdout } = await run('apt-cache', ['policy', pkg]).catch(() => ({ stdout: '' }));
  const m = /Candidate:\s*(\S+)/.exec(stdout);
  return m?.[1] !== undefined && m[1] !== '(none)';
}

/** sshd_config lines pointing OpenSSH 9.8+/10 at its sshd-session and sshd-auth next to the chosen sshd. */
async function helperBinaries(prefix: string): Promise<string[]> {
  const lines: string[] = [];
  const session = join(prefix, 'usr', 'lib', 'openssh', 'sshd-session');
  const auth = join(prefix, 'usr', 'lib', 'openssh', 'sshd-auth');
  if (prefix !== '' && (await exists(session))) lines.push(`SshdSessionPath ${session}`);
  if (prefix !== '' && (await exists(auth))) lines.push(`SshdAuthPath ${auth}`);
  return lines;
}

/**
 * sshd started as root needs its privilege separation account and directory (what the openssh-server
 * package's postinst creates). Created once, idempotently; a racing process's useradd failing is fine.
 */
async function ensurePrivsep(): Promise<void> {
  if (process.getuid?.() !== 0) return;
  await mkdir('/run/sshd', { recursive: true, mode: 0o755 });
  const known = await run('id', ['-u', 'sshd']).then(
    () => true,
    () => false,
  );
  if (known) return;
  await run('useradd', ['--system', '--no-create-home', '--home-dir', '/run/sshd', '--shell', '/usr/sbin/nologin', 'sshd']).catch(async (err: unknown) => {
    await run('id', ['-u', 'sshd']).catch(() => {
      throw err;
    });
  });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Starts sshd serving `git-upload-pack` for the bare repos under `root` (`/<name>.git` → `<root>/<name>.git`). */
export async function startSshGitServer(opts: { root: string }): Promise<SshGitServer> {
  const found = await ensureSshd();
  await ensurePrivsep();
  const dir = await mkdtemp(join(tmpdir(), 'syncline-sshd-'));
  await chmod(dir, 0o755);
  // Several host keys, as real servers have: a client must check the one it negotiates.
  const hostKeys = { 'ssh-ed25519': ['-t', 'ed25519'], 'ecdsa-sha2-nistp256': ['-t', 'ecdsa', '-b', '256'], 'ssh-rsa': ['-t', 'rsa', '-b', '3072'] } as const;
  const hostKeyFiles: string[] = [];
  const knownHostsByType = {} as Record<keyof typeof hostKeys, string>;
  for (const [type, args] of Object.entries(hostKeys) as Array<[keyof typeof hostKeys, readonly string[]]>) {
    const file = join(dir, `host_${type}`);
    await run('ssh-keygen', ['-q', ...args, '-N', '', '-C', 'syncline-test-host', '-f', file]);
    hostKeyFiles.push(file);
    const publicKey = (await readFile(`${file}.pub`, 'utf8')).trim().split(' ').slice(0, 2).join(' ');
    knownHostsByType[type] = `[127.0.0.1]:PORT ${publicKey}`;
  }
  const userKey = await generateSshKey('syncline-test-user');
  const serve = join(dir, 'serve.sh');
  // Only `git-upload-pack '<path>'` runs; the path is taken relative to the served directory.
  await writeFile(
    serve,
    [
      '#!/bin/sh',
      'set -f',
      'case "$SSH_ORIGINAL_COMMAND" in',
      `  "git-upload-pack '"*"'") p=\${SSH_ORIGINAL_COMMAND#git-upload-pack \\'}; p=\${p%\\'}; p=\${p#/}; p=\${p#\\~/} ;;`,
      '  *) echo "only git-upload-pack is served here" >&2; exit 1 ;;',
      'esac',
      'case "$p" in *..*) echo "bad path" >&2; exit 1 ;; esac',
      `cd '${opts.root}' || exit 1`,
      `[ -d "$p" ] || { echo "fatal: '$p' does not appear to be a git repository" >&2; exit 128; }`,
      'exec git-upload-pack --strict -- "$p"',
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  const authorizedKeys = join(dir, 'authorized_keys');
  const authorizedLine = (publicKey: string): string => `command="${serve}",no-pty,no-port-forwarding,no-agent-forwarding,no-X11-forwarding ${publicKey}\n`;
  await writeFile(authorizedKeys, authorizedLine(userKey.publicKey), { mode: 0o644 });
  const port = await freePort();
  const user = process.getuid?.() === 0 ? 'root' : userInfo().username;
  const configFile = join(dir, 'sshd_config');
  await writeFile(
    configFile,
    [
      'ListenAddress 127.0.0.1',
      `Port ${port}`,
      ...hostKeyFiles.map((f) => `HostKey ${f}`),
      `AuthorizedKeysFile ${authorizedKeys}`,
      'StrictModes no',
      'PidFile none',
      'UsePAM no',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'PermitRootLogin prohibit-password',
      'AcceptEnv GIT_PROTOCOL',
      'MaxStartups 100',
      'MaxAuthTries 10',
      'LogLevel VERBOSE',
      ...(await helperBinaries(found.prefix)),
      '',
    ].join('\n'),
  );

  const child: ChildProcess = spawn(found.sshd, ['-D', '-e', '-f', configFile], { env: found.env, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.on('data', (c: Buffer) => {
    log += c.toString('utf8');
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sshd did not start listening in 30 s:\n${log}`)), 30_000);
    const check = (): void => {
      if (/Server listening on 127\.0\.0\.1 port/.test(log)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stderr?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`sshd exited with ${String(code)}:\n${log}`));
    });
    check();
  });

  let closed = false;
  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    if (child.exitCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  }

  return {
    host: '127.0.0.1',
    port,
    user,
    url: (name) => `ssh://${user}@127.0.0.1:${port}/${name}.git`,
    knownHosts: knownHostsByType['ssh-ed25519'].replace('PORT', String(port)),
    knownHostsByType: Object.fromEntries(Object.entries(knownHostsByType).map(([type, line]) => [type, line.replace('PORT', String(port))])) as Record<
      keyof typeof hostKeys,
      string
    >,
    userKey,
    authorize: (publicKey) => appendFile(authorizedKeys, authorizedLine(publicKey)),
    log: () => log,
    close,
    [Symbol.asyncDispose]: close,
  };
}

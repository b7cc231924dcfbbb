// A Vault-compatible server on loopback for tests of SOPS files whose data key Vault transit wraps: Vault's own
// transit secrets engine (github.com/hashicorp/vault/builtin/logical/transit) behind the thin HTTP layer in
// test/support/vault-transit (token check, method → operation, Vault's response and error shapes), in-memory
// storage like `vault server -dev`. Built from its Go module on first use and cached by the hash of what goes
// into the build; one build at a time per machine (the lock ensureGoTool uses). The whole Vault or OpenBao
// server is not built: it takes far longer, and tests need only the engine.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { MissingGoError } from './control-plane.ts';
import { withBuildLock } from './go-tool.ts';

const moduleDir = join(import.meta.dirname, '..', 'vault-transit');

export interface VaultTransit {
  /** `http://127.0.0.1:PORT` */
  readonly address: string;
  /** The only token the server accepts (a dev server's root token). */
  readonly token: string;
  /** Creates an aes256-gcm96 transit key, as `vault write -f <mount>/keys/<name>` does. */
  createKey(mount: string, name: string): Promise<void>;
  stop(): Promise<void>;
}

function defaultCacheDir(): string {
  // Test-only helper: reading the environment here is the test harness's own composition root.
  const xdg = process.env['XDG_CACHE_HOME'];
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), 'syncline');
}

function buildKey(): string {
  const hash = createHash('sha256');
  const files = readdirSync(moduleDir).filter((f) => f === 'go.mod' || f === 'go.sum' || (f.endsWith('.go') && !f.endsWith('_test.go')));
  for (const file of files.sort()) hash.update(file).update('\0').update(readFileSync(join(moduleDir, file))).update('\0');
  return hash.digest('hex').slice(0, 16);
}

/** The path of the vault-transit binary for this source, built when the cache has none (minutes on a cold machine). */
export async function ensureVaultTransit(options: { cacheDir?: string; onProgress?: (line: string) => void } = {}): Promise<string> {
  const cacheDir = options.cacheDir ?? defaultCacheDir();
  const dir = join(cacheDir, 'tools', 'vault-transit', buildKey());
  const binary = join(dir, 'vault-transit');
  if (existsSync(binary)) return binary;
  return withBuildLock(join(cacheDir, 'tools', '.build-lock'), options, async () => {
    if (existsSync(binary)) return binary;
    const go = spawnSync('go', ['version'], { encoding: 'utf8' });
    if (go.error !== undefined || go.status !== 0) throw new MissingGoError();
    mkdirSync(dir, { recursive: true });
    const aside = `${binary}.${process.pid}.${randomBytes(4).toString('hex')}`;
    options.onProgress?.('building vault-transit (Vault’s transit engine) from test/support/vault-transit (first run on this machine; minutes)');
    const started = Date.now();
    try {
      await new Promise<void>((resolve, reject) => {
        const child = spawn('go', ['build', '-trimpath', '-ldflags=-s -w', '-o', aside, '.'], {
          cwd: moduleDir,
          env: { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let output = '';
        child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.on('error', reject);
        child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`building vault-transit failed (exit ${code}):\n${output.slice(-4000)}`))));
      });
      renameSync(aside, binary);
    } finally {
      rmSync(aside, { force: true });
    }
    options.onProgress?.(`built vault-transit in ${Math.round((Date.now() - started) / 1000)}s`);
    return binary;
  });
}

/** Starts the server with the transit engine mounted at each of `mounts` (default `transit`), on a free loopback port. */
export async function startVaultTransit(options: { mounts?: readonly string[]; onProgress?: (line: string) => void } = {}): Promise<VaultTransit> {
  const binary = await ensureVaultTransit(options.onProgress === undefined ? {} : { onProgress: options.onProgress });
  const token = `hvs.test-${randomBytes(12).toString('hex')}`;
  const child = spawn(binary, ['-listen', '127.0.0.1:0', '-token', token, '-mount', (options.mounts ?? ['transit']).join(',')], { stdio: ['ignore', 'pipe', 'pipe'] });
  const address = await listeningAddress(child);
  const createKey = async (mount: string, name: string): Promise<void> => {
    const response = await fetch(`${address}/v1/${mount}/keys/${name}`, { method: 'POST', headers: { 'X-Vault-Token': token }, body: '{}' });
    if (!response.ok) throw new Error(`creating transit key ${mount}/keys/${name}: HTTP ${response.status} ${await response.text()}`);
  };
  return {
    address,
    token,
    createKey,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill();
      await exited;
    },
  };
}

async function listeningAddress(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`vault-transit did not start:\n${output.slice(-2000)}`));
    }, 30_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = /listening on (\S+)/.exec(output);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        // Keep draining, so a chatty server never blocks on a full pipe.
        child.stdout?.resume();
        resolve(`http://${match[1]}`);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`vault-transit exited (${code}) before serving:\n${output.slice(-2000)}`));
    });
  });
}

// A Vault-compatible server on loopback for tests of SOPS files whose data key Vault transit wraps: Vault's own
// transit secrets engine (github.com/hashicorp/vault/builtin/logical/transit) behind the thin HTTP layer in
// test/support/vault-transit (token check, method → operation, Vault's response and error shapes), in-memory
// storage like `vault server -dev`. Built from its Go module on first use and cached by the hash of what goes
// into the build; one build at a time per machine (the lock ensureGoTool uses). The whole Vault or OpenBao
// server is not built: it takes far longer, and tests need only the engine.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { ensureLocalGoBuild, moduleKey, type GoToolOptions } from './go-tool.ts';

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

/** The path of the vault-transit binary for this source, built when the cache has none (minutes on a cold machine). */
export function ensureVaultTransit(options: GoToolOptions = {}): Promise<string> {
  return ensureLocalGoBuild(
    {
      name: 'vault-transit',
      moduleDir,
      cachePath: ['tools', 'vault-transit', moduleKey(moduleDir)],
      binaryName: 'vault-transit',
      command: (out) => ['go', 'build', '-trimpath', '-ldflags=-s -w', '-o', out, '.'],
      env: { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly' },
      what: 'vault-transit (Vault’s transit engine) from test/support/vault-transit',
    },
    options,
  );
}

/** Starts the server with the transit engine mounted at each of `mounts` (default `transit`), on a free loopback port. */
export async function startVaultTransit(options: { mounts?: readonly string[]; onProgress?: (line: string) => void } = {}): Promise<VaultTransit> {
  const binary = await ensureVaultTransit(options.onProgress === undefined ? {} : { onProgress: options.onProgress });
  const token = `hvs.test-${randomBytes(12).toString('hex')}`;
  const child = spawn(binary, ['-listen', '127.0.0.1:0', '-token', token, '-mount', (options.mounts ?? ['transit']).join(',')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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

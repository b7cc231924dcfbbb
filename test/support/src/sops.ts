// The real sops CLI, built from its Go module on first use (ensureGoTool), for tests that check Syncline's
// decryption against what sops itself writes and prints. Never needed at run time.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureGoTool } from './go-tool.ts';

export const SOPS_TOOL = { name: 'sops', pkg: 'github.com/getsops/sops/v3/cmd/sops', version: 'v3.13.3' } as const;

export interface SopsCli {
  readonly binary: string;
  /**
   * `sops encrypt` of `plaintext` written as `name` in a scratch directory (so `.sops.yaml`, given as
   * `config`, applies its creation rules by name). Returns what sops printed.
   */
  encrypt(options: { name: string; plaintext: string | Uint8Array; args?: readonly string[]; config?: string; env?: Record<string, string> }): Buffer;
  /** `sops decrypt` of `encrypted` written as `name`; throws with sops' stderr when it fails. */
  decrypt(options: { name: string; encrypted: string | Uint8Array; env?: Record<string, string> }): Buffer;
  /** `sops set` of one value (as a user edits a file: the data key is kept); returns the file after the edit. */
  set(options: { name: string; encrypted: string | Uint8Array; path: string; value: string; env: Record<string, string> }): Buffer;
}

/** Minutes on a cold machine (the Go build), instant afterwards. Call from beforeAll. */
export async function ensureSops(onProgress?: (line: string) => void): Promise<SopsCli> {
  const binary = await ensureGoTool(SOPS_TOOL, onProgress === undefined ? {} : { onProgress });
  const run = (
    name: string,
    content: string | Uint8Array,
    args: readonly string[],
    env: Record<string, string> | undefined,
    config?: string,
    after: readonly string[] = [],
    readBack = false,
  ): Buffer => {
    const dir = mkdtempSync(join(tmpdir(), 'syncline-sops-'));
    try {
      writeFileSync(join(dir, name), content);
      if (config !== undefined) writeFileSync(join(dir, '.sops.yaml'), config);
      const result = spawnSync(binary, [...args, name, ...after], {
        cwd: dir,
        // Only what the test gives: no key of the machine running the tests leaks in.
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: dir, GNUPGHOME: join(dir, 'no-gnupg'), ...env },
        maxBuffer: 256 * 1024 * 1024,
      });
      if (result.status !== 0) throw new Error(`sops ${args.join(' ')} ${name} failed (${result.status}): ${result.stderr.toString()}`);
      return readBack ? readFileSync(join(dir, name)) : result.stdout;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  return {
    binary,
    encrypt: ({ name, plaintext, args = [], config, env }) => run(name, plaintext, ['encrypt', ...args], env, config),
    decrypt: ({ name, encrypted, env }) => run(name, encrypted, ['decrypt'], env),
    set: ({ name, encrypted, path, value, env }) => run(name, encrypted, ['set'], env, undefined, [path, value], true),
  };
}

/** A fresh age key pair (the identity goes into a key Secret's `*.agekey`, the recipient to `sops --age`). */
export async function generateAgeKey(): Promise<{ identity: string; recipient: string }> {
  const { generateIdentity, identityToRecipient } = await import('age-encryption');
  const identity = await generateIdentity();
  return { identity, recipient: await identityToRecipient(identity) };
}

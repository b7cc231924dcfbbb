// A real AWS KMS API server on loopback: local-kms (github.com/nsmithuk/local-kms), built from its Go module on
// first use and seeded with one AES key. For tests of SOPS files whose data key is wrapped by KMS.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureGoTool } from './go-tool.ts';

export const LOCAL_KMS_TOOL = { name: 'local-kms', pkg: 'github.com/nsmithuk/local-kms', version: 'v0.0.0-20260228092603-2a5e92d09ab6' } as const;

export interface LocalKms {
  /** `http://127.0.0.1:PORT` */
  readonly endpoint: string;
  readonly region: string;
  /** The ARN of the seeded symmetric key. */
  readonly keyArn: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function startLocalKms(onProgress?: (line: string) => void): Promise<LocalKms> {
  const binary = await ensureGoTool(LOCAL_KMS_TOOL, onProgress === undefined ? {} : { onProgress });
  const dir = mkdtempSync(join(tmpdir(), 'syncline-kms-'));
  const keyId = 'bc436485-5092-42b8-92a3-0aa8b93536dc';
  writeFileSync(
    join(dir, 'seed.yaml'),
    `Keys:\n  Symmetric:\n    Aes:\n      - Metadata:\n          KeyId: ${keyId}\n        BackingKeys:\n          - 5cdaead27fe7da2de47945d73cd6d79e36494e73802f3cd3869f1d2cb0b5d7a9\n`,
  );
  const port = await freePort();
  const region = 'eu-west-2';
  const child = spawn(binary, [], {
    env: { PATH: process.env['PATH'] ?? '', PORT: String(port), KMS_REGION: region, KMS_SEED_PATH: join(dir, 'seed.yaml'), KMS_DATA_PATH: join(dir, 'data') },
    stdio: 'ignore',
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const up = await fetch(endpoint, { method: 'POST' }).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill();
      throw new Error('local-kms did not start');
    }
    await sleep(100);
  }
  return {
    endpoint,
    region,
    keyArn: `arn:aws:kms:${region}:111122223333:key/${keyId}`,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill();
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

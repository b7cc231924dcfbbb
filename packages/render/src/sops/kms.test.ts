// AWS KMS key groups: files the real sops CLI encrypted with a KMS key of a real KMS-API server on loopback
// (local-kms, built from its Go module), decrypted here through the SigV4 client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSops, generateAgeKey, startLocalKms } from '@syncline/test-support';
import type { LocalKms, SopsCli } from '@syncline/test-support';
import { decryptSopsFile } from './decrypt.ts';
import { SopsError, SopsErrorCause } from './errors.ts';
import { parseKeySecret } from './keys.ts';

let sops: SopsCli;
let kms: LocalKms;
const credentials = 'aws_access_key_id: AKIDSYNCLINETEST\naws_secret_access_key: not-a-real-secret-key\n';

beforeAll(async () => {
  sops = await ensureSops((line) => console.log(line));
  kms = await startLocalKms((line) => console.log(line));
}, 20 * 60_000);
afterAll(async () => {
  await kms?.stop();
});

const sopsEnv = (): Record<string, string> => ({
  AWS_ACCESS_KEY_ID: 'AKIDSYNCLINETEST',
  AWS_SECRET_ACCESS_KEY: 'x',
  AWS_REGION: kms.region,
  AWS_ENDPOINT_URL_KMS: kms.endpoint,
});

async function failure(promise: Promise<unknown>): Promise<SopsError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof SopsError) return error;
    throw error;
  }
  throw new Error('expected a SopsError');
}

describe('AWS KMS (local-kms)', () => {
  it('decrypts a file whose data key KMS wrapped, with the Secret’s credentials, to what sops decrypt prints', async () => {
    const encrypted = sops.encrypt({ name: 'db.env', plaintext: 'PASSWORD=kms-protected\nUSER=app\n', args: ['--kms', kms.keyArn], env: sopsEnv() });
    expect(encrypted.toString()).toContain(`sops_kms__list_0__map_arn=${kms.keyArn}`);
    const keys = await parseKeySecret('Secret ns/aws', { 'sops.aws-kms': credentials });
    const ours = await decryptSopsFile({ path: 'db.env', content: encrypted, keys, services: { kmsEndpoint: () => kms.endpoint } });
    expect(Buffer.from(ours as string)).toEqual(sops.decrypt({ name: 'db.env', encrypted, env: sopsEnv() }));
  });

  it('uses the operator’s own credentials only when given them (the admin flag), never by default', async () => {
    const age = await generateAgeKey();
    const encrypted = sops.encrypt({ name: 'v.yaml', plaintext: 'token: t\n', args: ['--kms', kms.keyArn], env: sopsEnv() });
    const ageOnly = await parseKeySecret('Secret ns/k', { 'id.agekey': age.identity });
    const refused = await failure(decryptSopsFile({ path: 'v.yaml', content: encrypted, keys: ageOnly, services: { kmsEndpoint: () => kms.endpoint } }));
    expect(refused.code).toBe(SopsErrorCause.NoMatchingKey);
    expect(refused.message).toContain(`kms ${kms.keyArn}`);
    const allowed = await decryptSopsFile({
      path: 'v.yaml',
      content: encrypted,
      keys: ageOnly,
      services: { kmsEndpoint: () => kms.endpoint, environmentAws: { accessKeyId: 'AKIDOPERATOR', secretAccessKey: 'op' } },
    });
    expect(allowed).toContain('token: t');
  });

  it('says KMS is unreachable (retryable), naming the key and not the credentials', async () => {
    const encrypted = sops.encrypt({ name: 'u.yaml', plaintext: 'token: t\n', args: ['--kms', kms.keyArn], env: sopsEnv() });
    const keys = await parseKeySecret('Secret ns/aws', { 'sops.aws-kms': credentials });
    const error = await failure(
      decryptSopsFile({ path: 'u.yaml', content: encrypted, keys, services: { kmsEndpoint: () => 'http://127.0.0.1:9', timeoutMs: 2000 } }),
    );
    expect(error.code).toBe(SopsErrorCause.ProviderUnavailable);
    expect(error.retryable).toBe(true);
    expect(error.message).toContain(`AWS KMS ${kms.keyArn}: unreachable`);
    expect(error.message).not.toContain('not-a-real-secret-key');
  });
});

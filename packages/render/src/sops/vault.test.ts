// Vault transit key groups: files the real sops CLI encrypted with `--hc-vault-transit` against a Vault-compatible
// server on loopback (Vault's own transit engine, test/support/vault-transit), decrypted here through the
// Vault HTTP client with the key Secret's `sops.vault-token`.
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSops, generateAgeKey, startVaultTransit } from '@syncline/test-support';
import type { SopsCli, VaultTransit } from '@syncline/test-support';
import { decryptSopsFile } from './decrypt.ts';
import { SopsError, SopsErrorCause } from './errors.ts';
import { parseKeySecret } from './keys.ts';

let sops: SopsCli;
let vault: VaultTransit;

beforeAll(async () => {
  sops = await ensureSops((line) => console.log(line));
  vault = await startVaultTransit({ mounts: ['transit', 'sops'], onProgress: (line) => console.log(line) });
  await vault.createKey('transit', 'app');
  await vault.createKey('sops', 'team');
}, 30 * 60_000);
afterAll(async () => {
  await vault?.stop();
});

const sopsEnv = (): Record<string, string> => ({ VAULT_TOKEN: vault.token });
const keyUri = (mount: string, name: string): string => `${vault.address}/v1/${mount}/keys/${name}`;

async function failure(promise: Promise<unknown>): Promise<SopsError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof SopsError) return error;
    throw error;
  }
  throw new Error('expected a SopsError');
}

describe('Vault transit (Vault’s transit engine on loopback)', () => {
  it('decrypts YAML and dotenv files sops encrypted with --hc-vault-transit to what sops decrypt prints', async () => {
    const keys = await parseKeySecret('Secret ns/vault', { 'sops.vault-token': `${vault.token}\n` });
    const yaml = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: vault-wrapped\n  port: 5432\n';
    const encrypted = sops.encrypt({ name: 'db.yaml', plaintext: yaml, args: ['--hc-vault-transit', keyUri('transit', 'app')], env: sopsEnv() });
    expect(encrypted.toString()).toContain('engine_path: transit');
    expect(encrypted.toString()).toMatch(/enc: vault:v1:/);
    const ours = await decryptSopsFile({ path: 'db.yaml', content: encrypted, keys });
    expect(parseAllDocuments(ours as string).map((doc): unknown => doc.toJS() as unknown)).toEqual(
      parseAllDocuments(sops.decrypt({ name: 'db.yaml', encrypted, env: sopsEnv() }).toString()).map((doc): unknown => doc.toJS() as unknown),
    );
    expect(ours).toContain('password: vault-wrapped');

    const env = 'PASSWORD=from-a-second-mount\n#a comment\nUSER=app\n';
    const dotenv = sops.encrypt({ name: 'db.env', plaintext: env, args: ['--hc-vault-transit', keyUri('sops', 'team')], env: sopsEnv() });
    const plain = await decryptSopsFile({ path: 'db.env', content: dotenv, keys });
    expect(Buffer.from(plain as string)).toEqual(sops.decrypt({ name: 'db.env', encrypted: dotenv, env: sopsEnv() }));
    expect(plain).toBe(env);
  });

  it('joins a Vault key group and an age key group with the Shamir threshold', async () => {
    const age = await generateAgeKey();
    const config = `creation_rules:\n  - path_regex: .*\n    shamir_threshold: 2\n    key_groups:\n      - hc_vault: ['${keyUri('transit', 'app')}']\n      - age: ['${age.recipient}']\n`;
    const encrypted = sops.encrypt({ name: 'split.yaml', plaintext: 'token: needs-both\n', config, env: sopsEnv() });
    const both = await parseKeySecret('Secret ns/both', { 'sops.vault-token': vault.token, 'id.agekey': age.identity });
    expect(await decryptSopsFile({ path: 'split.yaml', content: encrypted, keys: both })).toBe('token: needs-both\n');
    const ageOnly = await parseKeySecret('Secret ns/age', { 'id.agekey': age.identity });
    const error = await failure(decryptSopsFile({ path: 'split.yaml', content: encrypted, keys: ageOnly }));
    expect(error.code).toBe(SopsErrorCause.NoMatchingKey);
    expect(error.message).toContain('1 of the 2 key groups');
    expect(error.message).toContain(`vault ${keyUri('transit', 'app')}`);
  });

  it('names the refusal of a wrong token without the token, and keeps the token from unlisted addresses', async () => {
    const encrypted = sops.encrypt({ name: 'r.yaml', plaintext: 'token: t\n', args: ['--hc-vault-transit', keyUri('transit', 'app')], env: sopsEnv() });
    const wrong = await parseKeySecret('Secret ns/wrong', { 'sops.vault-token': 'hvs.wrong-token-value' });
    const refused = await failure(decryptSopsFile({ path: 'r.yaml', content: encrypted, keys: wrong }));
    expect(refused.code).toBe(SopsErrorCause.NoMatchingKey);
    expect(refused.retryable).toBe(false);
    expect(refused.message).toContain(`Vault ${vault.address} transit/keys/app: refused the request (HTTP 403: permission denied)`);
    expect(refused.message).not.toContain('wrong-token-value');
    expect(refused.message).not.toContain(vault.token);

    const listed = await parseKeySecret('Secret ns/listed', { 'sops.vault-token': vault.token, 'sops.vault-addresses': 'https://vault.example.com\n' });
    const kept = await failure(decryptSopsFile({ path: 'r.yaml', content: encrypted, keys: listed }));
    expect(kept.message).toContain('sops.vault-addresses does not list this address');
  });

  it('says Vault is unreachable (retryable), naming the provider and the cause and not the token', async () => {
    const other = await startVaultTransit();
    await other.createKey('transit', 'gone');
    const encrypted = sops.encrypt({
      name: 'u.yaml',
      plaintext: 'token: t\n',
      args: ['--hc-vault-transit', `${other.address}/v1/transit/keys/gone`],
      env: { VAULT_TOKEN: other.token },
    });
    await other.stop();
    const keys = await parseKeySecret('Secret ns/vault', { 'sops.vault-token': other.token });
    const error = await failure(decryptSopsFile({ path: 'u.yaml', content: encrypted, keys, services: { timeoutMs: 5000 } }));
    expect(error.code).toBe(SopsErrorCause.ProviderUnavailable);
    expect(error.retryable).toBe(true);
    expect(error.message).toContain(`Vault ${other.address} transit/keys/gone: unreachable (ECONNREFUSED)`);
    expect(error.message).not.toContain(other.token);
  });
});

// The keys a sync decrypts with, read from its key Secret (the shape Flux's kustomize-controller reads):
// `*.agekey` (age identities, one per line, `#` comments), `*.asc` (armored OpenPGP private keys),
// `sops.vault-token` (a Vault token for transit keys) and `sops.aws-kms` (AWS credentials for KMS keys).
// Everything here stays in memory; `fingerprint` is a digest of the material, for cache keys only.
import { createHash } from 'node:crypto';
import type * as ageEncryption from 'age-encryption';
import type * as openpgp from 'openpgp';

// The age and OpenPGP libraries are loaded on first use: an operator whose syncs hold no such key (most) does not
// carry their code in memory.
const ageLibrary = (): Promise<typeof ageEncryption> => import('age-encryption');
const pgpLibrary = (): Promise<typeof openpgp> => import('openpgp');
import { parse as parseYaml } from 'yaml';
import { SopsError, SopsErrorCause } from './errors.ts';

export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string | undefined;
}

export interface SopsKeyRing {
  /** `Secret namespace/name`, for messages. */
  readonly source: string;
  /** age identities and the recipients they answer to (public, may appear in messages). */
  readonly age: readonly { readonly identity: string; readonly recipient: string }[];
  /** Unlocked OpenPGP private keys. */
  readonly pgp: readonly openpgp.PrivateKey[];
  readonly vaultToken: string | undefined;
  /** When set, the only Vault addresses the token is sent to (`sops.vault-addresses`, one per line). */
  readonly vaultAddresses: readonly string[] | undefined;
  readonly aws: AwsCredentials | undefined;
  /** Digest of all key material: two rings with the same fingerprint open the same files. */
  readonly fingerprint: string;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

function asText(source: string, key: string, value: Uint8Array | string): string {
  if (typeof value === 'string') return value;
  try {
    return decoder.decode(value);
  } catch {
    throw new SopsError({ cause: SopsErrorCause.InvalidKey, file: source, detail: `key ${key} is not UTF-8 text` });
  }
}

/** Reads a key Secret's data (values already base64-decoded). Throws SopsError naming the Secret key, never its content. */
export async function parseKeySecret(source: string, data: Readonly<Record<string, Uint8Array | string>>): Promise<SopsKeyRing> {
  const hash = createHash('sha256');
  const age: { identity: string; recipient: string }[] = [];
  const pgp: openpgp.PrivateKey[] = [];
  let vaultToken: string | undefined;
  let vaultAddresses: string[] | undefined;
  let aws: AwsCredentials | undefined;
  for (const key of Object.keys(data).sort()) {
    const value = data[key];
    if (value === undefined) continue;
    const content = asText(source, key, value);
    hash.update(key).update('\0').update(content).update('\0');
    if (key.endsWith('.agekey')) age.push(...(await readAgeIdentities(source, key, content)));
    else if (key.endsWith('.asc')) pgp.push(...(await readPgpKeys(source, key, content)));
    else if (key === 'sops.vault-token') vaultToken = content.trim();
    else if (key === 'sops.vault-addresses')
      vaultAddresses = content
        .split('\n')
        .map((line) => line.trim().replace(/\/+$/, ''))
        .filter((line) => line !== '' && !line.startsWith('#'));
    else if (key === 'sops.aws-kms') aws = readAwsCredentials(source, key, content);
  }
  if (age.length === 0 && pgp.length === 0 && vaultToken === undefined && aws === undefined) {
    throw new SopsError({
      cause: SopsErrorCause.KeySecretInvalid,
      file: source,
      detail: 'holds no key: expected *.agekey, *.asc, sops.vault-token or sops.aws-kms',
    });
  }
  return { source, age, pgp, vaultToken, vaultAddresses, aws, fingerprint: hash.digest('hex') };
}

async function readAgeIdentities(source: string, key: string, content: string): Promise<{ identity: string; recipient: string }[]> {
  const identities: { identity: string; recipient: string }[] = [];
  const { identityToRecipient } = await ageLibrary();
  const lines = content.split(/\r?\n/);
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    try {
      if (!line.startsWith('AGE-SECRET-KEY-')) throw new Error('not an identity');
      identities.push({ identity: line, recipient: await identityToRecipient(line) });
    } catch {
      throw new SopsError({
        cause: SopsErrorCause.InvalidKey,
        file: source,
        detail: `key ${key} line ${index + 1} is not an age identity (AGE-SECRET-KEY-1…)`,
      });
    }
  }
  if (identities.length === 0) throw new SopsError({ cause: SopsErrorCause.InvalidKey, file: source, detail: `key ${key} holds no age identity` });
  return identities;
}

async function readPgpKeys(source: string, key: string, content: string): Promise<openpgp.PrivateKey[]> {
  let keys: openpgp.PrivateKey[];
  try {
    keys = await (await pgpLibrary()).readPrivateKeys({ armoredKeys: content });
  } catch {
    throw new SopsError({ cause: SopsErrorCause.InvalidKey, file: source, detail: `key ${key} is not an armored OpenPGP private key` });
  }
  for (const privateKey of keys) {
    if (!privateKey.isDecrypted()) {
      throw new SopsError({
        cause: SopsErrorCause.InvalidKey,
        file: source,
        detail: `key ${key} holds a passphrase-protected OpenPGP key (${privateKey.getFingerprint().toUpperCase()}); export it without a passphrase`,
      });
    }
  }
  return keys;
}

/** `sops.aws-kms`: YAML with aws_access_key_id, aws_secret_access_key and optionally aws_session_token. */
function readAwsCredentials(source: string, key: string, content: string): AwsCredentials {
  let parsed: unknown;
  try {
    parsed = parseYaml(content);
  } catch {
    parsed = undefined;
  }
  const fields = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  const accessKeyId = fields['aws_access_key_id'];
  const secretAccessKey = fields['aws_secret_access_key'];
  const sessionToken = fields['aws_session_token'];
  if (typeof accessKeyId !== 'string' || typeof secretAccessKey !== 'string') {
    throw new SopsError({ cause: SopsErrorCause.InvalidKey, file: source, detail: `key ${key} needs aws_access_key_id and aws_secret_access_key` });
  }
  return { accessKeyId, secretAccessKey, sessionToken: typeof sessionToken === 'string' ? sessionToken : undefined };
}

/** age: the data key is an armored age file; any identity of the ring may open it. */
export async function unwrapAge(ring: SopsKeyRing, enc: string): Promise<Uint8Array | undefined> {
  if (ring.age.length === 0) return undefined;
  const { Decrypter, armor } = await ageLibrary();
  let file: Uint8Array;
  try {
    file = armor.decode(enc);
  } catch {
    return undefined;
  }
  const decrypter = new Decrypter();
  for (const { identity } of ring.age) decrypter.addIdentity(identity);
  try {
    return await decrypter.decrypt(file, 'uint8array');
  } catch {
    return undefined;
  }
}

/** OpenPGP: the data key is an armored message to one of the ring's keys. */
export async function unwrapPgp(ring: SopsKeyRing, enc: string): Promise<Uint8Array | undefined> {
  if (ring.pgp.length === 0) return undefined;
  try {
    const pgp = await pgpLibrary();
    const message = await pgp.readMessage({ armoredMessage: enc });
    const decrypted = await pgp.decrypt({ message, decryptionKeys: [...ring.pgp], format: 'binary' });
    const data: unknown = decrypted.data;
    return data instanceof Uint8Array ? data : undefined;
  } catch {
    return undefined;
  }
}

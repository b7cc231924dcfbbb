// Errors of SOPS decryption. Every message names the file (repo-relative) and, where one exists, the key
// that could not be used by its public identity (an age recipient, a PGP fingerprint, a Vault key path, a
// KMS key ARN). A message never carries a decrypted value, a data key, key material or a token: conditions
// and events are readable by anyone who can read the object.

export const SopsErrorCause = {
  /** An encrypted file in a sync that has no `spec.decryption`. Stalling: add decryption or remove the file. */
  NotConfigured: 'NotConfigured',
  /** The MAC over the decrypted values does not match, or a value does not authenticate. Stalling. */
  MacMismatch: 'MacMismatch',
  /** No key in the key Secret opens the file's data key. Stalling until the Secret or file changes. */
  NoMatchingKey: 'NoMatchingKey',
  /** An entry of the key Secret is not a usable key (not an age identity, a passphrase-protected PGP key). Stalling. */
  InvalidKey: 'InvalidKey',
  /** The key Secret is missing or holds no key. Stalling until it changes. */
  KeySecretInvalid: 'KeySecretInvalid',
  /** A key service (Vault, KMS) could not be reached or answered with a server error. Transient. */
  ProviderUnavailable: 'ProviderUnavailable',
  /** The file does not have the SOPS structure (bad metadata, a half-encrypted value, bad syntax). Stalling. */
  MalformedFile: 'MalformedFile',
  /** The file's `sops.version` is not one this decrypter knows. Stalling. */
  UnsupportedVersion: 'UnsupportedVersion',
  /** The file uses a SOPS option or key type this decrypter does not support. Stalling. */
  Unsupported: 'Unsupported',
  /** The encrypted file is over the size limit. Stalling. */
  TooLarge: 'TooLarge',
} as const;
export type SopsErrorCause = (typeof SopsErrorCause)[keyof typeof SopsErrorCause];

const transientCauses: ReadonlySet<SopsErrorCause> = new Set([SopsErrorCause.ProviderUnavailable]);

export class SopsError extends Error {
  override readonly name = 'SopsError';
  readonly code: SopsErrorCause;
  /** Repo-relative path of the file. */
  readonly file: string;
  /** True when retrying with backoff may help (a key service was unreachable); false when an input must change. */
  readonly retryable: boolean;

  constructor(init: { cause: SopsErrorCause; file: string; detail: string }) {
    super(`${init.file}: ${init.detail}`);
    this.code = init.cause;
    this.file = init.file;
    this.retryable = transientCauses.has(init.cause);
  }
}

export function isSopsError(error: unknown): error is SopsError {
  return error instanceof SopsError;
}

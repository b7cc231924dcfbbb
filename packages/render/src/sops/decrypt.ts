// Decrypting one file of a snapshot, in memory: find its format, read its metadata, recover the data key
// from the key groups (age and OpenPGP first, as sops orders them, then Vault and KMS; several groups are
// joined with Shamir's secret sharing), decrypt the values, verify the MAC, and write the plaintext in the
// file's own format. Unwrapped data keys are cached in memory by (key groups, key ring) digest, so a commit
// that changes values but not recipients costs no asymmetric work.
import { createHash, timingSafeEqual } from 'node:crypto';
import { decryptValue } from './cipher.ts';
import { SopsError, SopsErrorCause } from './errors.ts';
import { FormatError, SopsFormat, emitDotenv, emitInPlace, emitJson, emitYaml, loadEncrypted, mayBeEncrypted, sopsFormatOf } from './formats.ts';
import type { LoadedAny } from './formats.ts';
import { emitIni } from './ini.ts';
import { unwrapAge, unwrapPgp } from './keys.ts';
import type { SopsKeyRing } from './keys.ts';
import { MetadataError, parseMetadata } from './metadata.ts';
import type { MasterKey, SopsMetadata } from './metadata.ts';
import { KeyServiceFailure, unwrapKms, unwrapVault } from './providers.ts';
import type { KeyServiceOptions } from './providers.ts';
import { SopsMap, TreeWalkError, decryptTree } from './tree.ts';
import type { DecryptedTree } from './tree.ts';

/** Largest encrypted file decrypted (Kubernetes objects are at most ~1.5 MiB; values files are smaller). */
export const DEFAULT_MAX_ENCRYPTED_BYTES = 8 * 1024 * 1024;

const textDecoder = new TextDecoder('utf-8', { fatal: true });

function asText(content: Uint8Array | string): string | undefined {
  if (typeof content === 'string') return content;
  try {
    return textDecoder.decode(content);
  } catch {
    return undefined;
  }
}

/** True when the file is a sops-encrypted file (by its name's format and its metadata), without decrypting it. */
export function isSopsEncrypted(path: string, content: Uint8Array | string): boolean {
  const text = asText(content);
  if (text === undefined) return false;
  const format = sopsFormatOf(path);
  if (!mayBeEncrypted(format, text)) return false;
  // The metadata's own fields, as sops writes them: a cheap test that keeps a plain file with a `sops:` key of
  // its own a plain file. A file that passes but does not load is reported by decryptSopsFile, never applied.
  switch (format) {
    case SopsFormat.Yaml:
      return /(^|\n)sops:[ \t]*(\r?\n[ \t]+[^\n]*)*\n[ \t]+"?(mac|lastmodified)"?:/.test(text) || /"sops"\s*:\s*\{[^]*"(mac|lastmodified)"\s*:/.test(text);
    case SopsFormat.Json:
    case SopsFormat.Binary:
      // JSON cannot tell a top-level key from a nested one by its text; the native parser is cheap.
      return topLevelSopsJson(text);
    case SopsFormat.Dotenv:
      return /(^|\n)sops_(mac|lastmodified)=/.test(text);
    case SopsFormat.Ini:
      return /\n(mac|lastmodified)\s*=/.test(text);
  }
}

function topLevelSopsJson(text: string): boolean {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return false;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const sops = (value as Record<string, unknown>)['sops'];
  return typeof sops === 'object' && sops !== null && ('mac' in sops || 'lastmodified' in sops);
}

/**
 * Decrypted files by (path, key ring), each with the encrypted bytes it was decrypted from: memory only, bounded
 * by bytes. A file whose bytes are equal to those (compared in full, cheaper than a digest) is not decrypted
 * again, so a new commit decrypts only what changed.
 */
export class DecryptedFileCache {
  private readonly entries = new Map<string, { readonly encrypted: Uint8Array; readonly plain: Uint8Array | string; readonly size: number }>();
  private bytes = 0;
  private readonly maxBytes: number;

  constructor(maxBytes = 64 * 1024 * 1024) {
    this.maxBytes = maxBytes;
  }

  private static slot(path: string, ring: SopsKeyRing): string {
    return `${ring.fingerprint}\0${path}`;
  }

  private static bytesOf(content: Uint8Array | string): Uint8Array {
    return typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  }

  get(path: string, content: Uint8Array | string, ring: SopsKeyRing): Uint8Array | string | undefined {
    const slot = DecryptedFileCache.slot(path, ring);
    const entry = this.entries.get(slot);
    if (entry === undefined) return undefined;
    const bytes = DecryptedFileCache.bytesOf(content);
    if (Buffer.compare(entry.encrypted, bytes) !== 0) return undefined;
    this.entries.delete(slot);
    this.entries.set(slot, entry);
    return entry.plain;
  }

  set(path: string, content: Uint8Array | string, ring: SopsKeyRing, plain: Uint8Array | string): void {
    // A copy: a caller that reuses its buffer for other bytes cannot make an entry answer for them.
    const encrypted = new Uint8Array(DecryptedFileCache.bytesOf(content));
    const size = encrypted.byteLength + (typeof plain === 'string' ? plain.length * 2 : plain.byteLength);
    if (size > this.maxBytes / 4) return;
    const slot = DecryptedFileCache.slot(path, ring);
    const previous = this.entries.get(slot);
    if (previous !== undefined) {
      this.entries.delete(slot);
      this.bytes -= previous.size;
    }
    this.entries.set(slot, { encrypted, plain, size });
    this.bytes += size;
    for (const [oldest, held] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= held.size;
    }
  }
}

/** Unwrapped data keys by digest of (key groups, key ring): memory only, bounded. */
export class DataKeyCache {
  private readonly entries = new Map<string, Uint8Array>();
  private readonly capacity: number;

  constructor(capacity = 4096) {
    this.capacity = capacity;
  }

  get(key: string): Uint8Array | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  set(key: string, value: Uint8Array): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}

export interface DecryptFileOptions {
  /** Repo-relative path: names the file in every error, and picks its format. */
  readonly path: string;
  readonly content: Uint8Array | string;
  /** The sync's keys; undefined when the sync has no `spec.decryption` (an encrypted file then fails). */
  readonly keys: SopsKeyRing | undefined;
  readonly services?: KeyServiceOptions;
  readonly cache?: DataKeyCache;
  /** Decrypted files of earlier runs (same bytes, same keys): decrypted once. */
  readonly decrypted?: DecryptedFileCache;
  readonly maxBytes?: number;
}

const fail = (path: string, cause: SopsErrorCause, detail: string): SopsError => new SopsError({ cause, file: path, detail });

/** The file's plaintext in its own format (bytes for a binary file). Throws SopsError. */
export async function decryptSopsFile(options: DecryptFileOptions): Promise<Uint8Array | string> {
  const { path } = options;
  const size = typeof options.content === 'string' ? Buffer.byteLength(options.content) : options.content.byteLength;
  const max = options.maxBytes ?? DEFAULT_MAX_ENCRYPTED_BYTES;
  if (size > max) throw fail(path, SopsErrorCause.TooLarge, `the encrypted file is ${size} bytes, over the limit of ${max}`);
  if (path.endsWith('.hbs')) {
    throw fail(
      path,
      SopsErrorCause.Unsupported,
      'a template is never decrypted: encrypt a values file (spec.valuesFiles) and reference its values from the template',
    );
  }
  // An unchanged file of an earlier commit (same bytes, same keys) is looked up before anything is decoded.
  const memo = options.keys === undefined ? undefined : options.decrypted?.get(path, options.content, options.keys);
  if (memo !== undefined) return memo;
  const text = asText(options.content);
  if (text === undefined) throw fail(path, SopsErrorCause.MalformedFile, 'the encrypted file is not UTF-8 text');
  const loaded = load(path, text);
  const metadata = readMetadata(path, loaded);
  if (options.keys === undefined) {
    throw fail(
      path,
      SopsErrorCause.NotConfigured,
      `the file is encrypted with sops but the sync has no spec.decryption; it was encrypted for ${recipients(metadata)}`,
    );
  }
  const dataKey = await recoverDataKey(path, metadata, options.keys, options);
  let tree;
  try {
    tree = decryptTree({ branches: loaded.branches, dataKey, rules: metadata.rules, macOnlyEncrypted: metadata.macOnlyEncrypted });
  } catch (error) {
    if (!(error instanceof TreeWalkError)) throw error;
    const at = error.path.length === 0 ? 'the top level' : error.path.join('.');
    if (error.kind === 'authentication')
      throw fail(path, SopsErrorCause.MacMismatch, `MAC mismatch: the value at ${at} does not authenticate (tampered or moved)`);
    throw fail(path, SopsErrorCause.MalformedFile, `the value at ${at} is not encrypted although the file's rules say it must be (a half-encrypted file?)`);
  }
  verifyMac(path, metadata, dataKey, tree.mac);
  const plaintext = emit(loaded, tree, dataKey);
  if (options.keys !== undefined) options.decrypted?.set(path, options.content, options.keys, plaintext);
  return plaintext;
}

function load(path: string, text: string): LoadedAny {
  try {
    return loadEncrypted(sopsFormatOf(path), text);
  } catch (error) {
    if (!(error instanceof FormatError)) throw error;
    const where = error.line === undefined ? '' : `line ${error.line}: `;
    const cause = error.unsupported ? SopsErrorCause.Unsupported : SopsErrorCause.MalformedFile;
    throw fail(path, cause, `${where}${error.message}`);
  }
}

function readMetadata(path: string, loaded: LoadedAny): SopsMetadata {
  let metadata: SopsMetadata;
  try {
    metadata = parseMetadata(loaded.metadata);
  } catch (error) {
    if (!(error instanceof MetadataError)) throw error;
    throw fail(path, error.kind === 'version' ? SopsErrorCause.UnsupportedVersion : SopsErrorCause.MalformedFile, error.message);
  }
  if (metadata.unsupportedRule !== undefined)
    throw fail(path, SopsErrorCause.Unsupported, `sops.${metadata.unsupportedRule} is not supported; use encrypted_regex or unencrypted_suffix`);
  return metadata;
}

function verifyMac(path: string, metadata: SopsMetadata, dataKey: Uint8Array, computed: string): void {
  const opened = decryptValue(metadata.mac, dataKey, metadata.lastModified);
  const stored = typeof opened === 'object' ? Buffer.from(opened.raw) : undefined;
  const expected = Buffer.from(computed, 'utf8');
  if (stored === undefined || stored.length !== expected.length || !timingSafeEqual(stored, expected)) {
    throw fail(
      path,
      SopsErrorCause.MacMismatch,
      'MAC mismatch: the file was changed after it was encrypted (a value, key, document or option differs from what was signed)',
    );
  }
}

function emit(loaded: LoadedAny, tree: DecryptedTree, dataKey: Uint8Array): Uint8Array | string {
  const branches = tree.branches;
  switch (loaded.format) {
    case SopsFormat.Yaml:
      return (loaded.source === undefined ? undefined : emitInPlace(loaded.source, tree.opened, false)) ?? emitYaml(branches);
    case SopsFormat.Json:
      return (loaded.source === undefined ? undefined : emitInPlace(loaded.source, tree.opened, true)) ?? `${emitJson(branches[0] ?? new SopsMap([]))}`;
    case SopsFormat.Binary: {
      // The whole file is the `data` value; take its bytes as decrypted (it need not be UTF-8).
      const data = loaded.branches[0]?.items.find(([key]) => key === 'data')?.[1];
      if (typeof data !== 'string') return new Uint8Array();
      const opened = decryptValue(data, dataKey, 'data:');
      return typeof opened === 'object' ? new Uint8Array(opened.raw) : new Uint8Array();
    }
    case SopsFormat.Dotenv: {
      // Comments are encrypted too (not covered by the MAC); one that does not open is kept as written, as sops does.
      const comments = new Map<number, string>();
      for (const [index, comment] of loaded.comments ?? []) {
        const opened = decryptValue(comment, dataKey, ':');
        comments.set(index, typeof opened === 'object' ? Buffer.from(opened.raw).toString('utf8') : comment);
      }
      return emitDotenv(branches[0] ?? new SopsMap([]), comments);
    }
    case SopsFormat.Ini:
      return loaded.ini === undefined ? '' : emitIni(loaded.ini, tree.opened, dataKey);
  }
}

/** The public names of the file's master keys: what a user needs to see which key is missing. */
export function recipients(metadata: SopsMetadata): string {
  const names = metadata.keyGroups.flat().map(keyName);
  return names.length <= 6 ? names.join(', ') : `${names.slice(0, 6).join(', ')} and ${names.length - 6} more`;
}

function keyName(key: MasterKey): string {
  switch (key.type) {
    case 'age':
      return `age ${key.recipient}`;
    case 'pgp':
      return `pgp ${key.fingerprint}`;
    case 'hc_vault':
      return `vault ${key.address}/v1/${key.enginePath}/keys/${key.keyName}`;
    case 'kms':
      return `kms ${key.arn}`;
    case 'unsupported':
      return `${key.kind} ${key.name}`;
  }
}

const ORDER: Record<MasterKey['type'], number> = { age: 0, pgp: 1, hc_vault: 2, kms: 3, unsupported: 4 };

async function recoverDataKey(path: string, metadata: SopsMetadata, ring: SopsKeyRing, options: DecryptFileOptions): Promise<Uint8Array> {
  const cacheKey = createHash('sha256')
    .update(ring.fingerprint)
    .update('\0')
    .update(JSON.stringify(metadata.keyGroups))
    .update(String(metadata.shamirThreshold))
    .digest('hex');
  const cached = options.cache?.get(cacheKey);
  if (cached !== undefined) return cached;
  const parts: Uint8Array[] = [];
  const failures: KeyServiceFailure[] = [];
  for (const group of metadata.keyGroups) {
    const part = await unwrapGroup(group, ring, options.services ?? {}, failures);
    if (part !== undefined) parts.push(part);
    if (parts.length >= metadata.shamirThreshold) break;
  }
  if (parts.length < metadata.shamirThreshold || parts.length === 0) {
    const transient = failures.find((failure) => failure.transient);
    const serviceNotes = failures.length === 0 ? '' : `; ${failures.map((failure) => failure.message).join('; ')}`;
    const groups = metadata.keyGroups.length > 1 ? ` (${parts.length} of the ${metadata.shamirThreshold} key groups needed opened)` : '';
    throw fail(
      path,
      transient !== undefined ? SopsErrorCause.ProviderUnavailable : SopsErrorCause.NoMatchingKey,
      `no key in ${ring.source} opens the file's data key${groups}; it was encrypted for ${recipients(metadata)}${serviceNotes}`,
    );
  }
  let dataKey: Uint8Array;
  if (metadata.keyGroups.length > 1) {
    try {
      // Loaded on first use, like the key libraries (keys.ts): only key groups need it.
      dataKey = await (await import('shamir-secret-sharing')).combine(parts);
    } catch {
      throw fail(path, SopsErrorCause.MacMismatch, 'MAC mismatch: the key groups do not combine into a data key');
    }
  } else {
    dataKey = parts[0] ?? new Uint8Array();
  }
  if (dataKey.length !== 32) throw fail(path, SopsErrorCause.MacMismatch, 'MAC mismatch: the recovered data key is not an AES-256 key');
  options.cache?.set(cacheKey, dataKey);
  return dataKey;
}

async function unwrapGroup(
  group: readonly MasterKey[],
  ring: SopsKeyRing,
  services: KeyServiceOptions,
  failures: KeyServiceFailure[],
): Promise<Uint8Array | undefined> {
  const ordered = [...group].sort((a, b) => ORDER[a.type] - ORDER[b.type]);
  for (const key of ordered) {
    try {
      let part: Uint8Array | undefined;
      if (key.type === 'age') part = await unwrapAge(ring, key.enc);
      else if (key.type === 'pgp') part = await unwrapPgp(ring, key.enc);
      else if (key.type === 'hc_vault' && ring.vaultToken !== undefined) part = await unwrapVault(ring, key, services);
      else if (key.type === 'kms' && (ring.aws !== undefined || services.environmentAws !== undefined)) part = await unwrapKms(ring, key, services);
      if (part !== undefined) return part;
    } catch (error) {
      if (error instanceof KeyServiceFailure) failures.push(error);
      else throw error;
    }
  }
  return undefined;
}

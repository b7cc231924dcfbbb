// The SOPS tree: what a YAML, JSON, dotenv or binary file holds once its `sops` metadata is taken out, and
// the walk that decrypts its values and computes the MAC over them. The rules follow getsops/sops' sops.go
// (walkBranch, shouldBeEncrypted, Tree.Decrypt, ToBytes) so that a file the sops CLI wrote decrypts here to
// the same values and the same MAC:
// - a value's additional data is the path of mapping keys to it (sequence positions are not part of it),
//   each followed by ':';
// - the MAC is SHA-512 over every leaf value, in document order, as sops prints it (ints in decimal, floats
//   in their shortest form without exponent, booleans as `True`/`False`); comments and nulls are not part of
//   it; with mac_only_encrypted only the encrypted values are, after a fixed prefix.
import { createHash } from 'node:crypto';
import { decryptValue } from './cipher.ts';
import { formatFloat } from './float.ts';

export { formatFloat };

/** Which values of the tree are encrypted: sops allows at most one rule per file; none means `_unencrypted` suffix. */
export interface CryptRules {
  readonly unencryptedSuffix?: string;
  readonly encryptedSuffix?: string;
  readonly unencryptedRegex?: string;
  readonly encryptedRegex?: string;
}

/** A mapping in file order (a JS object would move integer-like keys to the front and lose sops' order). */
export class SopsMap {
  readonly items: Array<[string, SopsValue]>;

  constructor(items: Array<[string, SopsValue]>) {
    this.items = items;
  }
}

export type SopsValue = string | bigint | number | boolean | null | SopsMap | SopsValue[];

/** The fixed bytes sops hashes first when only encrypted values are part of the MAC (sops.go). */
const MAC_ONLY_ENCRYPTED_INITIALIZATION = Buffer.from([
  0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0x0b, 0x0b, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad,
  0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69,
]);

/** Why a walk stopped: the caller turns it into a SopsError naming the file. */
export class TreeWalkError extends Error {
  readonly kind: 'unencrypted' | 'authentication';
  readonly path: readonly string[];

  constructor(kind: 'unencrypted' | 'authentication', path: readonly string[]) {
    super(kind);
    this.kind = kind;
    this.path = path;
  }
}

export interface DecryptedTree {
  readonly branches: SopsMap[];
  /** Upper-case hex SHA-512, as sops stores it (encrypted) in `sops.mac`. */
  readonly mac: string;
  /** Every leaf in walk order: its decrypted value, or undefined when it was not encrypted. */
  readonly opened: ReadonlyArray<string | bigint | number | boolean | undefined>;
}

/** Compiles sops' rules once per file: Go RE2 patterns as JS regular expressions (an inline `(?i)` prefix becomes the `i` flag). */
export function compileRules(rules: CryptRules): (path: readonly string[]) => boolean {
  const matcher = (pattern: string): RegExp => {
    let flags = 'u';
    let source = pattern;
    const inline = /^\(\?([imsU]+)\)/.exec(source);
    if (inline !== null) {
      source = source.slice(inline[0].length);
      for (const flag of inline[1] ?? '') if (flag === 'i' || flag === 'm' || flag === 's') flags += flag;
    }
    try {
      return new RegExp(source, flags);
    } catch {
      return new RegExp(source, flags.replace('u', ''));
    }
  };
  const unencryptedRegex = rules.unencryptedRegex === undefined ? undefined : matcher(rules.unencryptedRegex);
  const encryptedRegex = rules.encryptedRegex === undefined ? undefined : matcher(rules.encryptedRegex);
  return (path) => {
    let encrypted = true;
    if (rules.unencryptedSuffix !== undefined && path.some((p) => p.endsWith(rules.unencryptedSuffix ?? ''))) encrypted = false;
    if (rules.encryptedSuffix !== undefined) encrypted = path.some((p) => p.endsWith(rules.encryptedSuffix ?? ''));
    if (unencryptedRegex !== undefined && path.some((p) => unencryptedRegex.test(p))) encrypted = false;
    if (encryptedRegex !== undefined) encrypted = path.some((p) => encryptedRegex.test(p));
    return encrypted;
  };
}

/** sops' ToBytes for a leaf of a plain (decrypted or never encrypted) tree. */
export function leafBytes(value: string | bigint | number | boolean): Uint8Array {
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (typeof value === 'bigint') return Buffer.from(value.toString(), 'utf8');
  if (typeof value === 'number') return Buffer.from(formatFloat(value), 'utf8');
  return Buffer.from(value ? 'True' : 'False', 'utf8');
}

export interface DecryptTreeOptions {
  readonly branches: readonly SopsMap[];
  readonly dataKey: Uint8Array;
  readonly rules: CryptRules;
  readonly macOnlyEncrypted: boolean;
}

/** Decrypts every value the rules say is encrypted and computes the MAC, in sops' walk order. */
export function decryptTree(options: DecryptTreeOptions): DecryptedTree {
  const shouldBeEncrypted = compileRules(options.rules);
  const hash = createHash('sha512');
  if (options.macOnlyEncrypted) hash.update(MAC_ONLY_ENCRYPTED_INITIALIZATION);
  const opened: Array<string | bigint | number | boolean | undefined> = [];
  const leaf = (value: string | bigint | number | boolean, path: readonly string[]): SopsValue => {
    const encrypted = shouldBeEncrypted(path);
    let plain: string | bigint | number | boolean = value;
    let bytes: Uint8Array | undefined;
    if (encrypted) {
      if (typeof value !== 'string') throw new TreeWalkError('unencrypted', path);
      const result = decryptValue(value, options.dataKey, `${path.join(':')}:`);
      if (result === 'malformed') throw new TreeWalkError('unencrypted', path);
      if (result === 'unauthenticated') throw new TreeWalkError('authentication', path);
      plain = result.value;
      bytes = result.macBytes;
    }
    opened.push(encrypted ? plain : undefined);
    if (!options.macOnlyEncrypted || encrypted) hash.update(bytes ?? leafBytes(plain));
    return plain;
  };
  const walk = (value: SopsValue, path: readonly string[]): SopsValue => {
    if (value === null) return null;
    if (value instanceof SopsMap) return new SopsMap(value.items.map(([key, item]) => [key, walk(item, [...path, key])]));
    if (Array.isArray(value)) return value.map((item) => walk(item, path));
    return leaf(value, path);
  };
  const branches = options.branches.map((branch) => walk(branch, []) as SopsMap);
  return { branches, mac: hash.digest('hex').toUpperCase(), opened };
}

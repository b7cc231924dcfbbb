// The `sops` metadata of an encrypted file (getsops/sops stores/stores.go): which master keys hold the data
// key (one group, or several groups joined by Shamir's threshold), which values are encrypted, and the MAC.
// Reading it is strict: a field of the wrong shape is a malformed file, not a default.
import { SopsMap } from './tree.ts';
import type { CryptRules, SopsValue } from './tree.ts';

export type MasterKey =
  | { readonly type: 'age'; readonly recipient: string; readonly enc: string }
  | { readonly type: 'pgp'; readonly fingerprint: string; readonly enc: string }
  | { readonly type: 'hc_vault'; readonly address: string; readonly enginePath: string; readonly keyName: string; readonly enc: string }
  | { readonly type: 'kms'; readonly arn: string; readonly role: string | undefined; readonly context: Readonly<Record<string, string>>; readonly enc: string }
  | { readonly type: 'unsupported'; readonly kind: string; readonly name: string };

export interface SopsMetadata {
  readonly version: string;
  readonly lastModified: string;
  readonly mac: string;
  readonly rules: CryptRules;
  readonly macOnlyEncrypted: boolean;
  readonly keyGroups: readonly (readonly MasterKey[])[];
  readonly shamirThreshold: number;
  /** Set when the file uses a rule this decrypter does not implement (comment regexes). */
  readonly unsupportedRule: string | undefined;
}

/** A metadata problem, in words that name fields and never values. */
export class MetadataError extends Error {
  readonly kind: 'malformed' | 'version';

  constructor(message: string, kind: 'malformed' | 'version' = 'malformed') {
    super(message);
    this.kind = kind;
  }
}

const asObject = (value: SopsValue | undefined): Map<string, SopsValue> => new Map<string, SopsValue>(value instanceof SopsMap ? value.items : []);

function text(map: Map<string, SopsValue>, key: string, where: string): string | undefined {
  const value = map.get(key);
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new MetadataError(`${where}.${key} is not a string`);
}

function list(map: Map<string, SopsValue>, key: string, where: string): SopsValue[] {
  const value = map.get(key);
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new MetadataError(`${where}.${key} is not a list`);
  return value;
}

function required(map: Map<string, SopsValue>, key: string, where: string): string {
  const value = text(map, key, where);
  if (value === undefined) throw new MetadataError(`${where}.${key} is missing`);
  return value;
}

const GROUP_FIELDS = ['kms', 'gcp_kms', 'hckms', 'azure_kv', 'hc_vault', 'pgp', 'age'] as const;

function masterKeys(group: Map<string, SopsValue>, where: string): MasterKey[] {
  const keys: MasterKey[] = [];
  for (const field of GROUP_FIELDS) {
    list(group, field, where).forEach((entry, index) => {
      const key = asObject(entry);
      const at = `${where}.${field}[${index}]`;
      switch (field) {
        case 'age':
          keys.push({ type: 'age', recipient: required(key, 'recipient', at), enc: required(key, 'enc', at) });
          break;
        case 'pgp':
          keys.push({ type: 'pgp', fingerprint: required(key, 'fp', at), enc: required(key, 'enc', at) });
          break;
        case 'hc_vault':
          keys.push({
            type: 'hc_vault',
            address: required(key, 'vault_address', at),
            enginePath: required(key, 'engine_path', at),
            keyName: required(key, 'key_name', at),
            enc: required(key, 'enc', at),
          });
          break;
        case 'kms': {
          const context: Record<string, string> = {};
          for (const [name, value] of asObject(key.get('context')).entries()) if (typeof value === 'string') context[name] = value;
          keys.push({ type: 'kms', arn: required(key, 'arn', at), role: text(key, 'role', at), context, enc: required(key, 'enc', at) });
          break;
        }
        case 'gcp_kms':
        case 'hckms':
        case 'azure_kv':
          keys.push({ type: 'unsupported', kind: field, name: text(key, 'resource_id', at) ?? text(key, 'vault_url', at) ?? text(key, 'key_id', at) ?? field });
      }
    });
  }
  return keys;
}

const SUPPORTED_MAJOR = '3';

/** Reads the `sops` mapping (already unflattened for dotenv). */
export function parseMetadata(value: SopsValue): SopsMetadata {
  if (!(value instanceof SopsMap)) throw new MetadataError('the sops metadata is not a mapping');
  const map = asObject(value);
  const version = text(map, 'version', 'sops');
  if (version === undefined) throw new MetadataError('sops.version is missing', 'version');
  if (!new RegExp(`^${SUPPORTED_MAJOR}\\.\\d+\\.\\d+([-+.][0-9A-Za-z.-]*)?$`).test(version)) {
    throw new MetadataError(`sops.version ${JSON.stringify(version.slice(0, 40))} is not a SOPS 3 file format this operator reads`, 'version');
  }
  const lastModified = required(map, 'lastmodified', 'sops');
  const seconds = Date.parse(lastModified);
  if (Number.isNaN(seconds)) throw new MetadataError('sops.lastmodified is not an RFC 3339 time');
  const rules: Record<string, string> = {};
  const ruleFields = {
    unencrypted_suffix: 'unencryptedSuffix',
    encrypted_suffix: 'encryptedSuffix',
    unencrypted_regex: 'unencryptedRegex',
    encrypted_regex: 'encryptedRegex',
  } as const;
  for (const [field, name] of Object.entries(ruleFields)) {
    const rule = text(map, field, 'sops');
    if (rule !== undefined) rules[name] = rule;
  }
  const commentRule = ['unencrypted_comment_regex', 'encrypted_comment_regex'].find((field) => text(map, field, 'sops') !== undefined);
  if (Object.keys(rules).length + (commentRule === undefined ? 0 : 1) > 1)
    throw new MetadataError('sops metadata sets more than one of the encrypted/unencrypted suffix/regex rules');
  if (Object.keys(rules).length === 0 && commentRule === undefined) rules['unencryptedSuffix'] = '_unencrypted';
  const topLevel = masterKeys(map, 'sops');
  const keyGroups =
    topLevel.length > 0 ? [topLevel] : list(map, 'key_groups', 'sops').map((group, index) => masterKeys(asObject(group), `sops.key_groups[${index}]`));
  if (keyGroups.length === 0 || keyGroups.some((group) => group.length === 0))
    throw new MetadataError('sops metadata lists no master key (or an empty key group)');
  const thresholdText = text(map, 'shamir_threshold', 'sops');
  const threshold = thresholdText === undefined ? keyGroups.length : Number(thresholdText);
  if (!Number.isInteger(threshold) || threshold < 0 || threshold > keyGroups.length)
    throw new MetadataError('sops.shamir_threshold is not a number of key groups');
  const macOnly = map.get('mac_only_encrypted');
  return {
    version,
    lastModified: goRfc3339(lastModified),
    mac: text(map, 'mac', 'sops') ?? '',
    rules,
    macOnlyEncrypted: macOnly === true || macOnly === 'true',
    keyGroups,
    shamirThreshold: threshold === 0 ? keyGroups.length : threshold,
    unsupportedRule: commentRule,
  };
}

/** The MAC's additional data is lastmodified as Go's time.RFC3339 prints it: whole seconds. */
function goRfc3339(value: string): string {
  return value.replace(/\.\d+(?=(Z|[+-]\d\d:\d\d)$)/, '');
}

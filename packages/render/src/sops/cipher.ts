// One SOPS value: `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]`, AES-256-GCM with the value's tree path as
// additional data (getsops/sops aes/cipher.go). node:crypto does the cipher; this only reads the envelope
// and turns the plaintext back into the type sops recorded.
import { createDecipheriv } from 'node:crypto';
import { formatFloat } from './float.ts';

const envelope = /^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]/;
const base64 = /^[A-Za-z0-9+/]*={0,2}$/;

export interface OpenedValue {
  readonly value: string | bigint | number | boolean;
  /** What sops hashes into the MAC for this value (its ToBytes of the typed value). */
  readonly macBytes: Uint8Array;
  /** The plaintext bytes as encrypted. */
  readonly raw: Uint8Array;
}

/** True when the string has the shape of an encrypted value. */
export function isEncryptedValue(text: string): boolean {
  return envelope.test(text);
}

/**
 * Opens one value. `malformed`: not an encrypted value at all (a plaintext where the rules expect
 * ciphertext); `unauthenticated`: the tag does not verify (tampered, moved to another key, another file's key).
 */
export function decryptValue(text: string, key: Uint8Array, additionalData: string): OpenedValue | 'malformed' | 'unauthenticated' {
  if (text === '') return { value: '', macBytes: new Uint8Array(), raw: new Uint8Array() };
  const match = envelope.exec(text);
  if (match === null) return 'malformed';
  const [, data = '', iv = '', tag = '', type = ''] = match;
  if (![data, iv, tag].every((part) => base64.test(part))) return 'malformed';
  const ivBytes = Buffer.from(iv, 'base64');
  const tagBytes = Buffer.from(tag, 'base64');
  if (ivBytes.length === 0 || tagBytes.length !== 16 || key.length !== 32) return 'unauthenticated';
  let raw: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, ivBytes, { authTagLength: 16 });
    decipher.setAAD(Buffer.from(additionalData, 'utf8'));
    decipher.setAuthTag(tagBytes);
    raw = Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]);
  } catch {
    return 'unauthenticated';
  }
  const typed = typedValue(raw, type);
  if (typed === undefined) return 'malformed';
  return { ...typed, raw };
}

function typedValue(raw: Buffer, type: string): { value: string | bigint | number | boolean; macBytes: Uint8Array } | undefined {
  const text = raw.toString('utf8');
  switch (type) {
    case 'str':
    case 'bytes':
    case 'comment':
      return { value: text, macBytes: raw };
    case 'time':
      // sops hashes time.Time's MarshalText, which for a value it wrote itself is the text it encrypted.
      return { value: text, macBytes: raw };
    case 'int': {
      if (!/^[+-]?\d+$/.test(text)) return undefined;
      const value = BigInt(text);
      return { value, macBytes: Buffer.from(value.toString(), 'utf8') };
    }
    case 'float': {
      const value = Number(text);
      if (text.trim() === '' || Number.isNaN(value)) return undefined;
      return { value, macBytes: Buffer.from(formatFloat(value), 'utf8') };
    }
    case 'bool': {
      const value = goParseBool(text);
      if (value === undefined) return undefined;
      return { value, macBytes: Buffer.from(value ? 'True' : 'False', 'utf8') };
    }
    default:
      return undefined;
  }
}

/** Go's strconv.ParseBool. */
function goParseBool(text: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  return undefined;
}

// OpenSSH known_hosts, read the way ssh reads it: plain and hashed (|1|salt|hmac) host names, `[host]:port`
// for other ports than 22, comma-separated patterns with * ? and !negation, and the @revoked and
// @cert-authority markers. A server's host key is accepted only if a line names that host with that exact
// key: there is no trust on first use. Pure: no I/O.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export interface KnownHostLine {
  marker: 'revoked' | 'cert-authority' | undefined;
  /** The host field as written (comma-separated patterns, or one |1|salt|hash). */
  hosts: string;
  /** ssh-ed25519, ecdsa-sha2-nistp256, ssh-rsa, … */
  keyType: string;
  /** The public key blob (what the server sends during key exchange). */
  key: Buffer;
  /** 1-based line number, for messages. */
  line: number;
}

export interface ParsedKnownHosts {
  entries: KnownHostLine[];
  /** Lines that could not be read (their numbers and why), never their content. */
  invalid: Array<{ line: number; reason: string }>;
}

export function parseKnownHosts(text: string): ParsedKnownHosts {
  const entries: KnownHostLine[] = [];
  const invalid: Array<{ line: number; reason: string }> = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const raw = (lines[i] ?? '').trim();
    if (raw === '' || raw.startsWith('#')) continue;
    const fields = raw.split(/[ \t]+/);
    let marker: KnownHostLine['marker'];
    if (fields[0]?.startsWith('@') === true) {
      const name = fields.shift();
      if (name === '@revoked') marker = 'revoked';
      else if (name === '@cert-authority') marker = 'cert-authority';
      else {
        invalid.push({ line: i + 1, reason: `unknown marker ${JSON.stringify(name?.slice(0, 32))}` });
        continue;
      }
    }
    const [hosts, keyType, base64] = fields;
    if (hosts === undefined || keyType === undefined || base64 === undefined) {
      invalid.push({ line: i + 1, reason: 'expected "hosts keytype base64-key"' });
      continue;
    }
    const key = decodeKey(base64);
    if (key === undefined || blobType(key) !== keyType) {
      invalid.push({ line: i + 1, reason: `the ${keyType} key is not valid base64 of a key of that type` });
      continue;
    }
    entries.push({ marker, hosts, keyType, key, line: i + 1 });
  }
  return { entries, invalid };
}

function decodeKey(base64: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) return undefined;
  const key = Buffer.from(base64, 'base64');
  return key.length > 4 ? key : undefined;
}

/** The key type a public key blob names (its first SSH string). */
export function blobType(blob: Buffer): string | undefined {
  if (blob.length < 4) return undefined;
  const len = blob.readUInt32BE(0);
  if (len === 0 || len > 64 || blob.length < 4 + len) return undefined;
  return blob.toString('latin1', 4, 4 + len);
}

/** How ssh names a host in known_hosts: `host` on port 22, else `[host]:port`. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

/** OpenSSH's fingerprint: SHA256:<base64 without padding>. */
export function fingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** Whether a line's host field names `name` (already in knownHostsName form). */
export function hostMatches(hosts: string, name: string): boolean {
  if (hosts.startsWith('|')) return hashedMatches(hosts, name);
  let matched = false;
  for (const pattern of hosts.split(',')) {
    if (pattern === '') continue;
    const negated = pattern.startsWith('!');
    if (globMatches(negated ? pattern.slice(1) : pattern, name)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

function hashedMatches(field: string, name: string): boolean {
  const parts = field.split('|');
  // ['', '1', salt, hash]
  if (parts.length !== 4 || parts[1] !== '1') return false;
  const salt = Buffer.from(parts[2] ?? '', 'base64');
  const want = Buffer.from(parts[3] ?? '', 'base64');
  if (salt.length === 0 || want.length !== 20) return false;
  const got = createHmac('sha1', salt).update(name).digest();
  return timingSafeEqual(got, want);
}

function globMatches(pattern: string, name: string): boolean {
  const source = pattern
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  // Host names compare case-insensitively, as in ssh.
  return new RegExp(`^${source}$`, 'i').test(name);
}

export type HostKeyVerdict =
  { ok: true; line: number } | { ok: false; reason: 'revoked' | 'mismatch' | 'unknown-host' | 'cert-authority-only'; message: string };

/**
 * Whether `blob` is a host key known_hosts accepts for host:port. `shownHost` names the server in messages
 * (host:port). Messages carry key types and fingerprints only.
 */
export function verifyHostKey(known: ParsedKnownHosts, host: string, port: number, blob: Buffer): HostKeyVerdict {
  const name = knownHostsName(host, port);
  const shown = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const offered = `${blobType(blob) ?? 'unknown key type'} ${fingerprint(blob)}`;
  const forHost = known.entries.filter((e) => hostMatches(e.hosts, name));
  if (forHost.some((e) => e.marker === 'revoked' && e.key.equals(blob))) {
    return { ok: false, reason: 'revoked', message: `host key for ${shown} (${offered}) is marked @revoked in known_hosts` };
  }
  const match = forHost.find((e) => e.marker === undefined && e.key.equals(blob));
  if (match !== undefined) return { ok: true, line: match.line };
  const plain = forHost.filter((e) => e.marker === undefined);
  if (plain.length > 0) {
    return {
      ok: false,
      reason: 'mismatch',
      message: `host key for ${shown} does not match known_hosts (the server offered ${offered}; known_hosts has ${plain.map((e) => `${e.keyType} ${fingerprint(e.key)}`).join(', ')})`,
    };
  }
  if (forHost.some((e) => e.marker === 'cert-authority')) {
    return {
      ok: false,
      reason: 'cert-authority-only',
      message: `known_hosts trusts ${shown} only through @cert-authority, and host certificates are not supported; add the server's host key (the server offered ${offered})`,
    };
  }
  return {
    ok: false,
    reason: 'unknown-host',
    message: `known_hosts has no entry for ${name} (the server offered ${offered}); host keys are never trusted on first use`,
  };
}

/** ssh2 host key algorithm names for the key types known_hosts lists for host:port, most preferred first. */
export function hostKeyAlgorithms(known: ParsedKnownHosts, host: string, port: number): string[] {
  const name = knownHostsName(host, port);
  const types = new Set(known.entries.filter((e) => e.marker === undefined && hostMatches(e.hosts, name)).map((e) => e.keyType));
  const out: string[] = [];
  for (const type of ['ssh-ed25519', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521']) if (types.has(type)) out.push(type);
  if (types.has('ssh-rsa')) out.push('rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa');
  return out;
}

import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fingerprint, hostKeyAlgorithms, hostMatches, knownHostsName, parseKnownHosts, verifyHostKey } from './known-hosts.ts';

function sshString(data: Buffer | string): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(body.length);
  return Buffer.concat([len, body]);
}

function blob(type: string, fill: number): Buffer {
  return Buffer.concat([sshString(type), sshString(Buffer.alloc(32, fill))]);
}

const edA = blob('ssh-ed25519', 1);
const edB = blob('ssh-ed25519', 2);
const ecdsa = Buffer.concat([sshString('ecdsa-sha2-nistp256'), sshString('nistp256'), sshString(Buffer.alloc(65, 3))]);
const rsa = Buffer.concat([sshString('ssh-rsa'), sshString(Buffer.from([1, 0, 1])), sshString(Buffer.alloc(257, 4))]);
const line = (hosts: string, key: Buffer, marker = ''): string =>
  `${marker}${marker === '' ? '' : ' '}${hosts} ${key === rsa ? 'ssh-rsa' : key === ecdsa ? 'ecdsa-sha2-nistp256' : 'ssh-ed25519'} ${key.toString('base64')} comment`;

function hashed(name: string): string {
  const salt = Buffer.alloc(20, 7);
  return `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;
}

describe('known_hosts', () => {
  it('names hosts the way ssh does: bare on port 22, [host]:port otherwise', () => {
    expect(knownHostsName('github.com', 22)).toBe('github.com');
    expect(knownHostsName('127.0.0.1', 2222)).toBe('[127.0.0.1]:2222');
  });

  it('matches comma-separated patterns, wildcards and negations, case-insensitively', () => {
    expect(hostMatches('github.com,140.82.112.3', 'github.com')).toBe(true);
    expect(hostMatches('github.com,140.82.112.3', '140.82.112.3')).toBe(true);
    expect(hostMatches('*.example.com', 'git.example.com')).toBe(true);
    expect(hostMatches('*.example.com,!evil.example.com', 'evil.example.com')).toBe(false);
    expect(hostMatches('git?.example.com', 'git1.example.com')).toBe(true);
    expect(hostMatches('GitHub.com', 'github.com')).toBe(true);
    expect(hostMatches('[127.0.0.1]:2222', '[127.0.0.1]:2222')).toBe(true);
    expect(hostMatches('127.0.0.1', '[127.0.0.1]:2222')).toBe(false);
    expect(hostMatches('github.com', 'github.com.evil.net')).toBe(false);
  });

  it('matches hashed host names (|1|salt|hmac-sha1)', () => {
    expect(hostMatches(hashed('[127.0.0.1]:2222'), '[127.0.0.1]:2222')).toBe(true);
    expect(hostMatches(hashed('[127.0.0.1]:2222'), '[127.0.0.1]:2223')).toBe(false);
    expect(hostMatches('|1|bad', 'x')).toBe(false);
  });

  it('accepts the listed key for the host and reads every key type', () => {
    // given
    const known = parseKnownHosts(['# comment', '', line('github.com', edA), line('[127.0.0.1]:2222', ecdsa), line(hashed('gitlab.com'), rsa)].join('\n'));

    // then
    expect(known.invalid).toEqual([]);
    expect(verifyHostKey(known, 'github.com', 22, edA)).toEqual({ ok: true, line: 3 });
    expect(verifyHostKey(known, '127.0.0.1', 2222, ecdsa)).toEqual({ ok: true, line: 4 });
    expect(verifyHostKey(known, 'gitlab.com', 22, rsa)).toEqual({ ok: true, line: 5 });
  });

  it('refuses another key for a known host, naming fingerprints only', () => {
    // given
    const known = parseKnownHosts(line('[127.0.0.1]:2222', edA));

    // when
    const verdict = verifyHostKey(known, '127.0.0.1', 2222, edB);

    // then
    expect(verdict.ok).toBe(false);
    if (verdict.ok) return;
    expect(verdict.reason).toBe('mismatch');
    expect(verdict.message).toContain(`host key for 127.0.0.1:2222 does not match known_hosts (the server offered ssh-ed25519 ${fingerprint(edB)}`);
    expect(verdict.message).toContain(fingerprint(edA));
    expect(verdict.message).not.toContain(edB.toString('base64'));
  });

  it('refuses a host it has no line for (no trust on first use) and a key on another port', () => {
    const known = parseKnownHosts(line('127.0.0.1', edA));
    const verdict = verifyHostKey(known, '127.0.0.1', 2222, edA);
    expect(verdict).toMatchObject({ ok: false, reason: 'unknown-host' });
    if (!verdict.ok) expect(verdict.message).toMatch(/no entry for \[127\.0\.0\.1\]:2222.*never trusted on first use/);
  });

  it('refuses a @revoked key even when another line lists it', () => {
    const known = parseKnownHosts([line('github.com', edA), line('*', edA, '@revoked')].join('\n'));
    expect(verifyHostKey(known, 'github.com', 22, edA)).toMatchObject({ ok: false, reason: 'revoked' });
  });

  it('says clearly that @cert-authority lines are not supported', () => {
    const known = parseKnownHosts(line('*.example.com', edA, '@cert-authority'));
    const verdict = verifyHostKey(known, 'git.example.com', 22, edB);
    expect(verdict).toMatchObject({ ok: false, reason: 'cert-authority-only' });
    // and a CA key is never taken for a host key
    expect(verifyHostKey(known, 'git.example.com', 22, edA).ok).toBe(false);
  });

  it('reports unreadable lines by number, without their content', () => {
    const known = parseKnownHosts(['github.com ssh-ed25519', `github.com ssh-rsa ${edA.toString('base64')}`, '@weird x y z', line('ok.com', edA)].join('\n'));
    expect(known.entries.map((e) => e.line)).toEqual([4]);
    expect(known.invalid.map((i) => i.line)).toEqual([1, 2, 3]);
    expect(JSON.stringify(known.invalid)).not.toContain(edA.toString('base64'));
  });

  it('offers the server only the host key algorithms known_hosts lists for it', () => {
    const known = parseKnownHosts([line('[h]:2', rsa), line('[h]:2', edA), line('other', ecdsa)].join('\n'));
    expect(hostKeyAlgorithms(known, 'h', 2)).toEqual(['ssh-ed25519', 'rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa']);
    expect(hostKeyAlgorithms(known, 'nobody', 22)).toEqual([]);
  });
});

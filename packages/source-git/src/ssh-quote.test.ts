import { describe, expect, it } from 'vitest';
import { shellQuote, sshSecrets } from './ssh.ts';

describe('the SSH command line and secrets', () => {
  it('quotes the repo path the way git does for the remote shell', () => {
    expect(shellQuote('/org/repo.git')).toBe(`'/org/repo.git'`);
    expect(shellQuote(`it's.git`)).toBe(`'it'\\''s.git'`);
    expect(shellQuote('a!b; rm -rf /')).toBe(`'a'\\!'b; rm -rf /'`);
  });

  it('lists the key, each of its body lines and the passphrase as secrets to redact', () => {
    const identity = '-----BEGIN OPENSSH PRIVATE KEY-----\nAAAAbodyline1xyz\nAAAAbodyline2xyz\n-----END OPENSSH PRIVATE KEY-----\n';
    expect(sshSecrets({ identity, knownHosts: 'h ssh-ed25519 AAAA', passphrase: 'pw-123456' })).toEqual([
      identity,
      'AAAAbodyline1xyz',
      'AAAAbodyline2xyz',
      'pw-123456',
    ]);
  });
});

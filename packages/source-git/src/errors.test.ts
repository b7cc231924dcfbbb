import { describe, expect, it } from 'vitest';
import { GitSourceError, redact } from './errors.ts';

describe('redact', () => {
  it('removes secrets, their URL-encoded form and any URL userinfo', () => {
    const text = 'fetch https://bob:s3cr%2Ft@git.example.com/x.git failed with token tok-123 and s3cr/t';
    const out = redact(text, ['s3cr/t', 'tok-123']);
    expect(out).toBe('fetch https://***@git.example.com/x.git failed with token *** and ***');
  });

  it('classifies transient and stalling errors', () => {
    expect(new GitSourceError('Timeout', 'x').retryable).toBe(true);
    expect(new GitSourceError('AuthFailed', 'x').retryable).toBe(false);
  });
});

describe('redact and SSH URLs', () => {
  it('keeps the user name of an ssh:// URL, which is no credential, but not a password beside it', () => {
    expect(redact('ssh://git@host:2222/r.git failed', [])).toBe('ssh://git@host:2222/r.git failed');
    expect(redact('ssh://git:pw@host/r.git', [])).toBe('ssh://***@host/r.git');
    expect(redact('https://git@host/r.git', [])).toBe('https://***@host/r.git');
  });
});

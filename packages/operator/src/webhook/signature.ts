// Signature checks. Every comparison runs in constant time over fixed-length digests, so neither the
// content nor the length of a secret leaks through response timing.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** True when `signature` (hex, optionally behind a `sha256=` prefix) is HMAC-SHA256(secret, body) for one of the secrets. */
export function verifyHmacSha256(options: { body: Buffer; signature: string | undefined; secrets: readonly string[]; prefix?: 'sha256=' }): boolean {
  const given = parseHexDigest(options.signature, options.prefix);
  if (given === undefined) return false;
  let ok = false;
  // No early exit: every configured secret is tried, whichever matches.
  for (const secret of options.secrets) {
    if (secret === '') continue;
    const expected = createHmac('sha256', secret).update(options.body).digest();
    ok = timingSafeEqual(expected, given) || ok;
  }
  return ok;
}

/** True when `token` equals one of the secrets (GitLab's X-Gitlab-Token): compared as SHA-256 digests, so lengths never leak. */
export function verifyToken(token: string | undefined, secrets: readonly string[]): boolean {
  if (token === undefined || token === '') return false;
  const given = createHash('sha256').update(token).digest();
  let ok = false;
  for (const secret of secrets) {
    if (secret === '') continue;
    ok = timingSafeEqual(createHash('sha256').update(secret).digest(), given) || ok;
  }
  return ok;
}

/** Signs a body the way GitHub, Gitea, Bitbucket and the generic endpoint expect (hex HMAC-SHA256). */
export function hmacSha256Hex(secret: string, body: Buffer | string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

function parseHexDigest(signature: string | undefined, prefix: string | undefined): Buffer | undefined {
  if (signature === undefined) return undefined;
  let text = signature.trim();
  if (prefix !== undefined) {
    if (text.slice(0, prefix.length).toLowerCase() !== prefix) return undefined;
    text = text.slice(prefix.length);
  }
  if (!/^[0-9a-f]{64}$/i.test(text)) return undefined;
  return Buffer.from(text, 'hex');
}

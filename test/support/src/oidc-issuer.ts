// A small OpenID Connect issuer for browser tests: discovery, JWKS, an authorization endpoint with a page to
// pick a user, and a token endpoint that checks the client secret and PKCE and returns an id token signed
// with a real RS256 key (jose). Served over https with a test CA, as an issuer must be.
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';

export type OidcUser = { sub: string; email: string; groups: string[] };

export type OidcIssuer = {
  /** https://127.0.0.1:PORT */
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Callback URLs the client may use (exact match, as real issuers do). */
  allowRedirect(url: string): void;
  /** How many codes the token endpoint redeemed. */
  readonly redeemed: () => number;
  close(): Promise<void>;
};

type Grant = { user: OidcUser; clientId: string; redirectUri: string; challenge: string; nonce: string | undefined; at: number };

export async function startOidcIssuer(options: {
  tls: { key: string; cert: string };
  users: Record<string, OidcUser>;
  clientId?: string;
  clientSecret?: string;
}): Promise<OidcIssuer> {
  const clientId = options.clientId ?? 'syncline';
  const clientSecret = options.clientSecret ?? randomBytes(16).toString('hex');
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const kid = randomBytes(8).toString('hex');
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  const redirects = new Set<string>();
  const grants = new Map<string, Grant>();
  let redeemed = 0;
  let issuer = '';

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', issuer);
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(res, 200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        scopes_supported: ['openid', 'email', 'profile', 'groups'],
      });
    }
    if (url.pathname === '/jwks') return json(res, 200, { keys: [jwk] });
    if (url.pathname === '/authorize' && req.method === 'GET') return authorizePage(url, res);
    if (url.pathname === '/authorize' && req.method === 'POST') return authorize(new URLSearchParams(await body(req)), res);
    if (url.pathname === '/token' && req.method === 'POST') return token(req, new URLSearchParams(await body(req)), res);
    json(res, 404, { error: 'not_found' });
  };

  const authorizePage = (url: URL, res: ServerResponse): void => {
    const q = url.searchParams;
    const problem =
      q.get('client_id') !== clientId
        ? 'unknown client_id'
        : !redirects.has(q.get('redirect_uri') ?? '')
          ? `redirect_uri not registered: ${q.get('redirect_uri') ?? ''}`
          : q.get('response_type') !== 'code'
            ? 'response_type must be code'
            : q.get('code_challenge_method') !== 'S256' || (q.get('code_challenge') ?? '') === ''
              ? 'PKCE (S256) is required'
              : undefined;
    if (problem !== undefined) return page(res, 400, `<p id="problem">${problem}</p>`);
    const hidden = ['client_id', 'redirect_uri', 'state', 'nonce', 'code_challenge']
      .map((k) => `<input type="hidden" name="${k}" value="${escape(q.get(k) ?? '')}">`)
      .join('');
    const buttons = Object.keys(options.users)
      .map((name) => `<button type="submit" name="user" value="${escape(name)}">Sign in as ${escape(name)}</button>`)
      .join('');
    page(
      res,
      200,
      `<h1>Test issuer</h1><form method="post" action="/authorize">${hidden}${buttons}<button type="submit" name="deny" value="1">Deny</button></form>`,
    );
  };

  const authorize = (form: URLSearchParams, res: ServerResponse): void => {
    const redirectUri = form.get('redirect_uri') ?? '';
    if (!redirects.has(redirectUri)) return page(res, 400, '<p>redirect_uri not registered</p>');
    const back = new URL(redirectUri);
    const state = form.get('state');
    if (state !== null) back.searchParams.set('state', state);
    const user = options.users[form.get('user') ?? ''];
    if (form.get('deny') !== null || user === undefined) {
      back.searchParams.set('error', 'access_denied');
    } else {
      const code = randomBytes(24).toString('base64url');
      grants.set(code, {
        user,
        clientId: form.get('client_id') ?? '',
        redirectUri,
        challenge: form.get('code_challenge') ?? '',
        nonce: form.get('nonce') ?? undefined,
        at: Date.now(),
      });
      back.searchParams.set('code', code);
    }
    res.writeHead(302, { Location: back.href }).end();
  };

  const token = async (req: IncomingMessage, form: URLSearchParams, res: ServerResponse): Promise<void> => {
    // client_secret_basic (form-urlencoded id and secret in the Authorization header) or client_secret_post
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const [id, secret] =
      basic === undefined
        ? [form.get('client_id'), form.get('client_secret')]
        : Buffer.from(basic, 'base64')
            .toString()
            .split(':')
            .map((p) => decodeURIComponent(p.replace(/\+/g, ' ')));
    if (id !== clientId || secret !== clientSecret) return json(res, 401, { error: 'invalid_client' });
    const grant = grants.get(form.get('code') ?? '');
    grants.delete(form.get('code') ?? '');
    if (
      form.get('grant_type') !== 'authorization_code' ||
      grant === undefined ||
      grant.clientId !== clientId ||
      grant.redirectUri !== form.get('redirect_uri') ||
      Date.now() - grant.at > 60_000
    )
      return json(res, 400, { error: 'invalid_grant' });
    const verifier = form.get('code_verifier') ?? '';
    if (createHash('sha256').update(verifier).digest('base64url') !== grant.challenge)
      return json(res, 400, { error: 'invalid_grant', error_description: 'PKCE verification failed' });
    redeemed++;
    const idToken = await new SignJWT({
      email: grant.user.email,
      email_verified: true,
      groups: grant.user.groups,
      ...(grant.nonce === undefined ? {} : { nonce: grant.nonce }),
    })
      .setProtectedHeader({ alg: 'RS256', kid })
      .setIssuer(issuer)
      .setSubject(grant.user.sub)
      .setAudience(clientId)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    json(res, 200, {
      access_token: randomBytes(24).toString('base64url'),
      token_type: 'Bearer',
      expires_in: 300,
      id_token: idToken,
      scope: 'openid email profile',
    });
  };

  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    handle(req, res).catch((error: unknown) => json(res, 500, { error: 'server_error', error_description: String(error) }));
  };
  const server = createHttpsServer({ key: options.tls.key, cert: options.tls.cert }, listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    clientId,
    clientSecret,
    allowRedirect: (url) => void redirects.add(url),
    redeemed: () => redeemed,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }).end(JSON.stringify(value));
}

function page(res: ServerResponse, status: number, content: string): void {
  res.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8' }).end(`<!doctype html><html><body>${content}</body></html>`);
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

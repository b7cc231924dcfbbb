// OIDC sign-in for the web UI: the authorization-code flow with PKCE (S256), state and nonce, against the
// issuer's discovery document, with openid-client (already in the image through @kubernetes/client-node; a
// certified OpenID Connect relying party). The client secret is read from a Secret, never from a flag or a
// log. The id token's signature is checked against the issuer's JWKS even though it came straight from the
// token endpoint over TLS, and its user and groups become the viewer every SubjectAccessReview asks about,
// mapped the way kube-apiserver's own OIDC authenticator maps them (claim, prefix), so the UI and kubectl
// agree on who the person is.
import { randomBytes } from 'node:crypto';
import type * as OpenId from 'openid-client';
import type { KubeRest } from '@syncline/kube';
import type { Viewer } from './auth.ts';

export type OidcSettings = {
  issuer: string;
  clientId: string;
  /** The Secret holding the client secret: namespace, name and key. */
  clientSecret: { namespace: string; name: string; key: string };
  /** The callback URL registered at the issuer; default: this server's /oidc/callback as the browser reached it. */
  redirectUrl?: string;
  /** As kube-apiserver's --oidc-username-claim (default sub). */
  usernameClaim: string;
  /** As --oidc-username-prefix: '-' for none; unset: `issuer#` unless the claim is email (kube-apiserver's rule). */
  usernamePrefix?: string;
  /** As --oidc-groups-claim (default groups). */
  groupsClaim: string;
  /** As --oidc-groups-prefix (default none). */
  groupsPrefix: string;
};

/** A sign-in under way: kept in memory by its state, bound to the browser by a cookie holding that state. */
type Pending = { verifier: string; nonce: string; redirectUrl: string; at: number };

export type OidcSignIn = {
  /** The issuer's authorization URL for a new sign-in, and the state the browser must bring back. */
  begin(redirectUrl: string): Promise<{ url: string; state: string }>;
  /** Redeems the callback (`currentUrl` carries code and state) for the viewer; `state` is the cookie's. */
  finish(currentUrl: URL, state: string | undefined): Promise<Viewer>;
  /** The redirect URL to use for a request that reached this server as `origin`. */
  redirectUrl(origin: string): string;
};

/** A refusal the person may read (the issuer said no, a claim is missing); details of the exchange are logged. */
export class OidcError extends Error {}

/** openid-client is loaded when an OIDC sign-in is first asked for: an operator without OIDC never loads it. */
const openid = (): Promise<typeof OpenId> => import('openid-client');

const PENDING_MS = 10 * 60_000;
const SECRET_TTL_MS = 60_000;

export function createOidcSignIn(options: { settings: OidcSettings; rest: KubeRest; now?: () => number }): OidcSignIn {
  const { settings, rest } = options;
  const now = options.now ?? Date.now;
  const pending = new Map<string, Pending>();
  let configured: { secret: string; at: number; config: Promise<OpenId.Configuration> } | undefined;

  /** The issuer's configuration, discovered again when the Secret's value changed (rotation) or after a failure. */
  const configuration = async (): Promise<OpenId.Configuration> => {
    const client = await openid();
    if (configured !== undefined && now() - configured.at < SECRET_TTL_MS) return configured.config;
    const secret = await readClientSecret(rest, settings.clientSecret);
    if (configured !== undefined && configured.secret === secret) {
      configured.at = now();
      return configured.config;
    }
    const config = client.discovery(new URL(settings.issuer), settings.clientId, undefined, client.ClientSecretBasic(secret), {
      execute: [client.enableNonRepudiationChecks],
    });
    config.catch(() => (configured = undefined));
    configured = { secret, at: now(), config };
    return config;
  };

  return {
    redirectUrl: (origin) => settings.redirectUrl ?? `${origin}/oidc/callback`,
    async begin(redirectUrl) {
      const client = await openid();
      const config = await configuration();
      for (const [state, p] of pending) if (now() - p.at > PENDING_MS) pending.delete(state);
      if (pending.size > 10_000) throw new OidcError('too many sign-ins under way; try again in a few minutes');
      const verifier = client.randomPKCECodeVerifier();
      const state = randomBytes(24).toString('base64url');
      const nonce = randomBytes(24).toString('base64url');
      pending.set(state, { verifier, nonce, redirectUrl, at: now() });
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUrl,
        scope: 'openid email profile',
        response_type: 'code',
        state,
        nonce,
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      });
      return { url: url.href, state };
    },
    async finish(currentUrl, cookieState) {
      const state = currentUrl.searchParams.get('state') ?? '';
      const started = pending.get(state);
      // The state must be one this server handed out, to this browser (its cookie), not too long ago.
      if (started === undefined || cookieState !== state || now() - started.at > PENDING_MS)
        throw new OidcError('this sign-in was not started here, or took too long: sign in again');
      pending.delete(state);
      const error = currentUrl.searchParams.get('error');
      if (error !== null) throw new OidcError(`the issuer refused the sign-in: ${error}`);
      const client = await openid();
      const config = await configuration();
      // The callback as the issuer sent it, at the redirect URL the sign-in began with (a proxy may rewrite Host).
      const callback = new URL(started.redirectUrl);
      callback.search = currentUrl.search;
      const tokens = await client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: started.verifier,
        expectedState: state,
        expectedNonce: started.nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims();
      if (claims === undefined) throw new OidcError('the issuer sent no id token');
      return viewerFromClaims(claims, settings);
    },
  };
}

/** The viewer an id token names, as kube-apiserver's OIDC authenticator would name the same person. */
export function viewerFromClaims(
  claims: Record<string, unknown>,
  settings: Pick<OidcSettings, 'issuer' | 'usernameClaim' | 'usernamePrefix' | 'groupsClaim' | 'groupsPrefix'>,
): Viewer {
  const value = claims[settings.usernameClaim];
  if (typeof value !== 'string' || value === '') throw new OidcError(`the id token has no ${settings.usernameClaim} claim`);
  if (settings.usernameClaim === 'email' && claims['email_verified'] === false) throw new OidcError("the id token's email is not verified");
  const prefix = settings.usernamePrefix === '-' ? '' : (settings.usernamePrefix ?? (settings.usernameClaim === 'email' ? '' : `${settings.issuer}#`));
  const raw = claims[settings.groupsClaim];
  // The system: names are Kubernetes' own (system:masters, system:serviceaccount:…): an issuer never grants
  // them here, whatever its token says (kube-apiserver refuses them from OIDC claims too).
  const username = `${prefix}${value}`;
  if (username.startsWith('system:')) throw new OidcError(`the id token names ${username}: system: users cannot sign in with OIDC`);
  const groups = (Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : [])
    .filter((g): g is string => typeof g === 'string')
    .map((g) => `${settings.groupsPrefix}${g}`)
    .filter((g) => !g.startsWith('system:'));
  return { username, groups };
}

async function readClientSecret(rest: KubeRest, ref: OidcSettings['clientSecret']): Promise<string> {
  const secret = await rest.request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${ref.namespace}/secrets/${ref.name}` });
  const value = secret.data?.[ref.key];
  if (value === undefined) throw new OidcError(`the Secret ${ref.namespace}/${ref.name} has no key ${ref.key} (the OIDC client secret)`);
  return Buffer.from(value, 'base64').toString('utf8').trim();
}

/** The --ui-oidc-* flags as settings; undefined without an issuer. Errors name the flag. */
export function oidcSettingsFromFlags(
  flags: {
    uiOidcIssuer?: string;
    uiOidcClientId?: string;
    uiOidcClientSecret?: string;
    uiOidcRedirectUrl?: string;
    uiOidcUsernameClaim: string;
    uiOidcUsernamePrefix?: string;
    uiOidcGroupsClaim: string;
    uiOidcGroupsPrefix: string;
  },
  defaultNamespace: string,
): OidcSettings | undefined {
  if (flags.uiOidcIssuer === undefined || flags.uiOidcIssuer === '') return undefined;
  let issuer: URL;
  try {
    issuer = new URL(flags.uiOidcIssuer);
  } catch {
    throw new Error(`--ui-oidc-issuer ${flags.uiOidcIssuer}: not a URL`);
  }
  if (issuer.protocol !== 'https:') throw new Error(`--ui-oidc-issuer ${flags.uiOidcIssuer}: the issuer must be https`);
  if (flags.uiOidcClientId === undefined || flags.uiOidcClientId === '') throw new Error('--ui-oidc-issuer needs --ui-oidc-client-id');
  const ref = /^(?:([a-z0-9-]+)\/)?([a-z0-9.-]+)(?::([-._a-zA-Z0-9]+))?$/.exec(flags.uiOidcClientSecret ?? '');
  if (ref === null)
    throw new Error('--ui-oidc-issuer needs --ui-oidc-client-secret [NAMESPACE/]NAME[:KEY] (the Secret holding the client secret; key default client-secret)');
  return {
    issuer: flags.uiOidcIssuer,
    clientId: flags.uiOidcClientId,
    clientSecret: { namespace: ref[1] ?? defaultNamespace, name: ref[2] ?? '', key: ref[3] ?? 'client-secret' },
    ...(flags.uiOidcRedirectUrl === undefined ? {} : { redirectUrl: flags.uiOidcRedirectUrl }),
    usernameClaim: flags.uiOidcUsernameClaim,
    ...(flags.uiOidcUsernamePrefix === undefined ? {} : { usernamePrefix: flags.uiOidcUsernamePrefix }),
    groupsClaim: flags.uiOidcGroupsClaim,
    groupsPrefix: flags.uiOidcGroupsPrefix,
  };
}

import { describe, expect, it } from 'vitest';
import { oidcSettingsFromFlags, viewerFromClaims } from './oidc.ts';

const flags = { uiOidcUsernameClaim: 'sub', uiOidcGroupsClaim: 'groups', uiOidcGroupsPrefix: '' };

describe('OIDC viewers (mapped as kube-apiserver maps an id token)', () => {
  const issuer = 'https://login.example.com';

  it('prefixes a non-email username with issuer#, as kube-apiserver does by default, and takes groups with their prefix', () => {
    expect(viewerFromClaims({ sub: 'u1', groups: ['dev', 'ops', 7] }, { issuer, usernameClaim: 'sub', groupsClaim: 'groups', groupsPrefix: 'oidc:' })).toEqual({
      username: 'https://login.example.com#u1',
      groups: ['oidc:dev', 'oidc:ops'],
    });
    expect(
      viewerFromClaims(
        { email: 'a@example.com', email_verified: true, groups: 'dev' },
        { issuer, usernameClaim: 'email', groupsClaim: 'groups', groupsPrefix: '' },
      ),
    ).toEqual({ username: 'a@example.com', groups: ['dev'] });
    expect(viewerFromClaims({ sub: 'u1' }, { issuer, usernameClaim: 'sub', usernamePrefix: '-', groupsClaim: 'groups', groupsPrefix: '' })).toEqual({
      username: 'u1',
      groups: [],
    });
    expect(viewerFromClaims({ sub: 'u1' }, { issuer, usernameClaim: 'sub', usernamePrefix: 'oidc:', groupsClaim: 'groups', groupsPrefix: '' }).username).toBe(
      'oidc:u1',
    );
  });

  it('never grants a system: user or group from an id token', () => {
    expect(
      viewerFromClaims(
        { sub: 'u1', groups: ['system:masters', 'dev'] },
        { issuer, usernameClaim: 'sub', usernamePrefix: '-', groupsClaim: 'groups', groupsPrefix: '' },
      ).groups,
    ).toEqual(['dev']);
    expect(() =>
      viewerFromClaims({ sub: 'system:admin' }, { issuer, usernameClaim: 'sub', usernamePrefix: '-', groupsClaim: 'groups', groupsPrefix: '' }),
    ).toThrow('system: users cannot sign in');
  });

  it('refuses a token without the username claim, or with an unverified email', () => {
    expect(() => viewerFromClaims({ email: 'a@example.com' }, { issuer, usernameClaim: 'sub', groupsClaim: 'groups', groupsPrefix: '' })).toThrow(
      'no sub claim',
    );
    expect(() =>
      viewerFromClaims({ email: 'a@example.com', email_verified: false }, { issuer, usernameClaim: 'email', groupsClaim: 'groups', groupsPrefix: '' }),
    ).toThrow('not verified');
  });

  it('reads the flags: https issuer, client id and the client secret Secret (key default client-secret), each missing one named', () => {
    expect(oidcSettingsFromFlags(flags, 'syncline')).toBeUndefined();
    expect(oidcSettingsFromFlags({ ...flags, uiOidcIssuer: issuer, uiOidcClientId: 'ui', uiOidcClientSecret: 'oidc' }, 'syncline')?.clientSecret).toEqual({
      namespace: 'syncline',
      name: 'oidc',
      key: 'client-secret',
    });
    expect(
      oidcSettingsFromFlags({ ...flags, uiOidcIssuer: issuer, uiOidcClientId: 'ui', uiOidcClientSecret: 'auth/oidc:secret' }, 'syncline')?.clientSecret,
    ).toEqual({ namespace: 'auth', name: 'oidc', key: 'secret' });
    expect(() => oidcSettingsFromFlags({ ...flags, uiOidcIssuer: 'http://login.example.com', uiOidcClientId: 'ui', uiOidcClientSecret: 'oidc' }, 'x')).toThrow(
      'must be https',
    );
    expect(() => oidcSettingsFromFlags({ ...flags, uiOidcIssuer: issuer, uiOidcClientSecret: 'oidc' }, 'x')).toThrow('--ui-oidc-client-id');
    expect(() => oidcSettingsFromFlags({ ...flags, uiOidcIssuer: issuer, uiOidcClientId: 'ui' }, 'x')).toThrow('--ui-oidc-client-secret');
  });
});

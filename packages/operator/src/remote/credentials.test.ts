import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { InvalidCredentialsError, credentialsFromParts, parseKubeconfig } from './credentials.ts';

const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const b64 = (text: string): string => Buffer.from(text).toString('base64');
const SECRET = 'tok-3f9a7c1e-do-not-leak';

function kubeconfig(
  overrides: { cluster?: Record<string, unknown>; user?: Record<string, unknown>; contexts?: unknown[]; current?: string | null } = {},
): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'east', cluster: { server: 'https://east.example.com:6443', 'certificate-authority-data': b64(pem), ...overrides.cluster } }],
    users: [{ name: 'deployer', user: { token: SECRET, ...overrides.user } }],
    contexts: overrides.contexts ?? [{ name: 'east', context: { cluster: 'east', user: 'deployer' } }],
    ...(overrides.current === null ? {} : { 'current-context': overrides.current ?? 'east' }),
  });
}

describe('parseKubeconfig', () => {
  it('reads the current context: server, CA and token', () => {
    expect(parseKubeconfig(kubeconfig())).toEqual({ server: 'https://east.example.com:6443', caData: pem, auth: { kind: 'token', token: SECRET } });
  });

  it('reads a client certificate and a single context without current-context', () => {
    const text = kubeconfig({
      user: { token: undefined, 'client-certificate-data': b64(pem), 'client-key-data': b64(pem.replace('CERTIFICATE', 'PRIVATE KEY')) },
      current: null,
    });
    expect(parseKubeconfig(text).auth).toMatchObject({ kind: 'clientCertificate' });
  });

  const refused: [string, Parameters<typeof kubeconfig>[0], RegExp][] = [
    ['an exec user', { user: { exec: { command: '/bin/sh', args: ['-c', 'curl evil'] } } }, /runs a command \(exec\): refused/],
    ['an auth-provider user', { user: { 'auth-provider': { name: 'gcp' } } }, /auth-provider plugin: refused/],
    ['a CA file', { cluster: { 'certificate-authority': '/etc/passwd' } }, /reads a file \(certificate-authority\)/],
    ['a client certificate file', { user: { 'client-certificate': '/var/run/secrets/x' } }, /reads a file \(client-certificate\)/],
    ['a client key file', { user: { 'client-key': '/root/.ssh/id_rsa' } }, /reads a file \(client-key\)/],
    ['a token file', { user: { tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' } }, /reads a file \(tokenFile\)/],
    ['insecure TLS', { cluster: { 'insecure-skip-tls-verify': true } }, /insecure-skip-tls-verify is set: refused/],
    ['plain http', { cluster: { server: 'http://east.example.com' } }, /must be an https:\/\/ URL/],
    ['a server URL with credentials', { cluster: { server: 'https://admin:pw@east.example.com' } }, /must not carry credentials/],
    [
      'several contexts, none chosen',
      {
        contexts: [
          { name: 'a', context: { cluster: 'east', user: 'deployer' } },
          { name: 'b', context: { cluster: 'east', user: 'deployer' } },
        ],
        current: null,
      },
      /2 contexts and no current-context/,
    ],
    ['a current-context that names nothing', { current: 'west' }, /names no context/],
    ['a user without credentials', { user: { token: undefined } }, /has no credentials/],
    ['a CA that is not PEM', { cluster: { 'certificate-authority-data': b64('hello') } }, /not base64 of a PEM block/],
  ];
  it.each(refused)('refuses %s, and the error never carries the token', (_what, overrides, message) => {
    let caught: unknown;
    try {
      parseKubeconfig(kubeconfig(overrides));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidCredentialsError);
    expect((caught as Error).message).toMatch(message);
    expect((caught as Error).message).not.toContain(SECRET);
  });

  it('admits insecure TLS only when the operator allows it', () => {
    expect(parseKubeconfig(kubeconfig({ cluster: { 'insecure-skip-tls-verify': true } }), { allowInsecureTLS: true }).insecureSkipTLSVerify).toBe(true);
  });

  it.each(['', 'not: [yaml', '- a list', 'plain text'])('refuses %j as not a kubeconfig', (text) => {
    expect(() => parseKubeconfig(text)).toThrow(InvalidCredentialsError);
  });
});

describe('credentialsFromParts', () => {
  it('takes server, CA and token', () => {
    expect(credentialsFromParts({ server: 'https://east:6443/', caPem: pem, token: ` ${SECRET}\n` })).toEqual({
      server: 'https://east:6443',
      caData: pem,
      auth: { kind: 'token', token: SECRET },
    });
  });
  it.each([
    [{ server: 'http://east', token: 't' }, /https/],
    [{ server: 'https://east', token: '  ' }, /token is empty/],
    [{ server: 'https://east', token: 't', caPem: 'nope' }, /not a PEM/],
  ])('refuses %j', (parts, message) => {
    expect(() => credentialsFromParts(parts)).toThrow(message);
  });
});

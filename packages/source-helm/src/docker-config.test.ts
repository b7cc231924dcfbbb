// A Docker config Secret as `kubectl create secret docker-registry` and `docker login` write it: the entry for
// the registry's host is found whatever form its key takes, and a failure names the key, never a value.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ChartSourceError, ChartSourceErrorCode } from './errors.ts';
import { credentialsFromDockerConfig, registryHostOf } from './docker-config.ts';

const run = promisify(execFile);
const what = 'the Secret shop/regcred';

/** What `kubectl create secret docker-registry --dry-run=client` writes, decoded; undefined without kubectl. */
async function kubectlDockerConfig(server: string, username: string, password: string): Promise<string | undefined> {
  try {
    const { stdout } = await run('kubectl', [
      'create',
      'secret',
      'docker-registry',
      'regcred',
      `--docker-server=${server}`,
      `--docker-username=${username}`,
      `--docker-password=${password}`,
      '--dry-run=client',
      '-o',
      'json',
    ]);
    const secret = JSON.parse(stdout) as { data: Record<string, string> };
    return Buffer.from(secret.data['.dockerconfigjson'] ?? '', 'base64').toString('utf8');
  } catch {
    return undefined;
  }
}

function failure(fn: () => unknown): ChartSourceError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ChartSourceError) return error;
    throw error;
  }
  throw new Error('no error');
}

describe('registry credentials from a Docker config', () => {
  it('reads the entry for the host, keyed as a bare host, a host:port, or a URL', () => {
    const config = JSON.stringify({
      auths: {
        'ghcr.io': { username: 'gh', password: 'gh-pass' },
        'https://index.docker.io/v1/': { auth: Buffer.from('hub:hub:pass').toString('base64') },
        '127.0.0.1:5000': { username: 'local', password: 'local-pass', auth: Buffer.from('ignored:x').toString('base64') },
      },
    });
    expect(credentialsFromDockerConfig(config, 'ghcr.io', what)).toEqual({ username: 'gh', password: 'gh-pass' });
    expect(credentialsFromDockerConfig(config, 'index.docker.io', what)).toEqual({ username: 'hub', password: 'hub:pass' });
    expect(credentialsFromDockerConfig(config, '127.0.0.1:5000', what)).toEqual({ username: 'local', password: 'local-pass' });
  });

  it('reads what kubectl create secret docker-registry writes', async () => {
    const json = await kubectlDockerConfig('registry.example.com:8443', 'robot', 'robot-Pass-3');
    // kubectl is on every machine these tests run on (the e2e suite drives it); say so when it is not.
    expect(json, 'kubectl on PATH').toBeDefined();
    expect(credentialsFromDockerConfig(json ?? '', 'registry.example.com:8443', what)).toEqual({ username: 'robot', password: 'robot-Pass-3' });
  });

  it('no entry for the host, no JSON, or no credentials is InvalidAuth naming the Secret and never a value', () => {
    const other = failure(() =>
      credentialsFromDockerConfig(JSON.stringify({ auths: { 'ghcr.io': { username: 'u', password: 'p-secret' } } }), 'quay.io', what),
    );
    expect(other.code).toBe(ChartSourceErrorCode.InvalidAuth);
    expect(other.retryable).toBe(false);
    expect(other.message).toBe(`${what}: .dockerconfigjson has no entry for the registry quay.io`);
    // a port is part of the host: 127.0.0.1 is not 127.0.0.1:5000
    expect(
      failure(() => credentialsFromDockerConfig(JSON.stringify({ auths: { '127.0.0.1:5000': { username: 'u', password: 'p' } } }), '127.0.0.1', what)).code,
    ).toBe(ChartSourceErrorCode.InvalidAuth);
    expect(failure(() => credentialsFromDockerConfig('{"auths": ', 'ghcr.io', what)).message).toBe(`${what}: .dockerconfigjson is not JSON`);
    const empty = failure(() =>
      credentialsFromDockerConfig(
        JSON.stringify({ auths: { 'ghcr.io': { email: 'x@example.com', auth: Buffer.from('only-user').toString('base64') } } }),
        'ghcr.io',
        what,
      ),
    );
    expect(empty.message).toContain('neither username and password nor auth');
    expect(empty.message).not.toContain('only-user');
  });

  it('the registry host of an oci:// URL, and none for a Helm repository', () => {
    expect(registryHostOf('oci://127.0.0.1:5000/charts/team')).toBe('127.0.0.1:5000');
    expect(registryHostOf('oci://ghcr.io')).toBe('ghcr.io');
    expect(registryHostOf('https://charts.example.com/stable')).toBeUndefined();
  });
});

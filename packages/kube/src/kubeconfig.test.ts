import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadKubeConfig } from './kubeconfig.ts';

describe('loadKubeConfig', () => {
  let dir: string;
  let a: string;
  let b: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncline-kubeconfig-'));
    a = join(dir, 'a.yaml');
    b = join(dir, 'b.yaml');
    const cluster = (name: string, server: string): object => ({ name, cluster: { server } });
    await writeFile(
      a,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [cluster('one', 'https://a.example:6443')],
        users: [{ name: 'me', user: { token: 't-a' } }],
        contexts: [{ name: 'dev', context: { cluster: 'one', user: 'me', namespace: 'team' } }],
        'current-context': 'dev',
      }),
    );
    await writeFile(
      b,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [cluster('one', 'https://b.example:6443'), cluster('two', 'https://two.example:6443')],
        users: [{ name: 'me', user: { token: 't-b' } }],
        contexts: [
          { name: 'dev', context: { cluster: 'two', user: 'me' } },
          { name: 'prod', context: { cluster: 'two', user: 'me' } },
        ],
        'current-context': 'prod',
      }),
    );
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('merges KUBECONFIG=a:b as kubectl does: the first file wins for a name and for current-context; missing files are skipped', () => {
    const kc = loadKubeConfig({ env: { KUBECONFIG: [a, join(dir, 'missing.yaml'), '', b].join(delimiter) } });
    expect(kc.getCurrentContext()).toBe('dev');
    expect(kc.getCurrentCluster()?.server).toBe('https://a.example:6443');
    expect(kc.getCurrentUser()?.token).toBe('t-a');
    expect(kc.getContextObject('dev')?.namespace).toBe('team');
    // what only the second file has is there too
    expect(kc.getContextObject('prod')?.cluster).toBe('two');
    expect(kc.getCluster('two')?.server).toBe('https://two.example:6443');
  });

  it('takes the current-context from the first file that sets one', () => {
    const kc = loadKubeConfig({ env: { KUBECONFIG: [b, a].join(delimiter) } });
    expect(kc.getCurrentContext()).toBe('prod');
    expect(kc.getCluster('one')?.server).toBe('https://b.example:6443');
  });

  it('reads only --kubeconfig when given, and --context selects a context', () => {
    const kc = loadKubeConfig({ kubeconfig: b, context: 'dev', env: { KUBECONFIG: a } });
    expect(kc.getCurrentContext()).toBe('dev');
    expect(kc.getCurrentCluster()?.server).toBe('https://two.example:6443');
    expect(() => loadKubeConfig({ kubeconfig: b, context: 'nope', env: {} })).toThrow('context "nope" does not exist');
  });

  it('says how to give one when there is no kubeconfig at all (and this is not a pod)', () => {
    expect(() => loadKubeConfig({ env: { HOME: dir } })).toThrow(/^no kubeconfig: set KUBECONFIG, pass --kubeconfig FILE, or create ~\/.kube\/config/);
  });

  it('says so when no file in KUBECONFIG exists', () => {
    expect(() => loadKubeConfig({ env: { KUBECONFIG: join(dir, 'missing.yaml') } })).toThrow(/none of the files in KUBECONFIG exist/);
  });
});

describe('readKubeconfigFile and in-cluster', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncline-kubeconfig-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('resolves relative certificate and token file paths against the file they are written in, each in its own', async () => {
    await mkdir(join(dir, 'one'), { recursive: true });
    await mkdir(join(dir, 'two'), { recursive: true });
    const one = join(dir, 'one', 'config');
    const two = join(dir, 'two', 'config');
    await writeFile(
      one,
      stringify({
        clusters: [{ name: 'c1', cluster: { server: 'https://one.example:6443/', 'certificate-authority': 'ca.crt' } }],
        users: [{ name: 'u1', user: { 'client-certificate': 'certs/me.crt', 'client-key': '/abs/me.key' } }],
        contexts: [{ name: 'x', context: { cluster: 'c1', user: 'u1' } }],
        'current-context': 'x',
      }),
    );
    await writeFile(
      two,
      stringify({
        clusters: [{ name: 'c2', cluster: { server: 'https://two.example' } }],
        users: [{ name: 'u2', user: { tokenFile: '../tokens/t' } }],
        contexts: [{ name: 'y', context: { cluster: 'c2', user: 'u2', namespace: 'ns2' } }],
      }),
    );
    const kc = loadKubeConfig({ env: { KUBECONFIG: [one, two].join(delimiter) } });
    expect(kc.getCurrentCluster()).toMatchObject({ server: 'https://one.example:6443', caFile: join(dir, 'one', 'ca.crt') });
    expect(kc.getCurrentUser()).toMatchObject({ certFile: join(dir, 'one', 'certs', 'me.crt'), keyFile: '/abs/me.key' });
    expect(kc.getUser('u2')?.tokenFile).toBe(join(dir, 'tokens', 't'));
    // --context switches cluster, user and namespace together
    const switched = loadKubeConfig({ context: 'y', env: { KUBECONFIG: [one, two].join(delimiter) } });
    expect(switched.getCurrentCluster()?.name).toBe('c2');
    expect(switched.getCurrentUser()?.name).toBe('u2');
    expect(switched.getContextObject(switched.getCurrentContext())?.namespace).toBe('ns2');
  });

  it('reads ~/.kube/config when KUBECONFIG is unset, before any ServiceAccount', async () => {
    await mkdir(join(dir, 'home', '.kube'), { recursive: true });
    await writeFile(
      join(dir, 'home', '.kube', 'config'),
      stringify({
        clusters: [{ name: 'h', cluster: { server: 'https://home.example' } }],
        contexts: [{ name: 'h', context: { cluster: 'h' } }],
        'current-context': 'h',
      }),
    );
    const sa = await serviceAccountDir('tok');
    const kc = loadKubeConfig({ env: { HOME: join(dir, 'home'), KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' }, serviceAccountDir: sa });
    expect(kc.getCurrentCluster()?.server).toBe('https://home.example');
  });

  it('uses the pod ServiceAccount in-cluster: server from the environment (IPv6 in brackets), mounted CA and token file, the pod namespace', async () => {
    const sa = await serviceAccountDir('tok');
    await writeFile(join(sa, 'namespace'), 'syncline-system\n');
    const kc = loadKubeConfig({
      env: { HOME: join(dir, 'nohome'), KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      serviceAccountDir: sa,
    });
    expect(kc.getCurrentCluster()).toMatchObject({ server: 'https://[fd00::1]:443', caFile: join(sa, 'ca.crt') });
    expect(kc.getCurrentUser()?.tokenFile).toBe(join(sa, 'token'));
    expect(kc.getContextObject(kc.getCurrentContext())?.namespace).toBe('syncline-system');
    const v4 = loadKubeConfig({
      env: { HOME: join(dir, 'nohome'), KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '6443' },
      serviceAccountDir: sa,
    });
    expect(v4.getCurrentCluster()?.server).toBe('https://10.96.0.1:6443');
  });

  it('names the file, the entry and the field in its errors, never a credential', async () => {
    const broken = join(dir, 'broken.yaml');
    await writeFile(broken, 'users:\n- name: me\n  user:\n    token: s3cr3t-token: [unclosed\n');
    const yamlError = captureError(() => loadKubeConfig({ kubeconfig: broken, env: {} }));
    expect(yamlError).toMatch(/^the kubeconfig .*broken\.yaml is not valid YAML/);
    expect(yamlError).not.toContain('s3cr3t');
    const typed = join(dir, 'typed.yaml');
    await writeFile(typed, stringify({ users: [{ name: 'me', user: { password: 12345678 } }], clusters: [{ name: 'c', cluster: {} }] }));
    const typeError = captureError(() => loadKubeConfig({ kubeconfig: typed, env: {} }));
    expect(typeError).toBe(`the kubeconfig ${typed}: clusters[0] (c).cluster.server is missing`);
    await writeFile(typed, stringify({ users: [{ name: 'me', user: { password: 12345678 } }] }));
    expect(captureError(() => loadKubeConfig({ kubeconfig: typed, env: {} }))).toBe(`the kubeconfig ${typed}: users[0] (me).user.password is not a string`);
    expect(captureError(() => loadKubeConfig({ kubeconfig: join(dir, 'nope.yaml'), env: {} }))).toBe(
      `cannot read the kubeconfig ${join(dir, 'nope.yaml')}: ENOENT`,
    );
  });

  async function serviceAccountDir(token: string): Promise<string> {
    const sa = await mkdtemp(join(dir, 'sa-'));
    await writeFile(join(sa, 'token'), token);
    await writeFile(join(sa, 'ca.crt'), 'ca');
    return sa;
  }
});

function captureError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error('expected an error');
}

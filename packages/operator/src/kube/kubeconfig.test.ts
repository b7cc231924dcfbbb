import { mkdtemp, rm, writeFile } from 'node:fs/promises';
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
    await writeFile(a, stringify({ apiVersion: 'v1', kind: 'Config', clusters: [cluster('one', 'https://a.example:6443')], users: [{ name: 'me', user: { token: 't-a' } }], contexts: [{ name: 'dev', context: { cluster: 'one', user: 'me', namespace: 'team' } }], 'current-context': 'dev' }));
    await writeFile(b, stringify({ apiVersion: 'v1', kind: 'Config', clusters: [cluster('one', 'https://b.example:6443'), cluster('two', 'https://two.example:6443')], users: [{ name: 'me', user: { token: 't-b' } }], contexts: [{ name: 'dev', context: { cluster: 'two', user: 'me' } }, { name: 'prod', context: { cluster: 'two', user: 'me' } }], 'current-context': 'prod' }));
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

// The kinds as kubectl users meet them, with the real kubectl against the real control plane: the `syncline`
// category lists every Syncline object, no plural or short name is taken by Flux, Argo CD, cert-manager or
// the Prometheus Operator, and the conversion docs/upgrade.md gives for the renamed notification kinds works
// as written (its commands are read from the file, not copied here).
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crdDefinitions } from '@syncline/operator';
import { testKubeconfigPath, testNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, installCrds, rest } from '../e2e/harness.ts';

const root = join(import.meta.dirname, '..', '..');
const API = '/apis/syncline.dev/v1alpha1';

let cacheDir: string;
beforeAll(async () => {
  await installCrds();
  cacheDir = await mkdtemp(join(tmpdir(), 'syncline-kinds-'));
});
afterAll(async () => {
  await rm(cacheDir, { recursive: true, force: true });
});

/**
 * Runs a shell script with the test cluster as kubectl's cluster; a fresh discovery cache per file. Its stdin is
 * not a socket (Node's default pipes are): bash started with a socket for stdin and SHLVL under 2 takes itself for
 * a remote shell and reads /etc/bash.bashrc, which fails under -u on some systems.
 */
function shell(script: string): { status: number | null; stdout: string; stderr: string } {
  const env = { ...process.env, KUBECONFIG: testKubeconfigPath(), KUBECACHEDIR: cacheDir };
  return spawnSync('bash', ['-euo', 'pipefail', '-c', script], { encoding: 'utf8', env, cwd: root, timeout: 120_000, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** One valid object per kind, as small as the schema admits. */
function sampleSpec(kind: string, namespace: string): Record<string, unknown> {
  switch (kind) {
    case 'ConfigSync':
      return {
        source: { git: { repo: 'https://git.example.com/org/configs.git', revision: 'main', path: 'app' } },
        suspend: true,
        targets: [{ name: 'main', namespace }],
      };
    case 'ManifestSync':
      return { sourceRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'shared' }, suspend: true, targets: [{ namespace }] };
    case 'RemoteCluster':
      return { kubeconfigSecretRef: { name: 'east', key: 'kubeconfig' } };
    case 'NamespaceReplication':
      return { destination: { namespace: `${namespace}-standby` }, suspend: true };
    case 'NamespaceReplicationPolicy':
      return { namespaceSelector: { matchLabels: { dr: 'none' } }, template: { destination: { cluster: { name: 'dr' } } } };
    case 'NotificationProvider':
      return { type: 'webhook', address: 'https://hooks.example.com/syncline' };
    case 'NotificationAlert':
      return { providerRef: { name: 'sample' }, eventSources: [{ kind: 'ConfigSync' }] };
    default:
      throw new Error(`no sample for ${kind}: add one`);
  }
}

describe('kinds', () => {
  it('kubectl get syncline -A lists one object of each kind, and nothing else', async () => {
    // given one object of each Syncline kind in a namespace
    await using ns = await testNamespace({ prefix: 'kinds' });
    for (const def of crdDefinitions) {
      await rest.request({
        method: 'POST',
        path: `${API}/namespaces/${ns.name}/${def.plural}`,
        body: { apiVersion: 'syncline.dev/v1alpha1', kind: def.kind, metadata: { name: 'sample' }, spec: sampleSpec(def.kind, ns.name) },
      });
    }
    // when kubectl lists the category across namespaces
    const listed = shell('kubectl get syncline -A -o custom-columns=KIND:.kind,NS:.metadata.namespace,NAME:.metadata.name --no-headers');
    expect(listed.stderr).toBe('');
    expect(listed.status).toBe(0);
    // then our namespace holds exactly one of each kind
    const ours = listed.stdout
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .filter(([, namespace]) => namespace === ns.name);
    expect(ours.map(([kind, , name]) => `${kind}/${name}`).sort()).toEqual(crdDefinitions.map((d) => `${d.kind}/sample`).sort());
    // and each short name reaches its kind
    for (const def of crdDefinitions) {
      const short = shell(`kubectl get ${def.shortNames[0] ?? ''} -n ${ns.name} -o name`);
      expect(short.stdout, `kubectl get ${def.shortNames[0] ?? ''}`).toBe(`${def.singular}.syncline.dev/sample\n`);
    }
    // and docs/install.md's check lists the seven kinds
    const resources = shell('kubectl api-resources --categories syncline -o name');
    expect(resources.stdout.trim().split('\n').sort()).toEqual(crdDefinitions.map((d) => `${d.plural}.syncline.dev`).sort());
    // and docs/uninstall.md's `kubectl delete syncline --all --wait` removes every kind (here in one namespace:
    // the control plane is shared with the other test files)
    const deleted = shell(`kubectl delete syncline -n ${ns.name} --all --wait`);
    expect(deleted.status, deleted.stderr).toBe(0);
    expect(shell(`kubectl get syncline -n ${ns.name} -o name`).stdout).toBe('');
  });

  it('no plural, singular or short name is one Flux, Argo CD, cert-manager or the Prometheus Operator serves', () => {
    // Their CRDs' names (plural, singular, short names) as their current releases define them.
    const taken = new Set([
      // Flux: source, kustomize, helm, notification, image controllers
      'gitrepositories',
      'gitrepository',
      'gitrepo',
      'helmrepositories',
      'helmrepository',
      'helmrepo',
      'helmcharts',
      'helmchart',
      'hc',
      'buckets',
      'bucket',
      'ocirepositories',
      'ocirepository',
      'ocirepo',
      'kustomizations',
      'kustomization',
      'ks',
      'helmreleases',
      'helmrelease',
      'hr',
      'providers',
      'provider',
      'alerts',
      'alert',
      'receivers',
      'receiver',
      'imagerepositories',
      'imagerepository',
      'imagepolicies',
      'imagepolicy',
      'imageupdateautomations',
      'imageupdateautomation',
      'externalartifacts',
      'externalartifact',
      'artifactgenerators',
      'artifactgenerator',
      // Argo CD
      'applications',
      'application',
      'app',
      'apps',
      'applicationsets',
      'applicationset',
      'appset',
      'appsets',
      'appprojects',
      'appproject',
      'appproj',
      'appprojs',
      // cert-manager
      'certificates',
      'certificate',
      'cert',
      'certs',
      'certificaterequests',
      'certificaterequest',
      'cr',
      'crs',
      'issuers',
      'issuer',
      'clusterissuers',
      'clusterissuer',
      'orders',
      'order',
      'challenges',
      'challenge',
      // Prometheus Operator
      'alertmanagers',
      'alertmanager',
      'am',
      'alertmanagerconfigs',
      'alertmanagerconfig',
      'amcfg',
      'podmonitors',
      'podmonitor',
      'pmon',
      'probes',
      'probe',
      'prb',
      'prometheuses',
      'prometheus',
      'prom',
      'prometheusagents',
      'prometheusagent',
      'promagent',
      'prometheusrules',
      'prometheusrule',
      'promrule',
      'scrapeconfigs',
      'scrapeconfig',
      'scfg',
      'servicemonitors',
      'servicemonitor',
      'smon',
      'thanosrulers',
      'thanosruler',
      'ruler',
    ]);
    const ours = crdDefinitions.flatMap((d) => [d.plural, d.singular, d.kind.toLowerCase(), ...d.shortNames]);
    expect(ours.filter((name) => taken.has(name))).toEqual([]);
  });

  it("docs/upgrade.md's commands copy Providers and Alerts of the previous release to the new kinds, then remove the old kinds", async () => {
    // given the previous release's CRDs and one Provider and one Alert made by hand
    await using ns = await testNamespace({ prefix: 'rename' });
    const previous = join(import.meta.dirname, 'testdata', 'previous-crds');
    const installOld = shell(`kubectl apply --server-side -f ${previous}`);
    expect(installOld.status, installOld.stderr).toBe(0);
    await eventually(() => rest.request({ method: 'GET', path: `${API}/alerts` }), 'the previous CRDs to be served', 60_000);
    const oldProvider = { type: 'slack', secretRef: { name: 'slack-hook' }, rateLimit: { messages: 5, interval: '1m' } };
    const oldAlert = {
      providerRef: { name: 'slack' },
      eventSources: [{ kind: 'ConfigSync', name: 'web' }],
      eventSeverity: 'error',
      summary: 'prod: "eu" & more',
    };
    await rest.request({
      method: 'POST',
      path: `${API}/namespaces/${ns.name}/providers`,
      body: { apiVersion: 'syncline.dev/v1alpha1', kind: 'Provider', metadata: { name: 'slack', labels: { team: 'a' } }, spec: oldProvider },
    });
    await rest.request({
      method: 'POST',
      path: `${API}/namespaces/${ns.name}/alerts`,
      body: { apiVersion: 'syncline.dev/v1alpha1', kind: 'Alert', metadata: { name: 'web' }, spec: oldAlert },
    });

    // when the shell blocks of the "Renamed kinds" section run as written
    const blocks = renamedKindsBlocks(await readFile(join(root, 'docs', 'upgrade.md'), 'utf8'));
    expect(blocks).toHaveLength(2);
    const convert = shell(blocks[0] ?? '');
    expect(convert.status, convert.stderr).toBe(0);

    // then the objects exist under the new kinds with the same labels and spec
    const provider = await rest.request<{ metadata: { labels?: Record<string, string> }; spec: Record<string, unknown> }>({
      method: 'GET',
      path: `${API}/namespaces/${ns.name}/notificationproviders/slack`,
    });
    expect(provider.metadata.labels).toEqual({ team: 'a' });
    expect(provider.spec).toMatchObject(oldProvider);
    const alert = await rest.request<{ spec: Record<string, unknown> }>({ method: 'GET', path: `${API}/namespaces/${ns.name}/notificationalerts/web` });
    expect(alert.spec).toMatchObject(oldAlert);
    expect(convert.stdout).toMatch(new RegExp(`${ns.name}\\s+notificationalert.syncline.dev/web`));

    // and the old kinds go with their CRDs
    const remove = shell(blocks[1] ?? '');
    expect(remove.status, remove.stderr).toBe(0);
    await eventually(
      async () => {
        const list = await rest.request<{ resources: { name: string }[] }>({ method: 'GET', path: API });
        return list.resources.some((r) => r.name === 'alerts' || r.name === 'providers') ? undefined : true;
      },
      'the old kinds to be gone',
      60_000,
    );
  }, 180_000);
});

/** The ```sh blocks of the upgrade guide's section on the renamed kinds, in order. */
function renamedKindsBlocks(markdown: string): string[] {
  const section = markdown.split(/^## /m).find((s) => s.startsWith('Renamed kinds'));
  if (section === undefined) throw new Error('docs/upgrade.md has no "## Renamed kinds" section');
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? '');
}

// docs/install.md, docs/upgrade.md and docs/uninstall.md as an admin follows them. Each guide's commands are read
// from the file (doc-blocks.ts: ```sh blocks run, ```sh alternative ones are listed and not run) and run in
// order with bash, in a release folder that scripts/release.ts wrote (the chart packaged with the image pinned by
// digest, the CRDs file), with kubectl, helm (built from its Go module) and the release's standalone `syncline`
// on PATH. They run against a control plane of this file's own: the guides create and delete CRDs, ClusterRoles
// and the syncline-system namespace, which the control plane the other files share must keep.
//
// That control plane has no nodes, so the chart's Deployment never runs a pod. The operator runs here instead, as
// the pod would: the image's entrypoint (the cached image whose digest the chart pins) with the Deployment's
// arguments (less its listen addresses and cache path) and a token of the chart's ServiceAccount, so it has
// exactly the chart's RBAC.
import { KubeConfig } from '@kubernetes/client-node';
import { createKubeRest, type KubeRest } from '@syncline/operator';
import {
  ensureHelm,
  startControlPlane,
  startGitServer,
  startOperator,
  type ControlPlane,
  type GitServer,
  type OperatorProcess,
  type TestRepo,
} from '@syncline/test-support';
import { spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { buildRelease, ensureCli, type Release } from '../../scripts/release.ts';
import { ensureImage, imageCommand, type BuiltImage } from '../dockerfile/image.ts';
import { docBlocks, firstCommand, runBlock, type DocBlock, type ShellResult } from './doc-blocks.ts';

const root = join(import.meta.dirname, '..', '..');
const API = '/apis/syncline.dev/v1alpha1';
const TOKEN = 'git-token-for-the-docs';
/** The repository docs/install.md's ConfigSync names; the test Git server's takes its place. */
const DOC_REPO = 'https://git.example.com/platform/configs.git';
const CACHE_DIR = '/var/cache/syncline';

type Deployment = { kind: string; spec: { template: { spec: { serviceAccountName: string; containers: { name: string; image: string; args: string[] }[] } } } };
type Condition = { type: string; status: string; reason?: string; message?: string };

let cp: ControlPlane;
let rest: KubeRest;
let work: string;
let release: Release;
let image: BuiltImage;
let git: GitServer;
let repo: TestRepo;
let sha: string;
let env: NodeJS.ProcessEnv;
let operator: OperatorProcess | undefined;

beforeAll(async () => {
  const say = (line: string): void => console.log(`[docs] ${line}`);
  cp = await startControlPlane({ onProgress: say });
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  rest = await createKubeRest(kc, { userAgent: 'syncline-docs-test' });
  work = await mkdtemp(join(tmpdir(), 'syncline-docs-'));
  // Only what the guides use: the chart (which needs the image's digest) and the CRDs.
  release = await buildRelease({ out: join(work, 'release'), parts: ['chart', 'crds'], onProgress: say });
  image = await ensureImage({ onProgress: say });
  const bin = join(work, 'bin');
  await mkdir(bin);
  await symlink(await ensureHelm({ onProgress: say }), join(bin, 'helm'));
  await symlink(await ensureCli('amd64', say), join(bin, 'syncline'));
  git = await startGitServer({ auth: { username: 'deploy', password: TOKEN } });
  repo = await git.createRepo('configs');
  sha = await repo.commit({ 'apps/web/settings.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-settings\ndata:\n  color: blue\n' });
  const home = join(work, 'home');
  await mkdir(home);
  env = { PATH: `${bin}:${process.env['PATH'] ?? ''}`, HOME: home, KUBECONFIG: cp.kubeconfigPath, TOKEN };
}, 60 * 60_000);

afterAll(async () => {
  await operator?.stop();
  await git?.close();
  await cp?.stop();
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

type Hooks = { before?: (block: DocBlock) => Promise<void>; after?: (block: DocBlock, result: ShellResult) => Promise<void> };

/** Runs a guide's sh blocks in order in the release folder; every block that runs must succeed. */
async function followGuide(file: string, hooks: Hooks = {}): Promise<{ ran: DocBlock[]; alternatives: string[]; results: ShellResult[] }> {
  const { sh } = docBlocks(await readFile(join(root, file), 'utf8'), file);
  const ran: DocBlock[] = [];
  const results: ShellResult[] = [];
  for (const block of sh.filter((b) => b.kind === 'alternative'))
    console.log(`[docs] ${file}:${block.line} not run here (alternative): ${firstCommand(block)}`);
  for (const block of sh.filter((b) => b.kind === 'run')) {
    console.log(`[docs] ${file}:${block.line} runs: ${firstCommand(block)}`);
    await hooks.before?.(block);
    const result = await runBlock(block, { cwd: release.dir, env });
    expect(result.status, `${file}:${block.line}: ${block.script}\n${result.stderr}`).toBe(0);
    ran.push(block);
    results.push(result);
    await hooks.after?.(block, result);
  }
  return { ran, alternatives: sh.filter((b) => b.kind === 'alternative').map(firstCommand), results };
}

function helm(args: readonly string[]): string {
  const result = spawnSync('helm', [...args], { env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`helm ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/**
 * The operator as the chart's pod runs it: the image's entrypoint with the installed release's Deployment
 * arguments, and a token of its ServiceAccount.
 */
async function startChartOperator(): Promise<OperatorProcess> {
  const manifest = parseAllDocuments(helm(['get', 'manifest', 'syncline', '-n', 'syncline-system'])).map((d) => d.toJS() as Deployment | null);
  const deployment = manifest.find((o): o is Deployment => o?.kind === 'Deployment');
  if (deployment === undefined) throw new Error('the release has no Deployment');
  const container = deployment.spec.template.spec.containers.find((c) => c.name === 'operator');
  if (container === undefined) throw new Error('the Deployment has no operator container');
  // the pod runs the image of this release folder, by digest
  expect(container.image).toBe(`${release.repository}@${release.digest ?? ''}`);
  const serviceAccount = deployment.spec.template.spec.serviceAccountName;
  const token = (
    await rest.request<{ status: { token: string } }>({
      method: 'POST',
      path: `/api/v1/namespaces/syncline-system/serviceaccounts/${serviceAccount}/token`,
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
    })
  ).status.token;
  const hostDir = await mkdtemp(join(work, 'pod-'));
  await chmod(hostDir, 0o755);
  await writeFile(join(hostDir, 'kubeconfig'), serviceAccountKubeconfig(token), { mode: 0o644 });
  // Listen addresses and the cache path are the test's (startOperator's); everything else is the chart's.
  const args = container.args.filter((a) => a !== 'run' && !/^--(probe-addr|webhook-addr|cache-dir)=/.test(a));
  return startOperator({
    command: imageCommand(image, { hostDir, writable: [CACHE_DIR] }),
    kubeconfig: '/mnt/kubeconfig',
    cacheDir: CACHE_DIR,
    args: [...args, '--webhook-addr', 'off'],
  });
}

function serviceAccountKubeconfig(token: string): string {
  const admin = new KubeConfig();
  admin.loadFromFile(cp.kubeconfigPath);
  const cluster = admin.getCurrentCluster();
  if (cluster === null) throw new Error('the control plane kubeconfig has no current cluster');
  const sa = new KubeConfig();
  sa.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'syncline', token }],
    contexts: [{ name: 'syncline', cluster: cluster.name, user: 'syncline' }],
    currentContext: 'syncline',
  });
  return sa.exportConfig();
}

async function ready(namespace: string, name: string): Promise<Condition | undefined> {
  const cs = await rest.request<{ status?: { conditions?: Condition[]; sourceRevision?: string } }>({
    method: 'GET',
    path: `${API}/namespaces/${namespace}/configsyncs/${name}`,
  });
  return cs.status?.conditions?.find((c) => c.type === 'Ready');
}

async function exists(path: string): Promise<boolean> {
  try {
    await rest.request({ method: 'GET', path });
    return true;
  } catch (error) {
    if ((error as { status?: number }).status === 404) return false;
    throw error;
  }
}

async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // A CRD just created or deleted may answer 429 "storage is (re)initializing" for a moment: not yet.
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

const forbidden = (op: OperatorProcess): unknown[] => op.logs.filter((l) => /forbidden/i.test(JSON.stringify(l)));

/** One object of each kind docs/install.md's ConfigSync does not create, as small as their schemas admit. */
const OTHER_KINDS: Record<string, Record<string, unknown>> = {
  manifestsyncs: { sourceRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'shared' }, suspend: true, targets: [{ namespace: 'web-prod' }] },
  remoteclusters: { kubeconfigSecretRef: { name: 'east', key: 'kubeconfig' } },
  namespacereplications: { destination: { namespace: 'platform-standby' }, suspend: true },
  namespacereplicationpolicies: { namespaceSelector: { matchLabels: { dr: 'none' } }, template: { destination: { cluster: { name: 'dr' } } } },
  notificationproviders: { type: 'webhook', address: 'https://hooks.example.com/syncline' },
  notificationalerts: { providerRef: { name: 'sample' }, eventSources: [{ kind: 'ConfigSync' }] },
};
const KIND_OF: Record<string, string> = {
  manifestsyncs: 'ManifestSync',
  remoteclusters: 'RemoteCluster',
  namespacereplications: 'NamespaceReplication',
  namespacereplicationpolicies: 'NamespaceReplicationPolicy',
  notificationproviders: 'NotificationProvider',
  notificationalerts: 'NotificationAlert',
};

describe('the install, uninstall and upgrade guides, run as written', () => {
  it(
    "docs/install.md: checksums, CRDs, the packaged chart, credentials and a ConfigSync that gets Ready with the chart's RBAC",
    async () => {
      // given the ConfigSync the guide asks to save as web.yaml, naming the test Git server's repository
      const { yaml } = docBlocks(await readFile(join(root, 'docs', 'install.md'), 'utf8'), 'docs/install.md');
      expect(yaml).toHaveLength(1);
      expect(yaml[0]).toContain(DOC_REPO);
      await writeFile(join(release.dir, 'web.yaml'), (yaml[0] ?? '').replace(DOC_REPO, repo.url));

      // when its commands run, the operator starting once `helm install` has created its ServiceAccount and RBAC
      const guide = await followGuide('docs/install.md', {
        after: async (block) => {
          if (block.script.includes('helm install')) operator = await startChartOperator();
        },
      });

      // then the blocks a test machine cannot run are the registry, node and kubelet ones, and no others
      expect(guide.alternatives.map((c) => c.split(' ').slice(0, 3).join(' '))).toEqual([
        'skopeo copy --preserve-digests',
        'kind load image-archive',
        'ctr --namespace k8s.io',
        'install -m 0755',
        'kubectl -n syncline-system',
        'kubectl -n platform',
        'kubectl -n platform',
      ]);
      expect(guide.ran.length).toBeGreaterThanOrEqual(5);
      // and the sync applied the commit with the operator's chart RBAC, refused nothing
      expect(await ready('platform', 'web')).toMatchObject({ status: 'True' });
      const cm = await rest.request<{ data?: Record<string, string> }>({ method: 'GET', path: '/api/v1/namespaces/web-prod/configmaps/web-settings' });
      expect(cm.data).toEqual({ color: 'blue' });
      const cs = await rest.request<{ status?: { sourceRevision?: string } }>({ method: 'GET', path: `${API}/namespaces/platform/configsyncs/web` });
      expect(cs.status?.sourceRevision).toBe(sha);
      expect(forbidden(operator as OperatorProcess)).toEqual([]);
      // and `syncline version` (the standalone executable) named the chart's Deployment and its pinned image
      const version = guide.results.find((r) => r.stdout.includes('Client Version'));
      expect(version?.stdout).toContain(`Operator Version: ${release.version} (syncline-system/syncline, image ${release.repository}@${release.digest ?? ''}`);
    },
    15 * 60_000,
  );

  it(
    'docs/uninstall.md: orphans what the syncs applied, removes every Syncline kind, the operator and the CRDs, and leaves nothing of Syncline',
    async () => {
      // given the installed operator and one object of every other kind besides the guide's ConfigSync
      for (const [plural, spec] of Object.entries(OTHER_KINDS)) {
        await rest.request({
          method: 'POST',
          path: `${API}/namespaces/platform/${plural}`,
          body: { apiVersion: 'syncline.dev/v1alpha1', kind: KIND_OF[plural], metadata: { name: 'sample' }, spec },
        });
      }

      // when the guide's commands run, the operator going away with `helm uninstall` as its pod would
      const guide = await followGuide('docs/uninstall.md', {
        before: async (block) => {
          if (block.script.includes('helm uninstall')) {
            expect(forbidden(operator as OperatorProcess)).toEqual([]);
            await operator?.stop();
            operator = undefined;
          }
        },
      });
      expect(guide.alternatives).toEqual([`kubectl -n NS patch configsync NAME --type merge -p '{"metadata":{"finalizers":null}}'`]);

      // then no Syncline kind is served, no CRD, cluster role, release or namespace of it is left
      const groups = await rest.request<{ groups: { name: string }[] }>({ method: 'GET', path: '/apis' });
      expect(groups.groups.map((g) => g.name)).not.toContain('syncline.dev');
      const crds = await rest.request<{ items: { metadata: { name: string } }[] }>({
        method: 'GET',
        path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      });
      expect(crds.items.map((c) => c.metadata.name).filter((n) => n.endsWith('.syncline.dev'))).toEqual([]);
      for (const plural of ['clusterroles', 'clusterrolebindings']) {
        const list = await rest.request<{ items: { metadata: { name: string } }[] }>({ method: 'GET', path: `/apis/rbac.authorization.k8s.io/v1/${plural}` });
        expect(list.items.map((o) => o.metadata.name).filter((n) => n.includes('syncline'))).toEqual([]);
      }
      await until(async () => !(await exists('/api/v1/namespaces/syncline-system')), 'syncline-system to be deleted');
      expect(helm(['list', '-A', '-q'])).toBe('');
      // and the guide's own checks said so
      const check = guide.results.at(-1);
      expect(check?.stdout).toBe('');
      expect(check?.stderr).toContain('No resources found');
      // and what the orphaned sync applied stays, as the guide says
      const cm = await rest.request<{ data?: Record<string, string> }>({ method: 'GET', path: '/api/v1/namespaces/web-prod/configmaps/web-settings' });
      expect(cm.data).toEqual({ color: 'blue' });
      await rest.request({ method: 'DELETE', path: '/api/v1/namespaces/web-prod/configmaps/web-settings' });
    },
    15 * 60_000,
  );

  it(
    'docs/upgrade.md: from the chart before the notification kinds were renamed to this release, by-hand Providers and Alerts converted, the sync Ready again',
    async () => {
      // given the previous chart installed with its CRDs, a sync, and a Provider and Alert made by hand
      helm([
        'install',
        'syncline',
        join(import.meta.dirname, 'testdata', 'previous-chart.tgz'),
        '-n',
        'syncline-system',
        '--create-namespace',
        '--set',
        'operator.trustedNamespaces={platform}',
      ]);
      await until(() => exists(`${API}/alerts`), 'the previous CRDs to be served');
      await rest.request({
        method: 'POST',
        path: `${API}/namespaces/platform/providers`,
        body: {
          apiVersion: 'syncline.dev/v1alpha1',
          kind: 'Provider',
          metadata: { name: 'hooks' },
          spec: { type: 'webhook', address: 'https://hooks.example.com/syncline' },
        },
      });
      await rest.request({
        method: 'POST',
        path: `${API}/namespaces/platform/alerts`,
        body: {
          apiVersion: 'syncline.dev/v1alpha1',
          kind: 'Alert',
          metadata: { name: 'web' },
          spec: { providerRef: { name: 'hooks' }, eventSources: [{ kind: 'ConfigSync', name: 'web' }] },
        },
      });
      const applied = spawnSync('kubectl', ['apply', '-f', join(release.dir, 'web.yaml')], { env, encoding: 'utf8' });
      expect(applied.status, applied.stderr).toBe(0);

      // when the guide's commands run, the new operator starting once `helm upgrade` has updated its RBAC
      const guide = await followGuide('docs/upgrade.md', {
        after: async (block) => {
          if (block.script.includes('helm upgrade')) operator = await startChartOperator();
        },
      });
      expect(guide.alternatives).toEqual(['kubectl -n syncline-system rollout status deploy/syncline']);

      // then the sync is Ready at the commit with the new chart's RBAC, the old kinds' objects live on as the new kinds
      expect(await ready('platform', 'web')).toMatchObject({ status: 'True' });
      expect(await exists(`${API}/namespaces/platform/notificationproviders/hooks`)).toBe(true);
      expect(await exists(`${API}/namespaces/platform/notificationalerts/web`)).toBe(true);
      await until(async () => !(await exists(`${API}/alerts`)), 'the old kinds to go');
      expect(forbidden(operator as OperatorProcess)).toEqual([]);
    },
    15 * 60_000,
  );
});

// End to end: repositories laid out for Flux (Kustomize overlays per environment) and for Argo CD (a Helm chart
// with values per environment) sync unchanged through the real operator and its render process, against the
// real control plane; what the engines render goes through the same tenancy rule, apply and prune as
// Handlebars output.
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ensureRenderEngine, startGitServer, startOperator, type GitServer, type OperatorProcess, type TestRepo } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import type { ConfigSync } from '@syncline/operator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, condition, configSync, eventually, installCrds, rest, untilConfigSync } from './harness.ts';

const testdata = join(import.meta.dirname, '..', '..', 'packages', 'render', 'src', 'engines', 'testdata');

function tree(dir: string, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (current: string): void => {
    for (const name of readdirSync(current)) {
      const full = join(current, name);
      if (statSync(full).isDirectory()) walk(full);
      else out[`${prefix}${relative(dir, full).split('\\').join('/')}`] = readFileSync(full, 'utf8');
    }
  };
  walk(dir);
  return out;
}

type Obj = {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
};

describe('Kustomize, Helm and Jsonnet repositories end to end', () => {
  let git: GitServer;
  let repo: TestRepo;
  let ns: TestNamespace;
  let operator: OperatorProcess;
  let engine: string;

  const until = (name: string, check: (cs: ConfigSync) => boolean, what: string): Promise<ConfigSync> => untilConfigSync(ns.name, name, check, what, 90_000);
  const ready = (name: string): Promise<ConfigSync> => until(name, (c) => condition(c, 'Ready')?.status === 'True', 'Ready');
  const get = (path: string): Promise<Obj> => rest.request<Obj>({ method: 'GET', path });
  const absent = async (path: string): Promise<boolean> => {
    try {
      await rest.request({ method: 'GET', path });
      return false;
    } catch (error) {
      return (error as { status?: number }).status === 404;
    }
  };

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    repo = await git.createRepo('engines');
    await repo.commit({
      // Flux's layout: the GitRepository and Kustomizations in clusters/, the overlays in apps/.
      'clusters/dev/apps.yaml':
        'apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  path: ./apps/overlays/dev\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n',
      ...tree(join(testdata, 'kustomize'), 'apps/'),
      // Argo CD's layout: a chart and values per environment.
      ...tree(join(testdata, 'helm', 'web'), 'charts/web/'),
      ...tree(join(testdata, 'jsonnet'), 'jsonnet/'),
      'rbac/kustomization.yaml': 'resources:\n  - role.yaml\n',
      'rbac/role.yaml': 'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: tenant-wants-this\nrules: []\n',
    });
    ns = await testNamespace({ prefix: 'engines' });
    engine = await ensureRenderEngine({ onProgress: (line) => console.log(`[engines] ${line}`) });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name, '--render-engine', engine] });
  }, 1_200_000);
  afterAll(async () => {
    await operator?.stop();
    await ns?.[Symbol.asyncDispose]();
    await git?.close();
  });

  it('a Flux repository: an overlay per target, found by its kustomization.yaml, with Flux fields per target', async () => {
    // given one sync with a target per environment, each its own overlay (the overlays name their own
    // namespaces; targetNamespace puts them in this tenant's namespace, as Flux's targetNamespace does)
    await applyConfigSync(
      configSync(ns.name, 'apps', {
        source: { git: { repo: repo.url, revision: 'main', path: 'apps/overlays/dev' } },
        refreshInterval: '1h',
        targets: [
          { name: 'dev', namespace: ns.name, kustomize: { targetNamespace: ns.name, commonMetadata: { labels: { env: 'dev' } } } },
          { name: 'prod', namespace: ns.name, path: 'apps/overlays/prod', kustomize: { targetNamespace: ns.name } },
        ],
      }),
    );
    // then both overlays are applied: generators, patches of each kind, replacements and the component
    const cs = await ready('apps');
    expect(cs.status?.targets?.map((t) => [t.name, t.phase, t.engine])).toEqual([
      ['dev', 'Synced', 'kustomize'],
      ['prod', 'Synced', 'kustomize'],
    ]);
    const dev = await get(`/apis/apps/v1/namespaces/${ns.name}/deployments/dev-web`);
    expect(dev.spec?.['replicas']).toBe(2);
    expect(dev.metadata.labels).toMatchObject({ env: 'dev', 'app.kubernetes.io/name': 'web' });
    expect(JSON.stringify(dev.spec)).toContain('nginx:1.27-alpine');
    // the replacement copied the generated ConfigMap's name (before its hash suffix, as kustomize does) into the env var
    expect(JSON.stringify(dev.spec)).toContain(`"name":"COLOR","value":"dev-web-config"`);
    const prod = await get(`/apis/apps/v1/namespaces/${ns.name}/deployments/web-prod`);
    expect(prod.spec?.['replicas']).toBe(5);
    expect(JSON.stringify(prod.spec)).toContain('registry.example.com/nginx@sha256:');
    expect(JSON.stringify(prod.spec)).toContain('"prometheus.io/scrape":"true"');
    expect((await get(`/api/v1/namespaces/${ns.name}/services/web-prod`)).spec?.['ports']).toMatchObject([{ port: 8443 }]);
    expect((await get(`/apis/policy/v1/namespaces/${ns.name}/poddisruptionbudgets/web-prod`)).metadata.name).toBe('web-prod');
    expect(prod.metadata.annotations).toMatchObject({ team: 'payments' });
    expect((await get(`/apis/networking.k8s.io/v1/namespaces/${ns.name}/ingresses/web-prod`)).metadata.name).toBe('web-prod');

    // when the prod target leaves the spec, its objects are pruned like any other render's
    await applyConfigSync(
      configSync(ns.name, 'apps', {
        source: { git: { repo: repo.url, revision: 'main', path: 'apps/overlays/dev' } },
        refreshInterval: '1h',
        targets: [{ name: 'dev', namespace: ns.name, kustomize: { targetNamespace: ns.name, commonMetadata: { labels: { env: 'dev' } } } }],
      }),
    );
    await ready('apps');
    await eventually(async () => ((await absent(`/apis/apps/v1/namespaces/${ns.name}/deployments/web-prod`)) ? true : undefined), 'web-prod pruned');
    expect(await absent(`/apis/apps/v1/namespaces/${ns.name}/deployments/dev-web`)).toBe(false);
  });

  it('an Argo CD repository: a chart with values per environment, the cluster as .Capabilities, hooks as waves', async () => {
    const version = await rest.request<{ gitVersion: string }>({ method: 'GET', path: '/version' });
    // given one sync per environment (one Application each in Argo CD), values per target
    for (const [name, values] of [
      ['shop-dev', { replicaCount: 1, config: { greeting: 'hi' } }],
      ['shop-prod', { replicaCount: 3, image: { tag: '1.27' }, cache: { enabled: false } }],
    ] as const) {
      await applyConfigSync(
        configSync(ns.name, name, {
          source: { git: { repo: repo.url, revision: 'main', path: 'charts/web' }, helm: { includeCRDs: false } },
          refreshInterval: '1h',
          targets: [{ name: 'main', namespace: ns.name, values }],
        }),
      );
    }
    await ready('shop-dev');
    await ready('shop-prod');
    const dev = await get(`/apis/apps/v1/namespaces/${ns.name}/deployments/shop-dev-web`);
    expect(dev.spec?.['replicas']).toBe(1);
    // .Capabilities.KubeVersion is the target cluster's
    expect(JSON.stringify(dev.spec)).toContain(`"name":"KUBE_VERSION","value":"${version.gitVersion.split('+')[0]}"`);
    expect((await get(`/api/v1/namespaces/${ns.name}/configmaps/shop-dev-web`)).data).toMatchObject({ greeting: 'hi', files: 'Welcome\n' });
    const prod = await get(`/apis/apps/v1/namespaces/${ns.name}/deployments/shop-prod-web`);
    expect(prod.spec?.['replicas']).toBe(3);
    expect(JSON.stringify(prod.spec)).toContain('nginx:1.27');
    // the dependency is rendered where enabled, and not where disabled
    expect((await get(`/apis/apps/v1/namespaces/${ns.name}/statefulsets/shop-dev-cache`)).metadata.name).toBe('shop-dev-cache');
    expect(await absent(`/apis/apps/v1/namespaces/${ns.name}/statefulsets/shop-prod-cache`)).toBe(true);
    // the pre-install hook is applied in an earlier wave; the test hook is left out; no Helm release Secret
    const job = await get(`/apis/batch/v1/namespaces/${ns.name}/jobs/shop-dev-web-migrate`);
    expect(job.metadata.annotations?.['syncline.dev/apply-wave']).toBe('-1005');
    expect(await absent(`/api/v1/namespaces/${ns.name}/pods/shop-dev-web-test`)).toBe(true);
    const secrets = await rest.request<{ items: Obj[] }>({ method: 'GET', path: `/api/v1/namespaces/${ns.name}/secrets` });
    expect(secrets.items.filter((s) => s.metadata.name.startsWith('sh.helm.release'))).toEqual([]);
  });

  it('syncline diff renders a chart and an overlay as the operator does, naming the engine: nothing to change', async () => {
    await ready('shop-dev');
    await ready('apps');
    for (const [name, engineName] of [
      ['shop-dev', 'helm'],
      ['apps', 'kustomize'],
    ] as const) {
      const result = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [
            join(import.meta.dirname, '..', '..', 'packages', 'cli', 'bin', 'syncline.js'),
            'diff',
            name,
            '--kubeconfig',
            testKubeconfigPath(),
            '-n',
            ns.name,
            '--allow-insecure-http',
            '--render-engine',
            engine,
          ],
          { timeout: 120_000 },
          (error, stdout, stderr) => {
            resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
          },
        );
      });
      expect(result.stderr, name).toBe('');
      expect(result.stdout, name).toContain(`(rendered by ${engineName})`);
      expect(result.stdout, name).toContain('# 0 object(s) differ');
      expect(result.code, name).toBe(0);
    }
  });

  it("a tenant's chart or overlay that renders cluster-scoped objects is refused as any render is", async () => {
    await applyConfigSync(
      configSync(ns.name, 'crds', {
        source: { git: { repo: repo.url, revision: 'main', path: 'charts/web' } },
        refreshInterval: '1h',
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );
    await applyConfigSync(
      configSync(ns.name, 'rbac', {
        source: { git: { repo: repo.url, revision: 'main', path: 'rbac' } },
        refreshInterval: '1h',
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );
    for (const [name, kind] of [
      ['crds', 'CustomResourceDefinition'],
      ['rbac', 'ClusterRole'],
    ] as const) {
      const cs = await until(name, (c) => c.status?.targets?.[0]?.phase === 'Failed', 'target Failed');
      expect(cs.status?.targets?.[0]?.message).toContain(kind);
    }
    expect(await absent('/apis/rbac.authorization.k8s.io/v1/clusterroles/tenant-wants-this')).toBe(true);
  });

  it('Jsonnet with library paths and per-target ext vars', async () => {
    await applyConfigSync(
      configSync(ns.name, 'jsonnet', {
        source: {
          git: { repo: repo.url, revision: 'main', path: 'jsonnet' },
          jsonnet: { main: 'main.jsonnet', libraryPaths: ['jsonnet/vendor'], tlas: { tier: 'api' } },
        },
        refreshInterval: '1h',
        targets: [{ name: 'main', namespace: ns.name, jsonnet: { extVars: { env: 'stage' } } }],
      }),
    );
    await ready('jsonnet');
    expect((await get(`/api/v1/namespaces/${ns.name}/configmaps/web-stage`)).data).toMatchObject({ tier: 'api', env: 'stage', banner: 'hello from jsonnet\n' });
    expect(JSON.stringify((await get(`/apis/apps/v1/namespaces/${ns.name}/deployments/web-stage`)).spec)).toContain('nginx:latest');
    expect((await get(`/api/v1/namespaces/${ns.name}/configmaps/flag-3`)).data).toEqual({ index: '3' });
  });

  it('an engine error stalls the sync with RenderFailed naming the engine, file and line; the operator serves the others', async () => {
    await repo.commit({
      'broken/Chart.yaml': 'apiVersion: v2\nname: broken\nversion: 0.1.0\n',
      'broken/templates/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.missing.name }}\n',
    });
    await applyConfigSync(
      configSync(ns.name, 'broken', {
        source: { git: { repo: repo.url, revision: 'main', path: 'broken' } },
        refreshInterval: '1h',
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );
    const cs = await until('broken', (c) => condition(c, 'Ready')?.reason === 'RenderFailed', 'RenderFailed');
    expect(condition(cs, 'Stalled')?.status).toBe('True');
    expect(condition(cs, 'Ready')?.message).toMatch(/^helm: template: broken\/templates\/cm\.yaml:4:\d+: /);
    await ready('jsonnet');
  });

  it('a remote base is refused (RenderFailed naming the sync, the kustomization file and the reference), even one the operator could reach', async () => {
    // given an overlay whose base is another repository on a Git server the operator reaches (Flux would refuse
    // it with --no-remote-bases; Argo CD would clone it)
    const shared = await git.createRepo('shared-bases');
    await shared.commit({
      'base/kustomization.yaml': 'resources:\n  - cm.yaml\n',
      'base/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-remote-base\ndata:\n  a: b\n',
    });
    const remote = `${shared.url}//base?ref=main`;
    await repo.commit({
      'remote/kustomization.yaml': `resources:\n  - cm.yaml\n  - ${remote}\n`,
      'remote/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local-part\ndata:\n  a: b\n',
    });
    git.resetRequests();
    await applyConfigSync(
      configSync(ns.name, 'remote-base', {
        source: { git: { repo: repo.url, revision: 'main', path: 'remote' } },
        refreshInterval: '1h',
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );
    // then the sync stalls with RenderFailed, naming itself, the file and the reference
    const cs = await until('remote-base', (c) => condition(c, 'Ready')?.reason === 'RenderFailed', 'RenderFailed');
    expect(condition(cs, 'Stalled')?.status).toBe('True');
    expect(condition(cs, 'Ready')?.message).toBe(
      `ConfigSync ${ns.name}/remote-base: refused: kustomize: remote/kustomization.yaml: resources entry ${JSON.stringify(remote)} is a remote base or resource, and remote bases are not fetched: a render reads only the repository (vendor it into the repository)`,
    );
    // and nothing was fetched from the other repository, nor applied (not even the local part)
    expect(git.requests('shared-bases')).toEqual({ infoRefs: 0, uploadPack: 0 });
    expect(await absent(`/api/v1/namespaces/${ns.name}/configmaps/local-part`)).toBe(true);
    expect(await absent(`/api/v1/namespaces/${ns.name}/configmaps/from-remote-base`)).toBe(true);
  });

  it('syncline render previews an overlay and a chart locally, naming the engine of each object', () => {
    const cli = (args: readonly string[]): string => {
      const result = spawnSync(
        process.execPath,
        [join(import.meta.dirname, '..', '..', 'packages', 'cli', 'bin', 'syncline.js'), 'render', ...args, '--render-engine', engine],
        { encoding: 'utf8' },
      );
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      return result.stdout;
    };
    const overlay = cli([join(testdata, 'kustomize', 'overlays', 'prod'), '--repo-root', join(testdata, 'kustomize')]);
    expect(overlay).toContain('# kustomize\n');
    expect(overlay).toContain('name: web-prod');
    const chart = cli([
      join(testdata, 'helm', 'web'),
      '--repo-root',
      join(testdata, 'helm'),
      '--release-name',
      'shop',
      '--set',
      'replicaCount=4',
      '-n',
      'store',
    ]);
    expect(chart).toContain('# helm\n');
    expect(chart).toContain('replicas: 4');
    expect(chart).toContain('name: shop-web');
  });
});

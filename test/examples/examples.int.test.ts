// Every example in examples/ works as documented: examples/repo is committed to a real Git server, every
// document in examples/configsyncs is applied (the Git URL and namespaces swapped for the test's own) and
// the real operator process syncs them into the real control plane.
import { AppsV1Api, type KubernetesObject, type V1Deployment } from '@kubernetes/client-node';
import type { ConfigSync } from '@syncline/operator';
import {
  ensureRenderEngine,
  startGitServer,
  startHttpReceiver,
  startOperator,
  type GitServer,
  type HttpReceiver,
  type OperatorProcess,
  type TestRepo,
} from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { readFile, readdir } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { applyConfigSync, configMapData, core, eventually, installCrds, kc, rest, waitForReady } from '../e2e/harness.ts';

const root = join(import.meta.dirname, '..', '..');
const examplesDir = join(root, 'examples');
const apps = kc.makeApiClient(AppsV1Api);

/** examples/repo as a Git tree: repo-relative path → content. */
async function readRepoTree(dir: string): Promise<Record<string, string>> {
  const tree: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = join(entry.parentPath, entry.name);
    tree[relative(dir, full).split(sep).join('/')] = await readFile(full, 'utf8');
  }
  return tree;
}

/** Every document of every examples/configsyncs/*.yaml, in file order. */
async function readExampleDocuments(): Promise<{ file: string; object: KubernetesObject }[]> {
  const dir = join(examplesDir, 'configsyncs');
  const documents: { file: string; object: KubernetesObject }[] = [];
  for (const file of (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort()) {
    for (const object of parseYamlDocuments(await readFile(join(dir, file), 'utf8')) as KubernetesObject[]) documents.push({ file, object });
  }
  return documents;
}

async function deployment(namespace: string, name: string): Promise<V1Deployment> {
  return apps.readNamespacedDeployment({ name, namespace });
}

describe('examples', () => {
  let git: GitServer;
  let repo: TestRepo;
  let operator: OperatorProcess;
  /** Where the examples' ConfigSyncs and their Secrets go (the examples say `platform`). */
  let home: TestNamespace;
  /** The examples' target namespaces (web-dev, …) → this run's namespaces. */
  const targetNamespaces = new Map<string, TestNamespace>();
  const configSyncs: ConfigSync[] = [];
  let slack: HttpReceiver;
  /** The kinds of the notification objects the examples hold (NotificationProvider, NotificationAlert). */
  const notificationObjects: string[] = [];
  const ns = (exampleNamespace: string): string => {
    const mapped = targetNamespaces.get(exampleNamespace);
    if (mapped === undefined) throw new Error(`no test namespace for ${exampleNamespace}`);
    return mapped.name;
  };

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    slack = await startHttpReceiver();
    repo = await git.createRepo('configs');
    await repo.commit(await readRepoTree(join(examplesDir, 'repo')), { message: 'examples/repo' });
    home = await testNamespace({ prefix: 'examples' });

    // given every example document, pointed at this run's Git server and namespaces
    for (const { file, object } of await readExampleDocuments()) {
      const where = `${file}: ${object.kind}/${object.metadata?.name}`;
      switch (object.kind ?? '') {
        case 'ConfigSync': {
          const cs = object as ConfigSync;
          expect(cs.spec.source.git.repo, `${where} uses the placeholder URL`).toBe('https://git.example.com/platform/configs.git');
          for (const target of cs.spec.targets) {
            if (target.namespace === undefined) continue;
            if (!targetNamespaces.has(target.namespace)) targetNamespaces.set(target.namespace, await testNamespace({ prefix: target.namespace }));
          }
          configSyncs.push({
            ...cs,
            metadata: { ...cs.metadata, namespace: home.name },
            spec: {
              ...cs.spec,
              source: { ...cs.spec.source, git: { ...cs.spec.source.git, repo: repo.url } },
              targets: cs.spec.targets.map((t) => (t.namespace === undefined ? t : { ...t, namespace: ns(t.namespace) })),
            },
          });
          break;
        }
        case 'Secret': {
          // A Slack webhook URL of an example goes to this run's receiver instead.
          const data = (object as { stringData?: Record<string, string> }).stringData ?? {};
          const address = data['address'];
          const stringData = address?.startsWith('https://hooks.slack.com/') === true ? { ...data, address: `${slack.url}/slack` } : data;
          await core.createNamespacedSecret({ namespace: home.name, body: { ...object, metadata: { ...object.metadata, namespace: home.name }, stringData } });
          break;
        }
        case 'NotificationProvider':
        case 'NotificationAlert':
          notificationObjects.push(object.kind ?? '');
          await rest.request({
            method: 'POST',
            path: `/apis/syncline.dev/v1alpha1/namespaces/${home.name}/${object.kind === 'NotificationProvider' ? 'notificationproviders' : 'notificationalerts'}`,
            body: { ...object, metadata: { ...object.metadata, namespace: home.name } },
          });
          break;
        case 'ConfigMap':
          await core.createNamespacedConfigMap({ namespace: home.name, body: { ...object, metadata: { ...object.metadata, namespace: home.name } } });
          break;
        default:
          throw new Error(`${where}: the examples test does not know how to apply a ${object.kind}; teach it`);
      }
    }
    // The examples live in the platform team's namespace, which writes into the environments: trusted.
    operator = await startOperator({
      kubeconfig: testKubeconfigPath(),
      args: ['--namespace', home.name, '--trusted-namespaces', home.name, '--render-engine', await ensureRenderEngine()],
    });
    // ConfigSync's zod type keeps timestamps as strings where client-node's KubernetesObject says Date.
    for (const cs of configSyncs) await applyConfigSync(cs as unknown as KubernetesObject);
  });

  afterAll(async () => {
    await operator?.stop();
    for (const namespace of targetNamespaces.values()) await namespace[Symbol.asyncDispose]();
    await home?.[Symbol.asyncDispose]();
    await git?.close();
    await slack?.close();
  });

  it('notifications: the NotificationProvider and the NotificationAlert are Ready, and Slack hears nothing while every sync succeeds (eventSeverity error)', async () => {
    expect(notificationObjects.sort()).toEqual(['NotificationAlert', 'NotificationProvider']);
    for (const plural of ['notificationproviders', 'notificationalerts']) {
      await eventually(
        async () => {
          const list = await rest.request<{ items: { status?: { conditions?: { type: string; status: string }[] } }[] }>({
            method: 'GET',
            path: `/apis/syncline.dev/v1alpha1/namespaces/${home.name}/${plural}`,
          });
          return list.items.length === 1 && list.items.every((o) => o.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
            ? true
            : undefined;
        },
        `the example's ${plural} to be Ready`,
        60_000,
      );
    }
    for (const cs of configSyncs) await waitForReady(home.name, cs.metadata.name, () => true, 45_000);
    expect(slack.requests).toEqual([]);
  }, 120_000);

  it('has examples to test', () => {
    expect(configSyncs.map((cs) => cs.metadata.name).sort()).toEqual(['hello', 'quotas', 'shop', 'web', 'web-settings']);
    expect([...targetNamespaces.keys()].sort()).toEqual(['web-dev', 'web-prod', 'web-staging']);
  });

  it('syncs every ConfigSync to Ready with every target Synced', async () => {
    for (const cs of configSyncs) {
      const synced = await waitForReady(home.name, cs.metadata.name, (c) => (c.status?.targets ?? []).length === cs.spec.targets.length, 45_000);
      expect(synced.status?.targets?.map((t) => [t.name, t.phase])).toEqual(cs.spec.targets.map((t) => [t.name, 'Synced']));
    }
  }, 120_000);

  it('renders the web app per environment: values layered over spec.values, patches on prod only', async () => {
    await waitForReady(home.name, 'web');
    const expected = [
      { env: 'dev', replicas: 1, tag: '1.9.0-rc.1', logLevel: 'debug', dbHost: 'postgres.databases.svc', flags: 'new-checkout,dark-mode' },
      { env: 'staging', replicas: 2, tag: '1.8.0', logLevel: 'info', dbHost: 'postgres.databases.svc', flags: undefined },
      { env: 'prod', replicas: 4, tag: '1.8.0', logLevel: 'warn', dbHost: 'postgres-primary.databases.svc', flags: undefined },
    ];
    for (const want of expected) {
      const namespace = ns(`web-${want.env}`);
      const web = await deployment(namespace, 'web');
      const container = web.spec?.template.spec?.containers[0];
      const env = Object.fromEntries((container?.env ?? []).map((e) => [e.name, e.value]));
      expect(web.spec?.replicas, want.env).toBe(want.replicas);
      expect(container?.image, want.env).toBe(`registry.example.com/shop/web:${want.tag}`);
      expect(env['LOG_LEVEL'], want.env).toBe(want.logLevel);
      expect(env['DATABASE_HOST'], want.env).toBe(want.dbHost);
      expect(env['FEATURE_FLAGS'], want.env).toBe(want.flags);
      expect(web.metadata?.labels, want.env).toMatchObject({ 'app.kubernetes.io/instance': `web-${want.env}`, environment: want.env });
      expect(web.metadata?.annotations?.['syncline.dev/source-revision'], want.env).toBe(await repo.resolve('main'));
      // the pod template changes only with the app's own inputs, never with an unrelated commit
      expect(Object.keys(web.spec?.template.metadata?.annotations ?? {}), want.env).toEqual(['checksum/secret']);

      const service = await core.readNamespacedService({ name: 'web', namespace });
      expect(service.spec?.selector, want.env).toEqual({ 'app.kubernetes.io/name': 'web', 'app.kubernetes.io/instance': `web-${want.env}` });
      expect(service.metadata?.annotations?.['service.example.com/load-balancer-class'], want.env).toBe(want.env === 'prod' ? 'internal' : undefined);
    }
    // the prod patch; the template sets no strategy, so the others get the API server's default
    expect((await deployment(ns('web-prod'), 'web')).spec?.strategy?.rollingUpdate).toEqual({ maxUnavailable: 0, maxSurge: 1 });
    expect((await deployment(ns('web-dev'), 'web')).spec?.strategy?.rollingUpdate).toEqual({ maxUnavailable: '25%', maxSurge: '25%' });
    const prod = (await deployment(ns('web-prod'), 'web')).spec?.template.spec?.containers[0]?.resources;
    expect(prod).toEqual({ requests: { cpu: '500m', memory: '512Mi' }, limits: { cpu: '1', memory: '1Gi' } });
  });

  it('renders the Kustomize overlays, the Helm chart and the Jsonnet per environment', async () => {
    for (const name of ['shop', 'hello', 'quotas']) await waitForReady(home.name, name);
    // Kustomize: the dev overlay's merged generator, the prod overlay's patch, the prod target's image
    const shopDev = await deployment(ns('web-dev'), 'shop');
    expect(shopDev.spec?.replicas).toBe(1);
    expect(shopDev.spec?.template.spec?.containers[0]?.image).toBe('registry.example.com/shop/api:2.4.0');
    const configName = shopDev.spec?.template.spec?.containers[0]?.envFrom?.[0]?.configMapRef?.name ?? '';
    expect(configName).toMatch(/^shop-config-[a-z0-9]+$/);
    expect(await configMapData(ns('web-dev'), configName)).toEqual({ LOG_LEVEL: 'debug' });
    const shopProd = await deployment(ns('web-prod'), 'shop');
    expect(shopProd.spec?.replicas).toBe(3);
    expect(shopProd.spec?.template.spec?.containers[0]?.image).toBe('registry.example.com/shop/api:2.3.9');
    // Helm: spec.values for both, the prod target's values over them
    for (const [env, replicas] of [
      ['dev', 1],
      ['prod', 2],
    ] as const) {
      const hello = await deployment(ns(`web-${env}`), 'hello');
      expect(hello.spec?.replicas, env).toBe(replicas);
      expect(hello.spec?.template.spec?.containers[0]?.env, env).toEqual([{ name: 'MESSAGE', value: 'hello from Syncline' }]);
    }
    // Jsonnet: an ext var per target
    for (const [env, pods] of [
      ['dev', '20'],
      ['prod', '200'],
    ] as const) {
      const quota = await core.readNamespacedResourceQuota({ name: 'team-quota', namespace: ns(`web-${env}`) });
      expect(quota.spec?.hard?.['pods'], env).toBe(pods);
    }
  });

  it('takes the database credentials from the valuesFrom Secret, not from Git', async () => {
    await waitForReady(home.name, 'web');
    for (const env of ['dev', 'staging', 'prod']) {
      const secret = await core.readNamespacedSecret({ name: 'web-database', namespace: ns(`web-${env}`) });
      const decoded = Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
      expect(decoded, env).toEqual({ username: 'shop', password: 'change-me-in-a-real-cluster' });
    }
  });

  it('passes plain YAML through untouched, Prometheus {{ }} included', async () => {
    await waitForReady(home.name, 'web');
    const rules = (await configMapData(ns('web-prod'), 'web-alerts'))?.['web.rules.yaml'];
    expect(rules).toContain('summary: "web on {{ $labels.instance }} answers {{ $value | humanizePercentage }} of requests with 5xx"');
  });

  it('turns the settings file into a ConfigMap per environment (data mode)', async () => {
    await waitForReady(home.name, 'web-settings');
    const expected = [
      { env: 'dev', url: 'https://dev.shop.example.com', host: 'postgres.databases.svc', pool: 10, newCheckout: true, darkMode: true },
      { env: 'staging', url: 'https://staging.shop.example.com', host: 'postgres.databases.svc', pool: 10, newCheckout: true, darkMode: false },
      { env: 'prod', url: 'https://shop.example.com', host: 'postgres-primary.databases.svc', pool: 50, newCheckout: false, darkMode: false },
    ];
    for (const want of expected) {
      const data = await configMapData(ns(`web-${want.env}`), 'web-settings');
      expect(Object.keys(data ?? {}), want.env).toEqual(['settings.yaml']);
      const settings = parseYamlDocuments(data?.['settings.yaml'] ?? '')[0] as Record<string, unknown>;
      expect(settings, want.env).toEqual({
        environment: want.env,
        server: { port: 8080, publicUrl: want.url },
        database: { host: want.host, name: 'shop', pool: { maxConnections: want.pool } },
        features: { newCheckout: want.newCheckout, darkMode: want.darkMode },
      });
    }
  });

  it('syncline diff renders what the operator renders for the web example (valuesFrom included): nothing to change', async () => {
    await waitForReady(home.name, 'web');
    // Not spawnSync: the Git server the CLI fetches from runs in this process and must keep answering.
    const result = await run(
      process.execPath,
      [join(root, 'packages/cli/bin/syncline.js'), 'diff', 'web', '-n', home.name, '--kubeconfig', testKubeconfigPath(), '--allow-insecure-http'],
      { cwd: root },
    );
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^# 0 object\(s\) differ$/m);
    // and the database Secret came from valuesFrom, or it would show as a change
    expect(result.stdout).not.toMatch(/^(---|\+\+\+) /m);
  });

  it('previews locally with the command examples/README.md shows', () => {
    // given the preview values file, when `syncline render` runs, then it prints the same objects
    const result = spawnSync(
      process.execPath,
      [
        join(root, 'packages/cli/src/main.ts'),
        'render',
        'examples/repo/apps/web',
        '--values',
        'examples/preview/web-dev.yaml',
        '--target',
        'dev',
        '--namespace',
        'web-dev',
      ],
      { cwd: root, encoding: 'utf8' },
    );
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const objects = parseYamlDocuments(result.stdout) as KubernetesObject[];
    expect(objects.map((o) => `${o.kind}/${o.metadata?.namespace}/${o.metadata?.name}`).sort()).toEqual([
      'ConfigMap/web-dev/web-alerts',
      'Deployment/web-dev/web',
      'Secret/web-dev/web-database',
      'Service/web-dev/web',
    ]);
  });
});

const run = promisify(execFile);

/** Plain objects, keys as written (client-node's loadAllYaml renames keys such as `default` to fit its models). */
function parseYamlDocuments(text: string): unknown[] {
  return parseAllDocuments(text).map((document) => {
    if (document.errors.length > 0) throw new Error(document.errors.map((e) => e.message).join('; '));
    return document.toJS() as unknown;
  });
}

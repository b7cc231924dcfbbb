// End to end in a real browser, on a control plane whose Pods run (KWOK simulated nodes, the real Deployment and
// Job controllers, the scheduler): the resource tree of a ConfigSync shows the ReplicaSets and Pods the Deployment
// controller made, and each target's hooks of the last commit (phase, duration, message) with a Job hook's Pods
// under it. Debian's Chromium driven by playwright-core; the viewer is a ServiceAccount whose token comes from
// the TokenRequest API, and what it may see comes from RBAC alone.
import { KubeConfig } from '@kubernetes/client-node';
import { createKubeRest, installCrds, type ConfigSync, type KubeRest } from '@syncline/operator';
import {
  JOB_OUTCOME_LABEL,
  JobOutcome,
  ensureChromium,
  startGitServer,
  startKwokCluster,
  startOperator,
  type GitServer,
  type KwokCluster,
  type OperatorProcess,
} from '@syncline/test-support';
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const SLOW = 120_000;

const files = {
  'app/web.yaml': `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: registry.example.com/web:1}]
`,
  // PreSync: holds (its Pod stays Running) until the test releases it.
  'app/migrate.yaml': `apiVersion: batch/v1
kind: Job
metadata:
  generateName: migrate-
  annotations:
    argocd.argoproj.io/hook: PreSync
spec:
  backoffLimit: 0
  template:
    metadata:
      labels: {${JOB_OUTCOME_LABEL}: ${JobOutcome.Hold}}
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: registry.example.com/migrate:1}]
`,
  'app/smoke.yaml': `apiVersion: batch/v1
kind: Job
metadata:
  name: smoke
  annotations:
    syncline.dev/hook: PostSync
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: smoke, image: registry.example.com/smoke:1}]
`,
};

describe('web UI: the resource tree on a cluster whose Pods run, with hooks', () => {
  let cluster: KwokCluster;
  let rest: KubeRest;
  let git: GitServer;
  let operator: OperatorProcess;
  let browser: Browser;
  let url: string;
  const ns = `uihooks-${Math.random().toString(16).slice(2, 8)}`;

  const kubectl = (args: readonly string[], input?: string): string => {
    const result = spawnSync('kubectl', ['--kubeconfig', cluster.kubeconfigPath, ...args], { encoding: 'utf8', ...(input === undefined ? {} : { input }) });
    if (result.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };
  const readSync = (): Promise<ConfigSync> => rest.request<ConfigSync>({ method: 'GET', path: `/apis/syncline.dev/v1alpha1/namespaces/${ns}/configsyncs/app` });
  const until = async (what: string, check: (cs: ConfigSync) => boolean): Promise<ConfigSync> => {
    const deadline = Date.now() + SLOW;
    let last: ConfigSync | undefined;
    for (;;) {
      last = await readSync().catch(() => last);
      if (last !== undefined && check(last)) return last;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last status: ${JSON.stringify(last?.status)}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  };
  /** A viewer: a ServiceAccount with a Role of these rules in the namespace, and a token for it. */
  const viewer = (name: string, rules: readonly { apiGroups: string[]; resources: string[] }[]): string => {
    kubectl(['-n', ns, 'create', 'serviceaccount', name]);
    const role = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace: ns },
      rules: rules.map((r) => ({ ...r, verbs: ['get', 'list', 'watch'] })),
    };
    const binding = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
    };
    kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [role, binding] }));
    return kubectl(['-n', ns, 'create', 'token', name, '--duration', '1h']).trim();
  };
  const signIn = async (token: string): Promise<Page> => {
    const page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
    page.setDefaultTimeout(SLOW);
    await page.goto(`${url}/login`);
    await page.fill('#token', token);
    await page.click('button[type=submit]');
    await page.waitForURL(`${url}/`);
    return page;
  };

  beforeAll(async () => {
    const executablePath = ensureChromium();
    // What `pnpm build:ui` does: the page's script and style, bundled by esbuild.
    execFileSync(process.execPath, [join(root, 'packages', 'ui', 'src', 'build.ts')], { stdio: 'inherit' });
    cluster = await startKwokCluster();
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfigPath);
    rest = await createKubeRest(kc);
    await installCrds(rest, { fieldManager: 'syncline-tests' });
    kubectl(['wait', '--for=condition=Established', 'crd/configsyncs.syncline.dev', '--timeout=60s']);
    kubectl(['create', 'namespace', ns]);
    git = await startGitServer();
    operator = await startOperator({ kubeconfig: cluster.kubeconfigPath, args: ['--ui-addr', '127.0.0.1:0'] });
    url = `http://${operator.uiAddress ?? ''}`;
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  }, 900_000);
  afterAll(async () => {
    await browser?.close();
    await operator?.stop();
    await git?.close();
    await cluster?.stop();
  });

  it("draws the Deployment controller's ReplicaSet and Pod, and the commit's hooks with their phase, duration, message and a Job hook's Pods; a viewer who may not get Jobs sees no hook object", async () => {
    // given a commit with a Deployment, a PreSync Job that runs until released and a PostSync Job
    const repo = await git.createRepo('uihooks');
    const sha = await repo.commit(files);
    const sync = {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'ConfigSync',
      metadata: { name: 'app', namespace: ns },
      spec: {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '2s',
        timeout: '3m',
        targets: [{ name: 'main', namespace: ns }],
      },
    };
    kubectl(['apply', '--server-side', '--field-manager', 'syncline-tests', '-f', '-'], JSON.stringify(sync));
    const running = await until(
      'the PreSync hook to run',
      (cs) => cs.status?.targets?.[0]?.hooks?.some((h) => h.hook === 'PreSync' && h.phase === 'Running') === true,
    );
    const migrate = running.status?.targets?.[0]?.hooks?.find((h) => h.hook === 'PreSync')?.name ?? '';
    expect(migrate).toMatch(/^migrate-[0-9a-f]{5}$/);
    // and a viewer who may read the sync and every kind of the tree
    const token = viewer('viewer', [
      { apiGroups: ['syncline.dev'], resources: ['configsyncs'] },
      { apiGroups: ['apps'], resources: ['deployments', 'replicasets'] },
      { apiGroups: ['batch'], resources: ['jobs'] },
      { apiGroups: [''], resources: ['pods', 'events'] },
    ]);

    // when the viewer opens the sync's page while the migration runs
    const page = await signIn(token);
    await page.goto(`${url}/objects/ConfigSync/${ns}/app`);
    // then the target's tree holds the PreSync hook, Running, with the Pod the Job controller made under it
    const target = page.locator('.tree-target[data-target="main"]');
    const hook = target.locator(`.tree-hook[data-hook="PreSync/Job/${migrate}"]`);
    await hook.locator(':scope > .hook-phase').filter({ hasText: 'Running' }).waitFor({ timeout: SLOW });
    await hook.locator(`.tree-node[data-node^="Pod/${migrate}-"]`).first().waitFor({ timeout: SLOW });
    expect(await target.locator('.tree-hooks-title code').textContent()).toBe(sha.slice(0, 12));

    // when the migration is released and succeeds
    kubectl(['-n', ns, 'label', 'pod', '-l', `job-name=${migrate}`, `${JOB_OUTCOME_LABEL}=${JobOutcome.Succeed}`, '--overwrite']);
    await until('Ready after the hooks', (cs) => cs.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True');
    // then the page shows both hooks Succeeded with a duration and the Job's message, without a reload
    await hook.locator(':scope > .hook-phase').filter({ hasText: 'Succeeded' }).waitFor({ timeout: SLOW });
    expect(await hook.locator(':scope > .hook-duration').textContent()).toMatch(/^\d+(s|m\d*s?)$/);
    const smoke = target.locator('.tree-hook[data-hook="PostSync/Job/smoke"]');
    await smoke.locator(':scope > .hook-phase').filter({ hasText: 'Succeeded' }).waitFor({ timeout: SLOW });
    expect((await smoke.locator(':scope > .msg').textContent())?.trim()).not.toBe('');
    await smoke.locator('.tree-node[data-node^="Pod/smoke-"]').first().waitFor({ timeout: SLOW });
    // and the Deployment has the ReplicaSet the Deployment controller made, and under it a Pod KWOK runs
    const web = target.locator('.tree-node[data-node="Deployment/web"]');
    const pod = web.locator('.tree-node[data-node^="ReplicaSet/web-"] .tree-node[data-node^="Pod/web-"]');
    await pod.first().waitFor({ timeout: SLOW });
    await web.locator(':scope > .health').filter({ hasText: 'Current' }).waitFor({ timeout: SLOW });
    const rs = kubectl(['-n', ns, 'get', 'replicasets', '-l', 'app=web', '-o', 'jsonpath={.items[0].metadata.name}']);
    expect(await web.locator('.tree-node[data-node^="ReplicaSet/"]').first().getAttribute('data-node')).toBe(`ReplicaSet/${rs}`);

    // and a viewer who may read the sync, Deployments and Pods but not Jobs gets the hooks counted as hidden
    const other = await signIn(
      viewer('nojobs', [
        { apiGroups: ['syncline.dev'], resources: ['configsyncs'] },
        { apiGroups: ['apps'], resources: ['deployments', 'replicasets'] },
        { apiGroups: [''], resources: ['pods'] },
      ]),
    );
    const tree = (await (await other.request.get(`${url}/api/tree/ConfigSync/${ns}/app`)).json()) as {
      targets: { hooks?: unknown[]; hidden: number; nodes: { kind: string }[] }[];
    };
    expect(tree.targets[0]?.nodes.map((n) => n.kind)).toEqual(['Deployment']);
    expect(tree.targets[0]?.hooks).toEqual([]);
    expect(tree.targets[0]?.hidden).toBe(2);
    expect(JSON.stringify(tree)).not.toContain(migrate);
  }, 420_000);
});

// End to end: PreSync, Sync, PostSync and SyncFail hooks on a control plane whose Pods run (KWOK simulated
// nodes, the Deployment and Job controllers, the scheduler). Jobs end the way the test picks (JOB_OUTCOME_LABEL);
// Tekton PipelineRuns are the documented tekton.dev/v1 kind, their status driven by the test as Tekton's
// controller would write it. The operator is the real process (`syncline run`).
import { KubeConfig } from '@kubernetes/client-node';
import { createKubeRest, installCrds, type ConfigSync, type KubeRest } from '@syncline/operator';
import { runCli } from '@syncline/cli';
import {
  JOB_OUTCOME_LABEL,
  JobOutcome,
  startGitServer,
  startKwokCluster,
  startOperator,
  tektonCrds,
  tektonRunStatus,
  type GitServer,
  type KwokCluster,
  type OperatorProcess,
  type TestRepo,
} from '@syncline/test-support';
import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

type Job = { metadata: { name: string; uid: string; annotations?: Record<string, string> }; status?: { conditions?: { type: string; status: string }[] } };
type HookLine = NonNullable<NonNullable<NonNullable<ConfigSync['status']>['targets']>[number]['hooks']>[number];

const deployment = (image: string): string => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "${image}"}]
`;

const job = (options: {
  name?: string;
  generateName?: string;
  hook: string;
  outcome?: string;
  policy?: string;
  annotation?: 'syncline' | 'argocd';
}): string => {
  const prefix = options.annotation === 'argocd' ? 'argocd.argoproj.io' : 'syncline.dev';
  return `apiVersion: batch/v1
kind: Job
metadata:
  ${options.name === undefined ? `generateName: ${options.generateName ?? 'hook-'}` : `name: ${options.name}`}
  annotations:
    ${prefix}/hook: ${options.hook}
${options.policy === undefined ? '' : `    ${prefix}/hook-delete-policy: ${options.policy}\n`}spec:
  backoffLimit: 0
  template:
    metadata:
      labels: {${options.outcome === undefined ? '' : `${JOB_OUTCOME_LABEL}: ${options.outcome}`}}
    spec:
      restartPolicy: Never
      containers: [{name: main, image: registry.example.com/migrate:1}]
`;
};

describe('hooks around a sync, with Pods that run', () => {
  let cluster: KwokCluster;
  let rest: KubeRest;
  let git: GitServer;
  let operator: OperatorProcess;
  const namespaces: string[] = [];

  const kubectl = (args: readonly string[], input?: string): string => {
    const result = spawnSync('kubectl', ['--kubeconfig', cluster.kubeconfigPath, ...args], { encoding: 'utf8', ...(input === undefined ? {} : { input }) });
    if (result.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };
  const namespace = (prefix: string): string => {
    const name = `${prefix}-${Math.random().toString(16).slice(2, 8)}`;
    kubectl(['create', 'namespace', name]);
    namespaces.push(name);
    return name;
  };
  const readSync = (ns: string, name: string): Promise<ConfigSync> =>
    rest.request<ConfigSync>({ method: 'GET', path: `/apis/syncline.dev/v1alpha1/namespaces/${ns}/configsyncs/${name}` });
  const applySync = async (ns: string, name: string, repo: TestRepo, path: string): Promise<void> => {
    const body = {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'ConfigSync',
      metadata: { name, namespace: ns },
      spec: { source: { git: { repo: repo.url, revision: 'main', path } }, refreshInterval: '2s', timeout: '3m', targets: [{ name: 'main', namespace: ns }] },
    };
    await rest.request({
      method: 'PATCH',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${ns}/configsyncs/${name}`,
      query: { fieldManager: 'syncline-tests', force: 'true' },
      contentType: 'application/apply-patch+yaml',
      body,
    });
  };
  const until = async (ns: string, name: string, what: string, check: (cs: ConfigSync) => boolean, timeoutMs = 120_000): Promise<ConfigSync> => {
    const deadline = Date.now() + timeoutMs;
    let last: ConfigSync | undefined;
    for (;;) {
      last = await readSync(ns, name).catch(() => last);
      if (last !== undefined && check(last)) return last;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${ns}/${name}: ${what}; last status: ${JSON.stringify(last?.status)}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  };
  const ready = (cs: ConfigSync): { status: string; reason: string; message: string } | undefined => cs.status?.conditions?.find((c) => c.type === 'Ready');
  const hooksOf = (cs: ConfigSync): HookLine[] => cs.status?.targets?.[0]?.hooks ?? [];
  const jobs = async (ns: string): Promise<Job[]> =>
    (await rest.request<{ items: Job[] }>({ method: 'GET', path: `/apis/batch/v1/namespaces/${ns}/jobs` })).items;
  const image = (ns: string): string | undefined => {
    const result = spawnSync(
      'kubectl',
      ['--kubeconfig', cluster.kubeconfigPath, '-n', ns, 'get', 'deployment', 'web', '-o', 'jsonpath={.spec.template.spec.containers[0].image}'],
      { encoding: 'utf8' },
    );
    return result.status === 0 ? result.stdout : undefined;
  };
  const release = (ns: string, jobName: string, outcome: JobOutcome): void => {
    kubectl(['-n', ns, 'label', 'pod', '-l', `job-name=${jobName}`, `${JOB_OUTCOME_LABEL}=${outcome}`, '--overwrite']);
  };
  const events = async (ns: string): Promise<{ reason: string; message: string }[]> =>
    (await rest.request<{ items: { reason: string; message: string }[] }>({ method: 'GET', path: `/api/v1/namespaces/${ns}/events` })).items;

  /** The Events recorded for a ConfigSync so far, each repetition counted (a repeat is a write too). */
  const eventWrites = async (ns: string, name: string): Promise<number> => {
    const list = await rest.request<{ items: { involvedObject: { kind?: string; name?: string }; count?: number; series?: { count?: number } }[] }>({
      method: 'GET',
      path: `/api/v1/namespaces/${ns}/events`,
    });
    return list.items
      .filter((e) => e.involvedObject.kind === 'ConfigSync' && e.involvedObject.name === name)
      .reduce((n, e) => n + (e.count ?? e.series?.count ?? 1), 0);
  };

  /** Counts the writes to a ConfigSync (MODIFIED events of a watch) until stopped. */
  const countWrites = (ns: string, name: string): { listening: Promise<void>; stop: () => number } => {
    const child = spawn(
      'kubectl',
      ['--kubeconfig', cluster.kubeconfigPath, '-n', ns, 'get', 'configsync', name, '--watch', '--output-watch-events', '-o', 'jsonpath={.type}{"\\n"}'],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    let modified = 0;
    const listening = new Promise<void>((resolve) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        if (line.trim() === 'ADDED') resolve();
        if (line.trim() === 'MODIFIED') modified++;
      });
    });
    return {
      listening,
      stop: () => {
        child.kill();
        return modified;
      },
    };
  };

  // The first run on a machine builds KWOK from its Go module here (about 10 min on a loaded 2-core machine).
  beforeAll(async () => {
    cluster = await startKwokCluster({ onProgress: (line) => console.log(`[kwok] ${line}`) });
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfigPath);
    rest = await createKubeRest(kc);
    await installCrds(rest, { fieldManager: 'syncline-tests' });
    for (const crd of tektonCrds()) kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(crd));
    kubectl(['wait', '--for=condition=Established', 'crd/pipelineruns.tekton.dev', 'crd/configsyncs.syncline.dev', '--timeout=60s']);
    git = await startGitServer();
    operator = await startOperator({ kubeconfig: cluster.kubeconfigPath });
  }, 1_800_000);
  afterAll(async () => {
    await operator?.stop();
    await git?.close();
    await cluster?.stop();
  });

  it('a PreSync migration Job blocks the apply until it completes; a failing one leaves the old version, HookFailed, and SyncFail runs', async () => {
    const ns = namespace('presync');
    const repo = await git.createRepo('presync');
    // Given: a commit with a Deployment and a PreSync migration Job that holds (runs until the test releases it).
    await repo.commit({
      'app/web.yaml': deployment('registry.example.com/web:1'),
      'app/migrate.yaml': job({ generateName: 'migrate-', hook: 'PreSync', outcome: JobOutcome.Hold }),
      'app/cleanup.yaml': job({ name: 'cleanup', hook: 'SyncFail' }),
    });
    await applySync(ns, 'app', repo, 'app');
    // Then: the migration runs, Ready waits on it, and the Deployment is not applied.
    let cs = await until(ns, 'app', 'PreSync running', (c) => hooksOf(c)[0]?.phase === 'Running');
    expect(ready(cs)).toMatchObject({ status: 'False', reason: 'HookRunning' });
    expect(cs.status?.targets?.[0]).toMatchObject({ phase: 'Pending', reason: 'HookRunning' });
    expect(image(ns)).toBeUndefined();
    const migration = hooksOf(cs)[0];
    expect(migration).toMatchObject({ hook: 'PreSync', kind: 'Job', source: 'Job/migrate-' });
    expect(migration?.name).toMatch(/^migrate-[0-9a-f]{5}$/);
    // When: the migration completes.
    release(ns, migration?.name ?? '', JobOutcome.Succeed);
    // Then: the Deployment is applied, becomes Available on the simulated node, and the sync is Ready.
    cs = await until(ns, 'app', 'Ready', (c) => ready(c)?.status === 'True');
    expect(image(ns)).toBe('registry.example.com/web:1');
    expect(hooksOf(cs)).toEqual([
      expect.objectContaining({ hook: 'PreSync', phase: 'Succeeded', name: migration?.name, duration: expect.stringMatching(/^\d+[smh]/) as unknown }),
    ]);
    await until(ns, 'app', 'healthy', (c) => c.status?.targets?.[0]?.health?.healthy === 1 && c.status.targets[0].health.progressing === 0);

    // When: the next commit's migration fails.
    const second = await repo.commit({
      'app/web.yaml': deployment('registry.example.com/web:2'),
      'app/migrate.yaml': job({ generateName: 'migrate-', hook: 'PreSync', outcome: JobOutcome.Fail }),
      'app/cleanup.yaml': job({ name: 'cleanup', hook: 'SyncFail' }),
    });
    // Then: HookFailed names it, the old version stays, and the SyncFail hook runs to completion.
    cs = await until(ns, 'app', 'HookFailed', (c) => ready(c)?.reason === 'HookFailed' && c.status?.targets?.[0]?.hooksRevision === second);
    expect(ready(cs)?.message).toMatch(/PreSync hook Job\/.*\/migrate-[0-9a-f]{5} failed/);
    expect(image(ns)).toBe('registry.example.com/web:1');
    cs = await until(ns, 'app', 'SyncFail done', (c) => hooksOf(c).some((h) => h.hook === 'SyncFail' && h.phase === 'Succeeded'));
    expect(hooksOf(cs).map((h) => `${h.hook}:${h.phase}`)).toEqual(['PreSync:Failed', 'SyncFail:Succeeded']);
    expect(cs.status?.sourceRevision).not.toBe(second);
    // BeforeHookCreation (the default): the first commit's migration Job went before the second's was created.
    expect((await jobs(ns)).map((j) => j.metadata.name).sort()).toEqual(['cleanup', hooksOf(cs)[0]?.name].sort());
    expect((await events(ns)).some((e) => e.reason === 'HookFailed' && e.message.includes('migrate-'))).toBe(true);
  }, 300_000);

  it('a Tekton PipelineRun runs as PostSync after each commit, once the objects are healthy; Ready waits on it', async () => {
    const ns = namespace('postsync');
    const repo = await git.createRepo('postsync');
    const pipelineRun = `apiVersion: tekton.dev/v1
kind: PipelineRun
metadata:
  generateName: smoke-
  annotations:
    syncline.dev/hook: PostSync
spec:
  pipelineRef: {name: smoke-test}
`;
    for (const [round, tag] of [
      [1, '1'],
      [2, '2'],
    ] as const) {
      // Given: a commit with a Deployment and a PostSync PipelineRun.
      const sha = await repo.commit({ 'app/web.yaml': deployment(`registry.example.com/web:${tag}`), 'app/smoke.yaml': pipelineRun });
      if (round === 1) await applySync(ns, 'smoke', repo, 'app');
      // Then: once the Deployment is Available the PipelineRun is created, and Ready waits on it.
      let cs = await until(
        ns,
        'smoke',
        `PostSync running (commit ${round})`,
        (c) => c.status?.targets?.[0]?.hooksRevision === sha && hooksOf(c)[0]?.phase === 'Running',
      );
      expect(image(ns)).toBe(`registry.example.com/web:${tag}`);
      expect(ready(cs)).toMatchObject({ status: 'False', reason: 'HookRunning' });
      const run = hooksOf(cs)[0];
      expect(run).toMatchObject({ hook: 'PostSync', kind: 'PipelineRun', source: 'PipelineRun/smoke-' });
      // When: Tekton (the test standing in for its controller) reports the run succeeded.
      const started = new Date();
      kubectl([
        '-n',
        ns,
        'patch',
        'pipelinerun',
        run?.name ?? '',
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: tektonRunStatus('Running', started) }),
      ]);
      kubectl([
        '-n',
        ns,
        'patch',
        'pipelinerun',
        run?.name ?? '',
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: tektonRunStatus('Succeeded', started) }),
      ]);
      // Then: the sync is Ready at this commit.
      cs = await until(ns, 'smoke', `Ready at commit ${round}`, (c) => ready(c)?.status === 'True' && c.status?.sourceRevision === sha);
      expect(hooksOf(cs)).toEqual([expect.objectContaining({ phase: 'Succeeded', name: run?.name })]);
      // Each commit has its own run; the previous one went before it was created (BeforeHookCreation).
      const runs = kubectl(['-n', ns, 'get', 'pipelineruns', '-o', 'jsonpath={.items[*].metadata.name}']).trim().split(' ');
      expect(runs).toEqual([run?.name]);
    }
  }, 300_000);

  it('SyncFail runs when the apply fails', async () => {
    const ns = namespace('syncfail');
    const repo = await git.createRepo('syncfail');
    // Given: a commit whose ConfigMap the API server refuses (an invalid key), and a SyncFail Job.
    await repo.commit({
      'app/bad.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  "not a valid key!": x\n',
      'app/notify.yaml': job({ name: 'notify-failure', hook: 'SyncFail', policy: 'HookSucceeded' }),
    });
    await applySync(ns, 'broken', repo, 'app');
    // Then: the apply fails and the SyncFail hook runs, completes and is deleted (HookSucceeded).
    const cs = await until(ns, 'broken', 'SyncFail done', (c) => hooksOf(c).some((h) => h.hook === 'SyncFail' && h.phase === 'Succeeded'));
    expect(ready(cs)).toMatchObject({ status: 'False', reason: 'ApplyFailed' });
    expect(hooksOf(cs)[0]?.message).toContain('deleted: HookSucceeded');
    expect(await jobs(ns)).toEqual([]);
  }, 300_000);

  it('an Argo CD repository with hooks syncs unchanged: hook types, delete policies and Skip', async () => {
    const ns = namespace('argocd');
    const repo = await git.createRepo('argocd');
    // Given: manifests written for Argo CD: a PreSync Job deleted when it succeeds, a PostSync Job deleted when it
    // fails, a Sync Job, and an object marked Skip.
    await repo.commit({
      'app/web.yaml': deployment('registry.example.com/web:1'),
      'app/schema.yaml': job({ name: 'schema', hook: 'PreSync', policy: 'HookSucceeded', annotation: 'argocd' }),
      'app/seed.yaml': job({ name: 'seed', hook: 'Sync', annotation: 'argocd' }),
      'app/check.yaml': job({ name: 'check', hook: 'PostSync', policy: 'HookFailed', outcome: JobOutcome.Fail, annotation: 'argocd' }),
      'app/skipped.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: skipped\n  annotations:\n    argocd.argoproj.io/hook: Skip\ndata: {a: "1"}\n',
    });
    await applySync(ns, 'argo', repo, 'app');
    // Then: PreSync and Sync succeed, PostSync fails: HookFailed, and the failed Job is deleted (HookFailed policy).
    const cs = await until(ns, 'argo', 'PostSync failed', (c) => hooksOf(c).some((h) => h.hook === 'PostSync' && h.phase === 'Failed'));
    expect(ready(cs)).toMatchObject({ status: 'False', reason: 'HookFailed' });
    expect(hooksOf(cs).map((h) => `${h.hook}:${h.name}:${h.phase}`)).toEqual(['PreSync:schema:Succeeded', 'Sync:seed:Succeeded', 'PostSync:check:Failed']);
    expect((await jobs(ns)).map((j) => j.metadata.name)).toEqual(['seed']);
    expect(image(ns)).toBe('registry.example.com/web:1');
    expect(spawnSync('kubectl', ['--kubeconfig', cluster.kubeconfigPath, '-n', ns, 'get', 'configmap', 'skipped']).status).not.toBe(0);
    // Hooks are not ordinary objects: not in the inventory (never pruned or checked for drift).
    expect(cs.status?.inventory?.[0]?.entries.some((e) => e.includes('/Job/'))).toBe(false);
    // `syncline status NAME` lists them.
    let out = '';
    const code = await runCli(['status', 'argo', '-n', ns, '--kubeconfig', cluster.kubeconfigPath], {
      env: {},
      runOperator: () => Promise.reject(new Error('not here')),
      out: (text) => (out += text),
      err: () => undefined,
    });
    expect(code).toBe(0);
    expect(out).toMatch(/HOOK\s+OBJECT\s+PHASE/);
    expect(out).toMatch(/main\s+PostSync\s+Job\/check\s+Failed/);
  }, 300_000);

  it('a hook in a namespace the sync may not write to is refused there, and nothing of the target is applied', async () => {
    const ns = namespace('tenant');
    const elsewhere = namespace('elsewhere');
    const repo = await git.createRepo('tenant');
    // Given: a sync without a ServiceAccount in an untrusted namespace, whose PreSync hook names another namespace.
    await repo.commit({
      'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata: {a: "1"}\n',
      'app/migrate.yaml': job({ name: 'migrate', hook: 'PreSync' }).replace('  annotations:', `  namespace: ${elsewhere}\n  annotations:`),
    });
    await applySync(ns, 'tenant', repo, 'app');
    // Then: the target is refused by the tenancy rule, naming the hook; no Job runs anywhere and nothing is applied.
    const cs = await until(ns, 'tenant', 'refused', (c) => c.status?.targets?.[0]?.reason === 'NamespaceNotAllowed');
    expect(cs.status?.targets?.[0]?.message).toContain(`Job/${elsewhere}/migrate`);
    expect(await jobs(elsewhere)).toEqual([]);
    expect(spawnSync('kubectl', ['--kubeconfig', cluster.kubeconfigPath, '-n', ns, 'get', 'configmap', 'app']).status).not.toBe(0);
  }, 300_000);

  it('hooks add at most one write per hook per commit beyond the hook objects themselves', async () => {
    const ns = namespace('writes');
    const repo = await git.createRepo('writes');
    const cm = (name: string, value: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata: {a: "${value}"}\n`;
    const files = (value: string): Record<string, string> => ({
      'plain/cm.yaml': cm('plain', value),
      'hooked/cm.yaml': cm('hooked', value),
      'hooked/pre.yaml': job({ generateName: 'pre-', hook: 'PreSync' }),
      'hooked/post.yaml': job({ generateName: 'post-', hook: 'PostSync' }),
    });
    // Given: two syncs of a ConfigMap each, one with a PreSync and a PostSync Job, both Ready.
    const first = await repo.commit(files('1'));
    await applySync(ns, 'plain', repo, 'plain');
    await applySync(ns, 'hooked', repo, 'hooked');
    for (const name of ['plain', 'hooked']) await until(ns, name, 'Ready', (c) => ready(c)?.status === 'True' && c.status?.sourceRevision === first);
    // When: a new commit changes the ConfigMap, and the writes to each ConfigSync are counted until both are Ready.
    const eventsBefore = await Promise.all(['plain', 'hooked'].map((name) => eventWrites(ns, name)));
    const counters = ['plain', 'hooked'].map((name) => countWrites(ns, name));
    await Promise.all(counters.map((c) => c.listening));
    const second = await repo.commit(files('2'));
    for (const name of ['plain', 'hooked'])
      await until(ns, name, 'Ready at the new commit', (c) => ready(c)?.status === 'True' && c.status?.sourceRevision === second);
    // Let a late write show (nothing should come: resyncs every 2 s write nothing).
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const [plain = 0, hooked = 0] = counters.map((c) => c.stop());
    const [plainEvents = 0, hookedEvents = 0] = (await Promise.all(['plain', 'hooked'].map((name) => eventWrites(ns, name)))).map(
      (n, i) => n - (eventsBefore[i] ?? 0),
    );
    console.log(
      `writes for one commit (status + Events): without hooks ${plain} + ${plainEvents}, with a PreSync and a PostSync hook ${hooked} + ${hookedEvents}`,
    );
    // Then: two hooks cost at most two more writes of the ConfigSync and its Events.
    expect(plain).toBeGreaterThanOrEqual(1);
    expect(hooked + hookedEvents - (plain + plainEvents)).toBeLessThanOrEqual(2);
  }, 300_000);

  it('a restart of the operator mid-hook neither runs the hook twice nor loses it', async () => {
    const ns = namespace('restart');
    const repo = await git.createRepo('restart');
    // Given: a PreSync hook running.
    await repo.commit({
      'app/web.yaml': deployment('registry.example.com/web:1'),
      'app/migrate.yaml': job({ generateName: 'migrate-', hook: 'PreSync', outcome: JobOutcome.Hold }),
    });
    await applySync(ns, 'restart', repo, 'app');
    const cs = await until(ns, 'restart', 'PreSync running', (c) => hooksOf(c)[0]?.phase === 'Running');
    const before = await jobs(ns);
    expect(before).toHaveLength(1);
    // When: the operator crashes and a new one starts, and only then the hook completes.
    await operator.kill();
    operator = await startOperator({ kubeconfig: cluster.kubeconfigPath });
    release(ns, hooksOf(cs)[0]?.name ?? '', JobOutcome.Succeed);
    // Then: the new operator picks the same Job up, the sync completes, and the hook ran once.
    const done = await until(ns, 'restart', 'Ready', (c) => ready(c)?.status === 'True');
    expect(hooksOf(done)).toEqual([expect.objectContaining({ phase: 'Succeeded', name: before[0]?.metadata.name, uid: before[0]?.metadata.uid })]);
    expect((await jobs(ns)).map((j) => j.metadata.uid)).toEqual([before[0]?.metadata.uid]);
    expect(image(ns)).toBe('registry.example.com/web:1');
  }, 300_000);

  it('get -o wide and trace show the hooks; deleting the ConfigSync deletes the hook objects its records prove ours, and nothing else', async () => {
    const ns = namespace('cleanup');
    const repo = await git.createRepo('cleanup');
    const cli = async (args: readonly string[]): Promise<{ code: number; out: string }> => {
      let out = '';
      const code = await runCli([...args, '-n', ns, '--kubeconfig', cluster.kubeconfigPath], {
        env: {},
        runOperator: () => Promise.reject(new Error('not here')),
        out: (text) => (out += text),
        err: (text) => (out += text),
      });
      return { code, out };
    };
    // Given: a sync of a ConfigMap with a PreSync Job (generated name) and a PostSync Job (fixed name), both kept
    // after they ran (the default BeforeHookCreation).
    const sha = await repo.commit({
      'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata: {a: "1"}\n',
      'app/pre.yaml': job({ generateName: 'pre-', hook: 'PreSync' }),
      'app/post.yaml': job({ name: 'post', hook: 'PostSync' }),
    });
    await applySync(ns, 'cleanup', repo, 'app');
    const cs = await until(
      ns,
      'cleanup',
      'Ready with both hooks',
      (c) => ready(c)?.status === 'True' && hooksOf(c).filter((h) => h.phase === 'Succeeded').length === 2,
    );
    const pre = hooksOf(cs).find((h) => h.hook === 'PreSync')?.name ?? '';

    // Then: the Hooks column (-o wide) is the same in kubectl and syncline, and absent from the default table.
    const wide = await cli(['get', 'csync', 'cleanup', '-o', 'wide']);
    expect(wide.code).toBe(0);
    const kubectlWide = kubectl(['-n', ns, 'get', 'csync', 'cleanup', '-o', 'wide']);
    for (const table of [wide.out, kubectlWide]) {
      const [header = '', row = ''] = table.split('\n');
      const at = header.indexOf('HOOKS');
      expect(at, table).toBeGreaterThan(0);
      expect(row.slice(at).startsWith('2 Succeeded'), table).toBe(true);
    }
    expect((await cli(['get', 'csync', 'cleanup'])).out).not.toContain('HOOKS');
    // and trace proves the PreSync Job by its hook record and names its hook, phase, commit and file
    const traced = await cli(['trace', `job/${pre}`, '--allow-insecure-http']);
    expect(traced.code, traced.out).toBe(0);
    expect(traced.out).toMatch(/Status:\s+Managed by Syncline/);
    expect(traced.out).toMatch(/Proof:\s+the PreSync hook Job\/pre- of ConfigSync .*same uid/);
    expect(traced.out).toMatch(/Hook:\s+PreSync Job\/pre-/);
    expect(traced.out).toMatch(/Phase:\s+Succeeded \(\d+s\)/);
    expect(traced.out).toContain(sha.slice(0, 12));
    expect(traced.out).toMatch(/File:\s+app\/pre\.yaml/);

    // Given: the PostSync Job replaced by someone else's under the same name, with its marks copied, and another
    // Job carrying the same marks: marks alone prove nothing.
    const original = JSON.parse(kubectl(['-n', ns, 'get', 'job', 'post', '-o', 'json'])) as {
      metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
    };
    kubectl(['-n', ns, 'delete', 'job', 'post', '--wait=true']);
    const lookAlike = (name: string): string =>
      JSON.stringify({
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name, labels: original.metadata.labels, annotations: original.metadata.annotations },
        spec: { backoffLimit: 0, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'registry.example.com/other:1' }] } } },
      });
    kubectl(['-n', ns, 'create', '-f', '-'], lookAlike('post'));
    kubectl(['-n', ns, 'create', '-f', '-'], lookAlike('lookalike'));
    const replaced = (await jobs(ns)).find((j) => j.metadata.name === 'post')?.metadata.uid;
    expect((await cli(['trace', 'job/post'])).code).toBe(1);

    // When: the ConfigSync is deleted (deletionPolicy Delete, the default).
    kubectl(['-n', ns, 'delete', 'configsync', 'cleanup', '--wait=true', '--timeout=120s']);
    // Then: the PreSync Job it created goes with the ConfigMap; the replaced and the look-alike Jobs stay.
    const deadline = Date.now() + 60_000;
    while ((await jobs(ns)).some((j) => j.metadata.name === pre) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 300));
    const left = await jobs(ns);
    expect(left.map((j) => j.metadata.name).sort()).toEqual(['lookalike', 'post']);
    expect(left.find((j) => j.metadata.name === 'post')?.metadata.uid).toBe(replaced);
    expect(spawnSync('kubectl', ['--kubeconfig', cluster.kubeconfigPath, '-n', ns, 'get', 'configmap', 'app']).status).not.toBe(0);
  }, 300_000);
});

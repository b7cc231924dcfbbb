// End to end, one operator for the file: suspend, on-demand reconcile, drift, deletion policies, a
// tenant ServiceAccount without rights, and a Git server that goes down and comes back.
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { startGitServer, startOperator, type GitServer, type OperatorProcess, type TestRepo } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  configMapYaml,
  applyConfigSync,
  condition,
  configMapData,
  configSync,
  core,
  deleteConfigSync,
  eventually,
  installCrds,
  kc,
  patchConfigSync,
  readConfigSync,
  rest,
  waitForReady,
} from './harness.ts';

const cm = configMapYaml;

describe('ConfigSync lifecycle', () => {
  let git: GitServer;
  let ns: TestNamespace;
  let operator: OperatorProcess;

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    ns = await testNamespace({ prefix: 'life' });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name] });
  });
  afterAll(async () => {
    await operator.stop();
    await ns[Symbol.asyncDispose]();
    await git.close();
  });

  async function repoWith(name: string, files: Record<string, string>): Promise<{ repo: TestRepo; sha: string }> {
    const repo = await git.createRepo(name);
    return { repo, sha: await repo.commit(files) };
  }

  function spec(repo: TestRepo, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
      refreshInterval: '1h',
      targets: [{ name: 'main', namespace: ns.name }],
      ...extra,
    };
  }

  it('applies nothing while suspended and syncs on resume; the reconcile annotation syncs at once', async () => {
    const { repo, sha } = await repoWith('suspend', { 'app/a.yaml': cm('suspend-a', '  v: "1"') });
    await applyConfigSync(configSync(ns.name, 'suspended', spec(repo, { suspend: true })));
    await new Promise((r) => setTimeout(r, 1500));
    expect(await configMapData(ns.name, 'suspend-a')).toBeUndefined();

    await patchConfigSync(ns.name, 'suspended', { spec: { suspend: false } });
    await waitForReady(ns.name, 'suspended', (c) => c.status?.sourceRevision === sha);
    expect(await configMapData(ns.name, 'suspend-a')).toEqual({ v: '1' });

    // refreshInterval is 1h: only the annotation can explain a sync of the next commit
    const next = await repo.commit({ 'app/a.yaml': cm('suspend-a', '  v: "2"') });
    await patchConfigSync(ns.name, 'suspended', { metadata: { annotations: { 'syncline.dev/reconcile-requested-at': new Date().toISOString() } } });
    const cs = await waitForReady(ns.name, 'suspended', (c) => c.status?.sourceRevision === next);
    expect(cs.status?.lastHandledReconcileAt).toBeDefined();
    expect(await configMapData(ns.name, 'suspend-a')).toEqual({ v: '2' });
  });

  it('corrects an edited object without waiting for the interval (drift: Correct)', async () => {
    const { repo, sha } = await repoWith('drift', { 'app/a.yaml': cm('drift-a', '  v: "git"') });
    await applyConfigSync(configSync(ns.name, 'drift', spec(repo)));
    await waitForReady(ns.name, 'drift', (c) => c.status?.sourceRevision === sha);
    await core.patchNamespacedConfigMap({ name: 'drift-a', namespace: ns.name, body: [{ op: 'replace', path: '/data/v', value: 'edited by hand' }] });
    await eventually(async () => ((await configMapData(ns.name, 'drift-a'))?.['v'] === 'git' ? true : undefined), 'the drift to be corrected', 20_000);
  });

  it('corrects a removed field and a removed label without waiting for the interval (no managedFields entry of the editor)', async () => {
    // Removing a field leaves the editor no managedFields entry, so our own entry stays the newest: the
    // watch must still tell this edit from our own write (the time of our entry did not move).
    const { repo, sha } = await repoWith('drift-remove', { 'app/a.yaml': cm('drift-r', '  v: "git"\n  w: "also"') });
    await applyConfigSync(configSync(ns.name, 'drift-remove', spec(repo)));
    await waitForReady(ns.name, 'drift-remove', (c) => c.status?.sourceRevision === sha);
    await core.patchNamespacedConfigMap({ name: 'drift-r', namespace: ns.name, body: [{ op: 'remove', path: '/data/w' }] });
    await eventually(async () => ((await configMapData(ns.name, 'drift-r'))?.['w'] === 'also' ? true : undefined), 'the removed field to be restored', 30_000);
  });

  it('reports drift and leaves the edit in place (drift: Report)', async () => {
    const { repo, sha } = await repoWith('report', { 'app/a.yaml': cm('report-a', '  v: "git"') });
    await applyConfigSync(configSync(ns.name, 'report', spec(repo, { drift: 'Report' })));
    await waitForReady(ns.name, 'report', (c) => c.status?.sourceRevision === sha);
    await core.patchNamespacedConfigMap({ name: 'report-a', namespace: ns.name, body: [{ op: 'replace', path: '/data/v', value: 'edited by hand' }] });
    const cs = await eventually(
      async () => {
        const c = await readConfigSync(ns.name, 'report');
        return condition(c, 'Synced')?.reason === 'DriftDetected' ? c : undefined;
      },
      'the drift report',
      20_000,
    );
    expect(condition(cs, 'Synced')?.message).toContain('report-a');
    expect(await configMapData(ns.name, 'report-a')).toEqual({ v: 'edited by hand' });
  });

  it('deletes what it applied when deleted (Delete) and leaves it (Orphan)', async () => {
    const { repo, sha } = await repoWith('deletion', { 'app/a.yaml': cm('deleted-a', '  v: "1"') });
    const { repo: orphanRepo, sha: orphanSha } = await repoWith('orphan', { 'app/a.yaml': cm('orphan-a', '  v: "1"') });
    await applyConfigSync(configSync(ns.name, 'deleted', spec(repo)));
    await applyConfigSync(configSync(ns.name, 'orphan', spec(orphanRepo, { deletionPolicy: 'Orphan' })));
    await waitForReady(ns.name, 'deleted', (c) => c.status?.sourceRevision === sha);
    await waitForReady(ns.name, 'orphan', (c) => c.status?.sourceRevision === orphanSha);

    await deleteConfigSync(ns.name, 'deleted');
    await deleteConfigSync(ns.name, 'orphan');
    await eventually(async () => ((await configMapData(ns.name, 'deleted-a')) === undefined ? true : undefined), 'the Delete policy to prune');
    await eventually(async () => {
      try {
        await readConfigSync(ns.name, 'orphan');
        return undefined;
      } catch {
        return true; // gone: the finalizer was released
      }
    }, 'the orphaning ConfigSync to go away');
    expect(await configMapData(ns.name, 'orphan-a')).toEqual({ v: '1' });
  });

  it("applies as the tenant's ServiceAccount: what it may not touch fails per object, the rest applies", async () => {
    await core.createNamespacedServiceAccount({ namespace: ns.name, body: { metadata: { name: 'deployer' } } });
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns.name,
      body: {
        metadata: { name: 'configmaps-only' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns.name,
      body: {
        metadata: { name: 'deployer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmaps-only' },
        subjects: [{ kind: 'ServiceAccount', name: 'deployer', namespace: ns.name }],
      },
    });
    const { repo } = await repoWith('tenant', {
      'app/a.yaml': cm('tenant-a', '  v: "1"'),
      'app/secret.yaml': 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: tenant-secret\nstringData:\n  k: v\n',
    });
    await applyConfigSync(configSync(ns.name, 'tenant', spec(repo, { serviceAccountName: 'deployer' })));
    const cs = await eventually(async () => {
      const c = await readConfigSync(ns.name, 'tenant');
      return c.status?.targets?.[0]?.phase === 'Failed' ? c : undefined;
    }, 'the forbidden result');
    expect(cs.status?.targets?.[0]?.message).toMatch(/\/Secret\/.*tenant-secret.*forbidden/i);
    expect(condition(cs, 'Ready')).toMatchObject({ status: 'False', reason: 'ApplyFailed' });
    expect(await configMapData(ns.name, 'tenant-a')).toEqual({ v: '1' });
    await expect(core.readNamespacedSecret({ name: 'tenant-secret', namespace: ns.name })).rejects.toMatchObject({ code: 404 });
  });

  it('renders a kind whose CRD was installed after the operator cached discovery', async () => {
    // given an operator that has already synced (discovery cached) and a CRD installed only now
    const group = `late${ns.name.slice(-8)}.example.com`;
    await rest.request({
      method: 'POST',
      path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      body: {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: `widgets.${group}` },
        spec: {
          group,
          scope: 'Namespaced',
          names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
          versions: [
            { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
          ],
        },
      },
    });
    try {
      await eventually(() => rest.request({ method: 'GET', path: `/apis/${group}/v1/widgets` }), 'the Widget kind to be served');
      const { repo, sha } = await repoWith('late-crd', { 'app/w.yaml': `apiVersion: ${group}/v1\nkind: Widget\nmetadata:\n  name: w\nsize: 3\n` });
      // when a sync renders a Widget, then it is applied (not stalled as an unknown kind)
      await applyConfigSync(configSync(ns.name, 'late-crd', spec(repo)));
      await waitForReady(ns.name, 'late-crd', (c) => c.status?.sourceRevision === sha);
      expect(await rest.request<{ size: number }>({ method: 'GET', path: `/apis/${group}/v1/namespaces/${ns.name}/widgets/w` })).toMatchObject({ size: 3 });
    } finally {
      await deleteConfigSync(ns.name, 'late-crd').catch(() => undefined);
      await rest.request({ method: 'DELETE', path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.${group}` });
    }
  });

  it('backs off while the Git server fails, says why, and recovers', async () => {
    const { repo, sha } = await repoWith('flaky', { 'app/a.yaml': cm('flaky-a', '  v: "1"') });
    git.setBehavior({ kind: 'status', status: 503, repo: 'flaky' });
    await applyConfigSync(configSync(ns.name, 'flaky', spec(repo)));
    const cs = await eventually(async () => {
      const c = await readConfigSync(ns.name, 'flaky');
      return condition(c, 'Ready')?.reason === 'FetchFailed' ? c : undefined;
    }, 'FetchFailed');
    expect(condition(cs, 'Ready')?.message).toContain(repo.url.replace(/^https?:\/\//, '').split('/')[0]);
    const failuresWhileDown = git.requests('flaky').infoRefs;
    await new Promise((r) => setTimeout(r, 2000));
    // exponential backoff: a handful of attempts in two seconds, not a hot loop
    expect(git.requests('flaky').infoRefs - failuresWhileDown).toBeLessThan(8);

    git.setBehavior(undefined);
    await waitForReady(ns.name, 'flaky', (c) => c.status?.sourceRevision === sha, 60_000);
    expect(await configMapData(ns.name, 'flaky-a')).toEqual({ v: '1' });
  }, 90_000);
});

// End to end: ownership is proof, not marks. A ConfigSync applies objects; someone copies them with every
// label and annotation (the real `kubectl get -o yaml | sed | kubectl apply -f -`, and a create through the
// API). The copies survive resyncs, adds, prunes, a commit that renders a name a copy holds, and the sync's
// deletion; an object deleted and re-created by someone else at a name the inventory lists is not pruned; an
// object the sync applied while its status write was lost is still pruned.
import { execFile } from 'node:child_process';
import { startGitServer, startOperator, type GitServer, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyConfigSync,
  condition,
  configMapData,
  configMapYaml as cm,
  configSync,
  core,
  deleteConfigSync,
  eventually,
  installCrds,
  patchConfigSync,
  readConfigSync,
  rest,
  waitForReady,
} from './harness.ts';

/** Runs a shell pipeline with the real kubectl against the test cluster. */
function shell(script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'bash',
      ['-o', 'pipefail', '-c', script],
      { env: { ...process.env, KUBECONFIG: testKubeconfigPath() }, timeout: 120_000 },
      (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`${script}: ${error.message}\n${stderr}`));
        else resolve(stdout);
      },
    );
  });
}

/** The marks a ConfigMap carries: every label and annotation but kubectl's own bookkeeping. */
async function marksOf(namespace: string, name: string): Promise<{ labels: Record<string, string>; annotations: Record<string, string> }> {
  const { metadata } = await core.readNamespacedConfigMap({ name, namespace });
  const { 'kubectl.kubernetes.io/last-applied-configuration': _lastApplied, ...annotations } = metadata?.annotations ?? {};
  return { labels: metadata?.labels ?? {}, annotations };
}

/** The ids a ConfigSync's status inventory lists (its status form holds one line per scope: `scope/name1,name2`). */
function listed(cs: Awaited<ReturnType<typeof readConfigSync>>): string[] {
  return (cs.status?.inventory?.flatMap((i) => i.entries) ?? []).flatMap((line) => {
    const slash = line.lastIndexOf('/');
    return line
      .slice(slash + 1)
      .split(',')
      .map((name) => `${line.slice(0, slash)}/${name}`);
  });
}

describe('copies of applied objects carrying every mark are never ours', () => {
  let git: GitServer;
  let ns: TestNamespace;
  let operator: OperatorProcess;

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    ns = await testNamespace({ prefix: 'copies' });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name] });
  });
  afterAll(async () => {
    await operator.stop();
    await ns[Symbol.asyncDispose]();
    await git.close();
  });

  it('survive resyncs, adds, prunes, a render of their name and the sync deletion; a lost status write still prunes', { timeout: 600_000 }, async () => {
    const namespace = ns.name;
    const ready = (sha: string) => waitForReady(namespace, 'app', (c) => c.status?.sourceRevision === sha, 120_000);
    const repo = await git.createRepo('copies');
    const first = await repo.commit({ 'app/a.yaml': cm('a', '  v: "git"'), 'app/b.yaml': cm('b', '  v: "git"') });
    await applyConfigSync(
      configSync(namespace, 'app', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '1s',
        targets: [{ name: 'main', namespace }],
      }),
    );
    await ready(first);

    // given a copy of `a` made the everyday way, a copy of `b` created through the API, and one more copy under
    // the name of an object the sync will render later (it resyncs every second): each carries every one of the sync's labels and annotations
    await shell(
      `kubectl get configmap a -n ${namespace} -o yaml | sed -e 's/^  name: a$/  name: a-copy/' -e '/^  uid:/d' -e '/^  resourceVersion:/d' -e '/^  creationTimestamp:/d' | kubectl apply -f -`,
    );
    const b = await core.readNamespacedConfigMap({ name: 'b', namespace });
    for (const name of ['b-copy', 'taken']) {
      await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name, labels: b.metadata?.labels, annotations: b.metadata?.annotations }, data: { v: 'theirs' } },
      });
    }
    expect(await marksOf(namespace, 'a-copy')).toEqual(await marksOf(namespace, 'a'));
    expect(await marksOf(namespace, 'b-copy')).toEqual(await marksOf(namespace, 'b'));
    const copies = async (): Promise<Record<string, Record<string, string> | undefined>> => ({
      'a-copy': await configMapData(namespace, 'a-copy'),
      'b-copy': await configMapData(namespace, 'b-copy'),
      taken: await configMapData(namespace, 'taken'),
    });
    const untouched = { 'a-copy': { v: 'git' }, 'b-copy': { v: 'theirs' }, taken: { v: 'theirs' } };

    // when the sync resyncs
    const requested = new Date().toISOString();
    await patchConfigSync(namespace, 'app', { metadata: { annotations: { 'syncline.dev/reconcile-requested-at': requested } } });
    await waitForReady(namespace, 'app', (c) => c.status?.lastHandledReconcileAt === requested, 120_000);
    expect(await copies()).toEqual(untouched);

    // when a commit adds an object and removes another (a prune)
    const second = await repo.commit({ 'app/c.yaml': cm('c', '  v: "git"'), 'app/b.yaml': null });
    await ready(second);
    expect(await configMapData(namespace, 'c')).toEqual({ v: 'git' });
    await eventually(async () => ((await configMapData(namespace, 'b')) === undefined ? true : undefined), 'b to be pruned', 60_000);
    expect(await copies()).toEqual(untouched);

    // when a commit renders an object whose name a copy holds: a conflict, the copy left as it is
    const third = await repo.commit({ 'app/taken.yaml': cm('taken', '  v: "git"') });
    const conflicted = await eventually(
      async () => {
        const cs = await readConfigSync(namespace, 'app');
        return cs.status?.lastAttemptedRevision === third && condition(cs, 'Ready')?.reason === 'Conflict' ? cs : undefined;
      },
      'the conflict over taken',
      120_000,
    );
    expect(condition(conflicted, 'Ready')?.message).toMatch(/taken: Conflict: .*carries this sync's ownership marks/);
    expect(await copies()).toEqual(untouched);
    const fourth = await repo.commit({ 'app/taken.yaml': null });
    await ready(fourth);

    // when someone deletes `d`, which the sync applied and its inventory lists, and creates their own `d` from a
    // copy of it (every mark along) while the operator is down; then a commit no longer renders `d`
    const withD = await repo.commit({ 'app/d.yaml': cm('d', '  v: "git"') });
    await ready(withD);
    expect(listed(await readConfigSync(namespace, 'app'))).toContain(`/ConfigMap/${namespace}/d`);
    await operator.stop();
    await shell(
      `kubectl get configmap d -n ${namespace} -o yaml > /tmp/${namespace}-d.yaml && kubectl delete configmap d -n ${namespace} && sed -e '/^  uid:/d' -e '/^  resourceVersion:/d' -e '/^  creationTimestamp:/d' -e 's/v: git/v: theirs/' /tmp/${namespace}-d.yaml | kubectl create -f - && rm /tmp/${namespace}-d.yaml`,
    );
    expect(await configMapData(namespace, 'd')).toEqual({ v: 'theirs' });
    const withoutD = await repo.commit({ 'app/d.yaml': null });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', namespace] });
    await ready(withoutD);
    // then their `d` is not deleted: the inventory names `d`, but the object at that name holds no apply of ours
    const dropped = await eventually(
      async () => {
        const cs = await readConfigSync(namespace, 'app');
        return listed(cs).includes(`/ConfigMap/${namespace}/d`) ? undefined : cs;
      },
      'd to leave the inventory',
      60_000,
    );
    expect(listed(dropped)).toEqual([`/ConfigMap/${namespace}/a`, `/ConfigMap/${namespace}/c`]);
    expect(await configMapData(namespace, 'd')).toEqual({ v: 'theirs' });

    // when the sync applied `c` but its status write was lost (the operator stopped, the inventory gone), and
    // the next commit no longer renders `c`
    await operator.stop();
    await rest.request({
      method: 'PATCH',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs/app/status`,
      contentType: 'application/merge-patch+json',
      body: { status: { inventory: null } },
    });
    expect((await readConfigSync(namespace, 'app')).status?.inventory ?? []).toEqual([]);
    const fifth = await repo.commit({ 'app/c.yaml': null });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', namespace] });
    await ready(fifth);

    // then `c` is pruned all the same (our own apply is on it), and the copies are still there
    await eventually(async () => ((await configMapData(namespace, 'c')) === undefined ? true : undefined), 'c to be pruned', 60_000);
    expect(await copies()).toEqual(untouched);
    expect((await readConfigSync(namespace, 'app')).status?.inventory?.flatMap((i) => i.entries)).toEqual([`/ConfigMap/${namespace}/a`]);

    // when the sync is deleted (deletionPolicy Delete): what it applied goes, the copies stay
    await deleteConfigSync(namespace, 'app');
    await eventually(async () => ((await configMapData(namespace, 'a')) === undefined ? true : undefined), 'a to be deleted with the sync', 120_000);
    await eventually(
      () =>
        readConfigSync(namespace, 'app').then(
          () => undefined,
          () => true,
        ),
      'the ConfigSync to go away',
      120_000,
    );
    expect(await copies()).toEqual(untouched);
  });
});

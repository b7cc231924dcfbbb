// End to end, one operator for the file: the classes of failure the acceptance run found. Interval bounds
// at admission and in the operator, Namespaces that hold others' objects, two syncs rendering one object,
// and drift right after the first apply of a kind.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { startGitServer, startOperator, type GitServer, type OperatorProcess, type TestRepo } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyConfigSync,
  condition,
  configMapData,
  configMapYaml,
  configSync,
  core,
  deleteConfigSync,
  eventually,
  installCrds,
  patchConfigSync,
  readConfigSync,
  waitForReady,
} from './harness.ts';

const mainPath = join(import.meta.dirname, '..', '..', 'packages', 'cli', 'src', 'main.ts');

describe('hardening', () => {
  let git: GitServer;
  let ns: TestNamespace;
  let operator: OperatorProcess;

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    ns = await testNamespace({ prefix: 'hard' });
    // A floor above the API's 1s, so the clamp is visible; later flags win. The syncs here create Namespaces
    // and write into them, as a platform team's do: their namespace is trusted.
    operator = await startOperator({
      kubeconfig: testKubeconfigPath(),
      args: ['--namespace', ns.name, '--trusted-namespaces', ns.name, '--min-refresh-interval', '5s'],
    });
  });
  afterAll(async () => {
    await operator.stop();
    await ns[Symbol.asyncDispose]();
    await git.close();
  });

  let repos = 0;
  async function repoWith(files: Record<string, string>): Promise<{ repo: TestRepo; sha: string }> {
    const repo = await git.createRepo(`hard-${repos++}`);
    return { repo, sha: await repo.commit(files) };
  }
  const spec = (repo: TestRepo, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
    refreshInterval: '1h',
    targets: [{ name: 'main', namespace: ns.name }],
    ...extra,
  });
  const eventsOf = async (name: string, reason: string): Promise<{ message?: string; count?: number }[]> =>
    (await core.listNamespacedEvent({ namespace: ns.name, fieldSelector: `involvedObject.name=${name}` })).items.filter((e) => e.reason === reason);

  describe('every interval is bounded at admission', () => {
    it.each(['0s', '0ms', '999ms', '0.5s', '168h1s', '169h', '596h32m', '1000h', '100000h'])('refuses refreshInterval %s', async (interval) => {
      const { repo } = await repoWith({ 'app/a.yaml': configMapYaml('never', '  v: "1"') });
      await expect(applyConfigSync(configSync(ns.name, `bad-${randomBytes(3).toString('hex')}`, spec(repo, { refreshInterval: interval })))).rejects.toThrow(
        /between 1s and 168h/,
      );
    });

    it.each(['1s', '1m30s', '168h'])('admits refreshInterval %s', async (interval) => {
      const { repo } = await repoWith({ 'app/a.yaml': configMapYaml(`ok-${interval.replace(/[^a-z0-9]/g, '')}`, '  v: "1"') });
      const name = `ok-${randomBytes(3).toString('hex')}`;
      await applyConfigSync(configSync(ns.name, name, spec(repo, { refreshInterval: interval })));
      await deleteConfigSync(ns.name, name);
    });

    it('clamps an interval below the operator floor and says so in a condition', async () => {
      const { repo, sha } = await repoWith({ 'app/a.yaml': configMapYaml('clamped', '  v: "1"') });
      await applyConfigSync(configSync(ns.name, 'clamped', spec(repo, { refreshInterval: '1s' })));
      const cs = await waitForReady(ns.name, 'clamped', (c) => c.status?.sourceRevision === sha && condition(c, 'IntervalClamped') !== undefined);
      expect(condition(cs, 'IntervalClamped')).toMatchObject({
        status: 'True',
        reason: 'IntervalClamped',
        message: "refreshInterval 1s is below the operator's minimum 5s; using 5s",
      });
    });
  });

  describe('a Namespace a sync created is deleted only when nothing but its own objects is in it', () => {
    it("orphans the Namespace, with an Event, when another sync's objects live in it", async () => {
      const shared = `hard-shared-${randomBytes(3).toString('hex')}`;
      try {
        const { repo: creatorRepo, sha } = await repoWith({
          'app/ns.yaml': `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${shared}\n`,
          'app/mine.yaml': configMapYaml('creator-own', '  v: "1"').replace('metadata:\n', `metadata:\n  namespace: ${shared}\n`),
        });
        await applyConfigSync(configSync(ns.name, 'creator', spec(creatorRepo)));
        await waitForReady(ns.name, 'creator', (c) => c.status?.sourceRevision === sha);

        const { repo: tenantRepo, sha: tenantSha } = await repoWith({ 'app/theirs.yaml': configMapYaml('tenant-data', '  keep: "me"') });
        await applyConfigSync(configSync(ns.name, 'tenant', spec(tenantRepo, { targets: [{ name: 'main', namespace: shared }] })));
        await waitForReady(ns.name, 'tenant', (c) => c.status?.sourceRevision === tenantSha);
        await core.createNamespacedConfigMap({ namespace: shared, body: { metadata: { name: 'hand-made' }, data: { keep: 'me too' } } });

        await deleteConfigSync(ns.name, 'creator');
        await eventually(
          async () =>
            await readConfigSync(ns.name, 'creator').then(
              () => undefined,
              () => true,
            ),
          'the ConfigSync to be gone',
        );

        const namespace = await core.readNamespace({ name: shared });
        expect(namespace.metadata?.deletionTimestamp).toBeUndefined();
        expect(await configMapData(shared, 'tenant-data')).toEqual({ keep: 'me' });
        expect(await configMapData(shared, 'hand-made')).toEqual({ keep: 'me too' });
        // its own object went
        expect(await configMapData(shared, 'creator-own')).toBeUndefined();
        const orphaned = await eventually(async () => {
          const events = await eventsOf('creator', 'NamespaceOrphaned');
          return events.length > 0 ? events : undefined;
        }, 'a NamespaceOrphaned Event');
        expect(orphaned[0]?.message).toContain(`/Namespace//${shared}`);
        expect(orphaned[0]?.message).toContain(`/ConfigMap/${shared}/tenant-data`);
        await deleteConfigSync(ns.name, 'tenant');
      } finally {
        await core.deleteNamespace({ name: shared }).catch(() => undefined);
      }
    });

    it("deletes the Namespace with the sync when it holds only that sync's objects", async () => {
      const own = `hard-own-${randomBytes(3).toString('hex')}`;
      try {
        const { repo, sha } = await repoWith({
          'app/ns.yaml': `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${own}\n`,
          'app/mine.yaml': configMapYaml('only-mine', '  v: "1"').replace('metadata:\n', `metadata:\n  namespace: ${own}\n`),
        });
        await applyConfigSync(configSync(ns.name, 'sole', spec(repo)));
        await waitForReady(ns.name, 'sole', (c) => c.status?.sourceRevision === sha);
        await deleteConfigSync(ns.name, 'sole');
        await eventually(async () => {
          const namespace = await core.readNamespace({ name: own }).catch(() => undefined);
          return namespace === undefined || namespace.metadata?.deletionTimestamp !== undefined ? true : undefined;
        }, 'the Namespace to be deleted');
      } finally {
        await core.deleteNamespace({ name: own }).catch(() => undefined);
      }
    });
  });

  it('reports a second sync rendering the same object as a Conflict naming the owner, with one Event', async () => {
    const { repo, sha } = await repoWith({ 'app/a.yaml': configMapYaml('contested', '  by: "first"'), 'app/b.yaml': configMapYaml('uncontested', '  v: "1"') });
    await applyConfigSync(configSync(ns.name, 'first', spec(repo, { targets: [{ name: 'main', namespace: ns.name }] })));
    await waitForReady(ns.name, 'first', (c) => c.status?.sourceRevision === sha);

    const { repo: second, sha: secondSha } = await repoWith({
      'app/a.yaml': configMapYaml('contested', '  by: "second"'),
      'app/c.yaml': configMapYaml('second-own', '  v: "1"'),
    });
    await applyConfigSync(configSync(ns.name, 'second', spec(second)));
    const cs = await eventually(async () => {
      const c = await readConfigSync(ns.name, 'second');
      return condition(c, 'Ready')?.reason === 'Conflict' && c.status?.lastAttemptedRevision === secondSha ? c : undefined;
    }, 'the second sync to report the conflict');

    expect(condition(cs, 'Ready')).toMatchObject({ status: 'False', reason: 'Conflict' });
    expect(condition(cs, 'Synced')).toMatchObject({ status: 'False', reason: 'Conflict' });
    expect(condition(cs, 'Synced')?.message).toContain(`${ns.name}/first/main`);
    expect(cs.status?.targets?.[0]).toMatchObject({ name: 'main', phase: 'Failed' });
    expect(cs.status?.targets?.[0]?.message).toContain(`/ConfigMap/${ns.name}/contested`);
    // the rest of the second sync applied; the first keeps its object
    expect(await configMapData(ns.name, 'second-own')).toEqual({ v: '1' });
    expect(await configMapData(ns.name, 'contested')).toEqual({ by: 'first' });

    // once: more reconciles of the same conflict add no Event, they count up the one there is
    for (let i = 0; i < 3; i++) {
      const at = new Date(Date.now() + i).toISOString();
      await patchConfigSync(ns.name, 'second', { metadata: { annotations: { 'syncline.dev/reconcile-requested-at': at } } });
      await eventually(
        async () => ((await readConfigSync(ns.name, 'second')).status?.lastHandledReconcileAt === at ? true : undefined),
        'the reconcile request to be handled',
      );
    }
    const events = await eventsOf('second', 'Conflict');
    expect(events).toHaveLength(1);
    expect(events[0]?.message).toContain(`${ns.name}/first/main`);
    expect(events[0]?.count).toBeGreaterThanOrEqual(4);
  });

  it('shows suspension (a Suspended condition and column, observedGeneration current), and reconcile refuses it', async () => {
    const { repo, sha } = await repoWith({ 'app/a.yaml': configMapYaml('paused', '  v: "1"') });
    await applyConfigSync(configSync(ns.name, 'paused', spec(repo, { suspend: true })));
    const cs = await eventually(async () => {
      const c = await readConfigSync(ns.name, 'paused');
      return condition(c, 'Suspended')?.status === 'True' && c.status?.observedGeneration === c.metadata.generation ? c : undefined;
    }, 'the Suspended condition');
    expect(condition(cs, 'Suspended')?.message).toMatch(/nothing is fetched, applied or pruned/);
    expect(await configMapData(ns.name, 'paused')).toBeUndefined();
    const cli = spawnSync(process.execPath, [mainPath, 'reconcile', 'paused', '-n', ns.name, '--kubeconfig', testKubeconfigPath()], { encoding: 'utf8' });
    expect(cli.status).toBe(1);
    expect(cli.stderr).toMatch(/is suspended \(spec.suspend: true\)/);

    await applyConfigSync(configSync(ns.name, 'paused', spec(repo, { suspend: false })));
    const resumed = await waitForReady(ns.name, 'paused', (c) => c.status?.sourceRevision === sha);
    expect(condition(resumed, 'Suspended')).toBeUndefined();
  });

  describe('drift is corrected from the first apply of a kind on', () => {
    // Kinds no other test of this operator applies, so each one's watch starts with this sync.
    const kinds: {
      kind: string;
      manifest: (name: string) => string;
      edit: (name: string) => Promise<unknown>;
      read: (name: string) => Promise<string | undefined>;
      want: string;
    }[] = [
      {
        kind: 'Secret',
        manifest: (name) => `apiVersion: v1\nkind: Secret\nmetadata:\n  name: ${name}\nstringData:\n  v: git\n`,
        edit: (name) =>
          core.patchNamespacedSecret({ name, namespace: ns.name, body: [{ op: 'replace', path: '/data/v', value: Buffer.from('edited').toString('base64') }] }),
        read: async (name) => {
          const data = (await core.readNamespacedSecret({ name, namespace: ns.name })).data?.['v'];
          return data === undefined ? undefined : Buffer.from(data, 'base64').toString();
        },
        want: 'git',
      },
      {
        kind: 'ServiceAccount',
        manifest: (name) => `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ${name}\n  labels:\n    v: git\n`,
        edit: (name) =>
          core.patchNamespacedServiceAccount({ name, namespace: ns.name, body: [{ op: 'replace', path: '/metadata/labels/v', value: 'edited' }] }),
        read: async (name) => (await core.readNamespacedServiceAccount({ name, namespace: ns.name })).metadata?.labels?.['v'],
        want: 'git',
      },
      {
        kind: 'Service',
        manifest: (name) => `apiVersion: v1\nkind: Service\nmetadata:\n  name: ${name}\nspec:\n  ports:\n  - port: 80\n    targetPort: 8080\n`,
        edit: (name) => core.patchNamespacedService({ name, namespace: ns.name, body: [{ op: 'replace', path: '/spec/ports/0/targetPort', value: 9999 }] }),
        read: async (name) => String((await core.readNamespacedService({ name, namespace: ns.name })).spec?.ports?.[0]?.targetPort),
        want: '8080',
      },
    ];

    it.each(kinds)('$kind edited right after it first became Ready', async ({ kind, manifest, edit, read, want }) => {
      const name = `first-${kind.toLowerCase()}`;
      const { repo, sha } = await repoWith({ 'app/object.yaml': manifest(name) });
      await applyConfigSync(configSync(ns.name, name, spec(repo)));
      await waitForReady(ns.name, name, (c) => c.status?.sourceRevision === sha);
      await edit(name);
      // refreshInterval is 1h: only the drift watch can explain a correction
      await eventually(async () => ((await read(name)) === want ? true : undefined), `the ${kind} to be corrected`, 20_000);
    });
  });
});

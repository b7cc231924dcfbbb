// End to end, variants of the trust rules the other suites do not try: what a user made before Syncline came
// stays theirs. A NamespaceReplication whose standby namespace already holds the user's own objects (same names
// as the source's, with the same or other data, and other names) never writes them, never prunes them when the
// source loses the object, and says which ones it could not replicate.
import { AppsV1Api, RbacAuthorizationV1Api, Watch, type V1Deployment } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { startGitServer, startOperator, type GitServer, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import type { ConfigSync, NamespaceReplication } from '@syncline/operator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, configMapData, configMapYaml, configSync, core, eventually, installCrds, kc, readConfigSync, rest } from './harness.ts';

describe('a standby namespace that already holds the user’s objects (NamespaceReplication)', () => {
  let ops: TestNamespace;
  let standby: TestNamespace;
  let operator: OperatorProcess;
  const nrPath = (name: string): string => `/apis/syncline.dev/v1alpha1/namespaces/${ops.name}/namespacereplications/${name}`;
  const readNr = (name: string): Promise<NamespaceReplication> => rest.request<NamespaceReplication>({ method: 'GET', path: nrPath(name) });
  const condition = (nr: NamespaceReplication, type: string) => nr.status?.conditions?.find((c) => c.type === type);
  const managers = async (name: string): Promise<string[]> =>
    ((await core.readNamespacedConfigMap({ name, namespace: standby.name })).metadata?.managedFields ?? []).map(
      (m) => `${m.manager ?? ''}/${m.operation ?? ''}`,
    );
  const labels = async (name: string): Promise<Record<string, string>> =>
    (await core.readNamespacedConfigMap({ name, namespace: standby.name })).metadata?.labels ?? {};

  beforeAll(async () => {
    await installCrds();
    ops = await testNamespace({ prefix: 'adv-ops' });
    standby = await testNamespace({ prefix: 'adv-standby' });
    // The source: what the replication copies.
    for (const [name, data] of [
      ['same-data', { v: 'one' }],
      ['other-data', { v: 'source' }],
      ['plain', { v: 'plain' }],
      ['c1', { v: 'c1' }],
    ] as const) {
      await core.createNamespacedConfigMap({ namespace: ops.name, body: { metadata: { name }, data } });
    }
    // The standby namespace existed before, with the user's own objects: one equal to the source's, one at a
    // source's name with other keys, and one at a name the source does not have.
    await core.createNamespacedConfigMap({ namespace: standby.name, body: { metadata: { name: 'same-data' }, data: { v: 'one' } } });
    await core.createNamespacedConfigMap({ namespace: standby.name, body: { metadata: { name: 'other-data' }, data: { mine: 'keep me' } } });
    await core.createNamespacedConfigMap({ namespace: standby.name, body: { metadata: { name: 'users-own' }, data: { mine: 'keep me too' } } });
    operator = await startOperator({
      kubeconfig: testKubeconfigPath(),
      args: ['--namespace', ops.name, '--operator-namespace', ops.name, '--mirror', 'off', '--webhook-addr', 'off', '--dr-heartbeat-interval', 'off'],
    });
  }, 300_000);
  afterAll(async () => {
    await operator.stop();
    await standby[Symbol.asyncDispose]();
    await ops[Symbol.asyncDispose]();
  });

  it('replicates what is not there, leaves the user’s objects as they were and names them as conflicts', async () => {
    await rest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${ops.name}/namespacereplications`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'NamespaceReplication',
        metadata: { name: 'pre' },
        spec: { destination: { namespace: standby.name }, interval: '3s', resourceTypes: ['ConfigMap'], pruneGuard: { maxDeletions: '100%' } },
      },
    });
    const nr = await eventually(
      async () => {
        const n = await readNr('pre');
        return n.status?.observedGeneration === n.metadata.generation && (n.status?.failed?.length ?? 0) > 0 ? n : undefined;
      },
      'the replication to report the user’s objects',
      120_000,
    );
    // the source's other objects arrived
    expect(await configMapData(standby.name, 'plain')).toEqual({ v: 'plain' });
    expect(await configMapData(standby.name, 'c1')).toEqual({ v: 'c1' });
    // the user's objects are untouched: no key written, no marks, no apply of ours
    expect(await configMapData(standby.name, 'other-data')).toEqual({ mine: 'keep me' });
    expect(await configMapData(standby.name, 'same-data')).toEqual({ v: 'one' });
    for (const name of ['same-data', 'other-data', 'users-own']) {
      expect(await managers(name)).not.toContain('syncline/Apply');
      expect(Object.keys(await labels(name)).filter((k) => k.startsWith('syncline.dev/'))).toEqual([]);
    }
    // and the replication says which ones it could not replicate, by name
    const failed = (nr.status?.failed ?? []).map((f) => `${f.id}: ${f.reason}`).join('\n');
    expect(failed).toContain(`/ConfigMap/${standby.name}/same-data`);
    expect(failed).toContain(`/ConfigMap/${standby.name}/other-data`);
    expect(failed).toContain('Conflict');
    expect(condition(nr, 'Ready')).toMatchObject({ status: 'False' });
  }, 240_000);

  it('never prunes the user’s objects when the source loses those names, and prunes its own copy', async () => {
    for (const name of ['same-data', 'other-data', 'c1']) await core.deleteNamespacedConfigMap({ name, namespace: ops.name });
    // c1 was ours: it goes. Waiting for it is waiting for the pass that would have pruned the others too.
    await eventually(async () => ((await configMapData(standby.name, 'c1')) === undefined ? true : undefined), 'c1 pruned from the standby', 120_000);
    await eventually(
      async () => {
        const n = await readNr('pre');
        return n.status?.observedGeneration === n.metadata.generation && condition(n, 'Ready')?.status === 'True' ? n : undefined;
      },
      'the replication to be Ready once the conflicts left the source',
      120_000,
    );
    expect(await configMapData(standby.name, 'same-data')).toEqual({ v: 'one' });
    expect(await configMapData(standby.name, 'other-data')).toEqual({ mine: 'keep me' });
    expect(await configMapData(standby.name, 'users-own')).toEqual({ mine: 'keep me too' });
    expect(await configMapData(standby.name, 'plain')).toEqual({ v: 'plain' });
  }, 240_000);

  it('deleting the replication leaves the standby namespace (which it did not create) and everything in it', async () => {
    await rest.request({ method: 'DELETE', path: nrPath('pre') });
    await eventually(
      () =>
        readNr('pre').then(
          () => undefined,
          (error: unknown) => ((error as { status?: number }).status === 404 ? true : undefined),
        ),
      'the replication gone',
      120_000,
    );
    const ns = await core.readNamespace({ name: standby.name });
    expect(ns.metadata?.deletionTimestamp).toBeUndefined();
    expect(await configMapData(standby.name, 'users-own')).toEqual({ mine: 'keep me too' });
    expect(await configMapData(standby.name, 'same-data')).toEqual({ v: 'one' });
    expect(await configMapData(standby.name, 'plain')).toEqual({ v: 'plain' });
  }, 240_000);

  it('a failover scales only the workloads its own apply is on, not a copy re-created at a recorded name', async () => {
    const apps = kc.makeApiClient(AppsV1Api);
    const deployment = (name: string, replicas: number): V1Deployment => ({
      metadata: { name },
      spec: {
        replicas,
        selector: { matchLabels: { app: name } },
        template: { metadata: { labels: { app: name } }, spec: { containers: [{ name, image: 'nginx:1.27' }] } },
      },
    });
    for (const name of ['web', 'api']) await apps.createNamespacedDeployment({ namespace: ops.name, body: deployment(name, 2) });
    await using standby2 = await testNamespace({ prefix: 'adv-fo' });
    const path = nrPath('fo');
    await rest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${ops.name}/namespacereplications`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'NamespaceReplication',
        metadata: { name: 'fo' },
        spec: { destination: { namespace: standby2.name }, interval: '3s', resourceTypes: ['Deployment.apps'] },
      },
    });
    let last: unknown;
    await eventually(
      async () => {
        const n = await readNr('fo');
        last = n.status;
        return n.status?.observedGeneration === n.metadata.generation &&
          condition(n, 'Ready')?.status === 'True' &&
          n.status?.kinds?.find((k) => k.kind === 'Deployment')?.objects === 2
          ? n
          : undefined;
      },
      'both workloads replicated',
      120_000,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}; last status: ${JSON.stringify(last)}`);
    });
    await rest.request({ method: 'PATCH', path, contentType: 'application/merge-patch+json', body: { spec: { suspend: true } } });
    await eventually(
      async () => {
        const n = await readNr('fo');
        return n.status?.observedGeneration === n.metadata.generation ? n : undefined;
      },
      'the suspension observed',
      60_000,
    );
    // In the standby, someone replaces the copy of web with their own, marks and recorded count copied along
    // (`kubectl get -o yaml`, then delete and create): it is at a name the inventory records, but not ours.
    const copy = await apps.readNamespacedDeployment({ name: 'web', namespace: standby2.name });
    await apps.deleteNamespacedDeployment({ name: 'web', namespace: standby2.name });
    await eventually(
      async () =>
        apps.readNamespacedDeployment({ name: 'web', namespace: standby2.name }).then(
          () => undefined,
          () => true,
        ),
      'the copy gone',
      60_000,
    );
    const mine = deployment('web', 0);
    mine.metadata = { name: 'web', labels: copy.metadata?.labels ?? {}, annotations: copy.metadata?.annotations ?? {} };
    await apps.createNamespacedDeployment({ namespace: standby2.name, body: mine });
    await rest.request({ method: 'PATCH', path, contentType: 'application/merge-patch+json', body: { spec: { suspend: false, failover: true } } });
    await eventually(
      async () => {
        const n = await readNr('fo');
        return n.status?.observedGeneration === n.metadata.generation && condition(n, 'FailedOver')?.status === 'True' ? n : undefined;
      },
      'the failover',
      120_000,
    );
    expect((await apps.readNamespacedDeployment({ name: 'api', namespace: standby2.name })).spec?.replicas).toBe(2);
    const web = await apps.readNamespacedDeployment({ name: 'web', namespace: standby2.name });
    expect(web.spec?.replicas).toBe(0);
    expect((web.metadata?.managedFields ?? []).map((m) => `${m.manager ?? ''}/${m.operation ?? ''}`)).not.toContain('syncline/Apply');
    await rest.request({ method: 'DELETE', path });
  }, 300_000);
});

// Label-driven mirroring: an object in a target namespace that carries replica marks (copied from a replica
// elsewhere with `kubectl get -o yaml`) is not a replica Syncline wrote. It is never deleted to make room for
// one, whichever source its marks name, and never replaced because it is immutable.
describe('an object carrying copied replica marks where a mirror goes (label-driven mirroring)', () => {
  const PREFIX = 'adversary.syncline.dev';
  let src: TestNamespace;
  let target: TestNamespace;
  let operator: OperatorProcess;
  const read = (name: string) => core.readNamespacedConfigMap({ name, namespace: target.name });

  beforeAll(async () => {
    await installCrds();
    src = await testNamespace({ prefix: 'adv-msrc' });
    target = await testNamespace({ prefix: 'adv-mdst' });
    // In the target namespace, before any source: the user's objects, marked as replicas by a copy.
    // 'other-source' names a source that does not exist (its replica was copied from another cluster);
    await core.createNamespacedConfigMap({
      namespace: target.name,
      body: {
        metadata: { name: 'other-source', labels: { [`${PREFIX}/sync-replica`]: 'true' }, annotations: { [`${PREFIX}/source`]: 'elsewhere/old' } },
        data: { mine: 'keep me' },
      },
    });
    // 'this-source-immutable' names the very source that will claim it, and is immutable with other data.
    await core.createNamespacedConfigMap({
      namespace: target.name,
      body: {
        metadata: {
          name: 'this-source-immutable',
          labels: { [`${PREFIX}/sync-replica`]: 'true' },
          annotations: { [`${PREFIX}/source`]: `${src.name}/this-source-immutable` },
        },
        data: { mine: 'keep me' },
        immutable: true,
      },
    });
    operator = await startOperator({
      kubeconfig: testKubeconfigPath(),
      args: ['--namespace', src.name, '--operator-namespace', src.name, '--mirror-prefix', PREFIX, '--webhook-addr', 'off', '--dr-heartbeat-interval', 'off'],
    });
  }, 300_000);
  afterAll(async () => {
    await operator.stop();
    await target[Symbol.asyncDispose]();
    await src[Symbol.asyncDispose]();
  });

  it('leaves both objects as they were (same uid, same data) while a fresh name is mirrored', async () => {
    const before = { other: (await read('other-source')).metadata?.uid, immutable: (await read('this-source-immutable')).metadata?.uid };
    const source = (name: string) => ({
      metadata: { name, labels: { [`${PREFIX}/sync-source`]: 'true' }, annotations: { [`${PREFIX}/targets`]: target.name } },
      data: { v: 'from the source' },
    });
    for (const name of ['other-source', 'this-source-immutable', 'fresh']) await core.createNamespacedConfigMap({ namespace: src.name, body: source(name) });
    // The fresh name is mirrored: the pass that would replace the others has run.
    await eventually(async () => ((await configMapData(target.name, 'fresh'))?.['v'] === 'from the source' ? true : undefined), 'the fresh replica', 120_000);
    // Each source is reconciled on its own: wait until each either touched its object or reported it.
    const conflictReported = async (name: string): Promise<boolean> =>
      (await core.listNamespacedEvent({ namespace: src.name, fieldSelector: `involvedObject.name=${name},reason=Conflict` })).items.length > 0;
    const changed = await eventually(
      async () => {
        const other = await read('other-source').catch(() => undefined);
        const immutable = await read('this-source-immutable').catch(() => undefined);
        if (other?.metadata?.uid !== before.other || immutable?.metadata?.uid !== before.immutable) return 'replaced';
        if (other?.data?.['v'] !== undefined || immutable?.data?.['v'] !== undefined) return 'written';
        return (await conflictReported('other-source')) && (await conflictReported('this-source-immutable')) ? 'untouched' : undefined;
      },
      'each object to be written or reported as a conflict',
      120_000,
    );
    expect(changed).toBe('untouched');
    expect((await read('other-source')).data).toEqual({ mine: 'keep me' });
    expect((await read('this-source-immutable')).data).toEqual({ mine: 'keep me' });
  }, 240_000);
});

// ManifestSync: a user replaces a copy with their own object at the same name (`kubectl get -o yaml`, edit,
// delete, create: every mark copied along, a new object). The name is in the inventory, but the object is not
// one Syncline applied: a source change does not overwrite it, and neither removing the target nor deleting the
// ManifestSync deletes it.
describe('a copy the user replaced with their own object (ManifestSync)', () => {
  let home: TestNamespace;
  let target: TestNamespace;
  let operator: OperatorProcess;
  const msPath = (name: string): string => `/apis/syncline.dev/v1alpha1/namespaces/${home.name}/manifestsyncs/${name}`;
  const readMs = (name: string) =>
    rest.request<{
      metadata: { generation?: number };
      status?: { observedGeneration?: number; conditions?: { type: string; status: string; reason: string; message: string }[] };
    }>({ method: 'GET', path: msPath(name) });
  const applyMs = async (name: string, spec: Record<string, unknown>): Promise<void> => {
    await rest.request({
      method: 'PATCH',
      path: msPath(name),
      query: { fieldManager: 'syncline-tests', force: true },
      contentType: 'application/apply-patch+yaml',
      body: { apiVersion: 'syncline.dev/v1alpha1', kind: 'ManifestSync', metadata: { name, namespace: home.name }, spec },
    });
  };

  beforeAll(async () => {
    await installCrds();
    home = await testNamespace({ prefix: 'adv-ms' });
    target = await testNamespace({ prefix: 'adv-mst' });
    operator = await startOperator({
      kubeconfig: testKubeconfigPath(),
      args: ['--namespace', home.name, '--operator-namespace', home.name, '--mirror', 'off', '--webhook-addr', 'off', '--dr-heartbeat-interval', 'off'],
    });
  }, 300_000);
  afterAll(async () => {
    await operator.stop();
    await target[Symbol.asyncDispose]();
    await home[Symbol.asyncDispose]();
  });

  it('neither overwrites the user’s object on a source change, nor deletes it when the target or the ManifestSync goes', async () => {
    await core.createNamespacedConfigMap({ namespace: home.name, body: { metadata: { name: 'settings' }, data: { v: 'first' } } });
    await applyMs('settings', {
      sourceRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'settings' },
      targets: [{ namespace: target.name }, { namespace: home.name, name: 'settings-local' }],
    });
    await eventually(async () => ((await configMapData(target.name, 'settings'))?.['v'] === 'first' ? true : undefined), 'the copy', 120_000);
    // the user replaces the copy with their own object, marks and all
    const copy = await core.readNamespacedConfigMap({ name: 'settings', namespace: target.name });
    // (delete and create at once, as `kubectl replace --force` does; the operator may restore its copy in between,
    // then the user tries again)
    await eventually(
      async () => {
        await core.deleteNamespacedConfigMap({ name: 'settings', namespace: target.name }).catch(() => undefined);
        return core
          .createNamespacedConfigMap({
            namespace: target.name,
            body: { metadata: { name: 'settings', labels: copy.metadata?.labels ?? {}, annotations: copy.metadata?.annotations ?? {} }, data: { v: 'mine' } },
          })
          .then(() => true);
      },
      'the user’s object in place of the copy',
      60_000,
    );
    const uid = (await core.readNamespacedConfigMap({ name: 'settings', namespace: target.name })).metadata?.uid;
    // the source changes: the other copy follows, which is the pass that would overwrite the user's object
    await core.patchNamespacedConfigMap({ name: 'settings', namespace: home.name, body: [{ op: 'replace', path: '/data/v', value: 'second' }] });
    await eventually(
      async () => ((await configMapData(home.name, 'settings-local'))?.['v'] === 'second' ? true : undefined),
      'the other copy to follow',
      120_000,
    );
    const reported = await eventually(
      async () => {
        const ms = await readMs('settings');
        const data = await configMapData(target.name, 'settings');
        if (data?.['v'] !== 'mine') return `written: ${JSON.stringify(data)}`;
        const ready = ms.status?.conditions?.find((c) => c.type === 'Ready');
        return ready?.status === 'False' && ready.message.includes('Conflict') ? ready.message : undefined;
      },
      'the user’s object reported as a conflict (or written)',
      120_000,
    );
    expect(reported).toContain(target.name);
    expect((await core.readNamespacedConfigMap({ name: 'settings', namespace: target.name })).metadata?.uid).toBe(uid);
    // the target leaves the spec: the user's object stays
    await applyMs('settings', {
      sourceRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'settings' },
      targets: [{ namespace: home.name, name: 'settings-local' }],
    });
    await eventually(
      async () => {
        const ms = await readMs('settings');
        return ms.status?.observedGeneration === ms.metadata.generation && ms.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True'
          ? true
          : undefined;
      },
      'the ManifestSync Ready with one target',
      120_000,
    );
    expect(await configMapData(target.name, 'settings')).toEqual({ v: 'mine' });
    // the ManifestSync goes: still there
    await rest.request({ method: 'DELETE', path: msPath('settings') });
    await eventually(
      async () =>
        readMs('settings').then(
          () => undefined,
          (error: unknown) => ((error as { status?: number }).status === 404 ? true : undefined),
        ),
      'the ManifestSync gone',
      120_000,
    );
    expect(await configMapData(target.name, 'settings')).toEqual({ v: 'mine' });
    expect((await core.readNamespacedConfigMap({ name: 'settings', namespace: target.name })).metadata?.uid).toBe(uid);
  }, 300_000);
});

// ConfigSync tenancy: a target patch runs after the render placed namespaces, so it can give a cluster-scoped
// object (a ClusterRole) the tenant's own namespace. The tenancy rule reads that namespace and would allow the
// write, while the API server takes a cluster-scoped object at its cluster path whatever namespace its body
// names: a tenant without a ServiceAccount would create a ClusterRole with the operator's rights.
describe('a target patch that gives a cluster-scoped object the tenant’s namespace (ConfigSync tenancy)', () => {
  const ID = randomBytes(3).toString('hex');
  const escalate = `adversary-escalate-${ID}`;
  let git: GitServer;
  let tenant: TestNamespace;
  let operator: OperatorProcess;
  const rbac = () => kc.makeApiClient(RbacAuthorizationV1Api);
  const clusterRoleExists = (): Promise<boolean> =>
    rbac()
      .readClusterRole({ name: escalate })
      .then(
        () => true,
        (error: unknown) => {
          if ((error as { code?: number }).code === 404) return false;
          throw error;
        },
      );

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    tenant = await testNamespace({ prefix: 'adv-tenant' });
    operator = await startOperator({
      kubeconfig: testKubeconfigPath(),
      args: ['--namespace', tenant.name, '--mirror', 'off', '--webhook-addr', 'off', '--dr-heartbeat-interval', 'off'],
    });
  }, 300_000);
  afterAll(async () => {
    await operator.stop();
    await tenant[Symbol.asyncDispose]();
    await git.close();
    await rbac()
      .deleteClusterRole({ name: escalate })
      .catch(() => undefined);
  });

  it('is refused with an error naming the object, and no ClusterRole is written', async () => {
    const repo = await git.createRepo(`adversary-patch-${ID}`);
    await repo.commit({
      'app/own.yaml': configMapYaml('own', '  v: "1"'),
      'app/role.yaml': `apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: ${escalate}\nrules:\n- apiGroups: ["*"]\n  resources: ["*"]\n  verbs: ["*"]\n`,
    });
    await applyConfigSync(
      configSync(tenant.name, 'patched', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '1h',
        targets: [
          {
            name: 'home',
            namespace: tenant.name,
            patches: [{ target: { kind: 'ClusterRole', name: escalate }, patch: { metadata: { namespace: tenant.name } } }],
          },
        ],
      }),
    );
    // Either the ClusterRole appears, or the sync says why it wrote nothing (a render error, or a failed target).
    const refused = await eventually(
      async () => {
        if (await clusterRoleExists()) return 'written';
        const c = await readConfigSync(tenant.name, 'patched');
        if (c.status?.observedGeneration !== c.metadata.generation) return undefined;
        const said = [...(c.status?.conditions ?? []).map((x) => x.message ?? ''), ...(c.status?.targets ?? []).map((t) => t.message ?? '')].find((m) =>
          m.includes(escalate),
        );
        return said;
      },
      'the ClusterRole written, or refused by name',
      120_000,
    );
    expect(await clusterRoleExists()).toBe(false);
    // the render says so (the apply client refuses such an object too, whichever reconciler sends it)
    expect(refused).toContain(`ClusterRole/${escalate}`);
    expect(refused).toContain('cluster-scoped');
  }, 240_000);
});

// ConfigSync: a target renamed in the spec (same namespace, same render). The objects are the sync's own; the
// rename must hand them to the new target name, not delete them (a deleted PersistentVolumeClaim takes its
// volume with it) and create them again.
describe('a ConfigSync target renamed, its namespace unchanged', () => {
  const ID = randomBytes(3).toString('hex');
  let git: GitServer;
  let home: TestNamespace;
  let operator: OperatorProcess;

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    home = await testNamespace({ prefix: 'adv-rename' });
    operator = await startOperator({
      kubeconfig: testKubeconfigPath(),
      args: ['--namespace', home.name, '--mirror', 'off', '--webhook-addr', 'off', '--dr-heartbeat-interval', 'off'],
    });
  }, 300_000);
  afterAll(async () => {
    await operator.stop();
    await home[Symbol.asyncDispose]();
    await git.close();
  });

  it('keeps every object (same uid) and is Ready under the new name', async () => {
    const repo = await git.createRepo(`adversary-rename-${ID}`);
    await repo.commit({ 'app/settings.yaml': configMapYaml('settings', '  v: "1"') });
    const spec = (target: string) => ({
      source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
      refreshInterval: '1h',
      targets: [{ name: target, namespace: home.name }],
    });
    await applyConfigSync(configSync(home.name, 'renamed', spec('blue')));
    await eventually(async () => ((await configMapData(home.name, 'settings'))?.['v'] === '1' ? true : undefined), 'the object applied', 120_000);
    const uid = (await core.readNamespacedConfigMap({ name: 'settings', namespace: home.name })).metadata?.uid;
    // Every status the API server stores from here on: the first write for the new generation is the one checked.
    const written: { generation?: number; status?: ConfigSync['status'] }[] = [];
    const watching = await new Watch(kc).watch(
      `/apis/syncline.dev/v1alpha1/namespaces/${home.name}/configsyncs`,
      { fieldSelector: 'metadata.name=renamed' },
      (_type, object: ConfigSync) => {
        written.push({ generation: object.metadata.generation, status: object.status });
      },
      () => undefined,
    );
    await applyConfigSync(configSync(home.name, 'renamed', spec('green')));
    let last: unknown;
    const cs = await eventually(
      async () => {
        const c = await readConfigSync(home.name, 'renamed');
        last = c.status;
        const ready = c.status?.conditions?.find((x) => x.type === 'Ready');
        const live = await core.readNamespacedConfigMap({ name: 'settings', namespace: home.name }).catch(() => undefined);
        if (live?.metadata?.uid !== uid) return 'recreated';
        return c.status?.observedGeneration === c.metadata.generation && ready?.status === 'True' ? 'kept' : undefined;
      },
      'the renamed target Ready (or the object re-created)',
      120_000,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}; last status: ${JSON.stringify(last)}`);
    });
    expect(cs).toBe('kept');
    watching.abort();
    // The reconcile that handed the objects over also dropped the old name: no later reconcile is due (refresh 1h).
    const first = written.find((w) => w.generation !== undefined && w.status?.observedGeneration === w.generation && w.generation > 1);
    expect(first?.status?.targets?.map((t) => t.name)).toEqual(['green']);
    expect(first?.status?.inventory?.map((i) => i.target)).toEqual(['green']);
    expect(first?.status?.appliedTargets).toBe(1);
    const live = await core.readNamespacedConfigMap({ name: 'settings', namespace: home.name });
    expect(live.metadata?.annotations?.['syncline.dev/owned-by']).toBe(`${home.name}/renamed/green`);
  }, 240_000);

  it('keeps an object the new name fails to take over (not pruned with the old name), and hands it over once it can', async () => {
    const repo = await git.createRepo(`adversary-rename-fail-${ID}`);
    await repo.commit({ 'app/settings.yaml': configMapYaml('kept', '  v: "1"') });
    // green's patch gives the object a label key the API server refuses: its apply fails.
    const spec = (target: string, broken = false) => ({
      source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
      refreshInterval: '1h',
      targets: [
        {
          name: target,
          namespace: home.name,
          ...(broken ? { patches: [{ target: { kind: 'ConfigMap', name: 'kept' }, patch: { metadata: { labels: { 'not a valid key!': 'x' } } } }] } : {}),
        },
      ],
    });
    await applyConfigSync(configSync(home.name, 'handover', spec('blue')));
    await eventually(async () => ((await configMapData(home.name, 'kept'))?.['v'] === '1' ? true : undefined), 'the object applied', 120_000);
    const uid = (await core.readNamespacedConfigMap({ name: 'kept', namespace: home.name })).metadata?.uid;
    await applyConfigSync(configSync(home.name, 'handover', spec('green', true)));
    const failed = await eventually(
      async () => {
        const c = await readConfigSync(home.name, 'handover');
        return c.status?.observedGeneration === c.metadata.generation ? c.status : undefined;
      },
      'the renamed target tried',
      120_000,
    );
    // The object is still there, the same one, and the old name keeps it in its inventory until green holds it.
    expect((await core.readNamespacedConfigMap({ name: 'kept', namespace: home.name })).metadata?.uid).toBe(uid);
    expect(failed.targets?.find((t) => t.name === 'green')?.phase).toBe('Failed');
    const blue = failed.targets?.find((t) => t.name === 'blue');
    expect(blue?.objects).toBe(1);
    expect(blue?.message).toContain('ConfigMap');
    expect(failed.inventory?.find((i) => i.target === 'blue')?.entries.join()).toContain('kept');
    // The patch fixed: green takes the object over (same uid) and blue leaves the status.
    await applyConfigSync(configSync(home.name, 'handover', spec('green')));
    const done = await eventually(
      async () => {
        const c = await readConfigSync(home.name, 'handover');
        const ready = c.status?.conditions?.find((x) => x.type === 'Ready');
        return c.status?.observedGeneration === c.metadata.generation && ready?.status === 'True' ? c.status : undefined;
      },
      'the renamed target Ready',
      120_000,
    );
    expect(done.targets?.map((t) => t.name)).toEqual(['green']);
    const live = await core.readNamespacedConfigMap({ name: 'kept', namespace: home.name });
    expect(live.metadata?.uid).toBe(uid);
    expect(live.metadata?.annotations?.['syncline.dev/owned-by']).toBe(`${home.name}/handover/green`);
  }, 240_000);
});

// Label mirroring with `--mirror-stale mark`: replicas of a gone source are labelled stale. An object that only
// carries copied replica marks (its "source" never existed here) is not a replica Syncline wrote: not labelled.
describe('an object carrying copied replica marks of a source that is gone (--mirror-stale mark)', () => {
  const PREFIX = `adv-${randomBytes(3).toString('hex')}.stale`;
  let src: TestNamespace;
  let target: TestNamespace;
  let operator: OperatorProcess;

  beforeAll(async () => {
    await installCrds();
    src = await testNamespace({ prefix: 'adv-ssrc' });
    target = await testNamespace({ prefix: 'adv-sdst' });
    await core.createNamespacedConfigMap({
      namespace: target.name,
      body: {
        metadata: { name: 'gone', labels: { [`${PREFIX}/sync-replica`]: 'true' }, annotations: { [`${PREFIX}/source`]: `${src.name}/gone` } },
        data: { mine: 'keep me' },
      },
    });
    operator = await startOperator({
      kubeconfig: testKubeconfigPath(),
      args: [
        '--namespace',
        src.name,
        '--operator-namespace',
        src.name,
        '--mirror-prefix',
        PREFIX,
        '--mirror-stale',
        'mark',
        '--webhook-addr',
        'off',
        '--dr-heartbeat-interval',
        'off',
      ],
    });
  }, 300_000);
  afterAll(async () => {
    await operator.stop();
    await target[Symbol.asyncDispose]();
    await src[Symbol.asyncDispose]();
  });

  it('marks the replica it wrote, and leaves the copy unlabelled', async () => {
    await core.createNamespacedConfigMap({
      namespace: src.name,
      body: {
        metadata: { name: 'real', labels: { [`${PREFIX}/sync-source`]: 'true' }, annotations: { [`${PREFIX}/targets`]: target.name } },
        data: { v: '1' },
      },
    });
    await eventually(async () => ((await configMapData(target.name, 'real'))?.['v'] === '1' ? true : undefined), 'the replica', 120_000);
    await core.deleteNamespacedConfigMap({ name: 'real', namespace: src.name });
    await eventually(
      async () =>
        (await core.readNamespacedConfigMap({ name: 'real', namespace: target.name })).metadata?.labels?.[`${PREFIX}/stale`] === 'true' ? true : undefined,
      'the replica marked stale',
      120_000,
    );
    const copied = await core.readNamespacedConfigMap({ name: 'gone', namespace: target.name });
    expect(copied.metadata?.labels?.[`${PREFIX}/stale`]).toBeUndefined();
    expect(copied.metadata?.annotations?.[`${PREFIX}/stale-since`]).toBeUndefined();
    expect(copied.data).toEqual({ mine: 'keep me' });
  }, 240_000);
});

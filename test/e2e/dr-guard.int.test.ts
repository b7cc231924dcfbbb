// End to end with two real control planes: a NamespaceReplication never mirrors a disaster and never copies
// the operator's credentials. The layout is the README's: the RemoteCluster of the standby and its kubeconfig
// Secret live in the namespace being replicated. A mass deletion (`kubectl delete --all`) is held in the
// standby with a condition, a Warning Event and a metric until `syncline confirm-prune` confirms it; a single
// deletion still propagates; a source emptied one object at a time is held once the deletions within the
// window pass the threshold; the deletion of a source namespace is held.
import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { startControlPlane, startOperator, type ControlPlane, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import type { NamespaceReplication } from '@syncline/operator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { core, eventually, installCrds, kc, rest } from './harness.ts';

const root = join(import.meta.dirname, '..', '..');

type Run = { code: number; stdout: string; stderr: string };
/** A real executable (kubectl, or the syncline bin through node). */
function run(file: string, args: readonly string[]): Promise<Run> {
  const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}` };
  return new Promise((resolve) => {
    execFile(file, [...args], { env, cwd: root, timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr }),
    );
  });
}
const kubectl = (...args: string[]): Promise<Run> => run('kubectl', ['--kubeconfig', testKubeconfigPath(), ...args]);
const syncline = (...args: string[]): Promise<Run> =>
  run(process.execPath, [join(root, 'packages', 'cli', 'bin', 'syncline.js'), ...args, '--kubeconfig', testKubeconfigPath()]);

describe('disaster recovery guards (NamespaceReplication)', () => {
  let ops: TestNamespace;
  let operator: OperatorProcess;
  let dr: ControlPlane;
  let drKc: KubeConfig;
  const nrPath = (name: string): string => `/apis/syncline.dev/v1alpha1/namespaces/${ops.name}/namespacereplications/${name}`;
  const applyNr = async (name: string, spec: Record<string, unknown>): Promise<void> => {
    await rest.request({
      method: 'PATCH',
      path: nrPath(name),
      query: { fieldManager: 'syncline-tests', force: true },
      contentType: 'application/apply-patch+yaml',
      body: { apiVersion: 'syncline.dev/v1alpha1', kind: 'NamespaceReplication', metadata: { name, namespace: ops.name }, spec },
    });
  };
  const readNr = (name: string): Promise<NamespaceReplication> => rest.request<NamespaceReplication>({ method: 'GET', path: nrPath(name) });
  const condition = (nr: NamespaceReplication, type: string) => nr.status?.conditions?.find((c) => c.type === type);
  const drCore = (): CoreV1Api => drKc.makeApiClient(CoreV1Api);
  const exists = async (read: () => Promise<unknown>): Promise<boolean> =>
    read().then(
      () => true,
      (error: unknown) => {
        if ((error as { code?: number }).code === 404) return false;
        throw error;
      },
    );
  const standbyConfigMaps = async (namespace: string): Promise<string[]> =>
    (await drCore().listNamespacedConfigMap({ namespace })).items
      .map((c) => c.metadata?.name ?? '')
      .filter((n) => n !== 'kube-root-ca.crt')
      .sort();
  const metric = async (name: string): Promise<number | undefined> => {
    const text = await (await fetch(`http://${operator.probeAddress}/metrics`)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('syncline_dr_prune_held_objects{') && l.includes(`namespace="${ops.name}"`) && l.includes(`name="${name}"`));
    return line === undefined ? undefined : Number(line.split(' ').at(-1));
  };
  const warnings = async (name: string, reason: string): Promise<string[]> =>
    (await core.listNamespacedEvent({ namespace: ops.name, fieldSelector: `involvedObject.name=${name},reason=${reason}` })).items.map(
      (e) => `${e.type}: ${e.message ?? ''}`,
    );

  beforeAll(async () => {
    await installCrds();
    ops = await testNamespace({ prefix: 'drg-ops' });
    dr = await startControlPlane();
    drKc = new KubeConfig();
    drKc.loadFromFile(dr.kubeconfigPath);
    const config = parse(await readFile(dr.kubeconfigPath, 'utf8')) as { users: { name: string }[]; contexts: { name: string }[] };
    const kubeconfig = stringify({
      ...config,
      users: config.users.filter((u) => u.name === 'admin'),
      contexts: config.contexts.filter((c) => c.name === 'admin'),
      'current-context': 'admin',
    });
    // The README's layout: the standby's credentials in the very namespace that is replicated.
    await core.createNamespacedSecret({ namespace: ops.name, body: { metadata: { name: 'dr-kubeconfig' }, stringData: { kubeconfig } } });
    await rest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${ops.name}/remoteclusters`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'RemoteCluster',
        metadata: { name: 'dr' },
        spec: { kubeconfigSecretRef: { name: 'dr-kubeconfig', key: 'kubeconfig' }, probeInterval: '5s' },
      },
    });
    // A ConfigSync's chart credentials beside them (suspended: only its reference matters here).
    await core.createNamespacedSecret({
      namespace: ops.name,
      body: { metadata: { name: 'chart-auth' }, stringData: { username: 'robot', password: 'chart-Pass-1' } },
    });
    await rest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${ops.name}/configsyncs`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'ConfigSync',
        metadata: { name: 'chart' },
        spec: {
          suspend: true,
          source: {
            git: { repo: 'https://git.example.com/configs.git' },
            helm: { repository: { url: 'oci://registry.example.com/charts', chart: 'web', secretRef: { name: 'chart-auth' } } },
          },
          targets: [{ name: 'main', namespace: ops.name }],
        },
      },
    });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ops.name, '--operator-namespace', ops.name] });
    const apps = kc.makeApiClient(AppsV1Api);
    for (const name of ['c1', 'c2', 'c3', 'c4', 'c5', 'c6'])
      await core.createNamespacedConfigMap({ namespace: ops.name, body: { metadata: { name }, data: { v: name } } });
    await core.createNamespacedSecret({ namespace: ops.name, body: { metadata: { name: 'app-secret' }, stringData: { password: 'first' } } });
    await apps.createNamespacedDeployment({
      namespace: ops.name,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } },
        },
      },
    });
  }, 300_000);
  afterAll(async () => {
    await operator.stop();
    await dr.stop();
    await ops[Symbol.asyncDispose]();
  });

  it("replicates the namespace without the RemoteCluster's kubeconfig Secret or a ConfigSync's chart credentials, and counts what it left out", async () => {
    await applyNr('whole', { destination: { cluster: { name: 'dr' }, namespace: 'standby-a' } });
    const nr = await eventually(
      async () => {
        const n = await readNr('whole');
        return condition(n, 'Ready')?.status === 'True' && n.status?.observedGeneration === n.metadata.generation ? n : undefined;
      },
      'the standby to be Ready',
      120_000,
    );
    expect(await standbyConfigMaps('standby-a')).toEqual(['c1', 'c2', 'c3', 'c4', 'c5', 'c6']);
    expect(await exists(() => drCore().readNamespacedSecret({ name: 'app-secret', namespace: 'standby-a' }))).toBe(true);
    expect(await exists(() => drKc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: 'web', namespace: 'standby-a' }))).toBe(true);
    // never copied: the standby's own admin credentials, nor a ConfigSync's chart credentials
    expect(await exists(() => drCore().readNamespacedSecret({ name: 'dr-kubeconfig', namespace: 'standby-a' }))).toBe(false);
    expect(await exists(() => drCore().readNamespacedSecret({ name: 'chart-auth', namespace: 'standby-a' }))).toBe(false);
    expect(nr.status?.excludedCredentials).toBe(2);
    expect(JSON.stringify(nr.status)).not.toContain('certificate-authority-data');
    expect(condition(nr, 'PruneHeld')).toBeUndefined();
  }, 240_000);

  it('propagates a single deletion as before', async () => {
    await core.deleteNamespacedConfigMap({ name: 'c6', namespace: ops.name });
    await eventually(async () => ((await standbyConfigMaps('standby-a')).includes('c6') ? undefined : true), 'c6 gone from the standby', 60_000);
    const nr = await readNr('whole');
    expect(condition(nr, 'PruneHeld')).toBeUndefined();
    expect(nr.status?.pruneHold).toBeUndefined();
  }, 240_000);

  it('holds a mass deletion (kubectl delete --all) with a condition, a Warning Event and a metric, while updates keep flowing', async () => {
    // when everything of two kinds is deleted at once
    const deleted = await kubectl('delete', 'configmaps,deployments.apps', '--all', '-n', ops.name);
    expect(deleted.stderr).toBe('');
    expect(deleted.code).toBe(0);
    // then the standby keeps it all, and says why
    const held = await eventually(
      async () => {
        const n = await readNr('whole');
        return n.status?.pruneHold?.objects === 6 && n.status.observedGeneration === n.metadata.generation ? n : undefined;
      },
      'the deletion to be held',
      60_000,
    );
    expect(held.status?.pruneHold?.reason).toBe('MassDeletion');
    expect(condition(held, 'PruneHeld')).toMatchObject({ status: 'True', reason: 'PruneHeld' });
    expect(condition(held, 'PruneHeld')?.message).toContain(`syncline confirm-prune whole -n ${ops.name}`);
    expect(condition(held, 'Ready')).toMatchObject({ status: 'False', reason: 'PruneHeld' });
    expect(await standbyConfigMaps('standby-a')).toEqual(['c1', 'c2', 'c3', 'c4', 'c5']);
    expect(await exists(() => drKc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: 'web', namespace: 'standby-a' }))).toBe(true);
    await eventually(
      async () => ((await warnings('whole', 'PruneHeld')).some((w) => w.startsWith('Warning: 6 deletion(s) held')) ? true : undefined),
      'the PruneHeld Warning Event',
    );
    expect(await metric('whole')).toBe(6);

    // what still exists keeps replicating: a change and a new object reach the standby, the hold stays
    await core.patchNamespacedSecret({
      name: 'app-secret',
      namespace: ops.name,
      body: [{ op: 'replace', path: '/data/password', value: Buffer.from('second').toString('base64') }],
    });
    await core.createNamespacedConfigMap({ namespace: ops.name, body: { metadata: { name: 'fresh' }, data: { v: 'new' } } });
    await eventually(
      async () => {
        const secret = await drCore().readNamespacedSecret({ name: 'app-secret', namespace: 'standby-a' });
        return Buffer.from(secret.data?.['password'] ?? '', 'base64').toString() === 'second' && (await standbyConfigMaps('standby-a')).includes('fresh')
          ? true
          : undefined;
      },
      'updates to reach the standby while the deletion is held',
      60_000,
    );
    const still = await readNr('whole');
    expect(still.status?.pruneHold?.token).toBe(held.status?.pruneHold?.token);
    expect(await standbyConfigMaps('standby-a')).toEqual(['c1', 'c2', 'c3', 'c4', 'c5', 'fresh']);
  }, 240_000);

  it('applies the held deletion once a person confirms it with syncline confirm-prune', async () => {
    const token = (await readNr('whole')).status?.pruneHold?.token ?? '';
    // a token that names another set is refused, nothing confirmed
    const wrong = await syncline('confirm-prune', 'whole', '-n', ops.name, '--token', 'not-the-token');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(`held now under token ${token}`);
    expect((await readNr('whole')).spec.confirmPrune).toBeUndefined();

    const confirmed = await syncline('confirm-prune', 'whole', '-n', ops.name, '--wait', '--timeout', '90s');
    expect(confirmed.stderr).toBe('');
    expect(confirmed.code).toBe(0);
    expect(confirmed.stdout).toContain(`deletion of 6 standby object(s) confirmed (token ${token})`);
    expect(await standbyConfigMaps('standby-a')).toEqual(['fresh']);
    expect(await exists(() => drKc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: 'web', namespace: 'standby-a' }))).toBe(false);
    expect(await exists(() => drCore().readNamespacedSecret({ name: 'app-secret', namespace: 'standby-a' }))).toBe(true);
    const nr = await readNr('whole');
    expect(nr.spec.confirmPrune).toBe(token);
    expect(condition(nr, 'PruneHeld')).toBeUndefined();
    expect(condition(nr, 'Ready')).toMatchObject({ status: 'True', reason: 'Replicated' });
    expect(await metric('whole')).toBe(0);
    await eventually(
      async () =>
        (await warnings('whole', 'PruneConfirmed')).some((w) => w.startsWith('Normal: held deletion confirmed: 6 object(s) deleted')) ? true : undefined,
      'the PruneConfirmed Event',
    );
  }, 240_000);

  it('a replication created anew over the standby an earlier one filled guards the copies it finds there', async () => {
    // given the replication deleted (the standby is left as it is) and the source emptied meanwhile
    await rest.request({ method: 'DELETE', path: nrPath('whole') });
    await eventually(
      () =>
        readNr('whole').then(
          () => undefined,
          (error: unknown) => ((error as { status?: number }).status === 404 ? true : undefined),
        ),
      'the replication to be gone',
    );
    expect(await standbyConfigMaps('standby-a')).toEqual(['fresh']);
    await core.deleteNamespacedConfigMap({ name: 'fresh', namespace: ops.name });
    await core.deleteNamespacedSecret({ name: 'app-secret', namespace: ops.name });
    // when it is created again
    await applyNr('whole', { destination: { cluster: { name: 'dr' }, namespace: 'standby-a' } });
    // then the copies its inventory never listed are held like any mass deletion, not pruned as strays
    const held = await eventually(
      async () => {
        const n = await readNr('whole');
        return n.status?.pruneHold?.objects === 2 ? n : undefined;
      },
      'the deletion to be held',
      60_000,
    );
    expect(held.status?.pruneHold?.reason).toBe('MassDeletion');
    expect(await standbyConfigMaps('standby-a')).toEqual(['fresh']);
    expect(await exists(() => drCore().readNamespacedSecret({ name: 'app-secret', namespace: 'standby-a' }))).toBe(true);
  }, 240_000);

  it('holds the deletions of a source namespace that is deleted, whatever their number', async () => {
    // given a replication of another namespace (from the operator's namespace) with a few objects
    const doomed = await testNamespace({ prefix: 'drg-doomed' });
    try {
      for (const name of ['d1', 'd2', 'd3']) await core.createNamespacedConfigMap({ namespace: doomed.name, body: { metadata: { name }, data: { v: name } } });
      // a threshold that would let all three through: the namespace's deletion is held all the same
      await applyNr('doomed', {
        sourceNamespace: doomed.name,
        destination: { cluster: { name: 'dr' }, namespace: 'standby-b' },
        interval: '10s',
        pruneGuard: { maxDeletions: '100%' },
      });
      await eventually(async () => ((await standbyConfigMaps('standby-b')).length === 3 ? true : undefined), 'the standby of the doomed namespace', 120_000);
      // when the source namespace is deleted
      await core.deleteNamespace({ name: doomed.name });
      await eventually(
        async () => ((await exists(() => core.readNamespace({ name: doomed.name }))) ? undefined : true),
        'the source namespace to be gone',
        120_000,
      );
      // then the standby keeps everything, and says why
      let last: NamespaceReplication | undefined;
      const held = await eventually(
        async () => {
          const n = (last = await readNr('doomed'));
          return n.status?.pruneHold?.objects === 3 ? n : undefined;
        },
        'the deletion to be held',
        60_000,
      ).catch((error: unknown) => {
        throw new Error(`${String(error)}; last status: ${JSON.stringify(last?.status)}`);
      });
      expect(held.status?.pruneHold?.reason).toBe('SourceNamespaceDeleted');
      expect(condition(held, 'PruneHeld')?.message).toContain(`the source namespace ${doomed.name} is being deleted or is gone`);
      expect(await standbyConfigMaps('standby-b')).toEqual(['d1', 'd2', 'd3']);
      await eventually(async () => ((await warnings('doomed', 'PruneHeld')).length > 0 ? true : undefined), 'the PruneHeld Warning Event');
    } finally {
      await doomed[Symbol.asyncDispose]();
    }
  }, 240_000);

  it('holds a source emptied slowly, one object at a time: deletions within the window count together', async () => {
    // given a replication of eight ConfigMaps; 25% of them is two
    const slow = await testNamespace({ prefix: 'drg-slow' });
    try {
      const names = ['s1', 's2', 's3', 's4', 's5', 's6', 's7', 's8'];
      for (const name of names) await core.createNamespacedConfigMap({ namespace: slow.name, body: { metadata: { name }, data: { v: name } } });
      await applyNr('slow', { sourceNamespace: slow.name, destination: { cluster: { name: 'dr' }, namespace: 'standby-c' }, interval: '10s' });
      await eventually(async () => ((await standbyConfigMaps('standby-c')).length === 8 ? true : undefined), 'the standby of the slow namespace', 120_000);
      // when the objects are deleted one by one, each only after the standby followed the one before (each
      // pass alone is a single deletion, well under the threshold)
      for (const [i, name] of ['s1', 's2'].entries()) {
        await core.deleteNamespacedConfigMap({ name, namespace: slow.name });
        await eventually(async () => ((await standbyConfigMaps('standby-c')).includes(name) ? undefined : true), `${name} gone from the standby`, 60_000);
        // the status write that records the deletion follows the delete itself
        const recorded = await eventually(
          async () => {
            const sum = (await readNr('slow')).status?.recentDeletions?.reduce((total, r) => total + r.objects, 0);
            return sum === i + 1 ? sum : undefined;
          },
          `${name} recorded as a recent deletion`,
          60_000,
        );
        expect(recorded).toBe(i + 1);
      }
      await core.deleteNamespacedConfigMap({ name: 's3', namespace: slow.name });
      // then the third is held: three of eight within the window is more than 25%
      const held = await eventually(
        async () => {
          const n = await readNr('slow');
          return n.status?.pruneHold?.objects === 1 ? n : undefined;
        },
        'the third deletion to be held',
        60_000,
      );
      expect(held.status?.pruneHold?.reason).toBe('MassDeletion');
      expect(condition(held, 'PruneHeld')?.message).toMatch(/more than spec\.pruneGuard\.maxDeletions \(25%\) within 10m, 2 already deleted in that time/);
      expect(await standbyConfigMaps('standby-c')).toEqual(['s3', 's4', 's5', 's6', 's7', 's8']);
    } finally {
      await slow[Symbol.asyncDispose]();
    }
  }, 240_000);
});

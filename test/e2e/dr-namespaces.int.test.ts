// End to end with two real control planes of its own: a DR standby never lands in a system namespace or the
// operator's own namespace, in the standby cluster or this one — neither through a NamespaceReplicationPolicy's
// mapping nor through a NamespaceReplication made by hand. Each is refused with the rule named, nothing is
// written there (not the Namespace object, not one object, not a heartbeat), and neither `syncline dr status
// --standby`, `syncline failover --standby` nor automatic failover treats such a namespace as a standby. Two
// replications never share a standby: the one created first keeps it. An admin may opt a system namespace in
// (--dr-allow-standby-namespaces); it is then replicated, and still never listed among "all standbys".
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { startControlPlane, startOperator, type ControlPlane, type OperatorProcess } from '@syncline/test-support';
import { createKubeRest, installCrds, type KubeRest, type NamespaceReplication, type NamespaceReplicationPolicy } from '@syncline/operator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { eventually } from './harness.ts';

const root = join(import.meta.dirname, '..', '..');
const bin = join(root, 'packages', 'cli', 'bin', 'syncline.js');
type Result = { code: number; stdout: string; stderr: string };

function run(file: string, args: readonly string[]): Promise<Result> {
  const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}` };
  return new Promise((resolve) => {
    execFile(file, [...args], { env, cwd: root, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}
const syncline = (args: readonly string[]): Promise<Result> => run(process.execPath, [bin, ...args]);

/** The operator's own namespace (--operator-namespace), where the policies and hand-made replications live. */
const OPS = 'ops';
const SYSTEM = ['kube-system', 'kube-public', 'kube-node-lease', 'default'];
const FORBIDDEN = [...SYSTEM, OPS];
const API = '/apis/syncline.dev/v1alpha1';
const OWNER_LABEL = 'syncline.dev/owner';
const HEARTBEAT_LABEL = 'syncline.dev/heartbeat';

type Condition = { type: string; status: string; reason: string; message: string };
const conditionOf = (nr: NamespaceReplication, type: string): Condition | undefined => nr.status?.conditions?.find((c) => c.type === type);

describe('DR standbys never land in a system namespace or the operator namespace', () => {
  let primary: ControlPlane;
  let standby: ControlPlane;
  let operator: OperatorProcess | undefined;
  let standbyOperator: OperatorProcess | undefined;
  let rest: KubeRest;
  let standbyRest: KubeRest;
  const primaryKc = new KubeConfig();
  const standbyKc = new KubeConfig();
  /** The forbidden Namespace objects' resourceVersions before anything ran, per cluster. */
  const before = new Map<string, string | undefined>();
  const clusters = (): { name: string; rest: KubeRest }[] => [
    { name: 'primary', rest },
    { name: 'standby', rest: standbyRest },
  ];
  const replication = (name: string): Promise<NamespaceReplication> =>
    rest.request<NamespaceReplication>({ method: 'GET', path: `${API}/namespaces/${OPS}/namespacereplications/${name}` });
  const replications = async (): Promise<string[]> =>
    (await rest.request<{ items: NamespaceReplication[] }>({ method: 'GET', path: `${API}/namespaces/${OPS}/namespacereplications` })).items
      .map((nr) => nr.metadata.name)
      .sort();
  const readPolicy = (name: string): Promise<NamespaceReplicationPolicy> =>
    rest.request<NamespaceReplicationPolicy>({ method: 'GET', path: `${API}/namespaces/${OPS}/namespacereplicationpolicies/${name}` });
  const createNr = (name: string, spec: Record<string, unknown>): Promise<unknown> =>
    rest.request({
      method: 'POST',
      path: `${API}/namespaces/${OPS}/namespacereplications`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'NamespaceReplication',
        metadata: { name },
        spec: { interval: '3s', resourceTypes: ['ConfigMap'], ...spec },
      },
    });
  const probe = (kubeRest: KubeRest, namespace: string): Promise<string | undefined> =>
    kubeRest.request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${namespace}/configmaps/dr-probe` }).then(
      (cm) => cm.data?.['from'],
      () => undefined,
    );
  const promotedAt = async (namespace: string): Promise<string | undefined> =>
    (await standbyRest.request<{ metadata: { annotations?: Record<string, string> } }>({ method: 'GET', path: `/api/v1/namespaces/${namespace}` })).metadata
      .annotations?.['syncline.dev/promoted-at'];
  const startPrimaryOperator = (extra: readonly string[] = []): Promise<OperatorProcess> =>
    startOperator({ kubeconfig: primary.kubeconfigPath, args: ['--mirror', 'off', '--operator-namespace', OPS, '--dr-heartbeat-interval', '1s', ...extra] });
  const hand = (where: 'remote' | 'local', target: string): string => `hand-${where}-${target}`;

  /**
   * What a standby would have left in `namespace`: our marks on the Namespace, a replicated object (the
   * sources' dr-probe too, unless the namespace is a source itself), a heartbeat Lease.
   */
  async function traces(kubeRest: KubeRest, namespace: string, options: { source?: boolean } = {}): Promise<string[]> {
    const found: string[] = [];
    const ns = await kubeRest.request<{ metadata: { resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> } }>({
      method: 'GET',
      path: `/api/v1/namespaces/${namespace}`,
    });
    for (const key of [...Object.keys(ns.metadata.labels ?? {}), ...Object.keys(ns.metadata.annotations ?? {})])
      if (key.startsWith('syncline.dev/')) found.push(`Namespace ${namespace}: ${key}`);
    const configMaps = await kubeRest.request<{ items: { metadata: { name: string } }[] }>({
      method: 'GET',
      path: `/api/v1/namespaces/${namespace}/configmaps`,
      query: { labelSelector: OWNER_LABEL },
    });
    found.push(...configMaps.items.map((cm) => `ConfigMap ${namespace}/${cm.metadata.name}`));
    if (options.source !== true && (await probe(kubeRest, namespace)) !== undefined) found.push(`ConfigMap ${namespace}/dr-probe`);
    const leases = await kubeRest.request<{ items: { metadata: { name: string } }[] }>({
      method: 'GET',
      path: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
      query: { labelSelector: HEARTBEAT_LABEL },
    });
    found.push(...leases.items.map((lease) => `Lease ${namespace}/${lease.metadata.name}`));
    return found;
  }

  beforeAll(async () => {
    [primary, standby] = await Promise.all([startControlPlane(), startControlPlane()]);
    primaryKc.loadFromFile(primary.kubeconfigPath);
    standbyKc.loadFromFile(standby.kubeconfigPath);
    rest = await createKubeRest(primaryKc);
    standbyRest = await createKubeRest(standbyKc);
    await installCrds(rest, { fieldManager: 'syncline-tests' });
    await installCrds(standbyRest, { fieldManager: 'syncline-tests' });
    const core = primaryKc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: OPS } } });
    // the standby cluster runs its own operator in a namespace of the same name (its automatic failover, below)
    await standbyKc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: OPS } } });
    const config = parse(await readFile(standby.kubeconfigPath, 'utf8')) as { users: { name: string }[]; contexts: { name: string }[] };
    const kubeconfig = stringify({
      ...config,
      users: config.users.filter((u) => u.name === 'admin'),
      contexts: config.contexts.filter((c) => c.name === 'admin'),
      'current-context': 'admin',
    });
    await core.createNamespacedSecret({ namespace: OPS, body: { metadata: { name: 'dr-kubeconfig' }, stringData: { kubeconfig } } });
    await rest.request({
      method: 'POST',
      path: `${API}/namespaces/${OPS}/remoteclusters`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'RemoteCluster',
        metadata: { name: 'dr' },
        spec: { kubeconfigSecretRef: { name: 'dr-kubeconfig', key: 'kubeconfig' }, probeInterval: '5s' },
      },
    });
    // sources: r-<i> and l-<i> (policies, remote and local), src and src2 (by hand), each with one ConfigMap
    const sources = [
      ...FORBIDDEN.map((_, i) => [`r-${i}`, 'remote']),
      ['r-ok', 'remote'],
      ...FORBIDDEN.map((_, i) => [`l-${i}`, 'local']),
      ['l-ok', 'local'],
      ['src', ''],
      ['src2', ''],
    ] as const;
    for (const [name, dr] of sources) {
      await core.createNamespace({ body: { metadata: { name, ...(dr === '' ? {} : { labels: { dr } }) } } });
      await core.createNamespacedConfigMap({ namespace: name, body: { metadata: { name: 'dr-probe' }, data: { from: name } } });
    }
    for (const { name, rest: kubeRest } of [
      { name: 'primary', rest },
      { name: 'standby', rest: standbyRest },
    ]) {
      for (const namespace of FORBIDDEN)
        before.set(
          `${name}/${namespace}`,
          (await kubeRest.request<{ metadata: { resourceVersion?: string } }>({ method: 'GET', path: `/api/v1/namespaces/${namespace}` })).metadata
            .resourceVersion,
        );
    }
    operator = await startPrimaryOperator();
  }, 400_000);

  afterAll(async () => {
    await operator?.stop();
    await standbyOperator?.stop();
    await primary.stop();
    await standby.stop();
  });

  it('a policy mapping onto a system namespace or the operator namespace is refused per namespace, remote and same-cluster', async () => {
    const mapping = (prefix: string, okTarget: string): Record<string, string> => ({
      ...Object.fromEntries(FORBIDDEN.map((target, i) => [`${prefix}-${i}`, target])),
      [`${prefix}-ok`]: okTarget,
    });
    const policy = (name: string, dr: string, destination: Record<string, unknown>, names: Record<string, string>): Record<string, unknown> => ({
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'NamespaceReplicationPolicy',
      metadata: { name },
      spec: {
        namespaceSelector: { matchLabels: { dr } },
        namespaceMapping: { names },
        template: { destination, interval: '3s', resourceTypes: ['ConfigMap'] },
      },
    });
    await rest.request({
      method: 'POST',
      path: `${API}/namespaces/${OPS}/namespacereplicationpolicies`,
      body: policy('remote', 'remote', { cluster: { name: 'dr' } }, mapping('r', 'r-ok-dr')),
    });
    await rest.request({
      method: 'POST',
      path: `${API}/namespaces/${OPS}/namespacereplicationpolicies`,
      body: policy('local', 'local', {}, mapping('l', 'l-ok-dr')),
    });

    await eventually(
      async () => ((await probe(standbyRest, 'r-ok-dr')) === 'r-ok' && (await probe(rest, 'l-ok-dr')) === 'l-ok' ? true : undefined),
      'the allowed namespaces replicated',
      120_000,
    );
    for (const [name, prefix] of [
      ['remote', 'r'],
      ['local', 'l'],
    ] as const) {
      const status = await eventually(
        async () => {
          const p = await readPolicy(name);
          return p.status?.namespaces?.length === FORBIDDEN.length + 1 && p.status.ready === 1 ? p.status : undefined;
        },
        `the ${name} policy's lines`,
        60_000,
      );
      expect(status.inventory?.map((e) => e.replication)).toEqual([`${name}-${prefix}-ok`]);
      for (const [i, target] of FORBIDDEN.entries()) {
        const row = status.namespaces?.find((r) => r.namespace === `${prefix}-${i}`);
        expect(row).toMatchObject({
          standbyNamespace: target,
          message: expect.stringMatching(new RegExp(`^NamespaceNotAllowed: standby namespace ${target}: `)) as string,
        });
        expect(row).not.toHaveProperty('replication');
      }
      expect(status.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
        status: 'False',
        message: expect.stringContaining(`${FORBIDDEN.length} not replicated`) as string,
      });
    }
    expect(await replications()).toEqual(['local-l-ok', 'remote-r-ok']);
  }, 240_000);

  it('a NamespaceReplication made by hand onto any of them is Stalled with NamespaceNotAllowed, remote and same-cluster', async () => {
    for (const target of FORBIDDEN) {
      await createNr(hand('remote', target), { sourceNamespace: 'src', destination: { cluster: { name: 'dr' }, namespace: target } });
      await createNr(hand('local', target), { sourceNamespace: 'src', destination: { namespace: target } });
    }
    for (const target of FORBIDDEN) {
      for (const where of ['remote', 'local'] as const) {
        const nr = await eventually(
          async () => {
            const found = await replication(hand(where, target));
            return conditionOf(found, 'Stalled')?.status === 'True' ? found : undefined;
          },
          `${hand(where, target)} to be refused`,
          60_000,
        );
        expect(conditionOf(nr, 'Stalled')).toMatchObject({
          reason: 'NamespaceNotAllowed',
          message: expect.stringContaining(`standby namespace ${target}: `) as string,
        });
        expect(conditionOf(nr, 'Ready')).toMatchObject({ status: 'False', reason: 'NamespaceNotAllowed' });
        expect(nr.status?.inventory ?? []).toEqual([]);
      }
    }
    expect(conditionOf(await replication(hand('remote', OPS)), 'Stalled')?.message).toContain("the operator's own namespace is never a DR standby");
    expect(conditionOf(await replication(hand('local', 'kube-system')), 'Stalled')?.message).toContain('--dr-allow-standby-namespaces');
    // what a person reads in the primary: the standby column does not call such a namespace a standby
    const table = await syncline(['get', 'nsrepl', '-n', OPS, '--kubeconfig', primary.kubeconfigPath]);
    expect(table.stdout).toMatch(/^hand-remote-kube-system\s.*\snot allowed\s+\d+[smhd]\S*$/m);
    expect(table.stdout).toMatch(/^remote-r-ok\s.*\sstandby\s+\d+[smhd]\S*$/m);
  }, 240_000);

  it("two replications never share a standby, nor write into another one's source: the one created first keeps it", async () => {
    await createNr('first', { sourceNamespace: 'src', destination: { cluster: { name: 'dr' }, namespace: 'shared-dr' } });
    await eventually(async () => (conditionOf(await replication('first'), 'Ready')?.status === 'True' ? true : undefined), 'first to replicate', 120_000);
    await createNr('second', { sourceNamespace: 'src2', destination: { cluster: { name: 'dr' }, namespace: 'shared-dr' } });
    await createNr('into-source', { sourceNamespace: 'src2', destination: { namespace: 'src' } });
    const second = await eventually(
      async () => {
        const nr = await replication('second');
        return conditionOf(nr, 'Stalled')?.status === 'True' ? nr : undefined;
      },
      'second to be refused',
      60_000,
    );
    expect(conditionOf(second, 'Stalled')).toMatchObject({
      reason: 'NamespaceNotAllowed',
      message: expect.stringContaining('is already the standby namespace of NamespaceReplication ops/first, created first') as string,
    });
    const intoSource = await eventually(
      async () => {
        const nr = await replication('into-source');
        return conditionOf(nr, 'Stalled')?.status === 'True' ? nr : undefined;
      },
      'into-source to be refused',
      60_000,
    );
    expect(conditionOf(intoSource, 'Stalled')?.message).toMatch(
      /standby namespace src \(this cluster\) is already the source namespace of NamespaceReplication ops\//,
    );
    // the first one's standby holds only its objects and its heartbeat; the source src is untouched
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    expect(await probe(standbyRest, 'shared-dr')).toBe('src');
    const leases = await standbyRest.request<{ items: { metadata: { name: string } }[] }>({
      method: 'GET',
      path: '/apis/coordination.k8s.io/v1/namespaces/shared-dr/leases',
    });
    expect(leases.items.map((l) => l.metadata.name)).toEqual(['syncline-heartbeat-first']);
    expect(await traces(rest, 'src', { source: true })).toEqual([]);
    expect(await probe(rest, 'src')).toBe('src');
  }, 240_000);

  it('nothing was written in any of them, in either cluster, while replications and heartbeats ran', async () => {
    // by now: a dozen refused replications, each reconciled every 3 s, the heartbeat every second, for a while
    for (const { name, rest: kubeRest } of clusters()) {
      for (const namespace of FORBIDDEN) {
        expect(await traces(kubeRest, namespace), `${name}/${namespace}`).toEqual([]);
        const ns = await kubeRest.request<{ metadata: { resourceVersion?: string } }>({ method: 'GET', path: `/api/v1/namespaces/${namespace}` });
        expect(ns.metadata.resourceVersion, `${name}: Namespace ${namespace}`).toBe(before.get(`${name}/${namespace}`));
      }
    }
    // and dr status, run with the standby's kubeconfig, lists only the real standbys
    const status = await syncline(['dr', 'status', '--standby', '--kubeconfig', standby.kubeconfigPath, '-o', 'json']);
    expect([status.code, status.stderr]).toEqual([0, '']);
    expect((JSON.parse(status.stdout) as { namespace: string }[]).map((r) => r.namespace)).toEqual(['r-ok-dr', 'shared-dr']);
  }, 120_000);

  it('an admin opts a system namespace in: replicated into, yet never listed among all standbys, and the first replication keeps it', async () => {
    // when the operator runs with --dr-allow-standby-namespaces default
    await operator?.stop();
    operator = await startPrimaryOperator(['--dr-allow-standby-namespaces', 'default']);
    // then the replications made by hand onto default replicate, the other system namespaces stay refused
    await eventually(
      async () => ((await probe(standbyRest, 'default')) === 'src' && (await probe(rest, 'default')) === 'src' ? true : undefined),
      'default replicated into, in both clusters',
      120_000,
    );
    for (const where of ['remote', 'local'] as const) {
      await eventually(
        async () => (conditionOf(await replication(hand(where, 'default')), 'Ready')?.status === 'True' ? true : undefined),
        `${hand(where, 'default')} Ready`,
        60_000,
      );
      expect(conditionOf(await replication(hand(where, 'kube-system')), 'Stalled')).toMatchObject({ status: 'True', reason: 'NamespaceNotAllowed' });
      expect(conditionOf(await replication(hand(where, OPS)), 'Stalled')).toMatchObject({ status: 'True', reason: 'NamespaceNotAllowed' });
    }
    // and the policies' lines for default: left to the replications made by hand, which had it first
    const index = FORBIDDEN.indexOf('default');
    for (const [name, prefix] of [
      ['remote', 'r'],
      ['local', 'l'],
    ] as const) {
      const row = await eventually(
        async () => {
          const found = (await readPolicy(name)).status?.namespaces?.find((r) => r.namespace === `${prefix}-${index}`);
          return found?.message?.includes(`NamespaceReplication ops/${hand(name, 'default')}, created first`) === true ? found : undefined;
        },
        `the ${name} policy to leave default to the replication made by hand`,
        60_000,
      );
      expect(row.replication).toBeUndefined();
    }
    expect(await replications()).not.toContain(`remote-r-${index}`);
    await eventually(
      async () => {
        const leases = await standbyRest.request<{ items: unknown[] }>({
          method: 'GET',
          path: '/apis/coordination.k8s.io/v1/namespaces/default/leases',
          query: { labelSelector: HEARTBEAT_LABEL },
        });
        return leases.items.length === 1 ? true : undefined;
      },
      'the heartbeat in the standby default',
      60_000,
    );
    // dr status lists it only by name
    const all = await syncline(['dr', 'status', '--standby', '--kubeconfig', standby.kubeconfigPath, '-o', 'json']);
    expect((JSON.parse(all.stdout) as { namespace: string }[]).map((r) => r.namespace)).toEqual(['r-ok-dr', 'shared-dr']);
    expect(all.stderr).toContain('default: a system namespace, never listed among the standbys');
    const named = await syncline(['dr', 'status', '--standby', '--kubeconfig', standby.kubeconfigPath, '-o', 'json', 'default']);
    expect(JSON.parse(named.stdout)).toEqual([
      expect.objectContaining({ namespace: 'default', replication: `${OPS}/${hand('remote', 'default')}`, promoted: false }),
    ]);
  }, 300_000);

  it('automatic failover and failover --standby never promote a system namespace', async () => {
    // given the primary's operator gone (no more heartbeats) and a standby-side operator with automatic failover
    await operator?.kill();
    operator = undefined;
    standbyOperator = await startOperator({
      kubeconfig: standby.kubeconfigPath,
      args: ['--mirror', 'off', '--operator-namespace', OPS, '--dr-heartbeat-interval', 'off', '--dr-auto-failover-grace', '3s'],
    });
    // then the standbys are promoted, default (a system namespace, not opted in there) is not
    await eventually(
      async () => ((await promotedAt('r-ok-dr')) !== undefined && (await promotedAt('shared-dr')) !== undefined ? true : undefined),
      'the standbys promoted automatically',
      90_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    expect(await promotedAt('default')).toBeUndefined();
    // and failover --standby without names lists no system namespace either
    const failover = await syncline(['failover', '--standby', '--kubeconfig', standby.kubeconfigPath, '--by', 'oncall']);
    expect(failover.code).toBe(0);
    expect(failover.stdout).toMatch(/^r-ok-dr: promoted at .*\nshared-dr: promoted at /);
    expect(failover.stdout).not.toContain('default');
    expect(failover.stderr).toContain('default: a system namespace, never listed among the standbys');
    expect(await promotedAt('default')).toBeUndefined();
  }, 240_000);
});

// End to end: two shards, as two operator processes against the real control plane. A ConfigSync labelled
// syncline.dev/shard=a is reconciled by the `--shard a` operator only, an unlabelled one by the default shard
// only; each shard elects its own leader on its own Lease; relabelling a sync hands it over without a prune.
import { CoordinationV1Api } from '@kubernetes/client-node';
import { startGitServer, startOperator, type GitServer, type OperatorProcess, type TestRepo } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pushDelivery, send } from '../webhooks/deliveries.ts';
import {
  applyConfigSync,
  configMapData,
  configMapYaml,
  configSync,
  core,
  eventually,
  installCrds,
  kc,
  patchConfigSync,
  readConfigSync,
  rest,
  waitForReady,
} from './harness.ts';

const SHARD_LABEL = 'syncline.dev/shard';
const LEFT = 'left this shard (deleted, or relabelled to another shard); forgotten, nothing pruned';
const WEBHOOK_SECRET = 'generic-sharded-4h6j8k';
const cm = (name: string, value: string): string => configMapYaml(name, `  v: "${value}"`);

describe('sharding', () => {
  let git: GitServer;
  let repo: TestRepo;
  let ns: TestNamespace;
  let shardA: OperatorProcess;
  let shardDefault: OperatorProcess;
  const lease = (): string => `syncline-${ns.name}`;

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    repo = await git.createRepo('sharded');
    ns = await testNamespace({ prefix: 'shard' });
    await core.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name: 'syncline-webhooks' }, stringData: { generic: WEBHOOK_SECRET } } });
    // Trusted: a ManifestSync here copies into another namespace with the operator's rights.
    const election = [
      '--namespace',
      ns.name,
      '--trusted-namespaces',
      ns.name,
      '--leader-elect',
      '--leader-election-namespace',
      ns.name,
      '--leader-election-id',
      lease(),
      '--lease-duration',
      '5',
    ];
    shardA = await startOperator({ kubeconfig: testKubeconfigPath(), args: [...election, '--shard', 'a'] });
    shardDefault = await startOperator({ kubeconfig: testKubeconfigPath(), args: [...election, '--webhook-secret', `${ns.name}/syncline-webhooks`] });
  }, 120_000);
  afterAll(async () => {
    await Promise.all([shardA?.stop(), shardDefault?.stop()]);
    await ns?.[Symbol.asyncDispose]();
    await git?.close();
  });

  /** The log lines of one operator that name a ConfigSync of this test. */
  const mentions = (operator: OperatorProcess, name: string, from = 0): Record<string, unknown>[] =>
    operator.logs.slice(from).filter((l) => l['configsync'] === `${ns.name}/${name}`);
  const synced = (operator: OperatorProcess, name: string, from = 0): Record<string, unknown>[] =>
    mentions(operator, name, from).filter((l) => l['msg'] === 'synced');
  const sync = (name: string, path: string, labels?: Record<string, string>, refreshInterval = '1s', source = repo): Parameters<typeof applyConfigSync>[0] => {
    const object = configSync(ns.name, name, {
      source: { git: { repo: source.url, revision: 'main', path } },
      refreshInterval,
      targets: [{ name: 'main', namespace: ns.name }],
    });
    if (labels !== undefined) object.metadata = { ...object.metadata, labels };
    return object;
  };

  it('reconciles each sync in exactly one shard, elects a leader per shard, and hands a relabelled sync over without pruning', async () => {
    // given a sync labelled for shard a and two unlabelled ones (the default shard's)
    const first = await repo.commit({ 'a/cm.yaml': cm('from-a', '1'), 'default/cm.yaml': cm('from-default', '1'), 'moving/cm.yaml': cm('moving', '1') });
    await applyConfigSync(sync('in-a', 'a', { [SHARD_LABEL]: 'a' }));
    await applyConfigSync(sync('in-default', 'default'));
    await applyConfigSync(sync('moving', 'moving'));

    // then all three are synced, each by its own shard and by no other
    for (const name of ['in-a', 'in-default', 'moving']) await waitForReady(ns.name, name, (c) => c.status?.sourceRevision === first, 90_000);
    expect(await configMapData(ns.name, 'from-a')).toEqual({ v: '1' });
    expect(await configMapData(ns.name, 'from-default')).toEqual({ v: '1' });
    await eventually(
      () =>
        Promise.resolve(
          synced(shardA, 'in-a').length > 0 && synced(shardDefault, 'in-default').length > 0 && synced(shardDefault, 'moving').length > 0 ? true : undefined,
        ),
      'the synced log lines',
      30_000,
    );
    expect(mentions(shardA, 'in-default')).toEqual([]);
    expect(mentions(shardA, 'moving')).toEqual([]);
    expect(mentions(shardDefault, 'in-a')).toEqual([]);
    // the log lines (and metrics) say which shard wrote them
    expect(synced(shardA, 'in-a')[0]?.['shard']).toBe('a');
    expect(synced(shardDefault, 'in-default')[0]?.['shard']).toBe('default');
    const metrics = await (await fetch(`http://${shardA.probeAddress}/metrics`)).text();
    expect(metrics).toMatch(/syncline_reconcile_total\{[^}]*shard="a"/);
    // the default shard's series are unchanged (a single operator is the default shard)
    expect(await (await fetch(`http://${shardDefault.probeAddress}/metrics`)).text()).not.toMatch(/shard="/);

    // and each shard has its own Lease and leader: the default shard's as named, shard a's with a suffix
    const leases = kc.makeApiClient(CoordinationV1Api);
    const holder = (name: string): Promise<string> =>
      eventually(
        async () => (await leases.readNamespacedLease({ name, namespace: ns.name })).spec?.holderIdentity ?? undefined,
        `a holder of Lease ${name}`,
        30_000,
      );
    const [holderA, holderDefault] = await Promise.all([holder(`${lease()}-a`), holder(lease())]);
    expect(holderA).toMatch(new RegExp(`-${shardA.pid}$`));
    expect(holderDefault).toMatch(new RegExp(`-${shardDefault.pid}$`));

    // when the default shard's sync is relabelled to shard a and its source changes
    const fromA = shardA.logs.length;
    let fromDefault = shardDefault.logs.length;
    await patchConfigSync(ns.name, 'moving', { metadata: { labels: { [SHARD_LABEL]: 'a' } } });
    // the default shard sees it leave its label-selected watch and forgets it
    await eventually(
      () => Promise.resolve(mentions(shardDefault, 'moving', fromDefault).some((l) => l['msg'] === LEFT) ? true : undefined),
      'the default shard letting it go',
      30_000,
    );
    fromDefault = shardDefault.logs.length;
    const second = await repo.commit({ 'moving/cm.yaml': cm('moving', '2') });

    // then shard a takes it over (same owner marks: it adopts the objects, no conflict) and syncs the change
    const moved = await waitForReady(ns.name, 'moving', (c) => c.status?.sourceRevision === second, 90_000);
    await eventually(async () => ((await configMapData(ns.name, 'moving'))?.['v'] === '2' ? true : undefined), 'the moved sync applied by shard a', 60_000);
    await eventually(() => Promise.resolve(synced(shardA, 'moving', fromA).length > 0 ? true : undefined), 'shard a logging the moved sync', 30_000);
    expect(moved.status?.targets).toMatchObject([{ name: 'main', phase: 'Synced', objects: 1 }]);
    // and the default shard let it go: it did not finalize or prune it (no deletionTimestamp, finalizer kept,
    // its object still there), and never reconciled it again
    const after = await readConfigSync(ns.name, 'moving');
    expect(after.metadata.deletionTimestamp).toBeUndefined();
    expect(after.metadata.finalizers).toContain('syncline.dev/finalizer');
    expect(mentions(shardDefault, 'moving', fromDefault)).toEqual([]);
    expect(shardDefault.logs.filter((l) => l['msg'] === 'finalized')).toEqual([]);

    // and the other two are still where they were
    const third = await repo.commit({ 'a/cm.yaml': cm('from-a', '3'), 'default/cm.yaml': cm('from-default', '3') });
    for (const name of ['in-a', 'in-default']) await waitForReady(ns.name, name, (c) => c.status?.sourceRevision === third, 90_000);
    expect(mentions(shardA, 'in-default')).toEqual([]);
    expect(mentions(shardDefault, 'in-a')).toEqual([]);
    expect(synced(shardA, 'in-a', fromA).length).toBeGreaterThan(0);
    expect(synced(shardDefault, 'in-default', fromDefault).length).toBeGreaterThan(0);
  }, 300_000);

  it("wakes another shard's sync on a push delivered to the default shard's webhook receiver", async () => {
    // given a shard-a sync that refreshes only hourly, synced once
    const hooked = await git.createRepo('hooked');
    const first = await hooked.commit({ 'app/cm.yaml': cm('hooked', '1') });
    await applyConfigSync(sync('hooked', 'app', { [SHARD_LABEL]: 'a' }, '1h', hooked));
    await waitForReady(ns.name, 'hooked', (c) => c.status?.sourceRevision === first, 90_000);

    // when a push is delivered to the default shard (the chart's webhook Service selects its pods)
    const fromA = shardA.logs.length;
    await hooked.commit({ 'app/cm.yaml': cm('hooked', '2') });
    const address = shardDefault.webhookAddress;
    if (address === undefined) throw new Error('the default shard runs no webhook receiver');
    expect(await send(address, pushDelivery('generic', hooked.url, WEBHOOK_SECRET))).toEqual({ status: 202, body: { result: 'accepted', woken: 1 } });

    // then shard a syncs it long before its interval, and the default shard never reconciled it
    await eventually(async () => ((await configMapData(ns.name, 'hooked'))?.['v'] === '2' ? true : undefined), 'the pushed change applied by shard a', 60_000);
    await eventually(() => Promise.resolve(synced(shardA, 'hooked', fromA).length > 0 ? true : undefined), 'shard a logging the pushed sync', 30_000);
    expect(mentions(shardDefault, 'hooked')).toEqual([]);
  }, 180_000);

  it('shards ManifestSyncs the same way, and unlabelling hands one back to the default shard', async () => {
    // given a ManifestSync labelled for shard a that copies a ConfigMap to another namespace
    await using other = await testNamespace({ prefix: 'shard-copy' });
    await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'settings' }, data: { v: '1' } } });
    const msPath = `/apis/syncline.dev/v1alpha1/namespaces/${ns.name}/manifestsyncs/copier`;
    await rest.request({
      method: 'PATCH',
      path: msPath,
      query: { fieldManager: 'syncline-tests', force: true },
      contentType: 'application/apply-patch+yaml',
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'ManifestSync',
        metadata: { name: 'copier', namespace: ns.name, labels: { [SHARD_LABEL]: 'a' } },
        spec: { sourceRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'settings' }, targets: [{ namespace: other.name }] },
      },
    });
    const copy = async (): Promise<string | undefined> => (await configMapData(other.name, 'settings'))?.['v'];
    await eventually(async () => ((await copy()) === '1' ? true : undefined), 'the copy', 60_000);
    const named = (operator: OperatorProcess, from = 0): Record<string, unknown>[] =>
      operator.logs.slice(from).filter((l) => l['manifestsync'] === `${ns.name}/copier`);

    // then shard a made it and the default shard never looked at it
    await eventually(() => Promise.resolve(named(shardA).some((l) => l['msg'] === 'copied') ? true : undefined), 'shard a logging the copy', 30_000);
    expect(named(shardDefault)).toEqual([]);

    // when the label is removed, then shard a lets it go and the default shard adopts it: a source change is
    // copied by the default shard, and the copy was never deleted on the way
    const fromA = shardA.logs.length;
    const fromDefault = shardDefault.logs.length;
    await rest.request({ method: 'PATCH', path: msPath, contentType: 'application/merge-patch+json', body: { metadata: { labels: { [SHARD_LABEL]: null } } } });
    await eventually(() => Promise.resolve(named(shardA, fromA).some((l) => l['msg'] === LEFT) ? true : undefined), 'shard a letting it go', 30_000);
    const settled = shardA.logs.length;
    await core.replaceNamespacedConfigMap({ name: 'settings', namespace: ns.name, body: { metadata: { name: 'settings' }, data: { v: '2' } } });
    await eventually(async () => ((await copy()) === '2' ? true : undefined), 'the change copied by the default shard', 60_000);
    await eventually(
      () => Promise.resolve(named(shardDefault, fromDefault).some((l) => l['msg'] === 'copied') ? true : undefined),
      'the default shard logging the copy',
      30_000,
    );
    expect(named(shardA, settled)).toEqual([]);
    expect([...shardA.logs, ...shardDefault.logs].filter((l) => l['manifestsync'] === `${ns.name}/copier` && l['msg'] === 'finalized')).toEqual([]);
  }, 180_000);
});

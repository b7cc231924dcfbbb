// Taking over kubectl's edits (takeover.ts) through planApply + executePlan, against the real control plane and
// the real kubectl binary.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { testKubeConfig, testKubeconfigPath, testNamespace } from '@syncline/test-support/kube';
import {
  createApplyClient,
  executePlan,
  planApply,
  readLive,
  type ApplyClient,
  type ChangeSet,
  type DriftMode,
  type Inventory,
  type KubeObject,
  type Owner,
} from './index.ts';

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const admin = await createApplyClient(kc);
const run = promisify(execFile);

const kubectl = async (namespace: string, ...args: string[]): Promise<string> =>
  (await run('kubectl', ['--kubeconfig', testKubeconfigPath(), '-n', namespace, ...args], { timeout: 60_000 })).stdout;

const service = (namespace: string, httpPort: number): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace },
  spec: {
    selector: { app: 'web' },
    ports: [
      { name: 'http', port: httpPort, targetPort: 8080 },
      { name: 'metrics', port: 9090, targetPort: 9090 },
    ],
  },
});
const deployment = (namespace: string): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: 'web' } },
    template: {
      metadata: { labels: { app: 'web' } },
      spec: { containers: [{ name: 'web', image: 'nginx:1.27', env: [{ name: 'LOG_LEVEL', value: 'info' }] }] },
    },
  },
});

/** Counts the writes (applies and JSON patches) and the reads a client makes. */
function counting(inner: ApplyClient): ApplyClient & { writes: number; patches: number; reads: number } {
  const counted = {
    ...inner,
    writes: 0,
    patches: 0,
    reads: 0,
    apply: (...args: Parameters<ApplyClient['apply']>) => (counted.writes++, inner.apply(...args)),
    jsonPatch: (...args: Parameters<ApplyClient['jsonPatch']>) => (counted.writes++, counted.patches++, inner.jsonPatch(...args)),
    list: (...args: Parameters<ApplyClient['list']>) => (counted.reads++, inner.list(...args)),
    get: (...args: Parameters<ApplyClient['get']>) => (counted.reads++, inner.get(...args)),
  };
  return counted;
}

async function sync(desired: KubeObject[], options: { owner: Owner; inventory: Inventory; client?: ApplyClient; drift?: DriftMode }): Promise<ChangeSet> {
  const client = options.client ?? admin;
  const live = await readLive({ client, desired, inventory: options.inventory, owner: options.owner });
  return executePlan(
    planApply({ desired, inventory: options.inventory, live, owner: options.owner, ...(options.drift === undefined ? {} : { drift: options.drift }) }),
    { client },
  );
}

const ports = async (namespace: string): Promise<string[]> =>
  ((await core.readNamespacedService({ name: 'web', namespace })).spec?.ports ?? []).map((p) => `${p.name ?? ''}:${p.port}`);
const managers = (object: { metadata?: { managedFields?: { manager?: string; operation?: string }[] } }): string[] =>
  (object.metadata?.managedFields ?? []).map((e) => `${e.manager ?? ''}/${e.operation ?? ''}`);

describe('kubectl edits of an object of ours', () => {
  it('a Service port renumbered by kubectl patch is corrected, and a rollback after it was patched back applies', async () => {
    await using ns = await testNamespace();
    const owner: Owner = { namespace: ns.name, name: 'web', target: 'main' };
    const first = await sync([service(ns.name, 8080)], { owner, inventory: [] });
    const inventory = first.inventory;

    // given kubectl patch renumbered the http port (the entry keeps the name "http" under kubectl-patch)
    await kubectl(ns.name, 'patch', 'service/web', '--type', 'json', '-p', '[{"op":"replace","path":"/spec/ports/0/port","value":9999}]');

    // when the sync runs, then it takes the edit over and corrects it: one managedFields patch, one apply
    const client = counting(admin);
    const corrected = await sync([service(ns.name, 8080)], { owner, inventory, client });
    expect(corrected.entries).toEqual([
      { id: `/Service/${ns.name}/web`, action: 'configured', reason: expect.stringContaining('fields edited by kubectl-patch') as unknown },
    ]);
    expect([client.patches, client.writes]).toEqual([1, 2]);
    expect(await ports(ns.name)).toEqual(['http:8080', 'metrics:9090']);
    expect(managers(await core.readNamespacedService({ name: 'web', namespace: ns.name }))).toEqual(['syncline/Apply']);

    // given the port renumbered and patched back by hand: equal to Git, kubectl-patch owning the entry
    await kubectl(ns.name, 'patch', 'service/web', '--type', 'json', '-p', '[{"op":"replace","path":"/spec/ports/0/port","value":9999}]');
    await kubectl(ns.name, 'patch', 'service/web', '--type', 'json', '-p', '[{"op":"replace","path":"/spec/ports/0/port","value":8080}]');
    expect(managers(await core.readNamespacedService({ name: 'web', namespace: ns.name }))).toContain('kubectl-patch/Update');

    // when an older render (http on port 80) is applied, then it succeeds: the hand-made entry is dropped
    const rolledBack = await sync([service(ns.name, 80)], { owner, inventory });
    expect(rolledBack.entries.map((e) => e.action)).toEqual(['configured']);
    expect(await ports(ns.name)).toEqual(['http:80', 'metrics:9090']);

    // and the next sync writes nothing
    const steady = counting(admin);
    expect((await sync([service(ns.name, 80)], { owner, inventory, client: steady })).entries.map((e) => e.action)).toEqual(['unchanged']);
    expect(steady.writes).toBe(0);
  });

  it('computes the takeover again when the object changed between the read and the patch', async () => {
    await using ns = await testNamespace();
    const owner: Owner = { namespace: ns.name, name: 'web', target: 'main' };
    const desired = [deployment(ns.name)];
    const { inventory } = await sync(desired, { owner, inventory: [] });
    await kubectl(ns.name, 'set', 'env', 'deployment/web', 'EXTRA=1');

    // given a plan made from a read taken before a second edit
    const live = await readLive({ client: admin, desired, inventory, owner });
    const plan = planApply({ desired, inventory, live, owner });
    await kubectl(ns.name, 'label', 'deployment/web', 'team=ops');

    // when it runs, then the stale patch fails its test, is computed from a fresh read and both edits are dropped
    const client = counting(admin);
    const changes = await executePlan(plan, { client });
    expect(changes.entries.map((e) => e.action)).toEqual(['configured']);
    expect(client.patches).toBe(2);
    const after = await apps.readNamespacedDeployment({ name: 'web', namespace: ns.name });
    expect(after.spec?.template.spec?.containers[0]?.env?.map((e) => e.name)).toEqual(['LOG_LEVEL']);
    expect(after.metadata?.labels?.['team']).toBeUndefined();
    expect(managers(after).filter((m) => m.startsWith('kubectl'))).toEqual([]);
  });

  it('corrects an image kubectl set changed with one write (the forced apply takes the field back)', async () => {
    await using ns = await testNamespace();
    const owner: Owner = { namespace: ns.name, name: 'web', target: 'main' };
    const desired = [deployment(ns.name)];
    const { inventory } = await sync(desired, { owner, inventory: [] });
    await kubectl(ns.name, 'set', 'image', 'deployment/web', 'web=nginx:hand');

    const client = counting(admin);
    const changes = await sync(desired, { owner, inventory, client });
    expect(changes.entries.map((e) => e.reason)).toEqual(['drift corrected: spec.template.spec.containers[0].image, fields edited by kubectl-set']);
    expect([client.patches, client.writes]).toEqual([0, 1]);
    const after = await apps.readNamespacedDeployment({ name: 'web', namespace: ns.name });
    expect(after.spec?.template.spec?.containers[0]?.image).toBe('nginx:1.27');
    expect(managers(after)).toEqual(['syncline/Apply']);
  });

  it('keeps a replica count kubectl set where Git sets none, while dropping the env var set beside it', async () => {
    await using ns = await testNamespace();
    const owner: Owner = { namespace: ns.name, name: 'web', target: 'main' };
    const unscaled = deployment(ns.name);
    delete (unscaled['spec'] as Record<string, unknown>)['replicas'];
    const { inventory } = await sync([unscaled], { owner, inventory: [] });
    await kubectl(
      ns.name,
      'patch',
      'deployment/web',
      '-p',
      JSON.stringify({ spec: { replicas: 3, template: { spec: { containers: [{ name: 'web', env: [{ name: 'EXTRA', value: '1' }] }] } } } }),
    );

    const changes = await sync([unscaled], { owner, inventory });
    expect(changes.entries.map((e) => e.action)).toEqual(['configured']);
    const after = await apps.readNamespacedDeployment({ name: 'web', namespace: ns.name });
    expect(after.spec?.replicas).toBe(3);
    expect(after.spec?.template.spec?.containers[0]?.env?.map((e) => e.name)).toEqual(['LOG_LEVEL']);
    // and with only the count left to kubectl-patch, the next sync writes nothing
    const steady = counting(admin);
    expect((await sync([unscaled], { owner, inventory, client: steady })).entries.map((e) => e.action)).toEqual(['unchanged']);
    expect(steady.writes).toBe(0);
  });

  it('reports an env var kubectl set added under drift Report, and leaves it', async () => {
    await using ns = await testNamespace();
    const owner: Owner = { namespace: ns.name, name: 'web', target: 'main' };
    const desired = [deployment(ns.name)];
    const { inventory } = await sync(desired, { owner, inventory: [] });
    await kubectl(ns.name, 'set', 'env', 'deployment/web', 'EXTRA=1');

    const client = counting(admin);
    const changes = await sync(desired, { owner, inventory, client, drift: 'Report' });
    expect(changes.entries).toEqual([
      {
        id: `apps/Deployment/${ns.name}/web`,
        action: 'skipped',
        cause: 'Drifted',
        reason: 'drifted: fields edited by kubectl-set',
        drift: ['fields edited by kubectl-set'],
      },
    ]);
    expect(client.writes).toBe(0);
    const after = await apps.readNamespacedDeployment({ name: 'web', namespace: ns.name });
    expect(after.spec?.template.spec?.containers[0]?.env?.map((e) => e.name)).toEqual(['LOG_LEVEL', 'EXTRA']);
  });
});

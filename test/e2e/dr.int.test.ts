// End to end with two real control planes: a NamespaceReplication keeps a warm standby of a namespace in a
// DR cluster (workloads at zero, CronJobs suspended, nothing derived), propagates changes and deletions,
// fails over and back, survives the DR cluster going away mid-replication, and refuses a tenant's attempt
// to copy another namespace.
import { AppsV1Api, BatchV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, NetworkingV1Api } from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import { startControlPlane, startOperator, type ControlPlane, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { createKubeRest, type NamespaceReplication } from '@syncline/operator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { core, eventually, installCrds, kc, rest } from './harness.ts';
import { startClusterProxy, type ClusterProxy } from './proxy.ts';

const widgetCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.dr.example.com' },
  spec: {
    group: 'dr.example.com',
    scope: 'Namespaced',
    names: { kind: 'Widget', plural: 'widgets', singular: 'widget' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } },
      },
    ],
  },
};

describe('disaster recovery (NamespaceReplication)', () => {
  let shop: TestNamespace;
  let operator: OperatorProcess;
  let dr: ControlPlane;
  let proxy: ClusterProxy;
  let drKc: KubeConfig;
  const nrPath = (namespace: string, name: string): string => `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/namespacereplications/${name}`;
  const applyNr = async (namespace: string, name: string, spec: Record<string, unknown>): Promise<void> => {
    await rest.request({
      method: 'PATCH',
      path: nrPath(namespace, name),
      query: { fieldManager: 'syncline-tests', force: true },
      contentType: 'application/apply-patch+yaml',
      body: { apiVersion: 'syncline.dev/v1alpha1', kind: 'NamespaceReplication', metadata: { name, namespace }, spec },
    });
  };
  const readNr = (name: string): Promise<NamespaceReplication> => rest.request<NamespaceReplication>({ method: 'GET', path: nrPath(shop.name, name) });
  const drCore = (): CoreV1Api => drKc.makeApiClient(CoreV1Api);
  const drApps = (): AppsV1Api => drKc.makeApiClient(AppsV1Api);
  const drBatch = (): BatchV1Api => drKc.makeApiClient(BatchV1Api);
  const gone = async (read: () => Promise<unknown>): Promise<boolean> =>
    read().then(
      () => false,
      (error: unknown) => (error as { code?: number }).code === 404,
    );

  beforeAll(async () => {
    await installCrds();
    shop = await testNamespace({ prefix: 'shop' });
    dr = await startControlPlane();
    drKc = new KubeConfig();
    drKc.loadFromFile(dr.kubeconfigPath);
    proxy = await startClusterProxy(Number(new URL(dr.server).port));
    // Raw REST: client-node's typed serializer drops x-kubernetes-* schema keys (and the API server would then
    // prune the Widget's spec).
    for (const client of [rest, await createKubeRest(drKc)]) {
      await client.request({
        method: 'PATCH',
        path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${widgetCrd.metadata.name}`,
        query: { fieldManager: 'syncline-tests', force: true },
        contentType: 'application/apply-patch+yaml',
        body: widgetCrd,
      });
      await eventually(
        async () =>
          (
            await client.request<{ status?: { conditions?: { type: string; status: string }[] } }>({
              method: 'GET',
              path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${widgetCrd.metadata.name}`,
            })
          ).status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') === true
            ? true
            : undefined,
        'the Widget CRD',
      );
    }
    const config = parse(await readFile(dr.kubeconfigPath, 'utf8')) as {
      clusters: { name: string; cluster: Record<string, unknown> }[];
      users: { name: string }[];
      contexts: { name: string }[];
    };
    const kubeconfig = stringify({
      ...config,
      clusters: config.clusters.map((c) => ({ ...c, cluster: { ...c.cluster, server: `https://127.0.0.1:${proxy.port}` } })),
      users: config.users.filter((u) => u.name === 'admin'),
      contexts: config.contexts.filter((c) => c.name === 'admin'),
      'current-context': 'admin',
    });
    await core.createNamespacedSecret({ namespace: shop.name, body: { metadata: { name: 'dr-kubeconfig' }, stringData: { kubeconfig } } });
    await rest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${shop.name}/remoteclusters`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'RemoteCluster',
        metadata: { name: 'dr' },
        spec: { kubeconfigSecretRef: { name: 'dr-kubeconfig', key: 'kubeconfig' }, probeInterval: '5s' },
      },
    });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', shop.name] });

    // the namespace to protect
    const ns = shop.name;
    const apps = kc.makeApiClient(AppsV1Api);
    const batch = kc.makeApiClient(BatchV1Api);
    const template = (app: string) => ({ metadata: { labels: { app } }, spec: { containers: [{ name: app, image: 'nginx:1.27' }] } });
    const deployment = await apps.createNamespacedDeployment({
      namespace: ns,
      body: { metadata: { name: 'web' }, spec: { replicas: 3, selector: { matchLabels: { app: 'web' } }, template: template('web') } },
    });
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: { metadata: { name: 'db' }, spec: { replicas: 2, serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: template('db') } },
    });
    await core.createNamespacedService({
      namespace: ns,
      body: { metadata: { name: 'web' }, spec: { type: 'NodePort', ports: [{ port: 80 }], selector: { app: 'web' } } },
    });
    await core.createNamespacedService({
      namespace: ns,
      body: { metadata: { name: 'db' }, spec: { clusterIP: 'None', ports: [{ port: 5432 }], selector: { app: 'db' } } },
    });
    await batch.createNamespacedCronJob({
      namespace: ns,
      body: {
        metadata: { name: 'report' },
        spec: {
          schedule: '0 * * * *',
          jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'r', image: 'busybox' }] } } } },
        },
      },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: 'data' },
        spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'fast', volumeName: 'pv-primary', resources: { requests: { storage: '1Gi' } } },
      },
    });
    await kc.makeApiClient(NetworkingV1Api).createNamespacedIngress({
      namespace: ns,
      body: { metadata: { name: 'web' }, spec: { defaultBackend: { service: { name: 'web', port: { number: 80 } } } } },
    });
    await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'db-password' }, stringData: { password: 'hunter2' } } });
    await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'legacy-token', annotations: { 'kubernetes.io/service-account.name': 'default' } },
        type: 'kubernetes.io/service-account-token',
      },
    });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'settings' }, data: { mode: 'primary' } } });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'local-only', labels: { 'syncline.dev/dr': 'exclude' } }, data: { x: '1' } },
    });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: {
          name: 'derived',
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: deployment.metadata?.uid ?? '', controller: true }],
        },
        data: { x: '1' },
      },
    });
    await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: 'dr.example.com',
      version: 'v1',
      namespace: ns,
      plural: 'widgets',
      body: { apiVersion: 'dr.example.com/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { size: 3 } },
    });
  }, 300_000);
  afterAll(async () => {
    await operator.stop();
    await proxy.close();
    await dr.stop();
    await shop[Symbol.asyncDispose]();
  });

  const resourceTypes = [
    'Deployment.apps',
    'StatefulSet.apps',
    'CronJob.batch',
    'Service',
    'ConfigMap',
    'Secret',
    'PersistentVolumeClaim',
    'Ingress.networking.k8s.io',
    'Widget.dr.example.com',
  ];

  it('lands the namespace in the DR cluster with exactly the transforms, and nothing derived', async () => {
    await applyNr(shop.name, 'shop', { destination: { cluster: { name: 'dr' }, namespace: 'shop' }, resourceTypes, storageClassMap: { fast: 'dr-fast' } });
    const nr = await eventually(
      async () => {
        const n = await readNr('shop');
        return n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? n : undefined;
      },
      'the standby to be Ready',
      90_000,
    );
    expect(nr.status?.kinds).toEqual(
      expect.arrayContaining([
        { kind: 'Deployment', objects: 1 },
        { kind: 'Widget', objects: 1 },
      ]),
    );

    const web = await drApps().readNamespacedDeployment({ name: 'web', namespace: 'shop' });
    expect(web.spec?.replicas).toBe(0);
    expect(web.metadata?.annotations?.['syncline.dev/original-replicas']).toBe('3');
    const db = await drApps().readNamespacedStatefulSet({ name: 'db', namespace: 'shop' });
    expect([db.spec?.replicas, db.metadata?.annotations?.['syncline.dev/original-replicas']]).toEqual([0, '2']);
    const report = await drBatch().readNamespacedCronJob({ name: 'report', namespace: 'shop' });
    expect([report.spec?.suspend, report.metadata?.annotations?.['syncline.dev/original-suspend']]).toEqual([true, 'false']);
    const [primaryWeb, standbyWeb] = await Promise.all([
      core.readNamespacedService({ name: 'web', namespace: shop.name }),
      drCore().readNamespacedService({ name: 'web', namespace: 'shop' }),
    ]);
    expect(standbyWeb.spec?.clusterIP).not.toBe(primaryWeb.spec?.clusterIP);
    expect(standbyWeb.spec?.ports?.[0]?.nodePort).not.toBe(primaryWeb.spec?.ports?.[0]?.nodePort);
    expect((await drCore().readNamespacedService({ name: 'db', namespace: 'shop' })).spec?.clusterIP).toBe('None');
    const claim = await drCore().readNamespacedPersistentVolumeClaim({ name: 'data', namespace: 'shop' });
    expect([claim.spec?.storageClassName, claim.spec?.volumeName]).toEqual(['dr-fast', undefined]);
    expect((await drKc.makeApiClient(NetworkingV1Api).readNamespacedIngress({ name: 'web', namespace: 'shop' })).status?.loadBalancer?.ingress).toBeUndefined();
    expect(Buffer.from((await drCore().readNamespacedSecret({ name: 'db-password', namespace: 'shop' })).data?.['password'] ?? '', 'base64').toString()).toBe(
      'hunter2',
    );
    expect(
      (
        (await drKc
          .makeApiClient(CustomObjectsApi)
          .getNamespacedCustomObject({ group: 'dr.example.com', version: 'v1', namespace: 'shop', plural: 'widgets', name: 'w' })) as { spec: unknown }
      ).spec,
    ).toEqual({ size: 3 });
    // never copied
    for (const [read, what] of [
      [() => drCore().readNamespacedSecret({ name: 'legacy-token', namespace: 'shop' }), 'the service-account token'],
      [() => drCore().readNamespacedConfigMap({ name: 'local-only', namespace: 'shop' }), 'the excluded ConfigMap'],
      [() => drCore().readNamespacedConfigMap({ name: 'derived', namespace: 'shop' }), 'the derived ConfigMap'],
    ] as const)
      expect(await gone(read), what).toBe(true);
    // the standby namespace's own root CA bundle is its own, not the primary's
    expect(
      (await drCore().readNamespacedConfigMap({ name: 'kube-root-ca.crt', namespace: 'shop' })).metadata?.annotations?.['syncline.dev/owned-by'],
    ).toBeUndefined();
  });

  it('propagates a change and a deletion; a changed replica count updates the record, not the replicas', async () => {
    await core.patchNamespacedConfigMap({ name: 'settings', namespace: shop.name, body: [{ op: 'replace', path: '/data/mode', value: 'changed' }] });
    await kc
      .makeApiClient(AppsV1Api)
      .patchNamespacedDeployment({ name: 'web', namespace: shop.name, body: [{ op: 'replace', path: '/spec/replicas', value: 5 }] });
    await eventually(
      async () => ((await drCore().readNamespacedConfigMap({ name: 'settings', namespace: 'shop' })).data?.['mode'] === 'changed' ? true : undefined),
      'the change in DR',
      30_000,
    );
    await eventually(
      async () => {
        const web = await drApps().readNamespacedDeployment({ name: 'web', namespace: 'shop' });
        return web.metadata?.annotations?.['syncline.dev/original-replicas'] === '5' && web.spec?.replicas === 0 ? true : undefined;
      },
      'the new count recorded',
      30_000,
    );
    await core.createNamespacedConfigMap({ namespace: shop.name, body: { metadata: { name: 'temporary' }, data: { x: '1' } } });
    await eventually(
      async () => ((await gone(() => drCore().readNamespacedConfigMap({ name: 'temporary', namespace: 'shop' }))) ? undefined : true),
      'the new ConfigMap in DR',
      30_000,
    );
    await core.deleteNamespacedConfigMap({ name: 'temporary', namespace: shop.name });
    await eventually(
      async () => ((await gone(() => drCore().readNamespacedConfigMap({ name: 'temporary', namespace: 'shop' }))) ? true : undefined),
      'the deletion in DR',
      30_000,
    );
  });

  it('converges after the DR cluster stops answering mid-replication', async () => {
    proxy.setHang(true);
    await core.patchNamespacedConfigMap({ name: 'settings', namespace: shop.name, body: [{ op: 'replace', path: '/data/mode', value: 'during-outage' }] });
    await eventually(
      async () => ((await readNr('shop')).status?.conditions?.find((c) => c.type === 'Ready')?.status === 'False' ? true : undefined),
      'the outage to show',
      90_000,
    );
    proxy.setHang(false);
    await eventually(
      async () => ((await drCore().readNamespacedConfigMap({ name: 'settings', namespace: 'shop' })).data?.['mode'] === 'during-outage' ? true : undefined),
      'the standby to converge',
      120_000,
    );
    // waits out request timeouts and backoff on purpose: far longer than the default test timeout
  }, 300_000);

  it('fails over (counts restored, CronJobs resumed, replication stopped) and back (zero again), idempotently', async () => {
    await applyNr(shop.name, 'shop', {
      destination: { cluster: { name: 'dr' }, namespace: 'shop' },
      resourceTypes,
      storageClassMap: { fast: 'dr-fast' },
      failover: true,
    });
    const failedOver = await eventually(
      async () => {
        const n = await readNr('shop');
        return n.status?.conditions?.find((c) => c.type === 'FailedOver')?.status === 'True' ? n : undefined;
      },
      'FailedOver',
      60_000,
    );
    expect(failedOver.status?.failedOverAt).toBeDefined();
    expect((await drApps().readNamespacedDeployment({ name: 'web', namespace: 'shop' })).spec?.replicas).toBe(5);
    expect((await drApps().readNamespacedStatefulSet({ name: 'db', namespace: 'shop' })).spec?.replicas).toBe(2);
    expect((await drBatch().readNamespacedCronJob({ name: 'report', namespace: 'shop' })).spec?.suspend).toBe(false);
    // replication no longer overwrites the standby
    await core.patchNamespacedConfigMap({ name: 'settings', namespace: shop.name, body: [{ op: 'replace', path: '/data/mode', value: 'after-failover' }] });
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect((await drCore().readNamespacedConfigMap({ name: 'settings', namespace: 'shop' })).data?.['mode']).toBe('during-outage');
    // again: nothing changes
    const at = failedOver.status?.failedOverAt;
    await rest.request({
      method: 'PATCH',
      path: nrPath(shop.name, 'shop'),
      contentType: 'application/merge-patch+json',
      body: { metadata: { annotations: { again: 'yes' } } },
    });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await readNr('shop')).status?.failedOverAt).toBe(at);

    await applyNr(shop.name, 'shop', {
      destination: { cluster: { name: 'dr' }, namespace: 'shop' },
      resourceTypes,
      storageClassMap: { fast: 'dr-fast' },
      failover: false,
    });
    await eventually(
      async () => {
        const web = await drApps().readNamespacedDeployment({ name: 'web', namespace: 'shop' });
        const cron = await drBatch().readNamespacedCronJob({ name: 'report', namespace: 'shop' });
        const settings = await drCore().readNamespacedConfigMap({ name: 'settings', namespace: 'shop' });
        return web.spec?.replicas === 0 && cron.spec?.suspend === true && settings.data?.['mode'] === 'after-failover' ? true : undefined;
      },
      'failback: workloads at zero and replication resumed',
      60_000,
    );
    const back = await readNr('shop');
    expect(back.status?.conditions?.find((c) => c.type === 'FailedOver')?.status).toBe('False');
    expect(back.status?.failedOverAt).toBeUndefined();
  });

  it('fails over what the standby holds even when the status does not list it yet (a cache behind, a lost write)', async () => {
    const spec = { destination: { cluster: { name: 'dr' }, namespace: 'shop' }, resourceTypes, storageClassMap: { fast: 'dr-fast' } };
    // given a replication that stopped (suspended) and a status whose inventory lists nothing
    await applyNr(shop.name, 'shop', { ...spec, suspend: true });
    await new Promise((resolve) => setTimeout(resolve, 2000)); // a reconcile in flight lands its status first
    await rest.request({
      method: 'PATCH',
      path: `${nrPath(shop.name, 'shop')}/status`,
      contentType: 'application/merge-patch+json',
      body: { status: { inventory: [] } },
    });
    const web = await drApps().readNamespacedDeployment({ name: 'web', namespace: 'shop' });
    expect(web.spec?.replicas).toBe(0);
    // and someone's copy of the standby's web, with every one of its labels and annotations (the replication never applied it)
    await drApps().createNamespacedDeployment({
      namespace: 'shop',
      body: { metadata: { name: 'web-copy', labels: web.metadata?.labels, annotations: web.metadata?.annotations }, spec: web.spec },
    });
    // when failover is asked for
    await applyNr(shop.name, 'shop', { ...spec, failover: true });
    // then the standby's workloads are restored all the same
    await eventually(
      async () => ((await drApps().readNamespacedDeployment({ name: 'web', namespace: 'shop' })).spec?.replicas === 5 ? true : undefined),
      'web at its recorded 5 replicas',
      60_000,
    );
    expect((await drApps().readNamespacedStatefulSet({ name: 'db', namespace: 'shop' })).spec?.replicas).toBe(2);
    expect((await drBatch().readNamespacedCronJob({ name: 'report', namespace: 'shop' })).spec?.suspend).toBe(false);
    // and the copy is not ours to scale up
    expect((await drApps().readNamespacedDeployment({ name: 'web-copy', namespace: 'shop' })).spec?.replicas).toBe(0);
    // and back
    await applyNr(shop.name, 'shop', spec);
    await eventually(
      async () => ((await drApps().readNamespacedDeployment({ name: 'web', namespace: 'shop' })).spec?.replicas === 0 ? true : undefined),
      'failback: web at zero',
      60_000,
    );
    // the replication's prune leaves the copy alone (ready once its status lists web again)
    await eventually(
      async () =>
        (await readNr('shop')).status?.inventory?.some((i) => i.entries.some((e) => e.startsWith('apps/Deployment/shop/'))) === true ? true : undefined,
      'the inventory to list web again',
      60_000,
    );
    expect((await drApps().readNamespacedDeployment({ name: 'web-copy', namespace: 'shop' })).spec?.replicas).toBe(0);
    await drApps().deleteNamespacedDeployment({ name: 'web-copy', namespace: 'shop' });
  });

  it("refuses a tenant's NamespaceReplication of another namespace", async () => {
    await using other = await testNamespace({ prefix: 'victim' });
    await core.createNamespacedConfigMap({ namespace: other.name, body: { metadata: { name: 'private' }, data: { x: 'secret-ish' } } });
    await applyNr(shop.name, 'steal', { sourceNamespace: other.name, destination: { cluster: { name: 'dr' }, namespace: 'stolen' } });
    const refused = await eventually(async () => {
      const n = await readNr('steal');
      return n.status?.conditions?.find((c) => c.type === 'Stalled')?.reason === 'SourceNotAllowed' ? n : undefined;
    }, 'the refusal');
    expect(refused.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
    expect(await gone(() => drCore().readNamespace({ name: 'stolen' }))).toBe(true);
  });
});

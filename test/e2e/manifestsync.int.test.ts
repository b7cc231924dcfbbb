// End to end, one operator for the file: ManifestSync copies an object that lives in the cluster into
// other namespaces through the same apply engine as ConfigSync. Every case docs/manifestsync.md lists
// (copy, update, cascade or orphan on deletion, an externally modified copy) is one of these.
import { randomBytes } from 'node:crypto';
import { startOperator, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import type { ManifestSync } from '@syncline/operator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configMapData, core, eventually, installCrds, rest } from './harness.ts';

const msPath = (namespace: string, name: string): string => `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/manifestsyncs/${name}`;

async function applyManifestSync(namespace: string, name: string, spec: Record<string, unknown>): Promise<void> {
  await rest.request({
    method: 'PATCH',
    path: msPath(namespace, name),
    query: { fieldManager: 'syncline-tests', force: true },
    contentType: 'application/apply-patch+yaml',
    body: { apiVersion: 'syncline.dev/v1alpha1', kind: 'ManifestSync', metadata: { name, namespace }, spec },
  });
}
const readManifestSync = (namespace: string, name: string): Promise<ManifestSync> =>
  rest.request<ManifestSync>({ method: 'GET', path: msPath(namespace, name) });
const condition = (ms: ManifestSync, type: string): { status: string; reason: string; message: string } | undefined =>
  ms.status?.conditions?.find((c) => c.type === type);

async function waitFor(namespace: string, name: string, check: (ms: ManifestSync) => boolean, what: string): Promise<ManifestSync> {
  let last: ManifestSync | undefined;
  try {
    return await eventually(async () => {
      last = await readManifestSync(namespace, name);
      return last.status?.observedGeneration === last.metadata.generation && check(last) ? last : undefined;
    }, what);
  } catch (error) {
    throw new Error(`${(error as Error).message}; last status: ${JSON.stringify(last?.status)}`);
  }
}
const ready = (ms: ManifestSync): boolean => condition(ms, 'Ready')?.status === 'True';

async function secretData(namespace: string, name: string): Promise<Record<string, string> | undefined> {
  try {
    const secret = await core.readNamespacedSecret({ name, namespace });
    return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  }
}

describe('ManifestSync', () => {
  let home: TestNamespace;
  let operator: OperatorProcess;

  beforeAll(async () => {
    await installCrds();
    home = await testNamespace({ prefix: 'msync' });
    // These ManifestSyncs copy into other namespaces with the operator's rights, as a platform team's do: their
    // namespace is trusted (tenancy.int.test.ts covers an untrusted one, whose copies elsewhere are refused).
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', home.name, '--trusted-namespaces', home.name] });
  });
  afterAll(async () => {
    await operator.stop();
    await home[Symbol.asyncDispose]();
  });

  it('copies a Secret into named and selected namespaces, follows source changes, new and leaving namespaces, and deletes copies with the ManifestSync', async () => {
    const team = `team-${randomBytes(3).toString('hex')}`;
    await using named = await testNamespace({ prefix: 'msync-named' });
    await using selectedA = await testNamespace({ prefix: 'msync-sel', labels: { team } });
    await core.createNamespacedSecret({
      namespace: home.name,
      body: { metadata: { name: 'db', labels: { app: 'db' } }, type: 'Opaque', stringData: { password: 'first' } },
    });

    await applyManifestSync(home.name, 'db', {
      sourceRef: { apiVersion: 'v1', kind: 'Secret', name: 'db' },
      targets: [{ namespace: named.name }, { namespaceSelector: { matchLabels: { team } } }],
    });
    const first = await waitFor(home.name, 'db', (ms) => ready(ms) && (ms.status?.targets?.length ?? 0) === 2, 'copies in both namespaces');
    expect(first.status?.targets?.map((t) => t.name).sort()).toEqual([named.name, selectedA.name].sort());
    expect(await secretData(named.name, 'db')).toEqual({ password: 'first' });
    expect(await secretData(selectedA.name, 'db')).toEqual({ password: 'first' });
    const copy = await core.readNamespacedSecret({ name: 'db', namespace: named.name });
    expect(copy.metadata?.labels?.['app']).toBe('db');
    expect(copy.metadata?.ownerReferences).toBeUndefined();

    // a source change reaches every copy without waiting for the interval (10m default)
    await core.patchNamespacedSecret({
      name: 'db',
      namespace: home.name,
      body: [{ op: 'replace', path: '/data/password', value: Buffer.from('second').toString('base64') }],
    });
    await eventually(
      async () =>
        (await secretData(named.name, 'db'))?.['password'] === 'second' && (await secretData(selectedA.name, 'db'))?.['password'] === 'second'
          ? true
          : undefined,
      'the change in every copy',
    );

    // a namespace created later that matches gets its copy at once
    await using selectedB = await testNamespace({ prefix: 'msync-sel', labels: { team } });
    await eventually(async () => ((await secretData(selectedB.name, 'db'))?.['password'] === 'second' ? true : undefined), 'a copy in the new namespace');

    // a namespace that stops matching loses its copy
    await core.patchNamespace({ name: selectedA.name, body: [{ op: 'remove', path: '/metadata/labels/team' }] });
    await eventually(
      async () => ((await secretData(selectedA.name, 'db')) === undefined ? true : undefined),
      'the copy to leave the namespace that no longer matches',
    );

    // deleting the ManifestSync deletes the copies (deletionPolicy Delete, the ConfigMapSync "cascade")
    await rest.request({ method: 'DELETE', path: msPath(home.name, 'db') });
    await eventually(
      async () => ((await secretData(named.name, 'db')) === undefined && (await secretData(selectedB.name, 'db')) === undefined ? true : undefined),
      'the copies to be deleted',
    );
    expect(await secretData(home.name, 'db')).toEqual({ password: 'second' });
  });

  it('renames and patches a ConfigMap copy, restores a hand-edited copy, and orphans copies on deletion (deletionPolicy Orphan)', async () => {
    await core.createNamespacedConfigMap({ namespace: home.name, body: { metadata: { name: 'settings' }, data: { mode: 'blue', level: '1' } } });
    await applyManifestSync(home.name, 'settings', {
      sourceRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'settings' },
      targets: [{ namespace: home.name, name: 'settings-copy', patch: { data: { level: '2' } } }],
      patch: { metadata: { labels: { copied: 'yes' } } },
      deletionPolicy: 'Orphan',
    });
    await waitFor(home.name, 'settings', ready, 'the copy');
    expect(await configMapData(home.name, 'settings-copy')).toEqual({ mode: 'blue', level: '2' });
    expect((await core.readNamespacedConfigMap({ name: 'settings-copy', namespace: home.name })).metadata?.labels?.['copied']).toBe('yes');

    // an externally modified copy is detected and restored (drift: Correct)
    await core.patchNamespacedConfigMap({ name: 'settings-copy', namespace: home.name, body: [{ op: 'replace', path: '/data/mode', value: 'edited' }] });
    await eventually(async () => ((await configMapData(home.name, 'settings-copy'))?.['mode'] === 'blue' ? true : undefined), 'the edit to be corrected');

    await rest.request({ method: 'DELETE', path: msPath(home.name, 'settings') });
    await eventually(
      async () =>
        await readManifestSync(home.name, 'settings').then(
          () => undefined,
          () => true,
        ),
      'the ManifestSync to be gone',
    );
    expect(await configMapData(home.name, 'settings-copy')).toEqual({ mode: 'blue', level: '2' });
  });

  it('never overwrites a foreign object of the same name: Conflict, named, and left untouched', async () => {
    await using target = await testNamespace({ prefix: 'msync-foreign' });
    await core.createNamespacedConfigMap({ namespace: home.name, body: { metadata: { name: 'shared' }, data: { from: 'source' } } });
    await core.createNamespacedConfigMap({ namespace: target.name, body: { metadata: { name: 'shared' }, data: { from: 'someone else' } } });
    await applyManifestSync(home.name, 'shared', { sourceRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'shared' }, targets: [{ namespace: target.name }] });
    const ms = await waitFor(home.name, 'shared', (m) => condition(m, 'Ready')?.reason === 'Conflict', 'the conflict to be reported');
    expect(condition(ms, 'Ready')?.message).toContain(`/ConfigMap/${target.name}/shared`);
    expect(await configMapData(target.name, 'shared')).toEqual({ from: 'someone else' });
    const events = await eventually(async () => {
      const list = (await core.listNamespacedEvent({ namespace: home.name, fieldSelector: 'involvedObject.name=shared' })).items.filter(
        (e) => e.reason === 'Conflict',
      );
      return list.length > 0 ? list : undefined;
    }, 'a Conflict Event');
    expect(events).toHaveLength(1);
  });

  // (A source in another namespace read from an untrusted namespace: tenancy.int.test.ts.)
  it('keeps copies when the source disappears', async () => {
    // the source goes away: the copies stay (a source that cannot be read never prunes)
    await core.createNamespacedConfigMap({ namespace: home.name, body: { metadata: { name: 'fleeting' }, data: { v: '1' } } });
    await applyManifestSync(home.name, 'fleeting', {
      sourceRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'fleeting' },
      targets: [{ namespace: home.name, name: 'fleeting-copy' }],
    });
    await waitFor(home.name, 'fleeting', ready, 'the copy');
    await core.deleteNamespacedConfigMap({ name: 'fleeting', namespace: home.name });
    await waitFor(home.name, 'fleeting', (m) => condition(m, 'Stalled')?.reason === 'SourceNotFound', 'SourceNotFound');
    expect(await configMapData(home.name, 'fleeting-copy')).toEqual({ v: '1' });
  });

  it('copies a Service without the fields a fresh create refuses (clusterIP), keeping a headless one headless', async () => {
    await core.createNamespacedService({
      namespace: home.name,
      body: { metadata: { name: 'api' }, spec: { ports: [{ port: 80 }], selector: { app: 'api' } } },
    });
    await core.createNamespacedService({
      namespace: home.name,
      body: { metadata: { name: 'peers' }, spec: { clusterIP: 'None', ports: [{ port: 80 }], selector: { app: 'api' } } },
    });
    await using target = await testNamespace({ prefix: 'msync-svc' });
    for (const name of ['api', 'peers'])
      await applyManifestSync(home.name, `svc-${name}`, { sourceRef: { apiVersion: 'v1', kind: 'Service', name }, targets: [{ namespace: target.name }] });
    await waitFor(home.name, 'svc-api', ready, 'the Service copy');
    await waitFor(home.name, 'svc-peers', ready, 'the headless Service copy');
    const source = await core.readNamespacedService({ name: 'api', namespace: home.name });
    const copied = await core.readNamespacedService({ name: 'api', namespace: target.name });
    expect(copied.spec?.clusterIP).toBeDefined();
    expect(copied.spec?.clusterIP).not.toBe(source.spec?.clusterIP);
    expect((await core.readNamespacedService({ name: 'peers', namespace: target.name })).spec?.clusterIP).toBe('None');
  });
});

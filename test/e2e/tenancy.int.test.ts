// End to end, as a hostile tenant would try it: a tenant namespace the operator does not trust creates every
// kind that writes (ConfigSync, ManifestSync, a mirroring source, NamespaceReplication) aimed at other
// namespaces and at cluster-scoped objects, without a ServiceAccount. Nothing lands outside its namespace and
// each refused target says why (NamespaceNotAllowed / SourceNotAllowed). With a ServiceAccount, its RBAC
// decides per target; a trusted namespace writes where it names. Two operators: one watches the tenant's
// namespace, the other the trusted platform namespace (both trust only the platform namespace).
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { startGitServer, startOperator, type GitServer, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import type { ConfigSync, ManifestSync, NamespaceReplication } from '@syncline/operator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, configMapData, configMapYaml, configSync, core, eventually, installCrds, kc, readConfigSync, rest } from './harness.ts';

const ID = randomBytes(3).toString('hex');
const PREFIX = `tenancy-${ID}.test`;
const WAIT_MS = 90_000;
const crPath = (plural: string, namespace: string, name: string): string => `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/${plural}/${name}`;

async function apply(kind: 'ManifestSync' | 'NamespaceReplication', namespace: string, name: string, spec: Record<string, unknown>): Promise<void> {
  await rest.request({
    method: 'PATCH',
    path: crPath(kind === 'ManifestSync' ? 'manifestsyncs' : 'namespacereplications', namespace, name),
    query: { fieldManager: 'syncline-tests', force: true },
    contentType: 'application/apply-patch+yaml',
    body: { apiVersion: 'syncline.dev/v1alpha1', kind, metadata: { name, namespace }, spec },
  });
}

type Conditioned = {
  metadata: { generation?: number };
  status?: { observedGeneration?: number; conditions?: { type: string; status: string; reason: string; message: string }[] };
};
const condition = (object: Conditioned, type: string) => object.status?.conditions?.find((c) => c.type === type);

/** The object once `check` holds for its current generation; the last status in the error otherwise. */
async function waitFor<T extends Conditioned>(read: () => Promise<T>, check: (object: T) => boolean, what: string): Promise<T> {
  let last: T | undefined;
  try {
    return await eventually(
      async () => {
        last = await read();
        return last.status?.observedGeneration === last.metadata.generation && check(last) ? last : undefined;
      },
      what,
      WAIT_MS,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; last status: ${JSON.stringify(last?.status)}`);
  }
}
const readManifestSync = (namespace: string, name: string) => rest.request<ManifestSync>({ method: 'GET', path: crPath('manifestsyncs', namespace, name) });
const readReplication = (namespace: string, name: string) =>
  rest.request<NamespaceReplication>({ method: 'GET', path: crPath('namespacereplications', namespace, name) });

async function secretExists(namespace: string, name: string): Promise<boolean> {
  try {
    await core.readNamespacedSecret({ name, namespace });
    return true;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return false;
    throw error;
  }
}

async function clusterRoleExists(name: string): Promise<boolean> {
  try {
    await kc.makeApiClient(RbacAuthorizationV1Api).readClusterRole({ name });
    return true;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return false;
    throw error;
  }
}

describe('tenancy: a tenant cannot cause writes outside its own namespace', () => {
  let git: GitServer;
  let tenant: TestNamespace;
  let platform: TestNamespace;
  let victim: TestNamespace;
  let tenantOperator: OperatorProcess;
  let platformOperator: OperatorProcess;
  const escalate = `tenancy-escalate-${ID}`;

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    tenant = await testNamespace({ prefix: 'tenant' });
    platform = await testNamespace({ prefix: 'platform' });
    victim = await testNamespace({ prefix: 'victim' });
    const trust = ['--trusted-namespaces', platform.name, '--webhook-addr', 'off', '--mirror-prefix', PREFIX];
    tenantOperator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', tenant.name, ...trust] });
    platformOperator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', platform.name, ...trust, '--mirror', 'off'] });
  });
  afterAll(async () => {
    await tenantOperator.stop();
    await platformOperator.stop();
    for (const ns of [tenant, platform, victim]) await ns[Symbol.asyncDispose]();
    await git.close();
    await kc
      .makeApiClient(RbacAuthorizationV1Api)
      .deleteClusterRole({ name: escalate })
      .catch(() => undefined);
  });

  it('ConfigSync without a ServiceAccount: a target elsewhere, and a render holding another namespace and a ClusterRole, are refused whole', async () => {
    const repo = await git.createRepo(`tenancy-cs-${ID}`);
    await repo.commit({
      'plain/app.yaml': configMapYaml('app', '  v: "1"'),
      'sneaky/own.yaml': configMapYaml('own', '  v: "1"'),
      'sneaky/planted.yaml': configMapYaml('planted', '  v: "1"').replace('metadata:\n', `metadata:\n  namespace: ${victim.name}\n`),
      'sneaky/role.yaml': `apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: ${escalate}\nrules:\n- apiGroups: ["*"]\n  resources: ["*"]\n  verbs: ["*"]\n`,
    });
    const source = (path: string) => ({ git: { repo: repo.url, revision: 'main', path } });
    // given a ConfigSync aimed at its own namespace and at the victim's
    await applyConfigSync(
      configSync(tenant.name, 'away', {
        source: source('plain'),
        refreshInterval: '1h',
        targets: [
          { name: 'home', namespace: tenant.name },
          { name: 'away', namespace: victim.name },
        ],
      }),
    );
    // and one whose render names the victim's namespace and a ClusterRole
    await applyConfigSync(
      configSync(tenant.name, 'sneaky', { source: source('sneaky'), refreshInterval: '1h', targets: [{ name: 'home', namespace: tenant.name }] }),
    );

    const away = await waitFor(
      () => readConfigSync(tenant.name, 'away'),
      (cs: ConfigSync) => (cs.status?.targets?.length ?? 0) === 2,
      'the away ConfigSync to report both targets',
    );
    const [home, refused] = [away.status?.targets?.find((t) => t.name === 'home'), away.status?.targets?.find((t) => t.name === 'away')];
    expect(home).toMatchObject({ phase: 'Synced' });
    expect(refused).toMatchObject({ phase: 'Failed', reason: 'NamespaceNotAllowed', namespace: victim.name });
    expect(refused?.message).toContain(`ConfigMap/${victim.name}/app`);
    expect(condition(away, 'Ready')).toMatchObject({ status: 'False', reason: 'NamespaceNotAllowed' });
    expect(await configMapData(tenant.name, 'app')).toEqual({ v: '1' });
    expect(await configMapData(victim.name, 'app')).toBeUndefined();

    const sneaky = await waitFor(
      () => readConfigSync(tenant.name, 'sneaky'),
      (cs: ConfigSync) => cs.status?.targets?.[0]?.phase === 'Failed',
      'the sneaky ConfigSync to be refused',
    );
    expect(sneaky.status?.targets?.[0]).toMatchObject({ reason: 'NamespaceNotAllowed', objects: 0 });
    expect(sneaky.status?.targets?.[0]?.message).toContain(`ConfigMap/${victim.name}/planted`);
    expect(sneaky.status?.targets?.[0]?.message).toContain(`ClusterRole/${escalate}`);
    expect(condition(sneaky, 'Ready')).toMatchObject({ status: 'False', reason: 'NamespaceNotAllowed' });
    // nothing of that target is written, not even the object in its own namespace
    expect(await configMapData(victim.name, 'planted')).toBeUndefined();
    expect(await configMapData(tenant.name, 'own')).toBeUndefined();
    expect(await clusterRoleExists(escalate)).toBe(false);
  });

  it('ManifestSync without a ServiceAccount: named targets and namespaceSelector {} are refused per namespace, and a source elsewhere is not read', async () => {
    await core.createNamespacedSecret({ namespace: tenant.name, body: { metadata: { name: 'loot' }, stringData: { token: 'tenant-value' } } });
    await applyManifestSync(tenant.name, 'spray', {
      sourceRef: { apiVersion: 'v1', kind: 'Secret', name: 'loot' },
      targets: [{ namespace: victim.name }, { namespace: 'kube-system' }, { namespace: 'default' }, { namespace: platform.name }, { namespaceSelector: {} }],
    });
    const spray = await waitFor(
      () => readManifestSync(tenant.name, 'spray'),
      (ms) => [victim.name, 'kube-system', 'default', platform.name].every((ns) => ms.status?.targets?.some((t) => t.name === ns && t.phase === 'Failed')),
      'every named target refused',
    );
    // every line (the named namespaces and every namespace the selector matched) is refused; none is Synced
    expect(spray.status?.targets?.length).toBeGreaterThanOrEqual(4);
    for (const line of spray.status?.targets ?? []) expect(line).toMatchObject({ phase: 'Failed', reason: 'NamespaceNotAllowed', objects: 0 });
    expect(condition(spray, 'Ready')).toMatchObject({ status: 'False', reason: 'NamespaceNotAllowed' });
    for (const ns of [victim.name, 'kube-system', 'default', platform.name]) expect(await secretExists(ns, 'loot')).toBe(false);

    // a source in another namespace is not read with the operator's rights
    await core.createNamespacedSecret({ namespace: victim.name, body: { metadata: { name: 'not-yours' }, stringData: { token: 's3cr3t-value' } } });
    await applyManifestSync(tenant.name, 'steal', {
      sourceRef: { apiVersion: 'v1', kind: 'Secret', namespace: victim.name, name: 'not-yours' },
      targets: [{ namespace: tenant.name, name: 'stolen' }],
    });
    const steal = await waitFor(
      () => readManifestSync(tenant.name, 'steal'),
      (ms) => condition(ms, 'Stalled')?.reason === 'SourceNotAllowed',
      'the source read refused',
    );
    expect(condition(steal, 'Ready')).toMatchObject({ status: 'False', reason: 'SourceNotAllowed' });
    expect(JSON.stringify(steal.status)).not.toContain('s3cr3t-value');
    expect(await secretExists(tenant.name, 'stolen')).toBe(false);
  });

  it('a mirroring Secret with targets "*" reaches only namespaces that accept replicas', async () => {
    await using optIn = await testNamespace({ prefix: 'optin', labels: { [`${PREFIX}/accept-replicas`]: 'true' } });
    await core.createNamespacedSecret({
      namespace: tenant.name,
      body: {
        metadata: { name: 'pushed', labels: { [`${PREFIX}/sync-source`]: 'true' }, annotations: { [`${PREFIX}/targets`]: '*,kube-system,default' } },
        stringData: { k: 'v' },
      },
    });
    // the namespace that opted in receives it: that reconcile decided every target namespace of the source
    await eventually(
      async () => ((await secretExists(optIn.name, 'pushed')) ? true : undefined),
      'the replica in the namespace that accepts replicas',
      WAIT_MS,
    );
    for (const ns of [victim.name, platform.name, 'kube-system', 'default']) expect(await secretExists(ns, 'pushed')).toBe(false);
  });

  it('NamespaceReplication without trust: another source namespace, and a standby in another namespace of this cluster, are refused', async () => {
    const standby = `standby-${ID}`;
    await apply('NamespaceReplication', tenant.name, 'copy-victim', { sourceNamespace: victim.name, destination: { namespace: `${standby}-a` } });
    await apply('NamespaceReplication', tenant.name, 'local-standby', { destination: { namespace: `${standby}-b` } });
    const copy = await waitFor(
      () => readReplication(tenant.name, 'copy-victim'),
      (nr) => condition(nr, 'Stalled')?.status === 'True',
      'the other source refused',
    );
    expect(condition(copy, 'Ready')).toMatchObject({ status: 'False', reason: 'SourceNotAllowed' });
    const local = await waitFor(
      () => readReplication(tenant.name, 'local-standby'),
      (nr) => condition(nr, 'Stalled')?.status === 'True',
      'the local standby refused',
    );
    expect(condition(local, 'Ready')).toMatchObject({ status: 'False', reason: 'NamespaceNotAllowed' });
    expect(condition(local, 'Ready')?.message).toContain(`${standby}-b`);
    for (const name of [`${standby}-a`, `${standby}-b`]) await expect(core.readNamespace({ name })).rejects.toMatchObject({ code: 404 });
  });

  it(
    'with a ServiceAccount, its RBAC decides per target: writes where it may succeed, the others are refused, and the source is read with it',
    async () => {
      await using allowed = await testNamespace({ prefix: 'allowed' });
      const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
      await core.createNamespacedServiceAccount({ namespace: tenant.name, body: { metadata: { name: 'deployer' } } });
      const grant = async (namespace: string, verbs: string[]): Promise<void> => {
        await rbac.createNamespacedRole({
          namespace,
          body: { metadata: { name: 'deployer' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs }] },
        });
        await rbac.createNamespacedRoleBinding({
          namespace,
          body: {
            metadata: { name: 'deployer' },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'deployer' },
            subjects: [{ kind: 'ServiceAccount', name: 'deployer', namespace: tenant.name }],
          },
        });
      };
      await grant(tenant.name, ['get', 'list', 'watch']);
      await grant(allowed.name, ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']);
      await core.createNamespacedConfigMap({ namespace: tenant.name, body: { metadata: { name: 'shared-settings' }, data: { mode: 'blue' } } });

      await applyManifestSync(tenant.name, 'with-sa', {
        sourceRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'shared-settings' },
        targets: [{ namespace: allowed.name }, { namespace: victim.name }],
        serviceAccountName: 'deployer',
      });
      const ms = await waitFor(
        () => readManifestSync(tenant.name, 'with-sa'),
        (m) => (m.status?.targets?.length ?? 0) === 2,
        'both targets tried',
      );
      expect(ms.status?.targets?.find((t) => t.name === allowed.name)).toMatchObject({ phase: 'Synced' });
      expect(ms.status?.targets?.find((t) => t.name === victim.name)).toMatchObject({ phase: 'Failed' });
      expect(ms.status?.targets?.find((t) => t.name === victim.name)?.message).toMatch(/forbidden/i);
      expect(await configMapData(allowed.name, 'shared-settings')).toEqual({ mode: 'blue' });
      expect(await configMapData(victim.name, 'shared-settings')).toBeUndefined();

      // the source is read with the account too: a source it may not read is SourceForbidden, not copied
      await core.createNamespacedConfigMap({ namespace: victim.name, body: { metadata: { name: 'private' }, data: { secret: 'victim-only' } } });
      await applyManifestSync(tenant.name, 'sa-steal', {
        sourceRef: { apiVersion: 'v1', kind: 'ConfigMap', namespace: victim.name, name: 'private' },
        targets: [{ namespace: allowed.name }],
        serviceAccountName: 'deployer',
      });
      const steal = await waitFor(
        () => readManifestSync(tenant.name, 'sa-steal'),
        (m) => condition(m, 'Stalled')?.reason === 'SourceForbidden',
        'the read refused by RBAC',
      );
      expect(JSON.stringify(steal.status)).not.toContain('victim-only');
      expect(await configMapData(allowed.name, 'private')).toBeUndefined();

      // a ConfigSync with the account: its target in the allowed namespace applies, the victim's is forbidden
      const repo = await git.createRepo(`tenancy-sa-${ID}`);
      await repo.commit({ 'app/cm.yaml': configMapYaml('from-git', '  v: "1"') });
      await applyConfigSync(
        configSync(tenant.name, 'with-sa', {
          source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
          refreshInterval: '1h',
          serviceAccountName: 'deployer',
          targets: [
            { name: 'allowed', namespace: allowed.name },
            { name: 'victim', namespace: victim.name },
          ],
        }),
      );
      const cs = await waitFor(
        () => readConfigSync(tenant.name, 'with-sa'),
        (c: ConfigSync) => (c.status?.targets?.length ?? 0) === 2,
        'both ConfigSync targets tried',
      );
      expect(cs.status?.targets?.find((t) => t.name === 'allowed')).toMatchObject({ phase: 'Synced' });
      expect(cs.status?.targets?.find((t) => t.name === 'victim')?.message).toMatch(/forbidden/i);
      expect(await configMapData(allowed.name, 'from-git')).toEqual({ v: '1' });
      expect(await configMapData(victim.name, 'from-git')).toBeUndefined();
    },
    4 * WAIT_MS,
  );

  it('a trusted namespace writes where it names, without a ServiceAccount: a ManifestSync copy and a mirroring push', async () => {
    await core.createNamespacedConfigMap({ namespace: platform.name, body: { metadata: { name: 'ca-bundle' }, data: { ca: 'pem' } } });
    await applyManifestSync(platform.name, 'ca', {
      sourceRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'ca-bundle' },
      targets: [{ namespace: victim.name }],
    });
    await waitFor(
      () => readManifestSync(platform.name, 'ca'),
      (m) => condition(m, 'Ready')?.status === 'True',
      'the trusted copy',
    );
    expect(await configMapData(victim.name, 'ca-bundle')).toEqual({ ca: 'pem' });

    await core.createNamespacedSecret({
      namespace: platform.name,
      body: {
        metadata: { name: 'registry', labels: { [`${PREFIX}/sync-source`]: 'true' }, annotations: { [`${PREFIX}/targets`]: victim.name } },
        stringData: { auth: 'x' },
      },
    });
    await eventually(
      async () => ((await secretExists(victim.name, 'registry')) ? true : undefined),
      'the trusted source replica, without the namespace opting in',
      WAIT_MS,
    );
  });
});

async function applyManifestSync(namespace: string, name: string, spec: Record<string, unknown>): Promise<void> {
  await apply('ManifestSync', namespace, name, spec);
}

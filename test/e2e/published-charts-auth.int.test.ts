// End to end: charts in private places, as Flux and Argo CD users keep them. A CNCF distribution registry over
// HTTPS with a private CA and htpasswd (bcrypt) basic auth, the chart pushed by the real `helm registry login`
// + `helm push`, and one using the Docker token flow (distribution's auth.token, a token service issuing ES256
// JWTs); a Helm repository behind basic auth. Credentials come from a Secret in the sync's namespace,
// with Flux HelmRepository's keys (username/password, ca.crt) or, for a registry, a kubernetes.io/dockerconfigjson
// Secret as `kubectl create secret docker-registry` makes it. A wrong password fails the sync with a message
// naming the ConfigSync, the registry and the chart, and the password appears in no status, event or log line;
// a Secret in another namespace is never read.
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  createTestCa,
  ensureRenderEngine,
  helmPackage,
  startGitServer,
  startHelmRepository,
  startOciRegistry,
  startOperator,
  type GitServer,
  type HelmRepository,
  type OciRegistry,
  type OperatorProcess,
  type TestRepo,
} from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import type { ConfigSync } from '@syncline/operator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, condition, configMapData, configSync, core, eventually, installCrds, patchConfigSync, readConfigSync, rest } from './harness.ts';

const run = promisify(execFile);
const chartSource = join(import.meta.dirname, '..', '..', 'packages', 'source-helm', 'src', 'testdata', 'hello');
const progress = (line: string): void => console.log(`[published-charts-auth] ${line}`);
const registryAuth = { username: 'robot', password: 'registry-Pass-4711' };
const wrongPassword = 'not-the-Pass-0815';
const repoAuth = { username: 'charts', password: 'repo-Pass-2024' };
const wrongRepoPassword = 'wrong-repo-Pass-66';
const allPasswords = [registryAuth.password, wrongPassword, repoAuth.password, wrongRepoPassword];

describe('charts from a private OCI registry and a private Helm repository, end to end', () => {
  let git: GitServer;
  let repo: TestRepo;
  let ns: TestNamespace;
  let other: TestNamespace;
  let operator: OperatorProcess;
  let registry: OciRegistry;
  let charts: HelmRepository & { down: boolean };
  let work: string;
  let caCert: string;
  let ca: { key: string; cert: string };
  let archive: string;

  const until = async (name: string, check: (cs: ConfigSync) => boolean, what: string, timeoutMs = 120_000): Promise<ConfigSync> => {
    let last: ConfigSync | undefined;
    try {
      return await eventually(
        async () => {
          const cs = (last = await readConfigSync(ns.name, name));
          return cs.status?.observedGeneration === cs.metadata.generation && check(cs) ? cs : undefined;
        },
        `${name}: ${what}`,
        timeoutMs,
      );
    } catch (error) {
      throw new Error(`${(error as Error).message}; last status: ${JSON.stringify(last?.status)}`);
    }
  };
  const ready = (name: string): Promise<ConfigSync> => until(name, (c) => condition(c, 'Ready')?.status === 'True', 'Ready');
  const fetchFailed = (name: string, text: string): Promise<ConfigSync> =>
    until(name, (c) => condition(c, 'Ready')?.reason === 'FetchFailed' && (condition(c, 'Ready')?.message ?? '').includes(text), `FetchFailed saying ${text}`);
  const askAgain = (name: string): Promise<void> =>
    patchConfigSync(ns.name, name, { metadata: { annotations: { 'syncline.dev/reconcile-requested-at': new Date().toISOString() } } });

  /** No password, right or wrong, in the sync's status, its events, the operator's log or the registry's log. */
  const expectNoPassword = async (name: string): Promise<void> => {
    const events = await core.listNamespacedEvent({ namespace: ns.name, fieldSelector: `involvedObject.name=${name}` });
    expect(events.items.length).toBeGreaterThan(0);
    // (the registry's log is read too: it logs each request with the user it authenticated)
    expect(registry.log()).toContain(`msg="authorized request" auth.user.name=${registryAuth.username}`);
    const seen = [JSON.stringify((await readConfigSync(ns.name, name)).status), JSON.stringify(events.items), JSON.stringify(operator.logs), registry.log()];
    for (const text of seen) for (const password of allPasswords) expect(text).not.toContain(password);
    // nor in base64, as a Basic header would carry it
    for (const text of seen)
      for (const password of allPasswords) expect(text).not.toContain(Buffer.from(`${registryAuth.username}:${password}`).toString('base64'));
  };

  const secret = async (namespace: string, name: string, body: Record<string, unknown>): Promise<void> => {
    await rest.request({ method: 'DELETE', path: `/api/v1/namespaces/${namespace}/secrets/${name}` }).catch(() => undefined);
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${namespace}/secrets`,
      body: { apiVersion: 'v1', kind: 'Secret', metadata: { name }, ...body },
    });
  };
  /** What `kubectl create secret docker-registry` makes, with the registry's CA added beside it. */
  const dockerRegistrySecret = async (name: string, password: string): Promise<void> => {
    const { stdout } = await run('kubectl', [
      'create',
      'secret',
      'docker-registry',
      name,
      `--docker-server=${registry.host}`,
      `--docker-username=${registryAuth.username}`,
      `--docker-password=${password}`,
      '--dry-run=client',
      '-o',
      'json',
    ]);
    const made = JSON.parse(stdout) as { type: string; data: Record<string, string> };
    expect(made.type).toBe('kubernetes.io/dockerconfigjson');
    await secret(ns.name, name, { type: made.type, data: { ...made.data, 'ca.crt': Buffer.from(caCert).toString('base64') } });
  };

  const ociSync = (name: string, repository: Record<string, unknown>) =>
    configSync(ns.name, name, {
      source: {
        git: { repo: repo.url, revision: 'main' },
        helm: { repository: { url: `oci://${registry.host}/charts`, chart: 'hello', version: '1.0.0', ...repository } },
      },
      refreshInterval: '1h',
      values: { greeting: `from ${name}` },
      targets: [{ name: 'main', namespace: ns.name }],
    });

  beforeAll(async () => {
    await installCrds();
    work = mkdtempSync(join(tmpdir(), 'syncline-private-charts-'));
    git = await startGitServer();
    repo = await git.createRepo('private-charts');
    await repo.commit({ 'README.md': 'charts come from elsewhere\n' });
    ns = await testNamespace({ prefix: 'private-charts' });
    other = await testNamespace({ prefix: 'other-tenant' });
    const testCa = await createTestCa();
    caCert = testCa.caCert;
    ca = testCa.server;
    registry = await startOciRegistry({ auth: registryAuth, tls: { ...ca, ca: caCert }, onProgress: progress });
    const dir = join(work, 'hello');
    cpSync(chartSource, dir, { recursive: true });
    writeFileSync(join(dir, 'Chart.yaml'), readFileSync(join(dir, 'Chart.yaml'), 'utf8').replace(/^version: .*$/m, 'version: 1.0.0'));
    archive = await helmPackage(dir, join(work, 'packages'), { onProgress: progress });
    await registry.push(archive, 'charts');
    charts = await startHelmRepository({ auth: repoAuth, tls: ca, onProgress: progress });
    cpSync(archive, join(charts.dir, 'hello-1.0.0.tgz'));
    await charts.index();
    const engine = await ensureRenderEngine({ onProgress: progress });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name, '--render-engine', engine] });
  }, 1_800_000);
  afterAll(async () => {
    await operator?.stop();
    await ns?.[Symbol.asyncDispose]();
    await other?.[Symbol.asyncDispose]();
    await git?.close();
    await registry?.close();
    await charts?.close();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it('the registry really wants credentials: a Secret without them fails clearly', async () => {
    // given a registry behind htpasswd auth and a sync whose Secret holds only the CA (to get past TLS)
    await secret(ns.name, 'ca-only', { stringData: { 'ca.crt': caCert } });
    await applyConfigSync(ociSync('anonymous', { secretRef: { name: 'ca-only' } }));
    // then it fails with AuthFailed's message, naming the sync, the registry and the chart, and stalls
    const failing = await fetchFailed('anonymous', 'HTTP 401');
    const message = condition(failing, 'Ready')?.message ?? '';
    expect(message).toContain(`ConfigSync ${ns.name}/anonymous`);
    expect(message).toContain(`oci://${registry.host}/charts/hello`);
    expect(message).toContain(`the Secret ${ns.name}/ca-only holds no credentials`);
    expect(condition(failing, 'Stalled')?.status).toBe('True');
  });

  it('username and password from a Secret sync the chart; a wrong password fails clearly, leaks nowhere, and loses nothing', async () => {
    // given the registry's credentials and its CA in a Secret of the sync's namespace (Flux's keys)
    await secret(ns.name, 'registry-auth', { stringData: { username: registryAuth.username, password: registryAuth.password, 'ca.crt': caCert } });
    await applyConfigSync(ociSync('private-oci', { secretRef: { name: 'registry-auth' } }));
    // then the chart syncs
    const synced = await ready('private-oci');
    expect(synced.status?.targets?.[0]?.chart).toMatch(/^hello@1\.0\.0 \(sha256:[0-9a-f]{64}\)$/);
    expect(await configMapData(ns.name, 'private-oci-hello')).toMatchObject({ chartVersion: '1.0.0', greeting: 'from private-oci' });

    // when the Secret's password goes wrong and the sync looks again
    await secret(ns.name, 'registry-auth', { stringData: { username: registryAuth.username, password: wrongPassword, 'ca.crt': caCert } });
    await askAgain('private-oci');
    // then it fails clearly: the sync, the registry, the chart and the Secret named, the password nowhere
    const failing = await fetchFailed('private-oci', 'HTTP 401');
    const message = condition(failing, 'Ready')?.message ?? '';
    expect(message).toContain(`ConfigSync ${ns.name}/private-oci`);
    expect(message).toContain(`oci://${registry.host}/charts/hello`);
    expect(message).toContain(`the Secret ${ns.name}/registry-auth`);
    expect(condition(failing, 'Stalled')?.status).toBe('True');
    // (the registry checked the password against its bcrypt hash and refused it)
    expect(registry.log()).toContain('hashedPassword is not the hash of the given password');
    await eventually(async () => {
      const events = await core.listNamespacedEvent({ namespace: ns.name, fieldSelector: 'involvedObject.name=private-oci' });
      return events.items.some((e) => e.reason === 'FetchFailed' && (e.message ?? '').includes('HTTP 401')) ? true : undefined;
    }, 'a FetchFailed event');
    await expectNoPassword('private-oci');
    // and what was applied stays
    expect((await configMapData(ns.name, 'private-oci-hello'))?.['chartVersion']).toBe('1.0.0');
    expect(failing.status?.inventory?.[0]?.entries.length).toBeGreaterThan(0);

    // when the password is right again, the Secret's change wakes the sync (nobody asks it) and it is Ready again
    await secret(ns.name, 'registry-auth', { stringData: { username: registryAuth.username, password: registryAuth.password, 'ca.crt': caCert } });
    await ready('private-oci');
  });

  it('a kubernetes.io/dockerconfigjson Secret made by kubectl create secret docker-registry works for the registry', async () => {
    // given the Secret kubectl makes for the registry (plus its CA)
    await dockerRegistrySecret('regcred', registryAuth.password);
    await applyConfigSync(ociSync('docker-config', { secretRef: { name: 'regcred' } }));
    // then the chart syncs
    await ready('docker-config');
    expect((await configMapData(ns.name, 'docker-config-hello'))?.['greeting']).toBe('from docker-config');

    // when its password is wrong, the same clear failure, and no password anywhere
    await dockerRegistrySecret('regcred', wrongPassword);
    await askAgain('docker-config');
    const failing = await fetchFailed('docker-config', 'HTTP 401');
    expect(condition(failing, 'Ready')?.message).toContain(`the Secret ${ns.name}/regcred`);
    await expectNoPassword('docker-config');
  });

  it("a registry using the Docker token flow: the Secret's credentials buy a token for the chart's pull scope", async () => {
    // given a registry whose 401 names a token service (distribution's auth.token), the chart pushed by helm through it
    await using tokenRegistry = await startOciRegistry({ auth: registryAuth, tls: { ...ca, ca: caCert }, tokenAuth: true, onProgress: progress });
    await tokenRegistry.push(archive, 'team/charts');
    expect(tokenRegistry.tokenRequests.some((r) => r.granted && r.userAgent.startsWith('Helm/'))).toBe(true);
    const tokenSync = (name: string, secretName: string) =>
      configSync(ns.name, name, {
        source: {
          git: { repo: repo.url, revision: 'main' },
          helm: { repository: { url: `oci://${tokenRegistry.host}/team/charts`, chart: 'hello', version: '1.0.0', secretRef: { name: secretName } } },
        },
        refreshInterval: '1h',
        targets: [{ name: 'main', namespace: ns.name }],
      });
    await secret(ns.name, 'token-auth', { stringData: { username: registryAuth.username, password: registryAuth.password, 'ca.crt': caCert } });
    await applyConfigSync(tokenSync('token-flow', 'token-auth'));
    // then the sync gets a token for pulling the chart's repository, and the chart syncs
    await ready('token-flow');
    expect((await configMapData(ns.name, 'token-flow-hello'))?.['chartVersion']).toBe('1.0.0');
    const ours = tokenRegistry.tokenRequests.filter((r) => r.userAgent === 'syncline');
    expect(ours.length).toBeGreaterThan(0);
    expect(ours.every((r) => r.granted && r.username === registryAuth.username)).toBe(true);
    expect(ours.flatMap((r) => r.scopes)).toContain('repository:team/charts/hello:pull');

    // when the password is wrong, the token service refuses it and the sync says so, naming what it must
    await secret(ns.name, 'token-auth', { stringData: { username: registryAuth.username, password: wrongPassword, 'ca.crt': caCert } });
    await askAgain('token-flow');
    const failing = await fetchFailed('token-flow', "the registry's token service: HTTP 401");
    const message = condition(failing, 'Ready')?.message ?? '';
    expect(message).toContain(`ConfigSync ${ns.name}/token-flow`);
    expect(message).toContain(`oci://${tokenRegistry.host}/team/charts/hello`);
    expect(message).toContain(`the Secret ${ns.name}/token-auth`);
    expect(tokenRegistry.tokenRequests.some((r) => r.userAgent === 'syncline' && !r.granted)).toBe(true);
    for (const text of [JSON.stringify(failing.status), JSON.stringify(operator.logs), tokenRegistry.log()])
      for (const password of allPasswords) expect(text).not.toContain(password);
  });

  it('a Secret in another namespace is never read: the reference has no namespace', async () => {
    // given the right credentials in another tenant's namespace, and a sync that tries to name it there
    await secret(other.name, 'shared-registry-auth', { stringData: { username: registryAuth.username, password: registryAuth.password, 'ca.crt': caCert } });
    const crossing = ociSync('cross-namespace', { secretRef: { name: 'shared-registry-auth', namespace: other.name } });
    // then server-side apply refuses the field outright (the schema has no namespace in the reference)
    await expect(applyConfigSync(crossing)).rejects.toThrow(/secretRef\.namespace: field not declared in schema/);
    // and a plain create keeps no namespace in the reference (the API server prunes what the schema lacks)
    await rest.request({ method: 'POST', path: `/apis/syncline.dev/v1alpha1/namespaces/${ns.name}/configsyncs`, body: crossing });
    const stored = await readConfigSync(ns.name, 'cross-namespace');
    expect(stored.spec.source.helm?.repository?.secretRef).toEqual({ name: 'shared-registry-auth' });
    // and the sync looks for the Secret in its own namespace only, and fails there
    const failing = await fetchFailed('cross-namespace', 'does not exist');
    expect(condition(failing, 'Ready')?.message).toContain(
      `the Secret ${ns.name}/shared-registry-auth named in spec.source.helm.repository.secretRef does not exist`,
    );
    expect(await configMapData(ns.name, 'cross-namespace-hello')).toBeUndefined();
  });

  it('a Helm repository behind basic auth: a wrong password fails clearly and leaks nowhere; a Docker config is refused there', async () => {
    const repoSync = (name: string, secretName: string) =>
      configSync(ns.name, name, {
        source: {
          git: { repo: repo.url, revision: 'main' },
          helm: { repository: { url: charts.url, chart: 'hello', version: '1.0.0', secretRef: { name: secretName } } },
        },
        refreshInterval: '1h',
        targets: [{ name: 'main', namespace: ns.name }],
      });
    // given the repository's credentials with a wrong password
    await secret(ns.name, 'repo-auth', { stringData: { username: repoAuth.username, password: wrongRepoPassword, 'ca.crt': caCert } });
    await applyConfigSync(repoSync('private-repo', 'repo-auth'));
    // then the failure names the sync, the repository and the chart, and the password appears nowhere
    const failing = await fetchFailed('private-repo', 'HTTP 401');
    const message = condition(failing, 'Ready')?.message ?? '';
    expect(message).toContain(`ConfigSync ${ns.name}/private-repo`);
    expect(message).toContain(`${charts.url}/index.yaml (chart hello)`);
    expect(message).toContain(`the Secret ${ns.name}/repo-auth`);
    await expectNoPassword('private-repo');
    // when the password is right, it syncs
    await secret(ns.name, 'repo-auth', { stringData: { username: repoAuth.username, password: repoAuth.password, 'ca.crt': caCert } });
    await askAgain('private-repo');
    await ready('private-repo');
    expect((await configMapData(ns.name, 'private-repo-hello'))?.['chartVersion']).toBe('1.0.0');

    // and a Docker config Secret (an OCI registry's) on a Helm repository is refused with a message that says so
    await dockerRegistrySecret('regcred-for-repo', registryAuth.password);
    await applyConfigSync(repoSync('repo-with-docker-config', 'regcred-for-repo'));
    const refused = await fetchFailed('repo-with-docker-config', 'only an oci:// registry reads');
    expect(condition(refused, 'Stalled')?.status).toBe('True');
  });
});

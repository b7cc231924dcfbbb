// End to end: charts published the way Helm users publish them, synced by the real operator against the real
// control plane. An OCI registry (CNCF distribution, charts pushed by the real `helm push`) and a Helm
// repository (`helm package` + `helm repo index`, HTTPS with a private CA, basic auth from a Secret in the
// sync's namespace). A version bump re-renders; a wrong digest or an unreachable server fails the sync clearly,
// is retried, and leaves what was applied in place.
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { applyConfigSync, condition, configMapData, configSync, installCrds, patchConfigSync, rest, untilConfigSync } from './harness.ts';

const chartSource = join(import.meta.dirname, '..', '..', 'packages', 'source-helm', 'src', 'testdata', 'hello');
const progress = (line: string): void => console.log(`[published-charts] ${line}`);
const auth = { username: 'charts', password: 'repo-Password-71' };

describe('charts from an OCI registry and a Helm repository, end to end', () => {
  let git: GitServer;
  let repo: TestRepo;
  let ns: TestNamespace;
  let operator: OperatorProcess;
  let registry: OciRegistry;
  let charts: HelmRepository & { down: boolean };
  let work: string;
  let engine: string;

  const until = (name: string, check: (cs: ConfigSync) => boolean, what: string): Promise<ConfigSync> => untilConfigSync(ns.name, name, check, what, 120_000);
  const ready = (name: string): Promise<ConfigSync> => until(name, (c) => condition(c, 'Ready')?.status === 'True', 'Ready');

  /** The test chart at `version`, packaged by the real `helm package`. */
  const packageVersion = async (version: string): Promise<string> => {
    const dir = join(work, `hello-${version}`);
    cpSync(chartSource, join(dir, 'hello'), { recursive: true });
    const chartYaml = join(dir, 'hello', 'Chart.yaml');
    writeFileSync(chartYaml, readFileSync(chartYaml, 'utf8').replace(/^version: .*$/m, `version: ${version}`));
    return helmPackage(join(dir, 'hello'), join(work, 'packages'), { onProgress: progress });
  };

  beforeAll(async () => {
    await installCrds();
    work = mkdtempSync(join(tmpdir(), 'syncline-published-charts-'));
    git = await startGitServer();
    repo = await git.createRepo('published-charts');
    await repo.commit({ 'values/prod.yaml': 'replicas: 2\n' });
    ns = await testNamespace({ prefix: 'charts' });
    registry = await startOciRegistry({ onProgress: progress });
    for (const version of ['1.0.0', '1.1.0']) await registry.push(await packageVersion(version), 'charts');
    const ca = await createTestCa();
    charts = await startHelmRepository({ auth, tls: ca.server, onProgress: progress });
    cpSync(await packageVersion('2.3.0'), join(charts.dir, 'hello-2.3.0.tgz'));
    await charts.index();
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${ns.name}/secrets`,
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'chart-repo' },
        stringData: { username: auth.username, password: auth.password, 'ca.crt': ca.caCert },
      },
    });
    engine = await ensureRenderEngine({ onProgress: progress });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name, '--render-engine', engine] });
  }, 1_800_000);
  afterAll(async () => {
    await operator?.stop();
    await ns?.[Symbol.asyncDispose]();
    await git?.close();
    await registry?.close();
    await charts?.close();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  const ociSync = (repository: Record<string, unknown>) =>
    configSync(ns.name, 'from-oci', {
      source: {
        git: { repo: repo.url, revision: 'main' },
        helm: { repository: { url: `oci://${registry.host}/charts`, chart: 'hello', insecure: true, ...repository } },
      },
      refreshInterval: '1h',
      values: { greeting: 'from the sync', settings: { size: null } },
      targets: [{ name: 'main', namespace: ns.name }],
    });

  it('an OCI chart gets Ready; a version bump re-renders; a wrong digest fails (retried) and loses nothing', async () => {
    // given a sync of the OCI chart at 1.0.0
    await applyConfigSync(ociSync({ version: '1.0.0' }));
    const synced = await ready('from-oci');
    expect(synced.status?.targets?.[0]).toMatchObject({ engine: 'helm', chart: expect.stringMatching(/^hello@1\.0\.0 \(sha256:[0-9a-f]{64}\)$/) as unknown });
    // then the chart's objects are applied with the sync's values (null deletes the chart's default, as in Helm)
    const first = await configMapData(ns.name, 'from-oci-hello');
    expect(first).toMatchObject({ chartVersion: '1.0.0', greeting: 'from the sync', color: 'blue' });
    expect(first?.['size']).toBeUndefined();

    // when the version is bumped (a range admitting the newer one), the new chart renders
    await applyConfigSync(ociSync({ version: '^1.0' }));
    expect((await ready('from-oci')).status?.targets?.[0]?.chart).toMatch(/^hello@1\.1\.0 /);
    expect((await configMapData(ns.name, 'from-oci-hello'))?.['chartVersion']).toBe('1.1.0');

    // when the sync pins a digest the registry does not have, it fails clearly and keeps retrying
    const wrong = `sha256:${'e'.repeat(64)}`;
    await applyConfigSync(ociSync({ version: '^1.0', digest: wrong }));
    const failing = await until('from-oci', (c) => condition(c, 'Ready')?.status === 'False' && condition(c, 'Ready')?.reason === 'FetchFailed', 'FetchFailed');
    expect(condition(failing, 'Ready')?.message).toContain(wrong);
    expect(condition(failing, 'Stalled')?.status ?? 'False').toBe('False');
    // and nothing it applied is lost
    expect((await configMapData(ns.name, 'from-oci-hello'))?.['chartVersion']).toBe('1.1.0');
    expect(failing.status?.inventory?.[0]?.entries.length).toBeGreaterThan(0);

    // when the pin is the chart's real digest, it is Ready again
    const manifest = await fetch(`http://${registry.host}/v2/charts/hello/manifests/1.1.0`, {
      headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
    });
    await applyConfigSync(ociSync({ version: '^1.0', digest: manifest.headers.get('docker-content-digest') }));
    await ready('from-oci');

    // and syncline diff fetches and renders the chart as the operator does: nothing to change
    const diff = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [
          join(import.meta.dirname, '..', '..', 'packages', 'cli', 'bin', 'syncline.js'),
          'diff',
          'from-oci',
          '--kubeconfig',
          testKubeconfigPath(),
          '-n',
          ns.name,
          '--allow-insecure-http',
          '--render-engine',
          engine,
        ],
        { timeout: 120_000 },
        (error, stdout, stderr) => {
          resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr });
        },
      );
    });
    expect(diff.stderr).toBe('');
    expect(diff.stdout).toContain('(rendered by helm)');
    expect(diff.stdout).toContain('# 0 object(s) differ');
    expect(diff.code).toBe(0);
  });

  it('a Helm repository chart over HTTPS with basic auth and CA from a Secret; an outage fails clearly and loses nothing', async () => {
    const sync = configSync(ns.name, 'from-repo', {
      source: {
        git: { repo: repo.url, revision: 'main' },
        helm: { repository: { url: charts.url, chart: 'hello', version: '~2.3', secretRef: { name: 'chart-repo' } } },
      },
      refreshInterval: '1h',
      valuesFiles: ['values/prod.yaml'],
      targets: [{ name: 'main', namespace: ns.name }],
    });
    await applyConfigSync(sync);
    await ready('from-repo');
    expect((await configMapData(ns.name, 'from-repo-hello'))?.['chartVersion']).toBe('2.3.0');
    const deployment = await rest.request<{ spec: { replicas: number } }>({
      method: 'GET',
      path: `/apis/apps/v1/namespaces/${ns.name}/deployments/from-repo-hello`,
    });
    expect(deployment.spec.replicas).toBe(2);

    // when the repository is down and the sync is asked to look again, it fails (retried) without a credential in sight
    charts.down = true;
    try {
      await patchConfigSync(ns.name, 'from-repo', { metadata: { annotations: { 'syncline.dev/reconcile-requested-at': new Date().toISOString() } } });
      const failing = await until('from-repo', (c) => condition(c, 'Ready')?.reason === 'FetchFailed', 'FetchFailed');
      const message = condition(failing, 'Ready')?.message ?? '';
      expect(message).toContain('HTTP 503');
      expect(JSON.stringify(failing.status)).not.toContain(auth.password);
      expect((await configMapData(ns.name, 'from-repo-hello'))?.['chartVersion']).toBe('2.3.0');
    } finally {
      charts.down = false;
    }
    // then, the repository back, the retry makes it Ready
    await ready('from-repo');
  });
});

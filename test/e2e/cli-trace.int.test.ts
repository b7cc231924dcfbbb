// `syncline trace`, `syncline check` and completion of names, as users run them: the real executable against
// the real control plane, a real operator (leader-elected, so it holds a Lease) and the real Git server.
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { startGitServer, startOperator, type GitServer, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, configMapYaml, configSync, eventually, installCrds, rest, waitForReady } from './harness.ts';

const root = join(import.meta.dirname, '..', '..');
const bin = join(root, 'packages', 'cli', 'bin', 'syncline.js');

type Result = { code: number; stdout: string; stderr: string };

describe('syncline trace, check and completion', () => {
  let git: GitServer;
  let ns: TestNamespace;
  let operator: OperatorProcess;
  let dir: string;
  let sha: string;
  let env: NodeJS.ProcessEnv;

  function run(file: string, args: readonly string[]): Promise<Result> {
    return new Promise((resolve) => {
      execFile(file, [...args], { env, cwd: root, timeout: 120_000 }, (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      });
    });
  }
  const syncline = (args: readonly string[]): Promise<Result> => run(process.execPath, [bin, ...args]);

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    ns = await testNamespace({ prefix: 'trace' });
    dir = await mkdtemp(join(tmpdir(), 'syncline-trace-'));
    // `syncline` on PATH (the completion scripts call it) and the test cluster as the default kubeconfig
    await writeFile(join(dir, 'syncline'), `#!/bin/sh\nexec "${process.execPath}" "${bin}" "$@"\n`);
    await chmod(join(dir, 'syncline'), 0o755);
    env = { ...process.env, KUBECONFIG: testKubeconfigPath(), PATH: `${dir}${delimiter}${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}` };
    operator = await startOperator({
      kubeconfig: testKubeconfigPath(),
      args: ['--namespace', ns.name, '--leader-elect', '--leader-election-namespace', ns.name, '--leader-election-id', 'syncline-leader-trace'],
    });
    const repo = await git.createRepo('trace');
    sha = await repo.commit(
      { 'app/settings.yaml': configMapYaml('settings', '  v: "1"'), 'app/other.yaml': configMapYaml('other', '  v: "2"') },
      { message: 'Settings for the web app\n\nWith a body.' },
    );
    await applyConfigSync(
      configSync(ns.name, 'web', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '1h',
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );
    await waitForReady(ns.name, 'web', undefined, 90_000);
  }, 180_000);
  afterAll(async () => {
    await operator.stop();
    await ns[Symbol.asyncDispose]();
    await git.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('trace KIND/NAME: the sync, target, commit (message, author) and file that produced it, proven by the inventory', async () => {
    const traced = await syncline(['trace', 'configmap/settings', '-n', ns.name, '--allow-insecure-http']);
    expect(traced.code, traced.stderr).toBe(0);
    const text = traced.stdout;
    expect(text).toMatch(/^Object: +ConfigMap\/settings$/m);
    expect(text).toMatch(/^Status: +Managed by Syncline$/m);
    expect(text).toMatch(new RegExp(`^Proof: +listed in status.inventory of ConfigSync ${ns.name}/web, target main$`, 'm'));
    expect(text).toMatch(new RegExp(`^ConfigSync: +${ns.name}/web$`, 'm'));
    expect(text).toMatch(new RegExp(`^Revision: +main@sha1:${sha}$`, 'm'));
    expect(text).toMatch(new RegExp(`^Commit: +${sha.slice(0, 12)} Settings for the web app$`, 'm'));
    expect(text).toMatch(/^Author: +Syncline Test <.+@.+>, 20\d\d-/m);
    expect(text).toMatch(/^File: +app\/settings\.yaml$/m);
    // -o json carries the whole message; KIND NAME and kubectl's short names work too
    const json = await syncline(['trace', 'cm', 'settings', '-n', ns.name, '--allow-insecure-http', '-o', 'json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      managed: true,
      owner: { kind: 'ConfigSync', name: 'web', target: 'main' },
      source: { commit: { sha, message: 'Settings for the web app\n\nWith a body.' }, files: ['app/settings.yaml'] },
    });
  }, 120_000);

  it("trace of a ManifestSync's copy names the ManifestSync and the copy's namespace, proven by its inventory", async () => {
    await rest.request({ method: 'POST', path: `/api/v1/namespaces/${ns.name}/configmaps`, body: { metadata: { name: 'origin' }, data: { a: '1' } } });
    await rest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${ns.name}/manifestsyncs`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'ManifestSync',
        metadata: { name: 'copy' },
        spec: { sourceRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'origin' }, targets: [{ namespace: ns.name, name: 'origin-copy' }] },
      },
    });
    const traced = await eventually(
      async () => {
        const result = await syncline(['trace', 'configmap/origin-copy', '-n', ns.name]);
        return result.code === 0 ? result : undefined;
      },
      'the copy to be traced',
      90_000,
    );
    expect(traced.stdout).toMatch(new RegExp(`^Proof: +listed in status.inventory of ManifestSync ${ns.name}/copy, target ${ns.name}$`, 'm'));
    expect(traced.stdout).toMatch(new RegExp(`^ManifestSync: +${ns.name}/copy$`, 'm'));
  }, 120_000);

  it("trace says so when an object is not Syncline's: no marks, or marks no inventory backs (exit 1)", async () => {
    // given a ConfigMap nobody synced, and one that copies the labels of a synced one
    await rest.request({ method: 'POST', path: `/api/v1/namespaces/${ns.name}/configmaps`, body: { metadata: { name: 'handmade' }, data: { a: '1' } } });
    const synced = await rest.request<{ metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } }>({
      method: 'GET',
      path: `/api/v1/namespaces/${ns.name}/configmaps/settings`,
    });
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${ns.name}/configmaps`,
      body: {
        metadata: {
          name: 'impostor',
          labels: synced.metadata.labels,
          annotations: { 'syncline.dev/owned-by': synced.metadata.annotations?.['syncline.dev/owned-by'] ?? '' },
        },
        data: { a: '1' },
      },
    });

    const plain = await syncline(['trace', 'configmap/handmade', '-n', ns.name]);
    expect(plain.code).toBe(1);
    expect(plain.stdout).toMatch(/^Status: +Not managed by Syncline$/m);
    expect(plain.stdout).toContain('carries none of the marks Syncline puts on what it applies');

    const impostor = await syncline(['trace', 'configmap/impostor', '-n', ns.name]);
    expect(impostor.code).toBe(1);
    expect(impostor.stdout).toMatch(/^Status: +Not managed by Syncline$/m);
    expect(impostor.stdout).toContain(`its marks name ConfigSync ${ns.name}/web, but its status.inventory does not list it`);

    const missing = await syncline(['trace', 'configmap/nothing', '-n', ns.name]);
    expect(missing).toMatchObject({ code: 1, stderr: 'Error from server (NotFound): configmaps "nothing" not found\n' });
    // A kind no test installs (the shared control plane holds other tests' CRDs, e.g. a Widget).
    const badKind = await syncline(['trace', 'nosuchkind/x', '-n', ns.name]);
    expect(badKind).toMatchObject({ code: 1, stderr: 'error: the server doesn\'t have a resource type "nosuchkind"\n' });
  }, 120_000);

  it('check: version, CRDs current, the operator by its Lease and its /metrics, the access of the user; exit 1 when one fails', async () => {
    const ok = await syncline(['check', '-n', ns.name, '--operator-namespace', ns.name, '--metrics-url', `http://${operator.probeAddress}/metrics`]);
    expect(ok.code, ok.stdout).toBe(0);
    expect(ok.stdout).toMatch(/^✔ Kubernetes v1\.\d+\.\d+\S* >= 1\.28\.0$/m);
    for (const crd of [
      'configsyncs',
      'manifestsyncs',
      'remoteclusters',
      'namespacereplications',
      'namespacereplicationpolicies',
      'notificationproviders',
      'notificationalerts',
    ]) {
      expect(ok.stdout).toContain(`✔ ${crd}.syncline.dev: installed, established, current`);
    }
    expect(ok.stdout).toMatch(new RegExp(`^✔ leader Lease ${ns.name}/syncline-leader-trace: held by \\S+, renewed \\d+s ago$`, 'm'));
    expect(ok.stdout).toContain(`✔ metrics http://${operator.probeAddress}/metrics: answering`);
    expect(ok.stdout).toContain('✔ patch configsyncs.syncline.dev (reconcile, suspend, resume, rollback)');
    expect(ok.stdout).toMatch(/✔ all checks passed\n$/);

    // the restricted identity may not list syncs here, and no operator answers where none runs
    const restricted = await syncline(['check', '-n', ns.name, '--context', 'restricted', '--metrics-url', 'http://127.0.0.1:9/metrics']);
    expect(restricted.code).toBe(1);
    expect(restricted.stdout).toContain('✗ list configsyncs.syncline.dev: not allowed (get, status need it)');
    expect(restricted.stdout).toContain('! patch configsyncs.syncline.dev: not allowed');
    expect(restricted.stdout).toMatch(/✗ the operator is not reachable|✗ you may not list/);
    expect(restricted.stdout).toMatch(/✗ \d+ check\(s\) failed\n$/);
  }, 120_000);

  it('completion: bash completes kinds, then the names of objects in the cluster, honouring -n', async () => {
    const script = join(dir, 'completion.bash');
    const generated = await syncline(['completion', 'bash']);
    expect(generated.code).toBe(0);
    await writeFile(script, generated.stdout);
    const complete = async (words: string[]): Promise<string[]> => {
      const line = `source ${script}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _syncline; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const result = await run('bash', ['-c', line]);
      expect(result.code, result.stderr).toBe(0);
      return result.stdout.split('\n').filter((w) => w !== '');
    };
    expect(await complete(['syncline', 'get', 'cs'])).toContain('csync');
    expect(await complete(['syncline', 'get', 'csync', '-n', ns.name, ''])).toEqual(['web']);
    expect(await complete(['syncline', 'suspend', 'configsyncs', '-n', ns.name, 'w'])).toEqual(['web']);
    expect(await complete(['syncline', 'status', '-n', ns.name, ''])).toEqual(['web']);
    expect(await complete(['syncline', 'get', 'csync', '-n', 'default', ''])).toEqual([]);
  }, 120_000);
});

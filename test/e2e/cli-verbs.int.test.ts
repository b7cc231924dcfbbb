// The verbs a Flux or kubectl user reaches for, run as the real executable against the real control plane
// and a real operator: get (every kind, -o wide, -l, -w, -A), suspend/resume, reconcile KIND NAME, events,
// version, completion, diff --path.
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { startGitServer, startOperator, type GitServer, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, configMapYaml, configSync, eventually, installCrds, readConfigSync, rest, waitForReady } from './harness.ts';

const root = join(import.meta.dirname, '..', '..');
const bin = join(root, 'packages', 'cli', 'bin', 'syncline.js');
const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}` };

type Result = { code: number; stdout: string; stderr: string };

function syncline(args: readonly string[]): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args, ...(args.includes('completion') || args.includes('--client') ? [] : ['--kubeconfig', testKubeconfigPath()])],
      { env, cwd: root, timeout: 120_000 },
      (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      },
    );
  });
}

const API = '/apis/syncline.dev/v1alpha1';
async function create(namespace: string, plural: string, object: Record<string, unknown>): Promise<void> {
  await rest.request({ method: 'POST', path: `${API}/namespaces/${namespace}/${plural}`, body: object });
}
async function read(
  namespace: string,
  plural: string,
  name: string,
): Promise<{ metadata: { annotations?: Record<string, string> }; spec: { suspend?: boolean } }> {
  return rest.request({ method: 'GET', path: `${API}/namespaces/${namespace}/${plural}/${name}` });
}

describe('syncline CLI verbs', () => {
  let git: GitServer;
  let ns: TestNamespace;
  let other: TestNamespace;
  let operator: OperatorProcess;
  let checkout: string;
  const settings = (v: string): string => configMapYaml('settings', `  v: "${v}"`);

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    [ns, other] = await Promise.all([testNamespace({ prefix: 'verbs' }), testNamespace({ prefix: 'verbs-other' })]);
    // Only `ns` is watched: what lives in `other` is listed and edited, never reconciled.
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name] });
    const repo = await git.createRepo('verbs');
    await repo.commit({ 'app/settings.yaml': settings('1') });
    await applyConfigSync(
      configSync(ns.name, 'web', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '1h',
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );
    await rest.request({
      method: 'PATCH',
      path: `${API}/namespaces/${ns.name}/configsyncs/web`,
      contentType: 'application/merge-patch+json',
      body: { metadata: { labels: { team: 'a' } } },
    });
    await applyConfigSync(
      configSync(ns.name, 'api', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '1h',
        suspend: true,
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );
    await rest.request({ method: 'POST', path: `/api/v1/namespaces/${ns.name}/secrets`, body: { metadata: { name: 'src' }, stringData: { k: 'v' } } });
    await create(ns.name, 'manifestsyncs', {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'ManifestSync',
      metadata: { name: 'copy' },
      spec: { sourceRef: { apiVersion: 'v1', kind: 'Secret', name: 'src' }, targets: [{ namespace: ns.name, name: 'src-copy' }] },
    });
    await create(other.name, 'namespacereplications', {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'NamespaceReplication',
      metadata: { name: 'dr' },
      spec: { destination: { namespace: `${other.name}-standby` }, suspend: true },
    });
    await create(other.name, 'remoteclusters', {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'RemoteCluster',
      metadata: { name: 'east' },
      spec: { server: 'https://east.invalid:6443', tokenSecretRef: { name: 'east', key: 'token' } },
    });
    await waitForReady(ns.name, 'web', undefined, 60_000);
    checkout = await mkdtemp(join(tmpdir(), 'syncline-checkout-'));
  }, 180_000);
  afterAll(async () => {
    await operator.stop();
    await Promise.all([ns[Symbol.asyncDispose](), other[Symbol.asyncDispose]()]);
    await git.close();
    await rm(checkout, { recursive: true, force: true });
  });

  describe('get', () => {
    it("lists every kind with the CRD's columns; -o wide adds the priority ones", async () => {
      const table = await syncline(['get', 'configsyncs', '-n', ns.name]);
      expect(table).toMatchObject({ code: 0, stderr: '' });
      const [header = '', ...rows] = table.stdout.trimEnd().split('\n');
      expect(header.split(/\s{2,}/)).toEqual(['NAME', 'READY', 'STATUS', 'REVISION', 'DRIFTED', 'AGE']);
      expect(rows.map((r) => r.split(/\s+/)[0]).sort()).toEqual(['api', 'web']);
      expect(rows.find((r) => r.startsWith('web'))).toMatch(/^web\s+True\s+Applied revision [0-9a-f]{40}\s+[0-9a-f]{7}\s+0\s/);

      const wide = await syncline(['get', 'csync', 'web', '-n', ns.name, '-o', 'wide']);
      expect(wide.stdout.split('\n')[0]).toMatch(/REF\s+SUSPENDED\s+HEALTH\s+HOOKS\s+FULL REVISION\s+AGE$/);
      expect(wide.stdout).toMatch(/[0-9a-f]{40}/);

      expect((await syncline(['get', 'msync', '-n', ns.name])).stdout).toMatch(/^copy\s+src\s+Secret\s/m);
      expect((await syncline(['get', 'namespacereplications', '-n', other.name])).stdout).toMatch(/^dr\s/m);
      // Not probed (its namespace is not watched): the status columns stay empty.
      const clusters = await syncline(['get', 'rcluster', '-n', other.name, '-o', 'wide']);
      expect(clusters.stdout.split('\n')[0]).toMatch(/^NAME\s+READY\s+REASON\s+VERSION\s+SERVER\s+LAST PROBE\s+AGE$/);
      expect(clusters.stdout).toMatch(/^east\s/m);
    });

    it('-l selects, -A adds the namespace, -o name and -o json as kubectl', async () => {
      const selected = await syncline(['get', 'csync', '-n', ns.name, '-l', 'team=a', '--no-headers']);
      expect(
        selected.stdout
          .trimEnd()
          .split('\n')
          .map((r) => r.split(/\s+/)[0]),
      ).toEqual(['web']);
      const all = await syncline(['get', 'csync', '-A']);
      expect(all.stdout.split('\n')[0]).toMatch(/^NAMESPACE\s+NAME\s+READY/);
      expect(all.stdout).toMatch(new RegExp(`^${ns.name}\\s+web\\s`, 'm'));
      expect((await syncline(['get', 'csync', 'web', '-n', ns.name, '-o', 'name'])).stdout).toBe('configsyncs.syncline.dev/web\n');
      const json = JSON.parse((await syncline(['get', 'msync', '-n', ns.name, '-o', 'json'])).stdout) as {
        kind: string;
        items: Array<{ kind: string; metadata: { name: string; managedFields?: unknown } }>;
      };
      expect(json.kind).toBe('List');
      expect(json.items.map((i) => [i.kind, i.metadata.name, i.metadata.managedFields])).toEqual([['ManifestSync', 'copy', undefined]]);
      const none = await syncline(['get', 'nsrepl', '-n', ns.name]);
      expect(none).toMatchObject({ code: 0, stdout: '', stderr: `No resources found in ${ns.name} namespace.\n` });
      const unknown = await syncline(['get', 'widgets', '-n', ns.name]);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toMatch(/doesn't have a resource type "widgets".*configsyncs \(csync/);
    });

    it('-w prints a row for each change until interrupted', async () => {
      const child = spawn(process.execPath, [bin, 'get', 'csync', 'api', '-n', ns.name, '-w', '--kubeconfig', testKubeconfigPath()], { env, cwd: root });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      try {
        await eventually(() => Promise.resolve(/^api\s/m.test(stdout) ? true : undefined), 'the first row', 30_000);
        await rest.request({
          method: 'PATCH',
          path: `${API}/namespaces/${ns.name}/configsyncs/api`,
          contentType: 'application/merge-patch+json',
          body: { metadata: { labels: { changed: 'yes' } } },
        });
        const rows = await eventually(
          () => {
            const lines = stdout
              .trimEnd()
              .split('\n')
              .filter((l) => l.startsWith('api'));
            return Promise.resolve(lines.length >= 2 ? lines : undefined);
          },
          'a row for the change',
          30_000,
        );
        expect(rows.length).toBeGreaterThanOrEqual(2);
        expect(stdout.split('\n').filter((l) => l.startsWith('NAME'))).toHaveLength(1);
      } finally {
        child.kill('SIGINT');
      }
    });
  });

  describe('suspend, resume, reconcile', () => {
    it('suspends and resumes every kind that has spec.suspend; a RemoteCluster says why not', async () => {
      for (const [kind, namespace, name, plural] of [
        ['csync', ns.name, 'web', 'configsyncs'],
        ['manifestsync', ns.name, 'copy', 'manifestsyncs'],
        ['nsrepl', other.name, 'dr', 'namespacereplications'],
      ] as const) {
        const suspended = await syncline(['suspend', kind, name, '-n', namespace]);
        expect(suspended).toMatchObject({ code: 0, stdout: `${plural}.syncline.dev/${name} suspended\n` });
        expect((await read(namespace, plural, name)).spec.suspend).toBe(true);
        expect((await syncline(['resume', kind, name, '-n', namespace])).stdout).toBe(`${plural}.syncline.dev/${name} resumed\n`);
        expect((await read(namespace, plural, name)).spec.suspend).toBe(false);
      }
      await syncline(['suspend', 'nsrepl', 'dr', '-n', other.name]);
      const refused = await syncline(['suspend', 'rcluster', 'east', '-n', other.name]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/RemoteCluster has no spec.suspend/);
      // The resumed ConfigSync is reconciled again.
      await waitForReady(ns.name, 'web', undefined, 60_000);
    });

    it('reconcile KIND NAME asks the operator for any kind; reconcile NAME is still a ConfigSync', async () => {
      const ms = await syncline(['reconcile', 'msync', 'copy', '-n', ns.name]);
      expect(ms.code).toBe(0);
      expect((await read(ns.name, 'manifestsyncs', 'copy')).metadata.annotations?.['syncline.dev/reconcile-requested-at']).toBeDefined();
      const rc = await syncline(['reconcile', 'rcluster', 'east', '-n', other.name]);
      expect(rc.code).toBe(0);
      const wait = await syncline(['reconcile', 'msync', 'copy', '--wait', '-n', ns.name]);
      expect(wait.code).toBe(1);
      expect(wait.stderr).toMatch(/--wait is for ConfigSyncs only/);
      const suspended = await syncline(['reconcile', 'nsrepl', 'dr', '-n', other.name]);
      expect(suspended.code).toBe(1);
      expect(suspended.stderr).toMatch(/is suspended.*syncline resume namespacereplication dr/);

      const cs = await syncline(['reconcile', 'web', '--wait', '-n', ns.name]);
      expect(cs.code).toBe(0);
      expect(cs.stdout).toMatch(/applied revision main@sha1:[0-9a-f]{40}/);
      expect((await readConfigSync(ns.name, 'web')).status?.lastHandledReconcileAt).toBeDefined();
    });
  });

  it("events NAME: the ConfigSync's Events, as kubectl events shows them", async () => {
    const events = await eventually(
      async () => {
        const result = await syncline(['events', 'web', '-n', ns.name]);
        return result.stdout.includes('ConfigSync/web') ? result : undefined;
      },
      'an event of the ConfigSync',
      60_000,
    );
    expect(events.stdout.split('\n')[0]).toMatch(/^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/);
    expect(events.stdout).toMatch(/^\S+\s+Normal\s+\S+\s+ConfigSync\/web\s/m);
    const none = await syncline(['events', 'nsrepl', 'dr', '-n', other.name]);
    expect(none).toMatchObject({ code: 0, stdout: '' });
    expect(none.stderr).toMatch(/No events found/);
  });

  it("version: the client's, and the operator Deployment's", async () => {
    expect((await syncline(['version', '--client'])).stdout).toMatch(/^Client Version: \d+\.\d+\.\d+/);
    expect((await syncline(['version', '-n', other.name])).stdout).toMatch(/Operator Version: no operator Deployment found in namespace/);
    await rest.request({
      method: 'POST',
      path: `/apis/apps/v1/namespaces/${other.name}/deployments`,
      body: {
        metadata: { name: 'syncline', labels: { 'app.kubernetes.io/name': 'syncline', 'app.kubernetes.io/version': '1.4.2' } },
        spec: {
          selector: { matchLabels: { app: 'syncline' } },
          template: { metadata: { labels: { app: 'syncline' } }, spec: { containers: [{ name: 'syncline', image: 'ghcr.io/example/syncline:1.4.2' }] } },
        },
      },
    });
    const both = await syncline(['version', '-n', other.name, '-o', 'json']);
    const parsed = JSON.parse(both.stdout) as { client: { version: string }; operators: Array<{ version: string; image: string }> };
    expect(parsed.operators).toEqual([expect.objectContaining({ version: '1.4.2', image: 'ghcr.io/example/syncline:1.4.2', name: 'syncline' })]);
  });

  it('completion bash|zsh|fish: scripts that name the verbs, the kinds and the flags; bash parses it', async () => {
    const bash = await syncline(['completion', 'bash']);
    expect(bash.code).toBe(0);
    expect(bash.stdout).toContain('complete -F _syncline syncline');
    for (const word of ['get', 'suspend', 'resume', 'events', 'version', 'csync', '--selector']) expect(bash.stdout).toContain(word);
    const check = await new Promise<number | null>((resolve) => {
      const child = spawn('bash', ['-n'], { stdio: ['pipe', 'ignore', 'ignore'] });
      child.on('exit', resolve);
      child.stdin.end(bash.stdout);
    });
    expect(check).toBe(0);
    expect((await syncline(['completion', 'zsh'])).stdout).toMatch(/^#compdef syncline/);
    expect((await syncline(['completion', 'fish'])).stdout).toMatch(/complete -c syncline -n __fish_use_subcommand -a get/);
    expect((await syncline(['completion', 'powershell'])).code).toBe(1);
  });

  it('diff --path: a local checkout against the cluster, before pushing', async () => {
    await mkdir(join(checkout, 'app'), { recursive: true });
    await writeFile(join(checkout, 'app', 'settings.yaml'), settings('1'));
    const same = await syncline(['diff', 'web', '--path', checkout, '-n', ns.name]);
    expect(same.stdout).toMatch(/# target main @ local checkout/);
    expect(same.code).toBe(0);
    await writeFile(join(checkout, 'app', 'settings.yaml'), settings('2'));
    const changed = await syncline(['diff', 'web', '--path', checkout, '-n', ns.name]);
    expect(changed.code).toBe(1);
    expect(changed.stdout).toMatch(/^-\s+v: "1"$/m);
    expect(changed.stdout).toMatch(/^\+\s+v: "2"$/m);
    const missing = await syncline(['diff', 'web', '--path', join(checkout, 'nope'), '-n', ns.name]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/does not exist there/);
  });
});

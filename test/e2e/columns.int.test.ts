// `kubectl get csync` as a person reads it on a good day and a bad one, with the real kubectl against the real
// control plane and the real operator: READY, STATUS (the message), REVISION (applied, and the commit being
// tried when it differs), DRIFTED, AGE; and the Healthy count of what was applied, after a resync too.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGitServer, startOperator, type GitServer, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, condition, configMapYaml, configSync, eventually, installCrds, patchConfigSync, readConfigSync, waitForReady } from './harness.ts';

describe('kubectl get csync', () => {
  let git: GitServer;
  let ns: TestNamespace;
  let operator: OperatorProcess;
  let cacheDir: string;

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    ns = await testNamespace({ prefix: 'columns' });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name] });
    cacheDir = await mkdtemp(join(tmpdir(), 'syncline-columns-'));
  }, 240_000);
  afterAll(async () => {
    await operator.stop();
    await ns[Symbol.asyncDispose]();
    await git.close();
    await rm(cacheDir, { recursive: true, force: true });
  });

  /** `kubectl get csync web` split into its header and row cells (columns are two or more spaces apart). */
  const table = (): { header: string[]; row: string[] } => {
    const result = spawnSync('kubectl', ['get', 'csync', 'web', '-n', ns.name, '--kubeconfig', testKubeconfigPath(), '--cache-dir', cacheDir], {
      encoding: 'utf8',
    });
    expect(result.stderr).toBe('');
    const [header = '', row = ''] = result.stdout.trimEnd().split('\n');
    return { header: header.split(/\s{2,}/), row: row.split(/\s{2,}/) };
  };

  it('shows READY, STATUS, REVISION, DRIFTED, AGE; drift left by drift: Report is counted; a failing commit shows beside the applied one', async () => {
    // given a sync of one ConfigMap that reports drift instead of correcting it
    const repo = await git.createRepo('columns');
    const first = await repo.commit({ 'app/settings.yaml': configMapYaml('settings', '  v: "1"') });
    await applyConfigSync(
      configSync(ns.name, 'web', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '1h',
        drift: 'Report',
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );
    const synced = await waitForReady(ns.name, 'web', (cs) => condition(cs, 'Healthy')?.status === 'True', 60_000);

    // then the list shows it Ready at its commit, nothing drifted
    const ok = table();
    expect(ok.header).toEqual(['NAME', 'READY', 'STATUS', 'REVISION', 'DRIFTED', 'AGE']);
    expect(ok.row.slice(0, 5)).toEqual(['web', 'True', `Applied revision ${first}`, first.slice(0, 7), '0']);
    // and the one ConfigMap it applied is counted healthy, after a resync that wrote nothing too
    expect(condition(synced, 'Healthy')?.message).toBe('1 object(s) healthy');
    expect(synced.status?.targets?.[0]?.health).toMatchObject({ healthy: 1, failed: 0 });
    await patchConfigSync(ns.name, 'web', { metadata: { annotations: { 'syncline.dev/reconcile-requested-at': 'resync-1' } } });
    const resynced = await eventually(
      async () => {
        const cs = await readConfigSync(ns.name, 'web');
        return cs.status?.lastHandledReconcileAt === 'resync-1' ? cs : undefined;
      },
      'the resync to be handled',
      60_000,
    );
    expect(condition(resynced, 'Healthy')?.message).toBe('1 object(s) healthy');

    // when someone edits the ConfigMap by hand
    const edit = spawnSync(
      'kubectl',
      [
        'patch',
        'configmap',
        'settings',
        '-n',
        ns.name,
        '--type',
        'merge',
        '-p',
        '{"data":{"v":"edited"}}',
        '--kubeconfig',
        testKubeconfigPath(),
        '--cache-dir',
        cacheDir,
      ],
      { encoding: 'utf8' },
    );
    expect(edit.status, edit.stderr).toBe(0);
    // then DRIFTED counts it (drift: Report leaves it)
    await eventually(() => Promise.resolve(table().row[4] === '1' ? true : undefined), 'DRIFTED to show 1', 60_000);

    // when a commit that cannot render is pushed
    const broken = await repo.commit({ 'app/settings.yaml': null, 'app/settings.yaml.hbs': configMapYaml('settings', '  v: "{{ values.missing }}"') });
    await patchConfigSync(ns.name, 'web', { metadata: { annotations: { 'syncline.dev/reconcile-requested-at': 'resync-2' } } });
    // then READY is False, STATUS says why, REVISION shows the applied commit and the one being tried
    const failing = await eventually(
      () => {
        const t = table();
        return Promise.resolve(t.row[1] === 'False' ? t : undefined);
      },
      'READY to turn False',
      60_000,
    );
    expect(failing.row[2]).toMatch(/settings\.yaml\.hbs/);
    expect(failing.row[3]).toBe(`${first.slice(0, 7)} (trying ${broken.slice(0, 7)})`);
  }, 240_000);
});

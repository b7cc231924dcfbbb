// /metrics of a running operator: the per-object series follow the object (ready, suspended) and leave with it.
import { startGitServer, startOperator, type GitServer, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, configMapYaml, configSync, deleteConfigSync, eventually, installCrds, patchConfigSync, waitForReady } from './harness.ts';

describe('operator metrics', () => {
  let git: GitServer;
  let ns: TestNamespace;
  let operator: OperatorProcess;

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    ns = await testNamespace({ prefix: 'metrics' });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name] });
  });
  afterAll(async () => {
    await operator.stop();
    await ns[Symbol.asyncDispose]();
    await git.close();
  });

  const scrape = async (): Promise<string> => (await fetch(`http://${operator.probeAddress}/metrics`)).text();
  /** The sample lines that name this object (namespace and name labels). */
  const seriesOf = async (name: string): Promise<string[]> =>
    (await scrape()).split('\n').filter((l) => l.includes(`namespace="${ns.name}"`) && l.includes(`name="${name}"`));
  const until = (what: string, check: (lines: string[]) => boolean, name = 'web'): Promise<string[]> =>
    eventually(
      async () => {
        const lines = await seriesOf(name);
        return check(lines) ? lines : undefined;
      },
      what,
      60_000,
    );

  it("reports a ConfigSync's readiness and suspension, and removes its series when it is deleted", async () => {
    const repo = await git.createRepo('metrics');
    const sha = await repo.commit({ 'app/a.yaml': configMapYaml('metrics-a', '  v: "1"') });
    await applyConfigSync(
      configSync(ns.name, 'web', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '1h',
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );
    await waitForReady(ns.name, 'web', (c) => c.status?.sourceRevision === sha, 60_000);

    const ready = await until(
      'a ready info series and the managed object count',
      (lines) =>
        lines.includes(`syncline_resource_info{kind="ConfigSync",namespace="${ns.name}",name="web",ready="True",suspended="false"} 1`) &&
        lines.includes(`syncline_managed_objects{namespace="${ns.name}",name="web"} 1`),
    );
    expect(ready.filter((l) => l.startsWith('syncline_resource_info'))).toHaveLength(1);

    // Suspended: the old ready/suspended pair is gone, not left beside the new one.
    await patchConfigSync(ns.name, 'web', { spec: { suspend: true } });
    const suspended = await until('the suspended series', (lines) =>
      lines.some((l) => l.startsWith('syncline_resource_info') && l.includes('suspended="true"')),
    );
    expect(suspended.filter((l) => l.startsWith('syncline_resource_info'))).toHaveLength(1);

    await deleteConfigSync(ns.name, 'web');
    const gone = await until('every series of the deleted ConfigSync to go', (lines) => lines.length === 0);
    expect(gone).toEqual([]);
  }, 180_000);
});

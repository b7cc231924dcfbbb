// KWOK against the test control plane with workloads: a Deployment becomes Available with real ReplicaSets and
// Pods, and a Job's Pod ends the way the test picks (JOB_OUTCOME_LABEL).
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_OUTCOME_LABEL, JobOutcome, startKwokCluster, type KwokCluster } from './kwok.ts';

describe('simulated nodes (KWOK)', () => {
  let cluster: KwokCluster;
  const kubectl = (args: readonly string[], input?: string): string => {
    const result = spawnSync('kubectl', ['--kubeconfig', cluster.kubeconfigPath, ...args], { encoding: 'utf8', ...(input === undefined ? {} : { input }) });
    if (result.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };
  const until = async (what: string, probe: () => boolean, timeoutMs = 90_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!probe()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  };
  const job = (name: string, outcome?: JobOutcome): string =>
    JSON.stringify({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name, namespace: 'default' },
      spec: {
        backoffLimit: 0,
        template: {
          metadata: { labels: outcome === undefined ? {} : { [JOB_OUTCOME_LABEL]: outcome } },
          spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'registry.example.com/migrate:1' }] },
        },
      },
    });
  const jobCondition = (name: string): string =>
    kubectl(['get', 'job', name, '-o', 'jsonpath={range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}']);

  // The first run on a machine builds KWOK from its Go module here (about 10 min on a loaded 2-core machine).
  beforeAll(async () => {
    cluster = await startKwokCluster({ onProgress: (line) => console.log(`[kwok] ${line}`) });
  }, 1_800_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('schedules Pods onto a Ready node: a Deployment becomes Available through its ReplicaSet', async () => {
    // Given: a Ready simulated node.
    expect(kubectl(['get', 'node', cluster.nodes[0] ?? '', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'])).toBe('True');
    // When: a Deployment with two replicas is created.
    kubectl(['create', 'deployment', 'web', '--image=registry.example.com/web:1', '--replicas=2']);
    // Then: its ReplicaSet's Pods run on the node and the Deployment is Available.
    await until('the Deployment to be Available', () => kubectl(['get', 'deployment', 'web', '-o', 'jsonpath={.status.availableReplicas}']) === '2');
    const pods = kubectl(['get', 'pods', '-l', 'app=web', '-o', 'jsonpath={range .items[*]}{.spec.nodeName}={.status.phase}{"\\n"}{end}']).trim().split('\n');
    expect(pods).toEqual([`${cluster.nodes[0]}=Running`, `${cluster.nodes[0]}=Running`]);
    expect(kubectl(['get', 'replicasets', '-l', 'app=web', '-o', 'jsonpath={.items[0].status.readyReplicas}'])).toBe('2');
  });

  it("ends a Job's Pod as the test picks: succeed by default, fail, or hold until relabelled", async () => {
    // Given: three Jobs, one per outcome.
    kubectl(['apply', '-f', '-'], job('ok'));
    kubectl(['apply', '-f', '-'], job('bad', JobOutcome.Fail));
    kubectl(['apply', '-f', '-'], job('held', JobOutcome.Hold));
    // Then: the default completes, the failing one fails, the held one runs.
    await until('Job ok to complete', () => jobCondition('ok').includes('Complete'));
    await until('Job bad to fail', () => jobCondition('bad').includes('Failed'));
    await until('the held Job to run', () => kubectl(['get', 'pods', '-l', 'job-name=held', '-o', 'jsonpath={.items[0].status.phase}']) === 'Running');
    expect(jobCondition('held')).not.toContain('Complete');
    // When: the test relabels the held Pod to succeed.
    kubectl(['label', 'pod', '-l', 'job-name=held', `${JOB_OUTCOME_LABEL}=${JobOutcome.Succeed}`, '--overwrite']);
    // Then: its Job completes.
    await until('Job held to complete', () => jobCondition('held').includes('Complete'));
  });
});

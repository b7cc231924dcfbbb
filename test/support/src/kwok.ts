// Simulated nodes for the test control plane: KWOK (sigs.k8s.io/kwok), built from its Go module like every
// other tool here, runs against a control plane started with `workloads` (scheduler and workload controllers).
// Its nodes become Ready and the Pods scheduled onto them Running, so Deployments become Available and Jobs
// complete: no kubelet, no container runtime, no image pulls. The stages are KWOK's own default ones (read
// from the module KWOK was built from), with one change a test can steer: a Job's Pod labelled
// JOB_OUTCOME_LABEL=fail fails, =hold stays Running until the test relabels it (succeed or fail).
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseAllDocuments, stringify } from 'yaml';
import { startControlPlane, type ControlPlane, type ControlPlaneOptions } from './control-plane.ts';
import { ensureGoTool, type GoTool, type GoToolOptions } from './go-tool.ts';

export const KWOK_TOOL: GoTool = { name: 'kwok', pkg: 'sigs.k8s.io/kwok/cmd/kwok', version: 'v0.8.0' };

/** The Pod label (set in a Job's pod template, or on the Pod) that decides how the Pod of a Job ends. */
export const JOB_OUTCOME_LABEL = 'kwok.syncline.dev/outcome';
/** JOB_OUTCOME_LABEL's values: absent = succeed at once (KWOK's default), `hold` = stay Running. */
export const JobOutcome = { Succeed: 'succeed', Fail: 'fail', Hold: 'hold' } as const;
export type JobOutcome = (typeof JobOutcome)[keyof typeof JobOutcome];

/** The annotation KWOK selects the nodes it simulates by. */
const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';

export type KwokCluster = {
  readonly controlPlane: ControlPlane;
  readonly kubeconfigPath: string;
  /** The simulated nodes' names. */
  readonly nodes: readonly string[];
  readonly kwokLogPath: string;
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
};

/** Builds KWOK when the cache has none for its version (minutes, once per machine). */
export function ensureKwok(options: GoToolOptions = {}): Promise<string> {
  return ensureGoTool(KWOK_TOOL, options);
}

type Stage = {
  metadata: { name: string };
  spec: { selector: { matchExpressions: { key: string; operator: string; values?: string[] }[] }; next: { statusTemplate?: string } };
};

/** KWOK's default stages as its module ships them (kustomize/stage/{node,pod}/fast), read from the Go module cache. */
function defaultStages(): Stage[] {
  const download = spawnSync('go', ['mod', 'download', '-json', `sigs.k8s.io/kwok@${KWOK_TOOL.version}`], {
    encoding: 'utf8',
    env: { ...process.env, GOFLAGS: '', GOTOOLCHAIN: 'local' },
  });
  if (download.status !== 0) throw new Error(`go mod download sigs.k8s.io/kwok@${KWOK_TOOL.version} failed: ${download.stderr}`);
  const dir = (JSON.parse(download.stdout) as { Dir: string }).Dir;
  const files = ['node/fast/node-initialize.yaml', 'pod/fast/pod-ready.yaml', 'pod/fast/pod-complete.yaml', 'pod/fast/pod-delete.yaml'];
  return files.map((file) => parseAllDocuments(readFileSync(join(dir, 'kustomize', 'stage', file), 'utf8'))[0]?.toJS() as Stage);
}

const outcomeKey = `.metadata.labels["${JOB_OUTCOME_LABEL}"]`;

/**
 * The stages KWOK runs: its defaults, where a Job's Pod completes only without JOB_OUTCOME_LABEL, plus one stage
 * that completes a Pod labelled `succeed` and one that fails a Pod labelled `fail` (exit code 1).
 */
export function kwokStages(): Stage[] {
  const stages = defaultStages();
  const complete = stages.find((s) => s.metadata.name === 'pod-complete');
  if (complete === undefined) throw new Error('KWOK no longer ships the pod-complete stage');
  const succeed = structuredClone(complete);
  complete.spec.selector.matchExpressions.push({ key: outcomeKey, operator: 'DoesNotExist' });
  succeed.metadata.name = 'syncline-pod-succeed';
  succeed.spec.selector.matchExpressions.push({ key: outcomeKey, operator: 'In', values: [JobOutcome.Succeed] });
  const fail = structuredClone(succeed);
  fail.metadata.name = 'syncline-pod-fail';
  fail.spec.selector.matchExpressions = [
    ...complete.spec.selector.matchExpressions.slice(0, -1),
    { key: outcomeKey, operator: 'In', values: [JobOutcome.Fail] },
  ];
  const template = fail.spec.next.statusTemplate ?? '';
  if (!template.includes('exitCode: 0') || !template.includes('phase: Succeeded'))
    throw new Error("KWOK's pod-complete stage changed: cannot derive the failing stage");
  fail.spec.next.statusTemplate = template
    .replace('exitCode: 0', 'exitCode: 1')
    .replace('reason: Completed', 'reason: Error')
    .replace('phase: Succeeded', 'phase: Failed');
  return [...stages, succeed, fail];
}

/**
 * A control plane whose Pods run: the test control plane with `workloads`, KWOK, and `nodes` simulated nodes
 * (default 1) that are Ready before this returns.
 */
export async function startKwokCluster(options: ControlPlaneOptions & { nodes?: number } = {}): Promise<KwokCluster> {
  const binary = await ensureKwok(options.onProgress === undefined ? {} : { onProgress: options.onProgress });
  const controlPlane = await startControlPlane({ ...options, workloads: true });
  const configPath = join(controlPlane.dataDir, 'kwok.yaml');
  await writeFile(
    configPath,
    kwokStages()
      .map((stage) => stringify({ apiVersion: 'kwok.x-k8s.io/v1alpha1', kind: 'Stage', ...stage }))
      .join('---\n'),
  );
  const kwokLogPath = join(controlPlane.dataDir, 'kwok.log');
  const log = createWriteStream(kwokLogPath);
  const child = spawn(
    binary,
    [
      '--kubeconfig',
      controlPlane.kubeconfigPath,
      '--config',
      configPath,
      `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION}=fake`,
      '--server-address',
      '127.0.0.1:0',
      '--node-ip',
      '10.0.0.1',
      '--cidr',
      '10.0.0.0/16',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  process.once('exit', () => child.kill('SIGKILL'));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
    }
    log.end();
    await controlPlane.stop();
  };
  try {
    const names = Array.from({ length: options.nodes ?? 1 }, (_, i) => `kwok-node-${i}`);
    for (const name of names) kubectl(controlPlane.kubeconfigPath, ['apply', '-f', '-'], JSON.stringify(nodeObject(name)));
    await waitForNodesReady(controlPlane.kubeconfigPath, names, exited, kwokLogPath);
    return { controlPlane, kubeconfigPath: controlPlane.kubeconfigPath, nodes: names, kwokLogPath, stop, [Symbol.asyncDispose]: stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A node for KWOK to simulate, with room for a test's Pods. */
function nodeObject(name: string): Record<string, unknown> {
  const resources = { cpu: '32', memory: '256Gi', pods: '110' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [KWOK_NODE_ANNOTATION]: 'fake' },
      labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok' },
    },
    status: { allocatable: resources, capacity: resources },
  };
}

function kubectl(kubeconfig: string, args: readonly string[], input?: string): string {
  const result = spawnSync('kubectl', ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8', ...(input === undefined ? {} : { input }) });
  if (result.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${result.stderr}`);
  return result.stdout;
}

async function waitForNodesReady(kubeconfig: string, names: readonly string[], exited: Promise<void>, logPath: string): Promise<void> {
  let dead = false;
  void exited.then(() => (dead = true));
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (dead) throw new Error(`kwok exited before its nodes were Ready; log: ${logPath}\n${readFileSync(logPath, 'utf8').slice(-3000)}`);
    const ready = kubectl(kubeconfig, [
      'get',
      'nodes',
      '-o',
      'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}',
    ])
      .split('\n')
      .filter((line) => line.endsWith('=True'))
      .map((line) => line.slice(0, -'=True'.length));
    if (names.every((name) => ready.includes(name))) return;
    if (Date.now() > deadline) throw new Error(`the KWOK nodes ${names.join(', ')} were not Ready within 120s; log: ${logPath}`);
    await sleep(500);
  }
}

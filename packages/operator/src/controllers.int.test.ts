// Every controller of the operator on one controller manager, against the real control plane: the operator's four
// kinds, mirroring, NamespaceReplicationPolicy and automatic failover register as runOperator registers them, with
// real informers. Each in turn is made to stall (a reconcile that never finishes, injected at the registration
// seam): liveness fails naming that controller, and the queue metrics show its lane with the reconcile in flight.
// (Notifications, a package above the runtime and beside the operator, have the same case in their own tests.)
import { connectionFromKubeConfig, createEventRecorder, createKubeRest, type KubeRest } from '@syncline/kube';
import { TemplateCache } from '@syncline/render';
import { createGitSource } from '@syncline/source-git';
import { testKubeConfig, testNamespace } from '@syncline/test-support/kube';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createManager, installCrds, type Manager as ControllerManager, type ReconcileOutcome } from '@syncline/runtime';
import { createApplyClients } from './cluster/identity.ts';
import { AUTO_FAILOVER_CONTROLLER, registerAutoFailover } from './dr/auto-failover.ts';
import { CONTROLLER_NAMES, startManager } from './manager.ts';
import { createMetrics } from './metrics.ts';
import { MIRROR_CONTROLLER, registerMirrorController } from './mirror/controller.ts';
import { StalePolicy, mirrorKeys } from './mirror/index.ts';
import { POLICY_CONTROLLER, registerReplicationPolicies } from './reconcile/namespacereplicationpolicy.ts';
import { SHARD_LABEL } from './shard.ts';

const eventually = async <T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 90_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
};

/** A stall the test lets go of (a stopping manager waits for the reconciles in flight). */
type Stall = { released: boolean; readonly waiting: (() => void)[] };

/** The registry as runOperator's, but the controller named `stalled` finishes no reconcile until released. */
function stalling(controllers: ControllerManager, stalled: string, stall: Stall): ControllerManager {
  return {
    ...controllers,
    register: (name, options, declare) =>
      controllers.register(name, options, (queue) => {
        const declaration = declare(queue);
        if (name !== stalled) return declaration;
        const done: ReconcileOutcome = { kind: 'done' };
        return {
          ...declaration,
          reconcile: () => (stall.released ? Promise.resolve(done) : new Promise<ReconcileOutcome>((resolve) => stall.waiting.push(() => resolve(done)))),
        };
      }),
  };
}

const API = '/apis/syncline.dev/v1alpha1';
const ALL = [
  CONTROLLER_NAMES.ConfigSync,
  CONTROLLER_NAMES.ManifestSync,
  CONTROLLER_NAMES.NamespaceReplication,
  CONTROLLER_NAMES.RemoteCluster,
  MIRROR_CONTROLLER,
  POLICY_CONTROLLER,
  AUTO_FAILOVER_CONTROLLER,
];

describe('one controller manager for every controller', () => {
  it('liveness and the queue metrics name each controller that stalls, in turn', async () => {
    await using ns = await testNamespace({ prefix: 'stall' });
    const cacheDir = await mkdtemp(join(tmpdir(), 'syncline-stall-'));
    const connection = await connectionFromKubeConfig(testKubeConfig());
    const rest = await createKubeRest(connection);
    await installCrds(rest, { fieldManager: 'syncline-tests' });
    // A shard and a mirroring prefix of this test's own: the cluster-wide watches (policies, mirroring) see only its objects.
    const shard = ns.name;
    const keys = mirrorKeys(`${ns.name}.stall.example`);
    const labels = { [SHARD_LABEL]: shard };
    const create = (plural: string, kind: string, name: string, spec: unknown): Promise<unknown> =>
      rest.request({
        method: 'POST',
        path: `${API}/namespaces/${ns.name}/${plural}`,
        body: { apiVersion: 'syncline.dev/v1alpha1', kind, metadata: { name, labels }, spec },
      });
    // One object of each kind, every one suspended or refused (nothing is written outside this namespace).
    await create('configsyncs', 'ConfigSync', 'app', {
      source: { git: { repo: 'http://127.0.0.1:1/none.git' } },
      targets: [{ name: 'main', namespace: ns.name }],
      suspend: true,
    });
    await create('manifestsyncs', 'ManifestSync', 'copy', {
      sourceRef: { apiVersion: 'v1', kind: 'Secret', name: 'db' },
      targets: [{ namespace: ns.name }],
      suspend: true,
    });
    await create('namespacereplications', 'NamespaceReplication', 'standby', { destination: { namespace: `${ns.name}-standby` }, suspend: true });
    await create('remoteclusters', 'RemoteCluster', 'far', {
      server: 'https://127.0.0.1:1',
      tokenSecretRef: { name: 'none', key: 'token' },
      probeInterval: '1h',
    });
    await create('namespacereplicationpolicies', 'NamespaceReplicationPolicy', 'gold', {
      namespaceSelector: { matchLabels: { [`${ns.name}-dr`]: 'gold' } },
      template: { destination: { cluster: { name: 'dr' } } },
      suspend: true,
    });
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${ns.name}/secrets`,
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'mirrored', labels: { [keys.syncSource]: 'true' }, annotations: { [keys.targets]: `${ns.name}-nowhere` } },
        stringData: { k: 'v' },
      },
    });
    // Automatic failover sees no heartbeat: it checks, and promotes nothing of the other tests sharing the cluster.
    const noHeartbeats: KubeRest = {
      server: rest.server,
      watch: (...args) => rest.watch(...args),
      request: (req) => (req.method === 'GET' && req.path.endsWith('/leases') ? Promise.resolve({ items: [] } as never) : rest.request(req)),
    };
    const clock = { now: () => new Date() };
    const logger = pino({ level: 'silent' });
    const events = createEventRecorder({ rest, component: 'syncline', host: 'test', clock });
    const applyClient = createApplyClients({ connection, rest, clock });
    try {
      for (const stalled of ALL) {
        const metrics = createMetrics();
        const stall: Stall = { released: false, waiting: [] };
        const controllers = stalling(createManager({ logger, metrics, stallTimeoutMs: 1500 }), stalled, stall);
        const manager = startManager({
          rest,
          git: createGitSource({ cacheDir }),
          applyClient,
          templates: new TemplateCache(),
          clock,
          logger,
          metrics,
          events,
          mirrorKeys: keys,
          concurrency: 2,
          watchNamespace: ns.name,
          shard,
          controllers,
        });
        registerMirrorController(controllers, {
          rest,
          applyClient: () => applyClient(undefined),
          clock,
          logger,
          metrics,
          events,
          keys,
          sourceNamespaces: [],
          trusted: new Set(),
          staleMode: StalePolicy.Mark,
          resyncMs: 60_000,
        });
        registerReplicationPolicies(controllers, {
          rest,
          applyClient: () => applyClient(undefined),
          clock,
          logger,
          metrics,
          events,
          trusted: new Set(),
          shard,
        });
        registerAutoFailover(controllers, {
          rest: noHeartbeats,
          applyClient: () => applyClient(undefined),
          graceMs: 60_000,
          clock,
          logger,
          metrics,
          events,
          keys,
          identity: 'stall-test',
        });
        controllers.start();
        try {
          const reason = await eventually(() => {
            const live = manager.live();
            return !live.ok && live.reason.includes(`controller ${stalled}:`) ? live.reason : undefined;
          }, `liveness to name ${stalled}`);
          expect(reason).toMatch(new RegExp(`controller ${stalled}: its work queue has had work and finished none of it for \\d+s`));
          const series = async (metric: string): Promise<number | undefined> =>
            (await metrics.registry.getSingleMetric(metric)?.get())?.values.find((v) => v.labels['controller'] === stalled)?.value;
          expect(await series('syncline_workqueue_in_flight')).toBe(1);
          expect(await series('syncline_workqueue_stalled_seconds')).toBeGreaterThan(1.5);
          // Every controller has its lane in the metrics.
          const lanes = (await metrics.registry.getSingleMetric('syncline_workqueue_depth')?.get())?.values.map((v) => v.labels['controller']);
          expect(new Set(lanes)).toEqual(new Set(ALL));
        } finally {
          stall.released = true;
          for (const go of stall.waiting.splice(0)) go();
          await manager.stop();
        }
      }
    } finally {
      await rm(cacheDir, { recursive: true, force: true });
    }
  }, 600_000);
});

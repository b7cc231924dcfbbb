// Drift watches where the syncs apply, against the real control plane: an operator scoped to one namespace
// (--namespace) whose syncs apply into other namespaces proves a resync a no-op from a watch of each such
// namespace (no LIST, no GET), says in the target's status when the API server refuses it that watch or the
// watch budget has no room for it (and reads there instead), and gives the watch back when no sync applies there
// any more.
import {
  connectionFromKubeConfig,
  createEventRecorder,
  createKubeRest,
  WatchBudget,
  WatchBudgetError,
  type KubeConnection,
  type KubeRest,
} from '@syncline/kube';
import type { ApplyClient } from '@syncline/apply';
import { TemplateCache } from '@syncline/render';
import { createGitSource } from '@syncline/source-git';
import { startGitServer } from '@syncline/test-support';
import { testKubeConfig, testNamespace } from '@syncline/test-support/kube';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ConfigSync } from '@syncline/api';
import { installCrds } from '@syncline/runtime';
import { createApplyClients } from './cluster/identity.ts';
import { startManager } from './manager.ts';
import { createMetrics } from './metrics.ts';
import { mirrorKeys } from './mirror/labels.ts';
import { trustedNamespaces } from './tenancy.ts';

const eventually = async <T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 120_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out waiting for ${what}${last === undefined ? '' : ` (last error: ${last instanceof Error ? last.message : JSON.stringify(last)})`}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
};

/** Reads (LIST, GET) the operator made in each namespace, through its REST client and its apply client. */
class ReadCounter {
  readonly #reads = new Map<string, number>();
  count(namespace: string | undefined): void {
    if (namespace !== undefined) this.#reads.set(namespace, (this.#reads.get(namespace) ?? 0) + 1);
  }
  reads(namespace: string): number {
    return this.#reads.get(namespace) ?? 0;
  }
  rest(real: KubeRest): KubeRest {
    return {
      server: real.server,
      watch: (...args) => real.watch(...args),
      request: (req) => {
        if (req.method === 'GET') this.count(/\/namespaces\/([^/]+)\//.exec(req.path)?.[1]);
        return real.request(req);
      },
    };
  }
  apply(real: ApplyClient): ApplyClient {
    return {
      ...real,
      list: (scope, signal) => {
        this.count(scope.namespace);
        return real.list(scope, signal);
      },
      get: (id, signal) => {
        this.count(id.split('/')[2]);
        return real.get(id, signal);
      },
    };
  }
}

describe('drift watches in the namespaces syncs apply into', () => {
  it('proves a no-op without reads in another namespace, says when one cannot be watched, and stops a watch no sync needs', async () => {
    await using home = await testNamespace({ prefix: 'drift-home' });
    await using app = await testNamespace({ prefix: 'drift-app' });
    await using locked = await testNamespace({ prefix: 'drift-locked' });
    const admin = await createKubeRest(await connectionFromKubeConfig(testKubeConfig()));
    await installCrds(admin, { fieldManager: 'syncline-tests' });

    // Given: the operator runs as a ServiceAccount of its own with all rights in its namespace, ConfigMap rights
    // in `app`, and none in `locked`; a tenant's ServiceAccount may write ConfigMaps in both.
    const rbac = (namespace: string, name: string, rules: unknown[], account: string) => [
      { path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/roles`, body: { metadata: { name }, rules } },
      {
        path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings`,
        body: {
          metadata: { name },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
          subjects: [{ kind: 'ServiceAccount', name: account, namespace: home.name }],
        },
      },
    ];
    const configMaps = [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] }];
    for (const account of ['operator', 'deployer'])
      await admin.request({ method: 'POST', path: `/api/v1/namespaces/${home.name}/serviceaccounts`, body: { metadata: { name: account } } });
    for (const { path, body } of [
      ...rbac(home.name, 'operator', [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }], 'operator'),
      ...rbac(app.name, 'operator', configMaps, 'operator'),
      ...rbac(app.name, 'deployer', configMaps, 'deployer'),
      ...rbac(locked.name, 'deployer', configMaps, 'deployer'),
    ]) {
      await admin.request({ method: 'POST', path, body });
    }
    const token = (
      await admin.request<{ status: { token: string } }>({
        method: 'POST',
        path: `/api/v1/namespaces/${home.name}/serviceaccounts/operator/token`,
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
      })
    ).status.token;
    const adminConnection = await connectionFromKubeConfig(testKubeConfig());
    const connection: KubeConnection = {
      server: adminConnection.server,
      tls: { ca: adminConnection.tls.ca, rejectUnauthorized: adminConnection.tls.rejectUnauthorized, servername: adminConnection.tls.servername },
      authHeaders: () => Promise.resolve({ Authorization: `Bearer ${token}` }),
    };

    await using git = await startGitServer();
    const repo = await git.createRepo('drift-namespaces');
    await repo.commit({ 'app/settings.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: "one"\n' });

    const counter = new ReadCounter();
    const rest = counter.rest(await createKubeRest(connection));
    const applyClients = createApplyClients({ connection, rest, clock: { now: () => new Date() } });
    const budget = new WatchBudget(100);
    const cacheDir = await mkdtemp(join(tmpdir(), 'syncline-drift-ns-'));
    const clock = { now: () => new Date() };
    const metrics = createMetrics();
    const manager = startManager({
      rest,
      git: createGitSource({ cacheDir, allowInsecureHttp: true }),
      applyClient: async (identity) => counter.apply(await applyClients(identity)),
      templates: new TemplateCache(),
      clock,
      logger: pino({ level: process.env['DRIFT_TEST_LOG'] ?? 'silent' }),
      metrics,
      events: createEventRecorder({ rest, component: 'syncline', host: 'test', clock }),
      mirrorKeys: mirrorKeys(),
      concurrency: 2,
      watchNamespace: home.name,
      watchBudget: budget,
      trusted: trustedNamespaces({ list: [home.name] }),
      intervalBounds: { minMs: 1000, maxMs: 3_600_000 },
      onLostLeadership: () => undefined,
    });
    const sync = (name: string, namespace: string): Promise<unknown> =>
      admin.request({
        method: 'POST',
        path: `/apis/syncline.dev/v1alpha1/namespaces/${home.name}/configsyncs`,
        body: {
          apiVersion: 'syncline.dev/v1alpha1',
          kind: 'ConfigSync',
          metadata: { name },
          spec: {
            source: { git: { repo: repo.url, path: 'app' } },
            refreshInterval: '1s',
            serviceAccountName: 'deployer',
            targets: [{ name: 'main', namespace }],
          },
        },
      });
    const read = (name: string): Promise<ConfigSync> =>
      admin.request<ConfigSync>({ method: 'GET', path: `/apis/syncline.dev/v1alpha1/namespaces/${home.name}/configsyncs/${name}` });
    const lastStatus = new Map<string, unknown>();
    const ready = async (name: string): Promise<ConfigSync | undefined> => {
      const cs = await read(name);
      lastStatus.set(name, cs.status);
      return cs.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true && cs.status.observedGeneration === cs.metadata.generation
        ? cs
        : undefined;
    };
    const reconciles = async (): Promise<number> => (await metrics.reconcileTotal.get()).values.reduce((sum, v) => sum + v.value, 0);
    try {
      await sync('to-app', app.name);
      await sync('to-locked', locked.name);

      // When: both are Ready, and then resync every second.
      await eventually(() => ready('to-app'), 'to-app to be Ready').catch((error: unknown) => {
        throw new Error(`${String(error)}; last status: ${JSON.stringify(lastStatus.get('to-app'))}`);
      });
      const lockedSync = await eventually(async () => {
        const cs = await ready('to-locked');
        return cs?.status?.targets?.[0]?.message?.includes('cannot watch') === true ? cs : undefined;
      }, 'to-locked to be Ready and say it cannot be watched');
      const watchesWithApp = budget.open;
      // Settled: the first resync after the apply proves it from what the apply read back and the watch holds; on
      // a loaded machine the watch's own first LIST of `app` may come after those resyncs, so settled also means
      // no read in `app` for three seconds of resyncs every second.
      await eventually(async () => ((await reconciles()) >= 6 ? true : undefined), 'a few resyncs');
      await eventually(async () => {
        const reads = counter.reads(app.name);
        await new Promise((resolve) => setTimeout(resolve, 3_000));
        return counter.reads(app.name) === reads ? true : undefined;
      }, 'reads in app to settle');
      const versions = async (): Promise<string[]> =>
        Promise.all(['to-app', 'to-locked'].map(async (name) => (await read(name)).metadata.resourceVersion ?? ''));
      const versionsBefore = await versions();
      const appReads = counter.reads(app.name);
      const lockedReads = counter.reads(locked.name);
      const from = await reconciles();
      await eventually(async () => ((await reconciles()) >= from + 10 ? true : undefined), 'ten more resyncs');

      // Then: nothing was read in `app`; `locked` is read at every refresh (the fallback) and its status says why;
      // neither status was written again.
      expect(counter.reads(app.name) - appReads).toBe(0);
      expect(await versions()).toEqual(versionsBefore);
      expect(counter.reads(locked.name)).toBeGreaterThan(lockedReads);
      expect(lockedSync.status?.targets?.[0]?.message).toMatch(
        new RegExp(`cannot watch ConfigMap in namespace ${locked.name} for drift \\(forbidden: .*\\); checked every 1s instead`),
      );
      expect((await read('to-app')).status?.targets?.[0]?.message ?? '').not.toMatch(/cannot watch/);

      // When: the sync that applies into `app` is deleted (its objects pruned). Then: the watch of `app` is given back.
      await admin.request({ method: 'DELETE', path: `/apis/syncline.dev/v1alpha1/namespaces/${home.name}/configsyncs/to-app` });
      await eventually(
        () => (budget.open === watchesWithApp - 1 ? true : undefined),
        `the watch of ${app.name} to stop (open: ${budget.open}, before: ${watchesWithApp})`,
      );
    } finally {
      await manager.stop();
      await rm(cacheDir, { recursive: true, force: true });
    }
  }, 300_000);

  it('applies into a namespace whose watch the budget has no room for, and says so in the target', async () => {
    await using home = await testNamespace({ prefix: 'drift-home' });
    await using app = await testNamespace({ prefix: 'drift-full' });
    const connection = await connectionFromKubeConfig(testKubeConfig());
    const rest = await createKubeRest(connection);
    await installCrds(rest, { fieldManager: 'syncline-tests' });
    await using git = await startGitServer();
    const repo = await git.createRepo('drift-budget');
    await repo.commit({ 'app/settings.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: "one"\n' });
    // Given: a budget with room for every watch but the one of the namespace the sync applies into.
    class FullFor extends WatchBudget {
      override check(count: number, what: string): void {
        if (what.includes(`/namespaces/${app.name}/`))
          throw new WatchBudgetError(`the watch budget (--watch-budget=${this.limit}) is exhausted: ${what} needs ${count} more`);
        super.check(count, what);
      }
    }
    const cacheDir = await mkdtemp(join(tmpdir(), 'syncline-drift-budget-'));
    const clock = { now: () => new Date() };
    const manager = startManager({
      rest,
      git: createGitSource({ cacheDir, allowInsecureHttp: true }),
      applyClient: createApplyClients({ connection, rest, clock }),
      templates: new TemplateCache(),
      clock,
      logger: pino({ level: 'silent' }),
      metrics: createMetrics(),
      events: createEventRecorder({ rest, component: 'syncline', host: 'test', clock }),
      mirrorKeys: mirrorKeys(),
      concurrency: 2,
      watchNamespace: home.name,
      watchBudget: new FullFor(100),
      trusted: trustedNamespaces({ list: [home.name] }),
      onLostLeadership: () => undefined,
    });
    try {
      // When: a sync of the trusted namespace applies into that namespace.
      await rest.request({
        method: 'POST',
        path: `/apis/syncline.dev/v1alpha1/namespaces/${home.name}/configsyncs`,
        body: {
          apiVersion: 'syncline.dev/v1alpha1',
          kind: 'ConfigSync',
          metadata: { name: 'to-full' },
          spec: { source: { git: { repo: repo.url, path: 'app' } }, targets: [{ name: 'main', namespace: app.name }] },
        },
      });
      // Then: it is applied (the apply does not wait for the watch) and the target says why drift is read instead.
      const cs = await eventually(async () => {
        const read = await rest.request<ConfigSync>({ method: 'GET', path: `/apis/syncline.dev/v1alpha1/namespaces/${home.name}/configsyncs/to-full` });
        return read.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true ? read : undefined;
      }, 'to-full to be Ready');
      expect(cs.status?.targets?.[0]?.message).toMatch(
        new RegExp(
          `cannot watch ConfigMap in namespace ${app.name} for drift \\(the watch budget \\(--watch-budget=100\\) is exhausted.*\\); checked every 5m instead`,
        ),
      );
      expect(
        (await rest.request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${app.name}/configmaps/settings` })).data,
      ).toEqual({ mode: 'one' });
    } finally {
      await manager.stop();
      await rm(cacheDir, { recursive: true, force: true });
    }
  }, 300_000);
});

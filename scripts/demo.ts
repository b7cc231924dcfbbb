// `pnpm demo [--once]`: Syncline on this machine, nothing else needed. Starts the real test control
// plane with simulated nodes (KWOK: Pods are scheduled and Running, Deployments become Available), a local Git
// server holding a repo made from examples/repo, and the operator; applies the example ConfigSyncs; then walks
// through a change, a rollback with prune, a broken template and its fix, a Secret committed encrypted with sops,
// showing what is synced as it goes. --once runs the walkthrough non-interactively, checks every step and exits
// non-zero on the first failure (CI runs it). Without --once it keeps the live status table up after the
// walkthrough until Ctrl-C.
import { KubeConfig } from '@kubernetes/client-node';
import { createKubeRest, installCrds, type ConfigSync, type KubeRest } from '@syncline/operator';
import { formatStatus, runCli } from '@syncline/cli';
import {
  ensureRenderEngine,
  ensureSops,
  generateAgeKey,
  startControlPlane,
  startGitServer,
  startKwokCluster,
  startOperator,
  type TestRepo,
} from '@syncline/test-support';
import { mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';

const once = process.argv.includes('--once');
const root = join(import.meta.dirname, '..');
const tty = process.stdout.isTTY && !once;
const home = 'platform';
const started = Date.now();

const dim = (s: string): string => (tty ? `\x1b[2m${s}\x1b[0m` : s);
const bold = (s: string): string => (tty ? `\x1b[1m${s}\x1b[0m` : s);
const green = (s: string): string => (tty ? `\x1b[32m${s}\x1b[0m` : s);
const red = (s: string): string => (tty ? `\x1b[31m${s}\x1b[0m` : s);
const elapsed = (): string => `${((Date.now() - started) / 1000).toFixed(1)}s`;

let spinnerTimer: NodeJS.Timeout | undefined;
function spin(label: string): void {
  if (!tty) {
    console.log(`… ${label}`);
    return;
  }
  const frames = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';
  let i = 0;
  clearInterval(spinnerTimer);
  spinnerTimer = setInterval(() => process.stdout.write(`\r${frames[i++ % frames.length] ?? ''} ${label} ${dim(elapsed())}\x1b[K`), 100);
}
function done(label: string): void {
  clearInterval(spinnerTimer);
  process.stdout.write(tty ? `\r${green('✓')} ${label} ${dim(elapsed())}\x1b[K\n` : `✓ ${label} (${elapsed()})\n`);
}

async function step<T>(label: string, run: () => Promise<T>): Promise<T> {
  spin(label);
  try {
    const value = await run();
    done(label);
    return value;
  } catch (error) {
    clearInterval(spinnerTimer);
    process.stdout.write(`${tty ? '\r' : ''}${red('✗')} ${label}: ${error instanceof Error ? error.message : String(error)}\n`);
    throw error;
  }
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function readTree(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const full = join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (!name.endsWith('.md')) files[relative(dir, full).split(sep).join('/')] = readFileSync(full, 'utf8');
    }
  };
  walk(dir);
  return files;
}

let exitCode = 0;
// The primary keeps its data in a directory of its own: the walkthrough kills it, and it can come back.
const primaryDataDir = mkdtempSync(join(tmpdir(), 'syncline-demo-primary-'));
let cleanup: (() => Promise<void>)[] = [() => rm(primaryDataDir, { recursive: true, force: true })];
try {
  const startLabel = 'starting a real Kubernetes control plane (etcd + kube-apiserver + kube-controller-manager + kube-scheduler) with a simulated node (KWOK)';
  const cluster = await step(startLabel, () =>
    startKwokCluster({
      dataDir: primaryDataDir,
      // The first run on a machine builds it from the Kubernetes Go modules: say so while it takes minutes.
      onProgress: (line) => (tty ? spin(`${startLabel}: ${line.slice(0, 60)}`) : console.log(dim(`  ${line}`))),
    }),
  );
  const { controlPlane } = cluster;
  cleanup = [() => cluster.stop(), ...cleanup];
  const kc = new KubeConfig();
  kc.loadFromFile(controlPlane.kubeconfigPath);
  const rest = await createKubeRest(kc);

  const git = await startGitServer();
  cleanup = [() => git.close(), ...cleanup];
  const repo: TestRepo = await git.createRepo('configs');
  const first = await step('committing examples/repo to a local Git server', () =>
    repo.commit(readTree(join(root, 'examples', 'repo')), { message: 'Import the examples' }),
  );

  await step('installing the ConfigSync CRD and the example namespaces', async () => {
    await installCrds(rest, { fieldManager: 'syncline-demo' });
    for (const name of [home, 'web-dev', 'web-staging', 'web-prod']) {
      await rest.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name } } });
    }
  });

  // The Kustomize, Helm and Jsonnet examples render in syncline-render, built from its Go module on first use.
  const renderEngine = await step('building the render engine (Kustomize, Helm, Jsonnet; cached after the first run)', () => ensureRenderEngine());
  const operator = await step('starting the operator (syncline run)', () =>
    startOperator({
      kubeconfig: controlPlane.kubeconfigPath,
      args: ['--namespace', home, '--operator-namespace', home, '--dr-heartbeat-interval', '1s', '--render-engine', renderEngine],
    }),
  );
  cleanup = [() => operator.stop(), ...cleanup];

  await step('applying examples/configsyncs (the Git URL pointed at the local server)', async () => {
    for (const file of readdirSync(join(root, 'examples', 'configsyncs')).filter((f) => f.endsWith('.yaml'))) {
      for (const doc of parseAllDocuments(readFileSync(join(root, 'examples', 'configsyncs', file), 'utf8'))) {
        const object = doc.toJS() as { apiVersion: string; kind: string; metadata: { name: string }; spec?: { source?: { git?: { repo: string } } } };
        if (object.spec?.source?.git !== undefined) object.spec.source.git.repo = repo.url;
        const base = object.apiVersion === 'v1' ? '/api/v1' : `/apis/${object.apiVersion}`;
        const plural = `${object.kind.toLowerCase()}s`;
        await rest.request({
          method: 'PATCH',
          path: `${base}/namespaces/${home}/${plural}/${object.metadata.name}`,
          query: { fieldManager: 'syncline-demo', force: true },
          contentType: 'application/apply-patch+yaml',
          body: object,
        });
      }
    }
  });

  const table = showStatus(rest);
  // web and web-settings: Handlebars; shop: a Kustomize overlay per environment; hello: a Helm chart; quotas: Jsonnet.
  const exampleSyncs = ['web', 'web-settings', 'shop', 'hello', 'quotas'];
  await step('every example ConfigSync is Ready at the imported commit (Handlebars, a Kustomize overlay, a Helm chart, Jsonnet)', () => allReady(rest, first));
  await table.print();
  await step('their Deployments roll out: Pods scheduled onto the simulated node and Running, every Deployment Available', async () => {
    for (const ns of ['web-dev', 'web-staging', 'web-prod']) {
      await until(
        `the Deployments in ${ns} to be Available`,
        async () => {
          const list = await rest.request<{ items: { metadata: { name: string }; spec?: { replicas?: number }; status?: { availableReplicas?: number } }[] }>({
            method: 'GET',
            path: `/apis/apps/v1/namespaces/${ns}/deployments`,
          });
          return list.items.length > 0 && list.items.every((d) => (d.status?.availableReplicas ?? 0) === (d.spec?.replicas ?? 1)) ? list.items : undefined;
        },
        120_000,
      );
    }
    const pods = await rest.request<{ items: { spec?: { nodeName?: string }; status?: { phase?: string } }[] }>({
      method: 'GET',
      path: '/api/v1/namespaces/web-prod/pods',
    });
    console.log(
      dim(
        `    web-prod: ${pods.items.length} Pod(s) ${[...new Set(pods.items.map((p) => `${p.status?.phase ?? '?'} on ${p.spec?.nodeName ?? '?'}`))].join(', ')}`,
      ),
    );
  });

  // 1. A change in Git is applied.
  const second = await repo.commit(
    {
      'apps/web/feature-flags.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-feature-flags\ndata:\n  checkout: "new"\n',
    },
    { message: 'Add feature flags' },
  );
  await step(`commit ${second.slice(0, 7)} adds apps/web/feature-flags.yaml → created in all three environments`, async () => {
    for (const name of exampleSyncs) await requestReconcile(rest, name);
    await allReady(rest, second);
    for (const ns of ['web-dev', 'web-staging', 'web-prod'])
      await until(`web-feature-flags in ${ns}`, () => rest.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps/web-feature-flags` }));
  });
  await table.print();

  // 2. Pin the revision to the previous commit: rollback, and the newer object is pruned.
  await step(`pin revision to ${first.slice(0, 7)} (rollback) → feature flags pruned, Ready shows the pinned SHA`, async () => {
    await patch(rest, 'web', { spec: { source: { git: { revision: first } } } });
    await allReady(rest, first, ['web']);
    for (const ns of ['web-dev', 'web-staging', 'web-prod'])
      await until(`web-feature-flags to be pruned from ${ns}`, () => gone(rest, `/api/v1/namespaces/${ns}/configmaps/web-feature-flags`));
  });
  await table.print();

  // 3. Follow main again, and push a broken template: InvalidSource, nothing deleted.
  const broken = await repo.commit(
    {
      'apps/web/service.yaml.hbs': 'apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  {{#each values.ports}}\n    - port: {{ this }}\n',
    },
    { message: 'Break the service template' },
  );
  await step(`follow main again; commit ${broken.slice(0, 7)} breaks service.yaml.hbs → InvalidSource, nothing deleted`, async () => {
    await patch(rest, 'web', { spec: { source: { git: { revision: 'main' } } } });
    const cs = await until('InvalidSource', async () => {
      const c = await get(rest, 'web');
      return c.status?.conditions?.some((x) => x.type === 'InvalidSource' && x.status === 'True') === true && c.status.lastAttemptedRevision === broken
        ? c
        : undefined;
    });
    const message = cs.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';
    if (!message.includes('service.yaml.hbs')) throw new Error(`the condition does not name the file: ${message}`);
    console.log(dim(`    Ready=False: ${message}`));
    for (const ns of ['web-dev', 'web-staging', 'web-prod']) await rest.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/services/web` });
    // main also still holds feature-flags.yaml, but a failed render applies and prunes nothing
    for (const ns of ['web-dev', 'web-staging', 'web-prod'])
      if ((await gone(rest, `/api/v1/namespaces/${ns}/configmaps/web-feature-flags`)) !== true) throw new Error('a broken render applied something');
  });
  await table.print();

  // 4. Fix it: Ready again.
  const fixed = await repo.commit(
    { 'apps/web/service.yaml.hbs': readTree(join(root, 'examples', 'repo'))['apps/web/service.yaml.hbs'] ?? '' },
    { message: 'Fix the service template' },
  );
  await step(`commit ${fixed.slice(0, 7)} fixes it → Ready again, feature flags applied`, async () => {
    for (const name of exampleSyncs) await requestReconcile(rest, name);
    await allReady(rest, fixed);
    for (const ns of ['web-dev', 'web-staging', 'web-prod'])
      await until(`web-feature-flags in ${ns}`, () => rest.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps/web-feature-flags` }));
  });
  await table.print();

  // 4b. A Secret committed encrypted with sops: the operator decrypts it in memory with a key from a Secret in the
  // sync's own namespace. The key is generated here; sops is the real CLI (built from its Go module, cached).
  await step('sops encrypts apps/secrets/db.yaml for a fresh age key; the key goes into Secret sops-keys → the Secret is applied decrypted', async () => {
    const [sops, key] = await Promise.all([ensureSops(), generateAgeKey()]);
    const password = `demo-${Date.now().toString(36)}`;
    const secret = `apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\nstringData:\n  username: shop\n  password: ${password}\n`;
    const encrypted = sops
      .encrypt({ name: 'db.yaml', plaintext: secret, args: ['--age', key.recipient, '--encrypted-regex', '^(data|stringData)$'] })
      .toString();
    if (encrypted.includes(password)) throw new Error('sops left the password in plaintext');
    const commit = await repo.commit({ 'apps/secrets/db.yaml': encrypted }, { message: 'Add the database credentials, encrypted with sops' });
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${home}/secrets`,
      body: { metadata: { name: 'sops-keys' }, stringData: { 'identity.agekey': `${key.identity}\n` } },
    });
    await rest.request({
      method: 'PATCH',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${home}/configsyncs/web-secrets`,
      query: { fieldManager: 'syncline-demo', force: true },
      contentType: 'application/apply-patch+yaml',
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'ConfigSync',
        metadata: { name: 'web-secrets', namespace: home },
        spec: {
          source: { git: { repo: repo.url, revision: 'main', path: 'apps/secrets' } },
          refreshInterval: '1m',
          decryption: { provider: 'sops', secretRef: { name: 'sops-keys' } },
          targets: [{ name: 'dev', namespace: 'web-dev' }],
        },
      },
    });
    await allReady(rest, commit, ['web-secrets']);
    await until('the decrypted Secret in web-dev', async () => {
      const applied = await rest.request<{ data?: Record<string, string> }>({ method: 'GET', path: '/api/v1/namespaces/web-dev/secrets/db-credentials' });
      return Buffer.from(applied.data?.['password'] ?? '', 'base64').toString('utf8') === password ? true : undefined;
    });
    if (JSON.stringify((await get(rest, 'web-secrets')).status).includes(password)) throw new Error('the password reached the status');
    console.log(
      dim(
        `    in Git: password: ${/password: (ENC\[AES256_GCM,data:[^,]{0,12})/.exec(encrypted)?.[1] ?? 'ENC[…'}…]; in web-dev: Secret db-credentials with the value; the sync's status holds none`,
      ),
    );
  });
  await table.print();

  // 5. Copy an object that lives in the cluster: a ManifestSync puts a Secret into every web namespace.
  await step('a ManifestSync copies the registry Secret into every namespace labelled team=web', async () => {
    for (const ns of ['web-dev', 'web-staging', 'web-prod']) {
      await rest.request({
        method: 'PATCH',
        path: `/api/v1/namespaces/${ns}`,
        contentType: 'application/merge-patch+json',
        body: { metadata: { labels: { team: 'web' } } },
      });
    }
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${home}/secrets`,
      body: { metadata: { name: 'registry-credentials' }, stringData: { token: 'first' } },
    });
    await rest.request({
      method: 'PATCH',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${home}/manifestsyncs/registry-credentials`,
      query: { fieldManager: 'syncline-demo', force: true },
      contentType: 'application/apply-patch+yaml',
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'ManifestSync',
        metadata: { name: 'registry-credentials', namespace: home },
        spec: {
          sourceRef: { apiVersion: 'v1', kind: 'Secret', name: 'registry-credentials' },
          targets: [{ namespaceSelector: { matchLabels: { team: 'web' } } }],
        },
      },
    });
    for (const ns of ['web-dev', 'web-staging', 'web-prod']) await until(`the copy in ${ns}`, () => secretToken(rest, ns, 'first'));
  });
  await step('the source Secret changes → every copy follows at once (the source is watched)', async () => {
    await rest.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${home}/secrets/registry-credentials`,
      contentType: 'application/merge-patch+json',
      body: { stringData: { token: 'rotated' } },
    });
    for (const ns of ['web-dev', 'web-staging', 'web-prod']) await until(`the rotated copy in ${ns}`, () => secretToken(rest, ns, 'rotated'));
    const ms = await rest.request<{ status?: { targets?: { name: string; phase: string }[] } }>({
      method: 'GET',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${home}/manifestsyncs/registry-credentials`,
    });
    console.log(dim(`    ManifestSync registry-credentials: ${(ms.status?.targets ?? []).map((t) => `${t.name} ${t.phase}`).join(', ')}`));
  });

  // 6. Label-driven mirroring: no CR, a label and an annotation on the object itself.
  await step('a ConfigMap labelled syncline.dev/sync-source is mirrored into every web-* namespace', async () => {
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${home}/configmaps`,
      body: {
        metadata: { name: 'feature-defaults', labels: { 'syncline.dev/sync-source': 'true' }, annotations: { 'syncline.dev/targets': 'web-*' } },
        data: { banner: 'on' },
      },
    });
    for (const ns of ['web-dev', 'web-staging', 'web-prod']) {
      await until(`the replica in ${ns}`, async () => {
        const cm = await rest.request<{ data?: Record<string, string>; metadata: { labels?: Record<string, string> } }>({
          method: 'GET',
          path: `/api/v1/namespaces/${ns}/configmaps/feature-defaults`,
        });
        return cm.data?.['banner'] === 'on' && cm.metadata.labels?.['syncline.dev/sync-replica'] === 'true' ? true : undefined;
      });
    }
  });

  // 7. Disaster recovery: web-prod kept warm in a standby cluster, then a failover.
  const standby = await step('starting a second control plane as the DR standby cluster', () => startControlPlane({}));
  cleanup = [() => standby.stop(), ...cleanup];
  await step('a NamespaceReplication keeps web-prod warm in the standby: Deployments at 0 replicas', async () => {
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${home}/secrets`,
      body: { metadata: { name: 'standby-kubeconfig' }, stringData: { kubeconfig: adminOnly(readFileSync(standby.kubeconfigPath, 'utf8')) } },
    });
    await rest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${home}/remoteclusters`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'RemoteCluster',
        metadata: { name: 'standby' },
        spec: { kubeconfigSecretRef: { name: 'standby-kubeconfig', key: 'kubeconfig' } },
      },
    });
    await rest.request({
      method: 'POST',
      path: `/apis/syncline.dev/v1alpha1/namespaces/${home}/namespacereplications`,
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'NamespaceReplication',
        metadata: { name: 'web-prod' },
        spec: { sourceNamespace: 'web-prod', destination: { cluster: { name: 'standby' } } },
      },
    });
    const standbyKc = new KubeConfig();
    standbyKc.loadFromFile(standby.kubeconfigPath);
    const standbyRest = await createKubeRest(standbyKc);
    const web = await until('web in the standby', () =>
      standbyRest.request<{ spec?: { replicas?: number }; metadata: { annotations?: Record<string, string> } }>({
        method: 'GET',
        path: '/apis/apps/v1/namespaces/web-prod/deployments/web',
      }),
    );
    console.log(
      dim(
        `    standby web-prod/web: replicas ${web.spec?.replicas}, syncline.dev/original-replicas ${web.metadata.annotations?.['syncline.dev/original-replicas']}`,
      ),
    );
    if (web.spec?.replicas !== 0) throw new Error('the standby Deployment is not at 0 replicas');
    // The primary's heartbeat in the standby: what the standby side reads when the primary is gone.
    await until('the heartbeat in the standby, with the last replicated change', async () => {
      const lease = await standbyRest.request<{ metadata: { annotations?: Record<string, string> } }>({
        method: 'GET',
        path: '/apis/coordination.k8s.io/v1/namespaces/web-prod/leases/syncline-heartbeat-web-prod',
      });
      return (lease.metadata.annotations?.['syncline.dev/last-replicated-change'] ?? '') === '' ? undefined : lease;
    });
  });
  // The day DR exists for: the primary cluster is gone, and the standby is promoted from its own side.
  await step('the primary is gone: its operator and its control plane are killed', async () => {
    await operator.kill();
    process.kill(controlPlane.pid, 'SIGKILL');
    await cluster.stop();
  });
  await step("`syncline failover --standby`, with only the standby's kubeconfig → web-prod promoted, Deployments at their recorded counts", async () => {
    const failover = await syncline(['failover', '--standby', '--kubeconfig', standby.kubeconfigPath, '--by', 'demo-oncall']);
    for (const line of failover.trim().split('\n')) console.log(dim(`    ${line}`));
    const standbyKc = new KubeConfig();
    standbyKc.loadFromFile(standby.kubeconfigPath);
    const standbyRest = await createKubeRest(standbyKc);
    const list = await standbyRest.request<{ items: { metadata: { name: string; annotations?: Record<string, string> }; spec?: { replicas?: number } }[] }>({
      method: 'GET',
      path: '/apis/apps/v1/namespaces/web-prod/deployments',
    });
    if (list.items.length === 0) throw new Error('no Deployments in the standby');
    for (const d of list.items) {
      const recorded = d.metadata.annotations?.['syncline.dev/original-replicas'];
      if (String(d.spec?.replicas) !== recorded) throw new Error(`standby web-prod/${d.metadata.name}: replicas ${d.spec?.replicas}, recorded ${recorded}`);
      console.log(dim(`    standby web-prod/${d.metadata.name}: replicas ${d.spec?.replicas} (recorded ${recorded})`));
    }
    for (const line of (await syncline(['dr', 'status', '--standby', '--kubeconfig', standby.kubeconfigPath])).trim().split('\n'))
      console.log(dim(`    ${line}`));
  });

  console.log(bold(`\nWalkthrough complete in ${elapsed()}.`));
  if (!once) {
    // Explore on: the primary back from its data (new ports), its operator fenced off the promoted standby.
    const primary = await step('the primary back from its data: its operator sees the promotion and does not replicate over the standby', async () => {
      const back = await startControlPlane({ dataDir: primaryDataDir });
      cleanup = [() => back.stop(), ...cleanup];
      const again = await startOperator({
        kubeconfig: back.kubeconfigPath,
        args: ['--namespace', home, '--operator-namespace', home, '--render-engine', renderEngine],
      });
      cleanup = [() => again.stop(), ...cleanup];
      const backKc = new KubeConfig();
      backKc.loadFromFile(back.kubeconfigPath);
      const backRest = await createKubeRest(backKc);
      const fenced = await until('web-prod Fenced', async () => {
        const nr = await backRest.request<{ status?: { conditions?: { type: string; status: string; message: string }[] } }>({
          method: 'GET',
          path: `/apis/syncline.dev/v1alpha1/namespaces/${home}/namespacereplications/web-prod`,
        });
        return nr.status?.conditions?.find((c) => c.type === 'Fenced' && c.status === 'True');
      });
      console.log(dim(`    Fenced: ${fenced.message}`));
      return back;
    });
    const backKc = new KubeConfig();
    backKc.loadFromFile(primary.kubeconfigPath);
    const primaryTable = showStatus(await createKubeRest(backKc));
    console.log(`
  export KUBECONFIG=${primary.kubeconfigPath}
  kubectl get csync,msync -n ${home}            # the ConfigSyncs and the ManifestSync
  kubectl get deploy,svc,cm -n web-prod          # what they applied
  ./pnpm exec syncline status -n ${home}
  ./pnpm exec syncline get nsrepl -A             # web-prod: Fenced, the standby promoted
  ./pnpm exec syncline dr status --standby --kubeconfig ${standby.kubeconfigPath}
  Git repo: ${repo.url}  (clone it, push a change, then: ./pnpm exec syncline reconcile web -n ${home} --wait)

  The status below refreshes every 2 s. Ctrl-C stops everything.`);
    // Ctrl-C: stop everything and remove the primary's data directory.
    process.once('SIGINT', () => {
      clearInterval(spinnerTimer);
      void (async () => {
        for (const stop of cleanup) await stop().catch(() => undefined);
        process.exit(130);
      })();
    });
    await primaryTable.live();
  }
} catch (error) {
  exitCode = 1;
  if (!(error instanceof Error)) console.error(error);
} finally {
  clearInterval(spinnerTimer);
  for (const stop of cleanup) await stop().catch(() => undefined);
}
process.exit(exitCode);

/** The syncline CLI's commands, run in this process (a second Node would add its start-up): its output, or its error. */
async function syncline(args: readonly string[]): Promise<string> {
  let out = '';
  let err = '';
  const code = await runCli(args, {
    env: process.env,
    runOperator: () => Promise.reject(new Error('not here')),
    out: (text) => (out += text),
    err: (text) => (err += text),
  });
  if (code !== 0) throw new Error(`syncline ${args.join(' ')}: exit ${code}: ${err}`);
  return out;
}

async function get(rest: KubeRest, name: string): Promise<ConfigSync> {
  return rest.request<ConfigSync>({ method: 'GET', path: `/apis/syncline.dev/v1alpha1/namespaces/${home}/configsyncs/${name}` });
}

async function patch(rest: KubeRest, name: string, body: object): Promise<void> {
  await rest.request({
    method: 'PATCH',
    path: `/apis/syncline.dev/v1alpha1/namespaces/${home}/configsyncs/${name}`,
    contentType: 'application/merge-patch+json',
    body,
  });
}

/** What `syncline reconcile NAME` does: the annotation asks for an immediate sync. */
async function requestReconcile(rest: KubeRest, name: string): Promise<void> {
  await patch(rest, name, { metadata: { annotations: { 'syncline.dev/reconcile-requested-at': new Date().toISOString() } } });
}

/** A control plane's kubeconfig with only its admin context (a RemoteCluster refuses an ambiguous one). */
function adminOnly(text: string): string {
  const config = parse(text) as { users: { name: string }[]; contexts: { name: string }[] };
  return stringify({
    ...config,
    users: config.users.filter((u) => u.name === 'admin'),
    contexts: config.contexts.filter((c) => c.name === 'admin'),
    'current-context': 'admin',
  });
}

/** True once the Secret's `token` key holds `want` (never printed: it stands in for a credential). */
async function secretToken(rest: KubeRest, namespace: string, want: string): Promise<true | undefined> {
  const secret = await rest.request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${namespace}/secrets/registry-credentials` });
  return Buffer.from(secret.data?.['token'] ?? '', 'base64').toString() === want ? true : undefined;
}

async function gone(rest: KubeRest, path: string): Promise<true | undefined> {
  try {
    await rest.request({ method: 'GET', path });
    return undefined;
  } catch (error) {
    return (error as { status?: number }).status === 404 ? true : undefined;
  }
}

async function allReady(rest: KubeRest, revision: string, names?: string[]): Promise<void> {
  await until(`Ready at ${revision.slice(0, 7)}`, async () => {
    const list = await rest.request<{ items: ConfigSync[] }>({ method: 'GET', path: `/apis/syncline.dev/v1alpha1/namespaces/${home}/configsyncs` });
    const wanted = list.items.filter((cs) => names === undefined || names.includes(cs.metadata.name));
    return wanted.length > 0 &&
      wanted.every(
        (cs) =>
          cs.status?.sourceRevision === revision &&
          cs.status.observedGeneration === cs.metadata.generation &&
          cs.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      )
      ? true
      : undefined;
  });
}

function showStatus(rest: KubeRest): { print(): Promise<void>; live(): Promise<void> } {
  let last = '';
  const render = async (): Promise<string> => {
    const list = await rest.request<{ items: ConfigSync[] }>({ method: 'GET', path: `/apis/syncline.dev/v1alpha1/namespaces/${home}/configsyncs` });
    return formatStatus(list.items);
  };
  const indent = (text: string): string =>
    text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => `    ${l}`)
      .join('\n');
  return {
    async print() {
      last = await render();
      console.log(dim(indent(last)));
    },
    async live() {
      let lines = 0;
      for (;;) {
        const text = await render().catch(() => last);
        if (tty && lines > 0) process.stdout.write(`\x1b[${lines}A\x1b[J`);
        const shown = `${indent(text)}\n${dim(`    updated ${new Date().toLocaleTimeString()}`)}`;
        console.log(shown);
        lines = shown.split('\n').length;
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    },
  };
}

// End to end with the real kubectl binary: every kind of hand edit a platform team makes to a synced Deployment
// and Service (edit, strategic/merge/JSON patch, scale, label, annotate, set image, set env, a client-side apply)
// is corrected to exactly what Git says, list entries it added included, and a rollback afterwards succeeds.
// Fields another server-side applier owns stay its own.
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual, promisify } from 'node:util';
import { AppsV1Api } from '@kubernetes/client-node';
import { startGitServer, startOperator, type GitServer, type OperatorProcess, type TestRepo } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, configSync, core, eventually, installCrds, kc, patchConfigSync, readConfigSync, waitForReady } from './harness.ts';

const apps = kc.makeApiClient(AppsV1Api);
const run = promisify(execFile);

type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
};

/** The Deployment as Git holds it: list-map fields (containers, ports, env, volumes, mounts) and scalars. */
function deployment(options: { image: string; logLevel: string }): Manifest {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', labels: { app: 'web', 'app.kubernetes.io/part-of': 'shop' }, annotations: { 'shop.example/owner': 'team-web' } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          containers: [
            {
              name: 'web',
              image: options.image,
              ports: [
                { name: 'http', containerPort: 8080 },
                { name: 'metrics', containerPort: 9090 },
              ],
              env: [
                { name: 'LOG_LEVEL', value: options.logLevel },
                { name: 'MODE', value: 'git' },
              ],
              volumeMounts: [{ name: 'config', mountPath: '/etc/web' }],
            },
            { name: 'sidecar', image: 'busybox:1.36', command: ['sleep', 'infinity'] },
          ],
          volumes: [{ name: 'config', configMap: { name: 'web-config' } }],
        },
      },
    },
  };
}

function service(options: { httpPort: number }): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', labels: { app: 'web' }, annotations: { 'shop.example/owner': 'team-web' } },
    spec: {
      selector: { app: 'web' },
      ports: [
        { name: 'http', port: options.httpPort, targetPort: 8080 },
        { name: 'metrics', port: 9090, targetPort: 9090 },
      ],
    },
  };
}

const older = { deployment: deployment({ image: 'nginx:1.26', logLevel: 'warn' }), service: service({ httpPort: 80 }) };
const current = { deployment: deployment({ image: 'nginx:1.27', logLevel: 'info' }), service: service({ httpPort: 8080 }) };

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const list = (value: unknown): Record<string, unknown>[] => (Array.isArray(value) ? value.filter(isRecord) : []);
const pick = (value: unknown, keys: readonly string[]): Record<string, unknown> =>
  Object.fromEntries(keys.filter((k) => isRecord(value) && value[k] !== undefined).map((k) => [k, (value as Record<string, unknown>)[k]]));
/** Labels or annotations as Git sets them: our ownership marks aside, every key counts (an added one too). */
const marks = (value: unknown): Record<string, unknown> =>
  Object.fromEntries(Object.entries(isRecord(value) ? value : {}).filter(([k]) => !k.startsWith('syncline.dev/')));

/**
 * Every field Git sets, read from an object the same way whether it is the manifest or the live object: lists
 * whole (an entry kubectl added shows), maps whole (a label kubectl added shows), server defaults left out.
 */
function view(object: unknown): Record<string, unknown> {
  const o = isRecord(object) ? object : {};
  const metadata = isRecord(o['metadata']) ? o['metadata'] : {};
  const spec = isRecord(o['spec']) ? o['spec'] : {};
  const base = { labels: marks(metadata['labels']), annotations: marks(metadata['annotations']) };
  if (o['kind'] === 'Service') {
    return { ...base, selector: spec['selector'], ports: list(spec['ports']).map((p) => pick(p, ['name', 'port', 'targetPort'])) };
  }
  const template = isRecord(spec['template']) ? spec['template'] : {};
  const pod = isRecord(template['spec']) ? template['spec'] : {};
  return {
    ...base,
    replicas: spec['replicas'],
    templateLabels: marks(isRecord(template['metadata']) ? template['metadata']['labels'] : undefined),
    templateAnnotations: marks(isRecord(template['metadata']) ? template['metadata']['annotations'] : undefined),
    containers: list(pod['containers']).map((c) => ({
      ...pick(c, ['name', 'image', 'command']),
      ports: list(c['ports']).map((p) => pick(p, ['name', 'containerPort'])),
      env: list(c['env']).map((e) => pick(e, ['name', 'value'])),
      volumeMounts: list(c['volumeMounts']).map((m) => pick(m, ['name', 'mountPath'])),
    })),
    volumes: list(pod['volumes']).map((v) => ({ name: v['name'], configMap: isRecord(v['configMap']) ? pick(v['configMap'], ['name']) : undefined })),
  };
}

type ManagedEntry = { manager?: string; operation?: string; subresource?: string; fieldsV1?: unknown };
const managersOf = (object: { metadata?: { managedFields?: ManagedEntry[] } }): string[] =>
  (object.metadata?.managedFields ?? []).map((e) => `${e.manager ?? ''}/${e.operation ?? ''}${e.subresource === undefined ? '' : `/${e.subresource}`}`).sort();

describe('kubectl edits never wedge a sync', () => {
  let git: GitServer;
  let ns: TestNamespace;
  let operator: OperatorProcess;
  let repo: TestRepo;
  let tmp: string;
  let olderSha: string;
  let currentSha: string;

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    ns = await testNamespace({ prefix: 'kubectl' });
    tmp = await mkdtemp(join(tmpdir(), 'syncline-kubectl-'));
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name] });
    repo = await git.createRepo('kubectl-edits');
    olderSha = await repo.commit({ 'app/deployment.yaml': JSON.stringify(older.deployment), 'app/service.yaml': JSON.stringify(older.service) });
    currentSha = await repo.commit({ 'app/deployment.yaml': JSON.stringify(current.deployment), 'app/service.yaml': JSON.stringify(current.service) });
    // refreshInterval 1h: only the drift watch can explain a correction
    await applyConfigSync(
      configSync(ns.name, 'web', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '1h',
        policy: 'Sync',
        drift: 'Correct',
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );
    await waitForReady(ns.name, 'web', (c) => c.status?.sourceRevision === currentSha, 90_000);
  });
  afterAll(async () => {
    await operator.stop();
    await ns[Symbol.asyncDispose]();
    await git.close();
    await rm(tmp, { recursive: true, force: true });
  });

  async function kubectl(args: readonly string[], env: Record<string, string> = {}): Promise<string> {
    const { stdout } = await run('kubectl', ['--kubeconfig', testKubeconfigPath(), '-n', ns.name, ...args], {
      env: { ...process.env, ...env },
      timeout: 60_000,
    });
    return stdout;
  }

  /** `kubectl edit` with an editor that runs sed over the file kubectl hands it. */
  async function kubectlEdit(resource: string, sedScript: string): Promise<string> {
    const editor = join(tmp, `editor-${Math.random().toString(36).slice(2)}.sh`);
    await writeFile(editor, `#!/bin/sh\nexec sed -i -e '${sedScript}' "$1"\n`);
    await chmod(editor, 0o755);
    return kubectl(['edit', resource], { KUBE_EDITOR: editor, EDITOR: editor });
  }

  const readDeployment = () => apps.readNamespacedDeployment({ name: 'web', namespace: ns.name });
  const readService = () => core.readNamespacedService({ name: 'web', namespace: ns.name });

  /** Both objects equal Git on every field it sets, and no kubectl manager owns a field of either. */
  async function waitUntilGit(expected: { deployment: Manifest; service: Manifest }, what: string): Promise<void> {
    let last: unknown;
    try {
      await eventually(
        async () => {
          const [d, s] = await Promise.all([readDeployment(), readService()]);
          last = { deployment: view(d), service: view(s), managers: [managersOf(d), managersOf(s)] };
          const edited = [...managersOf(d), ...managersOf(s)].filter((m) => m.startsWith('kubectl') && !m.endsWith('/scale'));
          const equal = isDeepStrictEqual(view(d), view(expected.deployment)) && isDeepStrictEqual(view(s), view(expected.service));
          return equal && edited.length === 0 ? true : undefined;
        },
        what,
        60_000,
      );
    } catch (error) {
      throw new Error(`${(error as Error).message}; last seen: ${JSON.stringify(last)}`);
    }
  }

  const deploymentFile = async (manifest: Manifest): Promise<string> => {
    const path = join(tmp, `deployment-${Math.random().toString(36).slice(2)}.json`);
    await writeFile(path, JSON.stringify({ ...manifest, metadata: { ...manifest.metadata, namespace: ns.name } }));
    return path;
  };

  // Each edit must change something (kubectl says so), and is then corrected to exactly Git.
  const variants: { name: string; edit: () => Promise<string>; says: RegExp }[] = [
    {
      name: 'kubectl edit of a Deployment (image, env value)',
      edit: () => kubectlEdit('deployment/web', 's/image: nginx:1.27/image: nginx:edited/; s/value: info/value: debug/'),
      says: /edited/,
    },
    // the port's list key changes with it: the renumbered entry keeps the name "http"
    { name: 'kubectl edit of a Service port', edit: () => kubectlEdit('service/web', 's/ port: 8080/ port: 9999/'), says: /edited/ },
    {
      name: 'kubectl patch --type json of a Service port (8080 → 9999)',
      edit: () => kubectl(['patch', 'service/web', '--type', 'json', '-p', '[{"op":"replace","path":"/spec/ports/0/port","value":9999}]']),
      says: /patched/,
    },
    {
      name: 'kubectl patch --type merge replacing the Service ports',
      edit: () => kubectl(['patch', 'service/web', '--type', 'merge', '-p', '{"spec":{"ports":[{"name":"http","port":9999,"targetPort":8080}]}}']),
      says: /patched/,
    },
    {
      name: 'kubectl patch (strategic) adding a container port, an env var, a volume and a mount',
      edit: () =>
        kubectl([
          'patch',
          'deployment/web',
          '-p',
          JSON.stringify({
            spec: {
              template: {
                spec: {
                  containers: [
                    {
                      name: 'web',
                      ports: [{ name: 'admin', containerPort: 7070 }],
                      env: [{ name: 'DEBUG', value: '1' }],
                      volumeMounts: [{ name: 'scratch', mountPath: '/tmp/scratch' }],
                    },
                  ],
                  volumes: [{ name: 'scratch', emptyDir: {} }],
                },
              },
            },
          }),
        ]),
      says: /patched/,
    },
    {
      name: 'kubectl patch (strategic) adding a Service port',
      edit: () => kubectl(['patch', 'service/web', '-p', '{"spec":{"ports":[{"name":"admin","port":7070,"targetPort":7070}]}}']),
      says: /patched/,
    },
    { name: 'kubectl scale', edit: () => kubectl(['scale', 'deployment/web', '--replicas', '5']), says: /scaled/ },
    {
      name: 'kubectl label (a new label and an overwritten one)',
      edit: () => kubectl(['label', 'deployment/web', 'team=ops', 'app.kubernetes.io/part-of=hand', '--overwrite']),
      says: /labeled/,
    },
    {
      name: 'kubectl annotate (a new annotation and an overwritten one)',
      edit: () => kubectl(['annotate', 'service/web', 'note=by-hand', 'shop.example/owner=someone', '--overwrite']),
      says: /annotated/,
    },
    { name: 'kubectl set image', edit: () => kubectl(['set', 'image', 'deployment/web', 'web=nginx:hand', 'sidecar=busybox:hand']), says: /image updated/ },
    {
      name: 'kubectl set env (a new variable and a changed one)',
      edit: () => kubectl(['set', 'env', 'deployment/web', '-c', 'web', 'EXTRA=1', 'LOG_LEVEL=debug']),
      says: /env updated/,
    },
    {
      name: 'a client-side kubectl apply of the same Deployment (another image, an extra env var and container)',
      edit: async () => {
        const changed = deployment({ image: 'nginx:applied', logLevel: 'info' });
        const pod = (changed.spec['template'] as { spec: { containers: { env?: unknown[] }[] } }).spec;
        pod.containers[0]?.env?.push({ name: 'APPLIED', value: 'yes' });
        pod.containers.push({ name: 'debug', image: 'busybox:1.36', command: ['sleep', 'infinity'] } as never);
        return kubectl(['apply', '-f', await deploymentFile(changed)]);
      },
      says: /configured/,
    },
  ];

  describe.each(variants)('$name', ({ edit, says }) => {
    it('is corrected to exactly what Git says, and the sync stays Ready', async () => {
      // given the objects as Git says
      await waitUntilGit(current, 'the objects to equal Git before the edit');

      // when someone edits them with kubectl
      const output = await edit();
      expect(output).toMatch(says);
      expect(output).not.toMatch(/no change/);

      // then drift correction restores every field Git sets, entries kubectl added inside Git's lists removed
      await waitUntilGit(current, 'the edit to be corrected');
      const cs = await waitForReady(ns.name, 'web', (c) => c.status?.sourceRevision === currentSha, 60_000);
      expect(cs.status?.targets?.[0]).toMatchObject({ phase: 'Synced' });
      // and our manager's entry is still an Apply (what proves an apply of ours)
      const [d, s] = await Promise.all([readDeployment(), readService()]);
      expect(managersOf(d)).toContain('syncline/Apply');
      expect(managersOf(s)).toContain('syncline/Apply');
    });
  });

  it('rolls back (an older SHA pinned) after a port was renumbered by hand and patched back, and follows main again', async () => {
    // given the port renumbered by hand and patched back (the kubectl-patch manager owned the entry then)
    await kubectl(['patch', 'service/web', '--type', 'json', '-p', '[{"op":"replace","path":"/spec/ports/0/port","value":9999}]']);
    await kubectl(['patch', 'service/web', '--type', 'json', '-p', '[{"op":"replace","path":"/spec/ports/0/port","value":8080}]']);
    await waitUntilGit(current, 'the hand edits to be corrected');

    // when the older commit is pinned, then it applies: http is port 80 again, and nothing duplicates
    await patchConfigSync(ns.name, 'web', { spec: { source: { git: { revision: olderSha } } } });
    await waitForReady(ns.name, 'web', (c) => c.status?.sourceRevision === olderSha, 60_000);
    await waitUntilGit(older, 'the rollback');

    // and following main again applies the current commit
    await patchConfigSync(ns.name, 'web', { spec: { source: { git: { revision: 'main' } } } });
    await waitForReady(ns.name, 'web', (c) => c.status?.sourceRevision === currentSha, 60_000);
    await waitUntilGit(current, 'main again');
  });

  it('leaves what another server-side applier owns under policy Sync, while correcting the kubectl edit beside it', async () => {
    // given another applier that owns an annotation, an env var of the web container and a Service port of our objects
    const other = ['apply', '--server-side', '--field-manager', 'platform-tool', '-f'];
    const platformDeployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: ns.name, annotations: { 'platform.example/scraped': 'true' } },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', env: [{ name: 'PLATFORM', value: 'injected' }] }] } },
      },
    };
    const path = join(tmp, 'platform.json');
    await writeFile(path, JSON.stringify(platformDeployment));
    await kubectl([...other, path]);

    // when someone also changes the image by hand
    await kubectl(['set', 'image', 'deployment/web', 'web=nginx:hand']);

    // then the image is Git's again, kubectl's entry is gone, and the other applier keeps its fields and its entry
    const corrected = await eventually(
      async () => {
        const d = await readDeployment();
        const web = d.spec?.template.spec?.containers.find((c) => c.name === 'web');
        return web?.image === 'nginx:1.27' && !managersOf(d).includes('kubectl-set/Update') ? d : undefined;
      },
      'the image to be corrected',
      60_000,
    );
    const web = corrected.spec?.template.spec?.containers.find((c) => c.name === 'web');
    expect(web?.env?.map((e) => e.name)).toEqual(['LOG_LEVEL', 'MODE', 'PLATFORM']);
    expect(corrected.metadata?.annotations?.['platform.example/scraped']).toBe('true');
    const platform = corrected.metadata?.managedFields?.find((e) => e.manager === 'platform-tool');
    expect(platform?.operation).toBe('Apply');
    expect(JSON.stringify(platform?.fieldsV1)).toContain('PLATFORM');
    expect(managersOf(corrected)).toContain('syncline/Apply');
    expect((await readConfigSync(ns.name, 'web')).status?.targets?.[0]).toMatchObject({ phase: 'Synced' });
  });
});

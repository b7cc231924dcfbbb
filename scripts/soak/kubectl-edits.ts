// kubectl edits of synced objects, with the real kubectl binary: a Deployment and a Service that one ConfigSync
// keeps equal to Git (drift: Correct) are edited by hand at random moments (edit, strategic/merge/JSON patch,
// scale, label, annotate, set image, set env, a client-side apply), and each edit must be undone by drift
// correction: every field Git sets equal to Git again, list entries kubectl added (an env var, a port, a
// volume) removed too. The time to each correction is recorded; at the end the objects must equal Git.
import type { KubeRest } from '@syncline/operator';
import { execFile } from 'node:child_process';
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual, promisify } from 'node:util';

const run = promisify(execFile);

type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
};

/** The Deployment as Git holds it: list-map fields (containers, ports, env, volumes, mounts) and scalars. */
function deployment(image = 'nginx:1.27', extraEnv: { name: string; value: string }[] = []): Manifest {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', labels: { app: 'web', 'app.kubernetes.io/part-of': 'soak' }, annotations: { 'soak.example/owner': 'team-web' } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          containers: [
            {
              name: 'web',
              image,
              ports: [
                { name: 'http', containerPort: 8080 },
                { name: 'metrics', containerPort: 9090 },
              ],
              env: [{ name: 'LOG_LEVEL', value: 'info' }, { name: 'MODE', value: 'git' }, ...extraEnv],
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

const service: Manifest = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', labels: { app: 'web' }, annotations: { 'soak.example/owner': 'team-web' } },
  spec: {
    selector: { app: 'web' },
    ports: [
      { name: 'http', port: 8080, targetPort: 8080 },
      { name: 'metrics', port: 9090, targetPort: 9090 },
    ],
  },
};

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const list = (value: unknown): Record<string, unknown>[] => (Array.isArray(value) ? value.filter(isRecord) : []);
const pick = (value: unknown, keys: readonly string[]): Record<string, unknown> =>
  Object.fromEntries(keys.filter((k) => isRecord(value) && value[k] !== undefined).map((k) => [k, (value as Record<string, unknown>)[k]]));
/** Labels or annotations as Git sets them: our ownership marks aside, every key counts (one kubectl added too). */
const marks = (value: unknown): Record<string, unknown> =>
  Object.fromEntries(Object.entries(isRecord(value) ? value : {}).filter(([k]) => !k.startsWith('syncline.dev/')));

/** Every field Git sets, read the same way from the manifest and the live object: lists and maps whole, server defaults left out. */
function view(object: unknown): Record<string, unknown> {
  const o = isRecord(object) ? object : {};
  const metadata = isRecord(o['metadata']) ? o['metadata'] : {};
  const spec = isRecord(o['spec']) ? o['spec'] : {};
  const base = { labels: marks(metadata['labels']), annotations: marks(metadata['annotations']) };
  if (o['kind'] === 'Service') return { ...base, selector: spec['selector'], ports: list(spec['ports']).map((p) => pick(p, ['name', 'port', 'targetPort'])) };
  const template = isRecord(spec['template']) ? spec['template'] : {};
  const pod = isRecord(template['spec']) ? template['spec'] : {};
  return {
    ...base,
    replicas: spec['replicas'],
    templateLabels: marks(isRecord(template['metadata']) ? template['metadata']['labels'] : undefined),
    containers: list(pod['containers']).map((c) => ({
      ...pick(c, ['name', 'image', 'command']),
      ports: list(c['ports']).map((p) => pick(p, ['name', 'containerPort'])),
      env: list(c['env']).map((e) => pick(e, ['name', 'value'])),
      volumeMounts: list(c['volumeMounts']).map((m) => pick(m, ['name', 'mountPath'])),
    })),
    volumes: list(pod['volumes']).map((v) => ({ name: v['name'], configMap: isRecord(v['configMap']) ? pick(v['configMap'], ['name']) : undefined })),
  };
}

type Edit = { readonly name: string; run(): Promise<string> };

export class KubectlFaults {
  readonly #kubeconfig: string;
  readonly #namespace: string;
  readonly #workDir: string;
  readonly #random: () => number;
  readonly #log: (line: string) => void;
  readonly #edits: readonly Edit[];
  /** Per edit: how long until the objects equalled Git again (undefined: not within the wait). */
  readonly corrections: Array<{ edit: string; ms: number | undefined }> = [];
  readonly refused: string[] = [];
  /** Edits corrected later than the loop's limit (or not at all): what happened, when. */
  readonly late: string[] = [];

  constructor(options: { kubeconfig: string; namespace: string; workDir: string; random: () => number; log: (line: string) => void }) {
    this.#kubeconfig = options.kubeconfig;
    this.#namespace = options.namespace;
    this.#workDir = options.workDir;
    this.#random = options.random;
    this.#log = options.log;
    const strategicAdd = {
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
    };
    this.#edits = [
      {
        name: 'edit deployment (image, env value)',
        run: () => this.#edit('deployment/web', 's/image: nginx:1.27/image: nginx:edited/; s/value: info/value: debug/'),
      },
      { name: 'edit service port', run: () => this.#edit('service/web', 's/ port: 8080/ port: 9999/') },
      {
        name: 'patch --type json service port',
        run: () => this.#kubectl(['patch', 'service/web', '--type', 'json', '-p', '[{"op":"replace","path":"/spec/ports/0/port","value":9999}]']),
      },
      {
        name: 'patch --type merge service ports',
        run: () => this.#kubectl(['patch', 'service/web', '--type', 'merge', '-p', '{"spec":{"ports":[{"name":"http","port":9999,"targetPort":8080}]}}']),
      },
      {
        name: 'patch (strategic) adding a port, env var, volume and mount',
        run: () => this.#kubectl(['patch', 'deployment/web', '-p', JSON.stringify(strategicAdd)]),
      },
      { name: 'scale', run: () => this.#kubectl(['scale', 'deployment/web', '--replicas', '5']) },
      { name: 'label', run: () => this.#kubectl(['label', 'deployment/web', 'team=ops', 'app.kubernetes.io/part-of=hand', '--overwrite']) },
      { name: 'annotate', run: () => this.#kubectl(['annotate', 'service/web', 'note=by-hand', 'soak.example/owner=someone', '--overwrite']) },
      { name: 'set image', run: () => this.#kubectl(['set', 'image', 'deployment/web', 'web=nginx:hand', 'sidecar=busybox:hand']) },
      { name: 'set env', run: () => this.#kubectl(['set', 'env', 'deployment/web', '-c', 'web', 'EXTRA=1', 'LOG_LEVEL=debug']) },
      {
        name: 'client-side apply (another image, an extra env var)',
        run: async () => {
          const path = join(this.#workDir, 'kubectl-apply.json');
          const changed = deployment('nginx:applied', [{ name: 'APPLIED', value: 'yes' }]);
          await writeFile(path, JSON.stringify({ ...changed, metadata: { ...changed.metadata, namespace: this.#namespace } }));
          return this.#kubectl(['apply', '-f', path]);
        },
      },
    ];
  }

  /** The repository's files: the two objects as Git holds them. */
  static files(): Record<string, string> {
    return { 'web/deployment.yaml': JSON.stringify(deployment()), 'web/service.yaml': JSON.stringify(service) };
  }

  /**
   * Edits one object at a time, `spacing` ms apart on average, each followed by a wait for its correction (up to
   * twice `limitMs`, so a late one is still timed); `late` lists those corrected after `limitMs`, or never.
   */
  async loop(options: { rest: KubeRest; spacingMs: number; limitMs: number; signal: AbortSignal }): Promise<void> {
    for (;;) {
      const wait = options.spacingMs / 2 + this.#random() * options.spacingMs;
      try {
        await sleep(wait, undefined, { signal: options.signal });
      } catch {
        return;
      }
      // Only an object equal to Git gets the next edit (a pending correction is waited for, below).
      if ((await this.differences(options.rest)).length > 0) continue;
      const edit = this.#edits[Math.floor(this.#random() * this.#edits.length)];
      if (edit === undefined) continue;
      let output: string;
      try {
        output = await edit.run();
      } catch (error) {
        this.refused.push(`${edit.name}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
        continue;
      }
      if (/no change|unchanged/.test(output)) continue;
      const editedAt = Date.now();
      const corrected = await this.#waitUntilGit(options.rest, 2 * options.limitMs);
      const ms = corrected ? Date.now() - editedAt : undefined;
      this.corrections.push({ edit: edit.name, ms });
      if (ms === undefined || ms > options.limitMs)
        this.late.push(
          `${edit.name} at ${new Date(editedAt).toISOString()}: ${ms === undefined ? `not corrected within ${(2 * options.limitMs) / 1000}s` : `corrected after ${(ms / 1000).toFixed(1)}s`}`,
        );
      this.#log(
        `kubectl ${edit.name}: ${ms === undefined ? `NOT corrected within ${(2 * options.limitMs) / 1000} s` : `corrected in ${(ms / 1000).toFixed(1)}s${ms > options.limitMs ? ` (LATE: limit ${options.limitMs / 1000}s)` : ''}`}`,
      );
    }
  }

  /** What differs from Git now, per object (empty: both equal Git on every field it sets). */
  async differences(rest: KubeRest): Promise<string[]> {
    const read = (plural: string, group: string): Promise<unknown> =>
      rest
        .request({ method: 'GET', path: `${group === '' ? '/api/v1' : `/apis/${group}/v1`}/namespaces/${this.#namespace}/${plural}/web` })
        .catch(() => undefined);
    const [d, s] = await Promise.all([read('deployments', 'apps'), read('services', '')]);
    const problems: string[] = [];
    if (!isDeepStrictEqual(view(d), view(deployment()))) problems.push(`deployment/web: ${JSON.stringify(view(d))}`);
    if (!isDeepStrictEqual(view(s), view(service))) problems.push(`service/web: ${JSON.stringify(view(s))}`);
    return problems;
  }

  async #waitUntilGit(rest: KubeRest, timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if ((await this.differences(rest)).length === 0) return true;
      await sleep(250);
    }
    return false;
  }

  async #kubectl(args: readonly string[], env: Record<string, string> = {}): Promise<string> {
    const { stdout } = await run('kubectl', ['--kubeconfig', this.#kubeconfig, '-n', this.#namespace, ...args], {
      env: { ...process.env, ...env },
      timeout: 60_000,
    });
    return stdout;
  }

  /** `kubectl edit` with an editor that runs sed over the file kubectl hands it. */
  async #edit(resource: string, sedScript: string): Promise<string> {
    const editor = join(this.#workDir, 'kubectl-editor.sh');
    await writeFile(editor, `#!/bin/sh\nexec sed -i -e '${sedScript}' "$1"\n`);
    await chmod(editor, 0o755);
    return this.#kubectl(['edit', resource], { KUBE_EDITOR: editor, EDITOR: editor });
  }
}

// What the `syncline` subcommands do (src/cli.ts parses the command line and loads this module only when
// a command needs a cluster or the render code, so --help and --version start fast).
import { createDecryptionContext, decryptFiles } from '@syncline/operator/client';
import { type KubeConnection, connectKubeconfig, loadKubeConfig, createKubeRest, type KubeRest } from '@syncline/kube';
import { createApplyClient, type KubeObject as ApplyObject } from '@syncline/apply';
import {
  EngineName,
  RenderEngine,
  RenderError,
  TemplateCache,
  createStaticDiscovery,
  detectEngine,
  layerValues,
  parseValues,
  renderTarget,
  renderWithEngine,
  type EngineSpec,
  type SourceFile,
  type Values,
} from '@syncline/render';
import { existsSync } from 'node:fs';
import { createGitSource, proxyFromEnvironment } from '@syncline/source-git';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { stringify } from 'yaml';
import { ConfigSyncSpec, type ConfigSync, type HistoryEntry, type RemoteCluster, type TargetStatus } from '@syncline/api';
import {
  mirrorKeys,
  parseMirrorSourceNamespaces,
  replicaSelector,
  sourceSelector,
  type MirrorKeys,
  type MirrorNamespace,
  type NamePattern,
} from '@syncline/operator/client';
import { trustedNamespaces, type TrustedNamespaces } from '@syncline/operator/client';
import { formatMirrorRows, mirrorStatusRows, resolveSource, type MirrorRow } from '@syncline/operator/client';
import { RECONCILE_REQUESTED_ANNOTATION } from '@syncline/api';
import { parseDuration } from '@syncline/operator/client';
import { StallError } from '@syncline/operator/client';
import type { KubeFlags, ListFlags, Out } from './flags.ts';
import { createChartSource } from '@syncline/source-helm';
import { diffSync, readSource } from '@syncline/operator/client';
import { readsWholeRepository } from '@syncline/operator/client';

export type Kube = { connection: KubeConnection; rest: KubeRest; namespace: string; allNamespaces: boolean };

export async function connect(flags: KubeFlags & { allNamespaces?: boolean }, env: NodeJS.ProcessEnv): Promise<Kube> {
  const kc = loadKubeConfig({ kubeconfig: flags.kubeconfig, context: flags.context, env });
  const connection = await connectKubeconfig(kc);
  const rest = await createKubeRest(connection, { userAgent: 'syncline-cli' });
  const namespace = flags.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  return { connection, rest, namespace, allNamespaces: flags.allNamespaces === true };
}

const API = '/apis/syncline.dev/v1alpha1';
export const configSyncPath = (namespace: string, name: string): string => `${API}/namespaces/${namespace}/configsyncs/${name}`;

export async function getConfigSync(kube: Kube, name: string): Promise<ConfigSync> {
  return kube.rest.request<ConfigSync>({ method: 'GET', path: configSyncPath(kube.namespace, name) });
}

/** kubectl's line for an empty list: on stderr, so -o json/yaml output stays parseable. */
function noResources(kube: Kube): string {
  return kube.allNamespaces ? 'No resources found\n' : `No resources found in ${kube.namespace} namespace.\n`;
}

/** -o json|yaml: one object as it is, a list as a v1 List; managedFields left out (as kubectl does). */
function printObjects(format: 'json' | 'yaml', items: readonly { metadata: object }[], single: boolean): string {
  const clean = items.map((item) => {
    const { managedFields: _managedFields, ...metadata } = item.metadata as Record<string, unknown>;
    return { ...item, metadata };
  });
  const value = single ? clean[0] : { apiVersion: 'v1', kind: 'List', items: clean, metadata: { resourceVersion: '' } };
  return format === 'json' ? `${JSON.stringify(value, null, 4)}\n` : stringify(value);
}

export async function statusCommand(kube: Kube, name: string | undefined, flags: ListFlags, out: Out, err: Out): Promise<number> {
  if (name !== undefined && kube.allNamespaces) throw new Error('a resource cannot be retrieved by name across all namespaces');
  const items =
    name !== undefined
      ? [await getConfigSync(kube, name)]
      : (
          await kube.rest.request<{ items: ConfigSync[] }>({
            method: 'GET',
            path: kube.allNamespaces ? `${API}/configsyncs` : `${API}/namespaces/${kube.namespace}/configsyncs`,
          })
        ).items;
  if (flags.output !== 'table') {
    out(printObjects(flags.output, items, name !== undefined));
    return 0;
  }
  if (items.length === 0) {
    err(noResources(kube));
    return 0;
  }
  out(formatStatus(items));
  if (name !== undefined) out(formatTargets(items[0]?.status?.targets ?? []));
  if (name !== undefined) out(formatHooks(items[0]?.status?.targets ?? []));
  return 0;
}

export async function clustersCommand(kube: Kube, flags: ListFlags, out: Out, err: Out): Promise<number> {
  const list = await kube.rest.request<{ items: RemoteCluster[] }>({
    method: 'GET',
    path: kube.allNamespaces ? `${API}/remoteclusters` : `${API}/namespaces/${kube.namespace}/remoteclusters`,
  });
  if (flags.output !== 'table') out(printObjects(flags.output, list.items, false));
  else if (list.items.length === 0) err(noResources(kube));
  else out(formatClusters(list.items));
  return 0;
}

export async function mirrorsCommand(
  kube: Kube,
  flags: ListFlags & { mirrorPrefix: string; mirrorSourceNamespaces?: string; trustedNamespaces?: string },
  out: Out,
  err: Out,
): Promise<number> {
  const rows = await mirrorRows({
    rest: kube.rest,
    keys: mirrorKeys(flags.mirrorPrefix),
    sourceNamespaces: parseMirrorSourceNamespaces(flags.mirrorSourceNamespaces ?? ''),
    trusted: trustedNamespaces({ list: flags.trustedNamespaces }),
    namespace: kube.allNamespaces ? undefined : kube.namespace,
  });
  if (flags.output === 'json') out(`${JSON.stringify({ items: rows }, null, 4)}\n`);
  else if (flags.output === 'yaml') out(stringify({ items: rows }));
  else if (rows.length === 0) err(noResources(kube));
  else out(formatMirrorRows(rows));
  return 0;
}

/**
 * `reconcile NAME`: sets the request annotation (a new token each time). With --wait it waits until the
 * operator recorded that token in status.lastHandledReconcileAt, then reports Ready: the applied revision
 * (exit 0) or the failure (exit 1), like `flux reconcile`.
 */
export async function reconcileCommand(kube: Kube, name: string, flags: { wait?: boolean; timeout: string }, out: Out, err: Out): Promise<number> {
  const timeoutMs = durationFlag('--timeout', flags.timeout);
  const object = await getConfigSync(kube, name);
  const id = `${kube.namespace}/${name}`;
  if (object.spec.suspend === true) {
    throw new Error(
      `${id} is suspended (spec.suspend: true): a reconcile request would do nothing; resume it first: kubectl patch csync ${name} -n ${kube.namespace} --type merge -p '{"spec":{"suspend":false}}'`,
    );
  }
  const at = new Date().toISOString();
  await kube.rest.request({
    method: 'PATCH',
    path: configSyncPath(kube.namespace, name),
    contentType: 'application/merge-patch+json',
    body: { metadata: { annotations: { [RECONCILE_REQUESTED_ANNOTATION]: at } } },
  });
  out(`requested a sync of ${id} at ${at}\n`);
  if (flags.wait !== true) return 0;
  out(`waiting for ${id} (timeout ${flags.timeout})\n`);
  const deadline = Date.now() + timeoutMs;
  let delay = 250;
  for (;;) {
    const current = await getConfigSync(kube, name);
    const ready = current.status?.conditions?.find((c) => c.type === 'Ready');
    if (current.status?.lastHandledReconcileAt === at) {
      if (ready?.status === 'True') {
        out(`applied revision ${revisionText(current.spec.source.git.revision, current.status.sourceRevision ?? '')}\n`);
        return 0;
      }
      err(`error: ${id} is not ready (${ready?.reason ?? 'Unknown'}): ${ready?.message ?? 'no Ready condition'}\n`);
      return 1;
    }
    if (Date.now() + delay > deadline) {
      err(
        `error: timed out after ${flags.timeout} waiting for ${id} to handle the request (is the operator running?)${ready === undefined ? '' : `; Ready=${ready.status}: ${ready.message}`}\n`,
      );
      return 1;
    }
    await new Promise((done) => setTimeout(done, delay));
    delay = Math.min(delay * 2, 2000);
  }
}

/** Flux's wording of a revision: `main@sha1:<sha>` (a SHA pinned as the revision: `sha1:<sha>`). */
export function revisionText(ref: string, sha: string): string {
  const algo = sha.length === 64 ? 'sha256' : 'sha1';
  return ref === '' || ref.toLowerCase() === sha.toLowerCase() ? `${algo}:${sha}` : `${ref}@${algo}:${sha}`;
}

function durationFlag(flag: string, text: string): number {
  // A plain number is seconds (what --timeout of failover took before).
  if (/^[0-9]+$/.test(text)) return Number(text) * 1000;
  try {
    return parseDuration(text);
  } catch (error) {
    throw new Error(`${flag} ${(error as Error).message}`);
  }
}

type RenderFlags = {
  values: string[];
  set: string[];
  target: string;
  namespace: string;
  engine?: 'kustomize' | 'helm' | 'jsonnet';
  repoRoot?: string;
  releaseName?: string;
  jpath?: string[];
  extStr?: string[];
  tlaStr?: string[];
  renderEngine?: string;
  env?: NodeJS.ProcessEnv;
  output?: 'yaml' | 'json';
};

function assignments(flag: string, list: readonly string[] = []): Record<string, string> {
  return Object.fromEntries(
    list.map((entry) => {
      const at = entry.indexOf('=');
      if (at <= 0) throw new Error(`${flag} takes key=value, not ${JSON.stringify(entry)}`);
      return [entry.slice(0, at), entry.slice(at + 1)];
    }),
  );
}

export async function renderCommand(path: string, flags: RenderFlags, out: Out): Promise<number> {
  const layers: Values[] = [];
  for (const file of flags.values) layers.push(parseValues(await readLocal(file, '--values'), file));
  for (const assignment of flags.set) layers.push(setValue(assignment));
  const found = await stat(path).catch(() => undefined);
  if (found === undefined) throw new Error(`${path}: no such file or directory (render takes a template file or a directory of templates)`);
  const engineOutput = await renderLocalEngine(path, flags, layerValues(layers, { keepNulls: true }));
  if (engineOutput !== undefined) {
    out(engineOutput);
    return 0;
  }
  const isDirectory = found.isDirectory();
  const root = isDirectory ? path : dirname(path);
  // A file renders with the partials beside it; a directory with everything under it.
  const files = isDirectory
    ? await readLocalFiles(root, root)
    : [
        { path: relative(root, path).split(sep).join('/'), content: await readFile(path) },
        ...(await readLocalFiles(root, join(root, '_partials')).catch(() => [])),
      ];
  if (files.length === 0) throw new Error(`${path}: an empty directory (render takes a template file or a directory of templates)`);
  // A local render has no key Secret: an encrypted file fails naming itself instead of rendering ciphertext.
  await decryptFiles(createDecryptionContext(), files, undefined);
  const objects = renderTarget({
    files,
    path: relative(root, path).split(sep).join('/'),
    values: layerValues(layers),
    target: { name: flags.target, namespace: flags.namespace },
    source: { repo: 'local', revision: 'local', path },
    discovery: createStaticDiscovery(),
    cache: new TemplateCache(),
  });
  if (flags.output === 'json') out(`${JSON.stringify(objects.length === 1 ? objects[0] : { apiVersion: 'v1', kind: 'List', items: objects }, null, 4)}\n`);
  else out(objects.map((o) => stringify(o)).join('---\n'));
  return 0;
}

/** A local file a flag names, or an error that says which flag and which file. */
async function readLocal(file: string, flag: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(
      `${flag} ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'a directory, not a file' : error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** The nearest directory at or above `start` holding .git, else `start`. */
function repositoryRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return dir;
    if (dirname(dir) === dir) return start;
  }
}

/**
 * `syncline render` of a Kustomize overlay, a Helm chart or Jsonnet: the render process the operator runs, fed
 * the repository's files; undefined when the path is Handlebars and plain manifests.
 */
async function renderLocalEngine(path: string, flags: RenderFlags, values: Values): Promise<string | undefined> {
  const isDirectory = (await stat(path)).isDirectory();
  // Nothing more is read for Handlebars and plain manifests.
  const marked = isDirectory && ['kustomization.yaml', 'kustomization.yml', 'Kustomization', 'Chart.yaml'].some((name) => existsSync(join(path, name)));
  if (flags.engine === undefined && !path.endsWith('.jsonnet') && !marked) return undefined;
  const root = flags.repoRoot ?? repositoryRoot(isDirectory ? path : dirname(path));
  const relativePath = relative(root, path).split(sep).join('/');
  if (relativePath.startsWith('..')) throw new Error(`${path} is not inside --repo-root ${root}`);
  // A local render has no key Secret: an encrypted file under the path fails naming itself; one elsewhere in
  // the repository is left out (the engine then fails on the missing file if it needs it), never rendered as ciphertext.
  const { files } = await decryptFiles(createDecryptionContext(), await readLocalFiles(root, root), undefined, [relativePath]);
  const engine = flags.engine ?? (path.endsWith('.jsonnet') ? EngineName.Jsonnet : detectEngine(files, relativePath));
  if (engine === undefined) return undefined;
  const binary = flags.renderEngine ?? flags.env?.['SYNCLINE_RENDER_ENGINE'] ?? '/usr/local/bin/syncline-render';
  if (!existsSync(binary)) throw new Error(`${path} needs ${engine}: no render engine at ${binary} (--render-engine or SYNCLINE_RENDER_ENGINE)`);
  const spec: EngineSpec =
    engine === EngineName.Helm
      ? { engine, options: { includeCRDs: true, skipTests: true } }
      : engine === EngineName.Kustomize
        ? { engine, options: {} }
        : {
            engine,
            options: { libraryPaths: flags.jpath ?? [], extVars: assignments('--ext-str', flags.extStr), tlas: assignments('--tla-str', flags.tlaStr) },
          };
  const process = new RenderEngine({ binary });
  try {
    const objects = await renderWithEngine({
      engine: process,
      spec,
      files,
      path: relativePath,
      values,
      target: { name: flags.target, namespace: flags.namespace },
      source: { repo: 'local', revision: 'local' },
      discovery: createStaticDiscovery(),
      releaseName: flags.releaseName ?? 'local',
    });
    if (flags.output === 'json') return `${JSON.stringify(objects.length === 1 ? objects[0] : { apiVersion: 'v1', kind: 'List', items: objects }, null, 4)}\n`;
    return objects.map((o) => `# ${engine}\n${stringify(o)}`).join('---\n');
  } finally {
    process.close();
  }
}

/**
 * `syncline failover NAME` / `failback NAME`: sets spec.failover of a NamespaceReplication (so Git can drive
 * it too) and, with --wait, waits until the operator reports it done. Idempotent: safe to run again.
 */
export async function failoverCommand(
  command: 'failover' | 'failback',
  kube: Kube,
  name: string,
  flags: { wait?: boolean; timeout: string },
  out: Out,
): Promise<number> {
  const timeoutMs = durationFlag('--timeout', flags.timeout);
  const { rest, namespace } = kube;
  const path = `${API}/namespaces/${namespace}/namespacereplications/${name}`;
  const failover = command === 'failover';
  await rest.request({ method: 'PATCH', path, contentType: 'application/merge-patch+json', body: { spec: { failover } } });
  if (flags.wait !== true) {
    out(`${namespace}/${name}: ${failover ? 'failover' : 'failback'} requested\n`);
    return 0;
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const nr = await rest.request<{
      metadata: { generation?: number };
      status?: { observedGeneration?: number; conditions?: { type: string; status: string; message: string }[] };
    }>({ method: 'GET', path });
    const failedOver = nr.status?.conditions?.find((c) => c.type === 'FailedOver');
    const ready = nr.status?.conditions?.find((c) => c.type === 'Ready');
    if (nr.status?.observedGeneration === nr.metadata.generation && ready?.status === 'True' && (failedOver?.status === 'True') === failover) {
      out(`${namespace}/${name}: ${failedOver?.message ?? ready.message}\n`);
      return 0;
    }
    if (Date.now() > deadline)
      throw new Error(`${namespace}/${name}: not ${failover ? 'failed over' : 'failed back'} within ${flags.timeout}: ${ready?.message ?? 'no status yet'}`);
    await new Promise((done) => setTimeout(done, 250));
  }
}

/**
 * `syncline diff NAME`: renders what the operator would (its Git credentials, values and valuesFrom), plans
 * the apply, and prints per object a unified diff of live vs desired limited to the fields Syncline writes.
 * Exit 0: no differences; 1: differences; 2: error.
 */
export async function diffCommand(
  options: Kube & {
    name: string;
    out: Out;
    err: Out;
    allowInsecureHttp: boolean;
    localPath?: string | undefined;
    renderEngine?: string | undefined;
    env?: NodeJS.ProcessEnv;
  },
): Promise<number> {
  const { out, err } = options;
  const object = await getConfigSync(options, options.name);
  const spec = ConfigSyncSpec.parse(object.spec);
  const cacheDir = await mkdtemp(join(tmpdir(), 'syncline-diff-'));
  try {
    // The operator's own inputs, read the operator's way: Git credentials from secretRef, values layered from
    // spec.values and every valuesFrom (so diff renders exactly what the operator would).
    // The shell's HTTPS_PROXY/NO_PROXY, as kubectl and git honour them.
    const git = createGitSource({ cacheDir, allowInsecureHttp: options.allowInsecureHttp, environmentProxy: proxyFromEnvironment(options.env ?? {}) });
    const source =
      options.localPath === undefined
        ? await readSource({ rest: options.rest, git, object })
        : {
            revision: LOCAL_REVISION,
            files: await readCheckout(options.localPath, readsWholeRepository(spec) ? '' : spec.source.git.path),
            read: (at: string) => readCheckout(options.localPath ?? '.', at),
          };
    const client = await createApplyClient(options.connection);
    let changed = 0;
    const binary = options.renderEngine ?? options.env?.['SYNCLINE_RENDER_ENGINE'] ?? '/usr/local/bin/syncline-render';
    const engine = existsSync(binary) ? new RenderEngine({ binary }) : undefined;
    let targets;
    try {
      const charts =
        engine === undefined
          ? undefined
          : createChartSource({
              chooseVersion: (versions, version) => engine.chooseChartVersion(versions, version),
              allowInsecureHttp: options.allowInsecureHttp,
            });
      targets = await diffSync({ rest: options.rest, client, object, source, engine, ...(charts === undefined ? {} : { charts }) });
    } finally {
      engine?.close();
    }
    for (const target of targets) {
      if (target.skipped !== undefined) {
        err(`# target ${target.name} (cluster ${target.cluster ?? ''}): not diffed (diff reads this cluster only)\n`);
        continue;
      }
      out(
        `# target ${target.name} @ ${source.revision === LOCAL_REVISION ? `local checkout ${options.localPath ?? ''}` : revisionText(spec.source.git.revision, source.revision)}${target.engine === undefined || target.engine === 'handlebars' ? '' : ` (rendered by ${target.engine})`}\n`,
      );
      if (target.blocked !== undefined) {
        out(`# blocked: ${target.blocked}\n`);
        changed++;
      }
      for (const object of target.objects) {
        if (object.diff !== '') changed++;
        out(object.note === undefined ? '' : `# ${object.label}: ${object.note}\n`);
        out(object.diff);
      }
    }
    out(`# ${changed} object(s) differ\n`);
    return changed === 0 ? 0 : 1;
  } catch (error) {
    if (error instanceof RenderError) throw new Error(`render failed: ${error.message}`);
    if (error instanceof StallError) throw new Error(error.message);
    throw error;
  } finally {
    await rm(cacheDir, { recursive: true, force: true });
  }
}

/** What diff --path shows as the revision: the files of a local checkout, committed or not. */
const LOCAL_REVISION = 'local';

/**
 * diff --path: the ConfigSync's spec.source.git.path read from a local checkout of its repository (`root`, the
 * working tree as it is, uncommitted edits included), with repository-relative paths as Git would give them.
 */
async function readCheckout(root: string, path: string): Promise<SourceFile[]> {
  const start = join(root, path);
  const found = await stat(start).catch(() => undefined);
  if (found === undefined)
    throw new Error(`--path ${root}: ${path === '' ? 'the checkout' : `spec.source.git.path ${JSON.stringify(path)}`} does not exist there`);
  if (!found.isDirectory()) return [{ path: relative(root, start).split(sep).join('/'), content: await readFile(start) }];
  return readLocalFiles(root, start);
}

export function rollbackRevision(object: ConfigSync, options: { to?: string; steps?: string }): string {
  if ((options.to === undefined) === (options.steps === undefined)) throw new Error('rollback needs exactly one of --to SHA or --steps N');
  if (options.to !== undefined) {
    if (!/^[0-9a-f]{40}$/i.test(options.to)) throw new Error(`--to ${options.to}: give a full 40-character commit SHA`);
    return options.to.toLowerCase();
  }
  const steps = Number(options.steps);
  if (!Number.isInteger(steps) || steps < 1) throw new Error(`--steps ${options.steps}: give a positive whole number`);
  // "The previous deploy" is the previous revision whose render differed: history entries of commits that
  // changed nothing for this sync (the same digest) are not steps.
  const deploys: HistoryEntry[] = [];
  for (const entry of object.status?.history ?? []) if (deploys.at(-1)?.digest !== entry.digest) deploys.push(entry);
  const entry = deploys[steps];
  if (entry === undefined) throw new Error(`${object.metadata.name} has ${deploys.length} distinct deploy(s) in its history; cannot go back ${steps}`);
  return entry.revision;
}

export function formatStatus(items: readonly ConfigSync[]): string {
  const rows = [['NAMESPACE', 'NAME', 'READY', 'HEALTH', 'REVISION', 'TARGETS', 'MESSAGE']];
  for (const item of items) {
    const ready = item.status?.conditions?.find((c) => c.type === 'Ready');
    rows.push([
      item.metadata.namespace ?? '',
      item.metadata.name,
      ready?.status ?? 'Unknown',
      item.status?.conditions?.find((c) => c.type === 'Healthy')?.reason ?? '-',
      (item.status?.sourceRevision ?? '').slice(0, 12),
      `${item.status?.appliedTargets ?? 0}/${item.spec.targets.length}`,
      (ready?.message ?? '').slice(0, 80),
    ]);
  }
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return (
    rows
      .map((r) =>
        r
          .map((cell, i) => cell.padEnd(widths[i] ?? 0))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

/** Per target: where it applies (cluster, namespace), its phase and why. */
/** The hooks of each target's last commit that ran hooks (status.targets[].hooks), one line each. */
export function formatHooks(targets: readonly TargetStatus[]): string {
  const rows = targets.flatMap((t) =>
    (t.hooks ?? []).map((h) => [
      t.name,
      h.hook,
      `${h.kind}/${h.name}`,
      h.phase,
      h.duration ?? '',
      (t.hooksRevision ?? '').slice(0, 7),
      (h.message ?? '').slice(0, 60),
    ]),
  );
  if (rows.length === 0) return '';
  return `\n${table([['TARGET', 'HOOK', 'OBJECT', 'PHASE', 'DURATION', 'COMMIT', 'MESSAGE'], ...rows])}`;
}

export function formatTargets(targets: readonly TargetStatus[]): string {
  if (targets.length === 0) return '';
  return `\n${table([['TARGET', 'CLUSTER', 'NAMESPACE', 'PHASE', 'OBJECTS', 'MESSAGE'], ...targets.map((t) => [t.name, t.cluster ?? '(local)', t.namespace ?? '', t.phase, String(t.objects), (t.message ?? '').slice(0, 80)])])}`;
}

/** RemoteClusters with reachability and version, as `syncline clusters` prints them. */
export function formatClusters(items: readonly RemoteCluster[]): string {
  return table([
    ['NAMESPACE', 'NAME', 'READY', 'REASON', 'VERSION', 'SERVER', 'LAST PROBE'],
    ...items.map((rc) => {
      const ready = rc.status?.conditions?.find((c) => c.type === 'Ready');
      return [
        rc.metadata.namespace ?? '',
        rc.metadata.name,
        ready?.status ?? 'Unknown',
        ready?.reason ?? '',
        rc.status?.serverVersion ?? '',
        rc.status?.server ?? '',
        rc.status?.lastProbeTime ?? '',
      ];
    }),
  ]);
}

export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return (
    rows
      .map((r) =>
        r
          .map((cell, i) => cell.padEnd(widths[i] ?? 0))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

/** `a.b.c=value` → { a: { b: { c: value } } }; the value is read as YAML (numbers, booleans). */
function setValue(assignment: string): Values {
  const eq = assignment.indexOf('=');
  if (eq <= 0) throw new Error(`--set ${assignment}: expected key=value`);
  const keys = assignment.slice(0, eq).split('.');
  const parsed = parseValues(`v: ${assignment.slice(eq + 1)}`, `--set ${assignment}`);
  let value: unknown = parsed['v'];
  for (const key of keys.reverse()) value = { [key]: value };
  return value as Values;
}

async function readLocalFiles(root: string, start: string): Promise<SourceFile[]> {
  const files: SourceFile[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const full = join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile()) files.push({ path: relative(root, full).split(sep).join('/'), content: await readFile(full) });
    }
  };
  await walk(start);
  return files;
}

/**
 * `syncline status --mirrors`: sources → replicas with their state, from the live objects' labels and
 * annotations (no operator involved). Targets without a replica of their source are read one by one to tell
 * a conflict (another object holds the name) from a replica not written yet.
 */
async function mirrorRows(input: {
  rest: KubeRest;
  keys: MirrorKeys;
  sourceNamespaces: readonly NamePattern[];
  trusted: TrustedNamespaces;
  namespace?: string | undefined;
}): Promise<MirrorRow[]> {
  const { rest, keys } = input;
  type Listed = { apiVersion?: string; kind?: string; items: ApplyObject[] };
  const list = async (kind: 'Secret' | 'ConfigMap', selector: string): Promise<ApplyObject[]> => {
    const path =
      input.namespace === undefined
        ? `/api/v1/${kind === 'Secret' ? 'secrets' : 'configmaps'}`
        : `/api/v1/namespaces/${input.namespace}/${kind === 'Secret' ? 'secrets' : 'configmaps'}`;
    return (await rest.request<Listed>({ method: 'GET', path, query: { labelSelector: selector } })).items.map((item) => ({ ...item, apiVersion: 'v1', kind }));
  };
  const [secretSources, configMapSources, secretReplicas, configMapReplicas, namespaceList] = await Promise.all([
    list('Secret', sourceSelector(keys)),
    list('ConfigMap', sourceSelector(keys)),
    rest
      .request<Listed>({ method: 'GET', path: '/api/v1/secrets', query: { labelSelector: replicaSelector(keys) } })
      .then((l) => l.items.map((i) => ({ ...i, apiVersion: 'v1', kind: 'Secret' }))),
    rest
      .request<Listed>({ method: 'GET', path: '/api/v1/configmaps', query: { labelSelector: replicaSelector(keys) } })
      .then((l) => l.items.map((i) => ({ ...i, apiVersion: 'v1', kind: 'ConfigMap' }))),
    rest.request<Listed>({ method: 'GET', path: '/api/v1/namespaces' }),
  ]);
  const namespaces: MirrorNamespace[] = namespaceList.items.map((n) => ({
    name: n.metadata.name,
    labels: n.metadata.labels,
    deletionTimestamp: n.metadata['deletionTimestamp'] as string | undefined,
    phase: (n['status'] as { phase?: string } | undefined)?.phase,
  }));
  const sources = [...secretSources, ...configMapSources];
  const replicas = [...secretReplicas, ...configMapReplicas].filter(
    (r) => input.namespace === undefined || r.metadata.annotations?.[keys.source]?.startsWith(`${input.namespace}/`) === true,
  );
  const have = new Set(replicas.map((r) => `${r.kind}/${r.metadata.namespace ?? ''}/${r.metadata.name}`));
  const occupied = new Map<string, ApplyObject>();
  for (const source of sources) {
    const resolved = resolveSource({ source, namespaces, keys, sourceNamespaces: input.sourceNamespaces, trusted: input.trusted });
    if ('invalid' in resolved) continue;
    for (const namespace of resolved.resolution.namespaces) {
      const key = `${source.kind}/${namespace}/${source.metadata.name}`;
      if (have.has(key) || occupied.has(key)) continue;
      const found = await readMirrorObject(rest, source.kind, namespace, source.metadata.name);
      if (found !== undefined) occupied.set(key, { ...found, apiVersion: 'v1', kind: source.kind });
    }
  }
  return mirrorStatusRows({ sources, replicas, namespaces, occupied, keys, sourceNamespaces: input.sourceNamespaces, trusted: input.trusted });
}

async function readMirrorObject(rest: KubeRest, kind: string, namespace: string, name: string): Promise<ApplyObject | undefined> {
  try {
    return await rest.request<ApplyObject>({ method: 'GET', path: `/api/v1/namespaces/${namespace}/${kind === 'Secret' ? 'secrets' : 'configmaps'}/${name}` });
  } catch (error) {
    if ((error as { status?: number }).status === 404) return undefined;
    throw error;
  }
}

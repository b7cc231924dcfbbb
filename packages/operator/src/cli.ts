// The `syncline` CLI besides `run`: render (local preview through the same code path), diff, status,
// reconcile and rollback. Each command reads its flags here and prints; exit code 0 on success.
import type { KubeConfig } from '@kubernetes/client-node';
import { createApplyClient, decodeInventory, planApply, readLive, type KubeObject as ApplyObject } from '@syncline/apply';
import { RenderError, TemplateCache, createStaticDiscovery, layerValues, parseValues, renderTarget, type SourceFile, type Values } from '@syncline/render';
import { createGitSource } from '@syncline/source-git';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { ConfigSyncSpec, type ConfigSync, type HistoryEntry, type RemoteCluster, type TargetStatus } from './api/v1alpha1.ts';
import { RECONCILE_REQUESTED_ANNOTATION } from './reconcile/configsync.ts';
import { StallError, readGitAuth, readValues } from './reconcile/inputs.ts';
import { createKubeRest, type KubeRest } from './kube/rest.ts';
import { DEFAULT_MIRROR_PREFIX, mirrorKeys, parseMirrorSourceNamespaces, replicaSelector, sourceSelector, type MirrorKeys, type MirrorNamespace, type NamePattern } from './mirror/index.ts';
import { formatMirrorRows, mirrorStatusRows, resolveSource, type MirrorRow } from './mirror/status.ts';

export type CliContext = {
  readonly env: NodeJS.ProcessEnv;
  readonly loadKubeConfig: (path: string | undefined) => KubeConfig;
  readonly out?: (text: string) => void;
  readonly err?: (text: string) => void;
};

export async function runCli(command: string, args: readonly string[], context: CliContext): Promise<number> {
  const out = context.out ?? ((text: string) => process.stdout.write(text));
  const err = context.err ?? ((text: string) => process.stderr.write(text));
  try {
    switch (command) {
      case 'render':
        return await renderCommand(args, out);
      case 'failover':
      case 'failback':
        return await failoverCommand(command, args, context, out);
      case 'clusters':
      case 'status':
      case 'reconcile':
      case 'rollback':
      case 'diff':
        return await clusterCommand(command, args, context, out);
      default:
        err(`unknown command "${command}"; see syncline --help\n`);
        return 2;
    }
  } catch (error) {
    err(`${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

async function renderCommand(args: readonly string[], out: (text: string) => void): Promise<number> {
  const { values: flags, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      values: { type: 'string', multiple: true, short: 'f' },
      set: { type: 'string', multiple: true },
      target: { type: 'string', default: 'local' },
      namespace: { type: 'string', default: 'default' },
    },
  });
  const path = positionals[0];
  if (path === undefined) throw new Error('usage: syncline render PATH [--values FILE]... [--set key=value]... [--target NAME] [--namespace NS]');
  const layers: Values[] = [];
  for (const file of flags.values ?? []) layers.push(parseValues(await readFile(file, 'utf8'), file));
  for (const assignment of flags.set ?? []) layers.push(setValue(assignment));
  const isDirectory = (await stat(path)).isDirectory();
  const root = isDirectory ? path : join(path, '..');
  // A file renders with the partials beside it; a directory with everything under it.
  const files = isDirectory ? await readLocalFiles(root, root) : [{ path: relative(root, path).split(sep).join('/'), content: await readFile(path) }, ...(await readLocalFiles(root, join(root, '_partials')).catch(() => []))];
  const objects = renderTarget({
    files,
    path: relative(root, path).split(sep).join('/'),
    values: layerValues(layers),
    target: { name: flags.target, namespace: flags.namespace },
    source: { repo: 'local', revision: 'local', path },
    discovery: createStaticDiscovery(),
    cache: new TemplateCache(),
  });
  out(objects.map((o) => stringify(o)).join('---\n'));
  return 0;
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

async function clusterCommand(command: 'clusters' | 'status' | 'reconcile' | 'rollback' | 'diff', args: readonly string[], context: CliContext, out: (text: string) => void): Promise<number> {
  const { values: flags, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      namespace: { type: 'string', short: 'n' },
      kubeconfig: { type: 'string' },
      to: { type: 'string' },
      steps: { type: 'string' },
      'allow-insecure-http': { type: 'boolean', default: false },
      mirrors: { type: 'boolean', default: false },
      'mirror-prefix': { type: 'string', default: DEFAULT_MIRROR_PREFIX },
      'mirror-source-namespaces': { type: 'string', default: '' },
    },
  });
  const kc = context.loadKubeConfig(flags.kubeconfig);
  const rest = await createKubeRest(kc, { userAgent: 'syncline-cli' });
  if (command === 'status' && flags.mirrors) {
    out(formatMirrorRows(await mirrorRows({ rest, keys: mirrorKeys(flags['mirror-prefix']), sourceNamespaces: parseMirrorSourceNamespaces(flags['mirror-source-namespaces']), namespace: flags.namespace })));
    return 0;
  }
  const namespace = flags.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  const name = positionals[0];
  const path = (n: string): string => `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs/${n}`;

  if (command === 'clusters') {
    const list = await rest.request<{ items: RemoteCluster[] }>({ method: 'GET', path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/remoteclusters` });
    out(list.items.length === 0 ? `No RemoteClusters found in ${namespace} namespace.\n` : formatClusters(list.items));
    return 0;
  }
  if (command === 'status') {
    const items = name !== undefined ? [await rest.request<ConfigSync>({ method: 'GET', path: path(name) })] : (await rest.request<{ items: ConfigSync[] }>({ method: 'GET', path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/configsyncs` })).items;
    out(formatStatus(items));
    if (name !== undefined) out(formatTargets(items[0]?.status?.targets ?? []));
    return 0;
  }
  if (name === undefined) throw new Error(`usage: syncline ${command} NAME [-n NAMESPACE]`);
  const object = await rest.request<ConfigSync>({ method: 'GET', path: path(name) });

  if (command === 'reconcile') {
    if (object.spec.suspend === true) {
      throw new Error(`${namespace}/${name} is suspended (spec.suspend: true): a reconcile request would do nothing; resume it first: kubectl patch csync ${name} -n ${namespace} --type merge -p '{"spec":{"suspend":false}}'`);
    }
    const at = new Date().toISOString();
    await rest.request({ method: 'PATCH', path: path(name), contentType: 'application/merge-patch+json', body: { metadata: { annotations: { [RECONCILE_REQUESTED_ANNOTATION]: at } } } });
    out(`requested a sync of ${namespace}/${name} at ${at}\n`);
    return 0;
  }
  if (command === 'rollback') {
    const revision = rollbackRevision(object, { to: flags.to, steps: flags.steps });
    await rest.request({ method: 'PATCH', path: path(name), contentType: 'application/merge-patch+json', body: { spec: { source: { git: { revision } } } } });
    out(`${namespace}/${name}: revision pinned to ${revision} (set it back to a branch to follow it again)\n`);
    return 0;
  }
  return diffCommand({ object, rest, kc, out, allowInsecureHttp: flags['allow-insecure-http'] });
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
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n') + '\n';
}

/**
 * `syncline failover NAME` / `failback NAME`: sets spec.failover of a NamespaceReplication (so Git can drive
 * it too) and, with --wait, waits until the operator reports it done. Idempotent: safe to run again.
 */
async function failoverCommand(command: 'failover' | 'failback', args: readonly string[], context: CliContext, out: (text: string) => void): Promise<number> {
  const { values: flags, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: { namespace: { type: 'string', short: 'n' }, kubeconfig: { type: 'string' }, wait: { type: 'boolean', default: false }, timeout: { type: 'string', default: '60' } },
  });
  const name = positionals[0];
  if (name === undefined) throw new Error(`usage: syncline ${command} NAME [-n NAMESPACE] [--wait] [--timeout SECONDS]`);
  const kc = context.loadKubeConfig(flags.kubeconfig);
  const rest = await createKubeRest(kc, { userAgent: 'syncline-cli' });
  const namespace = flags.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  const path = `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/namespacereplications/${name}`;
  const failover = command === 'failover';
  await rest.request({ method: 'PATCH', path, contentType: 'application/merge-patch+json', body: { spec: { failover } } });
  if (!flags.wait) {
    out(`${namespace}/${name}: ${failover ? 'failover' : 'failback'} requested\n`);
    return 0;
  }
  const deadline = Date.now() + Number(flags.timeout) * 1000;
  for (;;) {
    const nr = await rest.request<{ metadata: { generation?: number }; status?: { observedGeneration?: number; conditions?: { type: string; status: string; message: string }[] } }>({ method: 'GET', path });
    const failedOver = nr.status?.conditions?.find((c) => c.type === 'FailedOver');
    const ready = nr.status?.conditions?.find((c) => c.type === 'Ready');
    if (nr.status?.observedGeneration === nr.metadata.generation && ready?.status === 'True' && (failedOver?.status === 'True') === failover) {
      out(`${namespace}/${name}: ${failedOver?.message ?? ready.message}\n`);
      return 0;
    }
    if (Date.now() > deadline) throw new Error(`${namespace}/${name}: not ${failover ? 'failed over' : 'failed back'} within ${flags.timeout}s: ${ready?.message ?? 'no status yet'}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Per target: where it applies (cluster, namespace), its phase and why. */
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
      return [rc.metadata.namespace ?? '', rc.metadata.name, ready?.status ?? 'Unknown', ready?.reason ?? '', rc.status?.serverVersion ?? '', rc.status?.server ?? '', rc.status?.lastProbeTime ?? ''];
    }),
  ]);
}

function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n') + '\n';
}

async function diffCommand(options: { object: ConfigSync; rest: KubeRest; kc: KubeConfig; out: (text: string) => void; allowInsecureHttp: boolean }): Promise<number> {
  const { object, out } = options;
  const spec = ConfigSyncSpec.parse(object.spec);
  const namespace = object.metadata.namespace ?? 'default';
  const cacheDir = await mkdtemp(join(tmpdir(), 'syncline-diff-'));
  try {
    // The operator's own inputs, read the operator's way: Git credentials from secretRef, values layered from
    // spec.values and every valuesFrom (so diff renders exactly what the operator would).
    const auth = await readGitAuth(options.rest, namespace, spec.source.git.secretRef?.name);
    const values = await readValues(options.rest, namespace, spec);
    const git = createGitSource({ cacheDir, allowInsecureHttp: options.allowInsecureHttp });
    const revision = await git.resolveRevision({ repo: spec.source.git.repo, revision: spec.source.git.revision, auth });
    const files = await git.readPath(await git.fetchSnapshot({ repo: spec.source.git.repo, sha: revision, auth }), spec.source.git.path);
    const client = await createApplyClient(options.kc);
    const discovery = await client.discovery();
    let changes = 0;
    for (const target of spec.targets) {
      if (target.cluster !== undefined) {
        out(`# target ${target.name} (cluster ${target.cluster.name}): not diffed (diff reads this cluster only)\n`);
        continue;
      }
      const desired = renderTarget({
        files,
        path: spec.source.git.path,
        values,
        target: { name: target.name, namespace: target.namespace ?? namespace, values: target.values, patches: target.patches, data: target.data },
        source: { repo: spec.source.git.repo, revision, path: spec.source.git.path },
        discovery,
      }) as ApplyObject[];
      const inventory = decodeInventory(object.status?.inventory?.find((i) => i.target === target.name)?.entries);
      const live = await readLive({ client, desired, inventory });
      const plan = planApply({ desired, inventory, live, owner: { namespace, name: object.metadata.name, target: target.name }, policy: spec.policy, drift: spec.drift, prune: spec.prune, allowEmpty: spec.allowEmpty });
      out(`# target ${target.name} @ ${revision.slice(0, 12)}\n`);
      if (plan.blocked !== undefined) out(`! ${plan.blocked}\n`);
      for (const step of [...plan.apply, ...plan.prune]) {
        const mark = step.type === 'apply' ? (step.create ? '+' : '~') : step.type === 'delete' ? '-' : step.type === 'unchanged' ? '=' : '?';
        if (mark !== '=') changes++;
        out(`${mark} ${step.id}${step.wave === undefined || step.wave === 0 ? '' : `  [wave ${step.wave}]`}${'reason' in step && step.reason !== undefined ? `  (${step.reason})` : ''}\n`);
      }
    }
    out(`${changes} change(s)\n`);
    return 0;
  } catch (error) {
    if (error instanceof RenderError) throw new Error(`render failed: ${error.message}`);
    if (error instanceof StallError) throw new Error(error.message);
    throw error;
  } finally {
    await rm(cacheDir, { recursive: true, force: true });
  }
}



/**
 * `syncline status --mirrors`: sources → replicas with their state, from the live objects' labels and
 * annotations (no operator involved). Targets without a replica of their source are read one by one to tell
 * a conflict (another object holds the name) from a replica not written yet.
 */
async function mirrorRows(input: { rest: KubeRest; keys: MirrorKeys; sourceNamespaces: readonly NamePattern[]; namespace?: string | undefined }): Promise<MirrorRow[]> {
  const { rest, keys } = input;
  type Listed = { apiVersion?: string; kind?: string; items: ApplyObject[] };
  const list = async (kind: 'Secret' | 'ConfigMap', selector: string): Promise<ApplyObject[]> => {
    const path = input.namespace === undefined ? `/api/v1/${kind === 'Secret' ? 'secrets' : 'configmaps'}` : `/api/v1/namespaces/${input.namespace}/${kind === 'Secret' ? 'secrets' : 'configmaps'}`;
    return (await rest.request<Listed>({ method: 'GET', path, query: { labelSelector: selector } })).items.map((item) => ({ ...item, apiVersion: 'v1', kind }));
  };
  const [secretSources, configMapSources, secretReplicas, configMapReplicas, namespaceList] = await Promise.all([
    list('Secret', sourceSelector(keys)),
    list('ConfigMap', sourceSelector(keys)),
    rest.request<Listed>({ method: 'GET', path: '/api/v1/secrets', query: { labelSelector: replicaSelector(keys) } }).then((l) => l.items.map((i) => ({ ...i, apiVersion: 'v1', kind: 'Secret' }))),
    rest.request<Listed>({ method: 'GET', path: '/api/v1/configmaps', query: { labelSelector: replicaSelector(keys) } }).then((l) => l.items.map((i) => ({ ...i, apiVersion: 'v1', kind: 'ConfigMap' }))),
    rest.request<Listed>({ method: 'GET', path: '/api/v1/namespaces' }),
  ]);
  const namespaces: MirrorNamespace[] = namespaceList.items.map((n) => ({
    name: n.metadata.name,
    labels: n.metadata.labels,
    deletionTimestamp: n.metadata['deletionTimestamp'] as string | undefined,
    phase: (n['status'] as { phase?: string } | undefined)?.phase,
  }));
  const sources = [...secretSources, ...configMapSources];
  const replicas = [...secretReplicas, ...configMapReplicas].filter((r) => input.namespace === undefined || r.metadata.annotations?.[keys.source]?.startsWith(`${input.namespace}/`) === true);
  const have = new Set(replicas.map((r) => `${r.kind}/${r.metadata.namespace ?? ''}/${r.metadata.name}`));
  const occupied = new Map<string, ApplyObject>();
  for (const source of sources) {
    const resolved = resolveSource({ source, namespaces, keys, sourceNamespaces: input.sourceNamespaces });
    if ('invalid' in resolved) continue;
    for (const namespace of resolved.resolution.namespaces) {
      const key = `${source.kind}/${namespace}/${source.metadata.name}`;
      if (have.has(key) || occupied.has(key)) continue;
      const found = await readMirrorObject(rest, source.kind, namespace, source.metadata.name);
      if (found !== undefined) occupied.set(key, { ...found, apiVersion: 'v1', kind: source.kind });
    }
  }
  return mirrorStatusRows({ sources, replicas, namespaces, occupied, keys, sourceNamespaces: input.sourceNamespaces });
}

async function readMirrorObject(rest: KubeRest, kind: string, namespace: string, name: string): Promise<ApplyObject | undefined> {
  try {
    return await rest.request<ApplyObject>({ method: 'GET', path: `/api/v1/namespaces/${namespace}/${kind === 'Secret' ? 'secrets' : 'configmaps'}/${name}` });
  } catch (error) {
    if ((error as { status?: number }).status === 404) return undefined;
    throw error;
  }
}

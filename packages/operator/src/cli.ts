// The `syncline` command line: every subcommand (run, render, diff, status, clusters, reconcile, rollback,
// failover, failback) parsed by commander with kubectl's conventions: -h/--help, --version, -n/--namespace,
// -A/--all-namespaces, --context, --kubeconfig (and KUBECONFIG=a:b merged), -o table|json|yaml, "No
// resources found", errors as kubectl words them (no REST paths).
//
// Exit codes: 0 success; 1 error (a usage error, the API server refused, a wait that failed or timed out);
// diff: 0 no differences, 1 differences, 2 error (as kubectl diff and flux diff).
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiError, createApplyClient, decodeInventory, planApply, readLive, type KubeObject as ApplyObject, type PlanStep } from '@syncline/apply';
import { RenderError, TemplateCache, createStaticDiscovery, layerValues, parseValues, renderTarget, type SourceFile, type Values } from '@syncline/render';
import { createGitSource } from '@syncline/source-git';
import { Command, CommanderError, Option } from 'commander';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { stringify } from 'yaml';
import { ConfigSyncSpec, type ConfigSync, type HistoryEntry, type RemoteCluster, type TargetStatus } from './api/v1alpha1.ts';
import { diffYaml, maskSecrets, normalizeSecret, projectLive, unifiedDiff } from './cli/diff.ts';
import { createKubeRest, type KubeRest } from './kube/rest.ts';
import { loadKubeConfig } from './kube/kubeconfig.ts';
import { DEFAULT_MIRROR_PREFIX, mirrorKeys, parseMirrorSourceNamespaces, replicaSelector, sourceSelector, type MirrorKeys, type MirrorNamespace, type NamePattern } from './mirror/index.ts';
import { formatMirrorRows, mirrorStatusRows, resolveSource, type MirrorRow } from './mirror/status.ts';
import { RECONCILE_REQUESTED_ANNOTATION } from './reconcile/configsync.ts';
import { parseDuration } from './reconcile/duration.ts';
import { StallError, readGitAuth, readValues } from './reconcile/inputs.ts';

/** The flags of `syncline run`, as commander hands them over (camelCase). */
export type RunOptions = {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  leaderElect?: boolean;
  leaderElectionNamespace?: string;
  leaderElectionId: string;
  leaseDuration: string;
  probeAddr: string;
  cacheDir?: string;
  cacheMaxBytes?: string;
  concurrency: string;
  operatorNamespace?: string;
  mirrorPrefix: string;
  mirror: 'on' | 'off';
  mirrorSourceNamespaces?: string;
  mirrorStale: 'delete' | 'mark';
  mirrorStaleTtl?: string;
  mirrorResync: string;
  minRefreshInterval: string;
  defaultServiceAccount?: string;
  allowInsecureHttp?: boolean;
  logLevel: string;
  webhookAddr: string;
  webhookSecret?: string;
  webhookMaxBodyBytes: string;
  webhookReadTimeout: string;
};

export type CliContext = {
  readonly env: NodeJS.ProcessEnv;
  /** `syncline run`: the operator (main.ts); resolves with the exit code when it stops. */
  readonly runOperator: (options: RunOptions) => Promise<number>;
  readonly out?: (text: string) => void;
  readonly err?: (text: string) => void;
};

type Out = (text: string) => void;
type KubeFlags = { namespace?: string; context?: string; kubeconfig?: string };
type ListFlags = KubeFlags & { allNamespaces?: boolean; output: 'table' | 'json' | 'yaml' };

const EXIT_CODES = `
Exit codes:
  0  success (diff: no differences)
  1  error: bad usage, the API server refused, a --wait that failed or timed out (diff: differences found)
  2  diff only: an error (diff could not tell)
`;

/** Runs the command line `argv` (without node and the script) and resolves with the exit code. */
export async function runCli(argv: readonly string[], context: CliContext): Promise<number> {
  const out = context.out ?? ((text: string) => process.stdout.write(text));
  const err = context.err ?? ((text: string) => process.stderr.write(text));
  let code = 0;
  let active = '';
  const program = new Command('syncline')
    .description('Keeps Kubernetes clusters equal to what Git says.')
    .version(`syncline ${versionText()}`, '--version', 'print the version and exit')
    .helpOption('-h, --help', 'show help for a command')
    .helpCommand('help [command]', 'show help for a command')
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: err })
    .showSuggestionAfterError(true)
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText('after', `${EXIT_CODES}\nRun "syncline COMMAND --help" for a command's flags.\n`);
  program.hook('preSubcommand', (_program, sub) => {
    active = sub.name();
  });

  addRunCommand(program, context, (c) => (code = c));

  program
    .command('render')
    .description('render templates locally, as the operator would (no cluster)')
    .argument('<path>', 'a template file or a directory of templates')
    .option('-f, --values <file>', 'a values file (repeatable; later files win)', collect, [])
    .option('--set <key=value>', 'a value, e.g. image.tag=v2 (repeatable; wins over --values)', collect, [])
    .option('--target <name>', 'the target name templates see', 'local')
    .option('-n, --namespace <ns>', 'the target namespace templates see', 'default')
    .action(async (path: string, flags: { values: string[]; set: string[]; target: string; namespace: string }) => {
      code = await renderCommand(path, flags, out);
    });

  kubeFlags(
    program
      .command('diff')
      .description('show what a sync of a ConfigSync would change: a unified YAML diff of live vs desired per object (Secret values masked)')
      .argument('<name>', 'the ConfigSync')
      .option('--allow-insecure-http', 'accept an http:// repository (tests and demos only)'),
  ).action(async (name: string, flags: KubeFlags & { allowInsecureHttp?: boolean }) => {
    const kube = await connect(flags, context.env);
    code = await diffCommand({ ...kube, name, out, err, allowInsecureHttp: flags.allowInsecureHttp === true });
  });

  listFlags(
    kubeFlags(
      program
        .command('status')
        .description('status of ConfigSyncs (with NAME: each target and its cluster)')
        .argument('[name]', 'one ConfigSync')
        .option('--mirrors', 'mirroring sources and their replicas (synced, stale, conflict, missing) instead')
        .option('--mirror-prefix <prefix>', 'label/annotation prefix of mirroring', DEFAULT_MIRROR_PREFIX)
        .option('--mirror-source-namespaces <globs>', 'namespaces whose objects may be mirroring sources (comma-separated globs)'),
    ),
  ).action(async (name: string | undefined, flags: ListFlags & { mirrors?: boolean; mirrorPrefix: string; mirrorSourceNamespaces?: string }) => {
    const kube = await connect(flags, context.env);
    code = flags.mirrors === true ? await mirrorsCommand(kube, flags, out, err) : await statusCommand(kube, name, flags, out, err);
  });

  listFlags(kubeFlags(program.command('clusters').description('RemoteClusters: reachability, server version, last probe'))).action(async (flags: ListFlags) => {
    const kube = await connect(flags, context.env);
    code = await clustersCommand(kube, flags, out, err);
  });

  kubeFlags(
    program
      .command('reconcile')
      .description('request an immediate sync of a ConfigSync; with --wait, wait for it and print the applied revision')
      .argument('<name>', 'the ConfigSync')
      .option('--wait', 'wait until the operator handled the request')
      .option('--timeout <duration>', 'how long --wait waits, e.g. 30s, 2m', '2m'),
  ).action(async (name: string, flags: KubeFlags & { wait?: boolean; timeout: string }) => {
    const kube = await connect(flags, context.env);
    code = await reconcileCommand(kube, name, flags, out, err);
  });

  kubeFlags(
    program
      .command('rollback')
      .description('pin a ConfigSync to an earlier commit (set the revision back to a branch to follow it again)')
      .argument('<name>', 'the ConfigSync')
      .option('--to <sha>', 'this commit (full 40-character SHA)')
      .option('--steps <n>', 'N deploys back in status.history (deploys that rendered the same count once)'),
  ).action(async (name: string, flags: KubeFlags & { to?: string; steps?: string }) => {
    const kube = await connect(flags, context.env);
    const object = await getConfigSync(kube, name);
    const revision = rollbackRevision(object, { to: flags.to, steps: flags.steps });
    await kube.rest.request({ method: 'PATCH', path: configSyncPath(kube.namespace, name), contentType: 'application/merge-patch+json', body: { spec: { source: { git: { revision } } } } });
    out(`${kube.namespace}/${name}: revision pinned to ${revision} (set it back to a branch to follow it again)\n`);
  });

  for (const command of ['failover', 'failback'] as const) {
    kubeFlags(
      program
        .command(command)
        .description(command === 'failover' ? "promote a NamespaceReplication's standby: stop replicating, scale workloads up" : 'back to replicating, standby workloads at zero')
        .argument('<name>', 'the NamespaceReplication')
        .option('--wait', 'wait until the operator reports it done')
        .option('--timeout <duration>', 'how long --wait waits (e.g. 60s, 5m)', '60s'),
    ).action(async (name: string, flags: KubeFlags & { wait?: boolean; timeout: string }) => {
      const kube = await connect(flags, context.env);
      code = await failoverCommand(command, kube, name, flags, out);
    });
  }

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (error) {
    const isDiff = active === 'diff';
    if (error instanceof CommanderError) {
      // Help and --version exit 0; commander has printed the usage error already.
      if (error.exitCode === 0) return 0;
      if (error.code === 'commander.help' || error.code === 'commander.executeSubCommandAsync') return 1;
      return isDiff ? 2 : 1;
    }
    err(`${formatError(error)}\n`);
    return isDiff ? 2 : 1;
  }
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function kubeFlags(command: Command): Command {
  return command
    .option('-n, --namespace <ns>', "the namespace (default: the context's namespace, else default)")
    .option('--context <name>', 'the kubeconfig context to use')
    .option('--kubeconfig <file>', 'the kubeconfig file (default: $KUBECONFIG, several files merged as kubectl does, then ~/.kube/config, then in-cluster)');
}

function listFlags(command: Command): Command {
  return command.option('-A, --all-namespaces', 'list across all namespaces').addOption(new Option('-o, --output <format>', 'output format').choices(['table', 'json', 'yaml']).default('table'));
}

function addRunCommand(program: Command, context: CliContext, done: (code: number) => void): void {
  program
    .command('run')
    .description('run the operator')
    .option('--kubeconfig <file>', 'default $KUBECONFIG (several files merged), then ~/.kube/config, then in-cluster')
    .option('--context <name>', 'the kubeconfig context to use')
    .option('--namespace <ns>', 'watch ConfigSyncs in one namespace only (default: all)')
    .option('--leader-elect', 'elect a leader on a Lease (the chart sets it when replicas > 1)')
    .option('--leader-election-namespace <ns>', 'the Lease\'s namespace (default: the pod\'s namespace or "default")')
    .option('--leader-election-id <name>', "the Lease's name", 'syncline-leader')
    .option('--lease-duration <seconds>', 'how long a lease holds without renewal', '15')
    .option('--probe-addr <host:port>', '/healthz, /readyz, /metrics', '0.0.0.0:8080')
    .option('--cache-dir <dir>', 'Git snapshot cache (default ~/.cache/syncline/snapshots)')
    .option('--cache-max-bytes <n>', 'snapshot cache bound (default 2 GiB)')
    .option('--concurrency <n>', 'ConfigSyncs reconciled at once', '4')
    .option('--operator-namespace <ns>', "the operator's own namespace (default: $POD_NAMESPACE): a ManifestSync there may copy a source from any namespace")
    .option('--mirror-prefix <prefix>', 'label/annotation prefix of mirroring (e.g. mirrorverse.dev for objects labelled for Mirrorverse)', DEFAULT_MIRROR_PREFIX)
    .addOption(new Option('--mirror <on|off>', 'label-driven mirroring of Secrets/ConfigMaps; its watches are cluster-wide (--namespace scopes the ConfigSync/ManifestSync watches only)').choices(['on', 'off']).default('on'))
    .option('--mirror-source-namespaces <globs>', 'comma-separated names/globs of namespaces whose objects may be mirroring sources (default: all)')
    .addOption(new Option('--mirror-stale <policy>', 'replicas whose source is gone: deleted, or labelled <prefix>/stale with a stale-since time and left').choices(['delete', 'mark']).default('delete'))
    .option('--mirror-stale-ttl <duration>', 'with --mirror-stale mark: delete stale replicas after this long (e.g. 24h; empty: keep them)')
    .option('--mirror-resync <duration>', 'reconcile every mirroring source this often even without events', '10m')
    .option('--min-refresh-interval <duration>', 'shorter refresh intervals are raised to this, with an IntervalClamped condition (the API admits 1s to 168h)', '10s')
    .option('--default-service-account <name>', 'apply as this ServiceAccount when a sync names none')
    .option('--allow-insecure-http', 'accept http:// repositories (tests and demos only)')
    .option('--log-level <level>', 'debug, info, warn, error', 'info')
    .option(
      '--webhook-addr <host:port>',
      'Git push webhook receiver ("off" disables): POST /hooks/github (X-Hub-Signature-256), /hooks/gitlab (X-Gitlab-Token), /hooks/gitea (X-Gitea-Signature; also /hooks/forgejo), /hooks/bitbucket (X-Hub-Signature: sha256=), /hooks/generic {"repo": URL, "ref": "refs/heads/main"} (X-Syncline-Signature: sha256=HMAC-SHA256(body), X-Syncline-Delivery: ID)',
      '0.0.0.0:9292',
    )
    .option(
      '--webhook-secret <[ns/]name>',
      "the Secret holding webhook secrets, one key per provider: github, gitlab, gitea, bitbucket, generic (several values in one key, one per line, for rotation). A provider without a key refuses every delivery (401). Re-read every minute and when a signature fails. Default namespace: the pod's",
    )
    .option('--webhook-max-body-bytes <n>', 'larger deliveries are refused while streaming', String(1024 * 1024))
    .option('--webhook-read-timeout <seconds>', 'seconds a sender has to deliver headers and body', '10')
    .action(async (flags: RunOptions) => {
      done(await context.runOperator(flags));
    });
}

type Kube = { kc: KubeConfig; rest: KubeRest; namespace: string; allNamespaces: boolean };

async function connect(flags: KubeFlags & { allNamespaces?: boolean }, env: NodeJS.ProcessEnv): Promise<Kube> {
  const kc = loadKubeConfig({ kubeconfig: flags.kubeconfig, context: flags.context, env });
  const rest = await createKubeRest(kc, { userAgent: 'syncline-cli' });
  const namespace = flags.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  return { kc, rest, namespace, allNamespaces: flags.allNamespaces === true };
}

const API = '/apis/syncline.dev/v1alpha1';
const configSyncPath = (namespace: string, name: string): string => `${API}/namespaces/${namespace}/configsyncs/${name}`;

async function getConfigSync(kube: Kube, name: string): Promise<ConfigSync> {
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

async function statusCommand(kube: Kube, name: string | undefined, flags: ListFlags, out: Out, err: Out): Promise<number> {
  if (name !== undefined && kube.allNamespaces) throw new Error('a resource cannot be retrieved by name across all namespaces');
  const items =
    name !== undefined
      ? [await getConfigSync(kube, name)]
      : (await kube.rest.request<{ items: ConfigSync[] }>({ method: 'GET', path: kube.allNamespaces ? `${API}/configsyncs` : `${API}/namespaces/${kube.namespace}/configsyncs` })).items;
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
  return 0;
}

async function clustersCommand(kube: Kube, flags: ListFlags, out: Out, err: Out): Promise<number> {
  const list = await kube.rest.request<{ items: RemoteCluster[] }>({ method: 'GET', path: kube.allNamespaces ? `${API}/remoteclusters` : `${API}/namespaces/${kube.namespace}/remoteclusters` });
  if (flags.output !== 'table') out(printObjects(flags.output, list.items, false));
  else if (list.items.length === 0) err(noResources(kube));
  else out(formatClusters(list.items));
  return 0;
}

async function mirrorsCommand(kube: Kube, flags: ListFlags & { mirrorPrefix: string; mirrorSourceNamespaces?: string }, out: Out, err: Out): Promise<number> {
  const rows = await mirrorRows({ rest: kube.rest, keys: mirrorKeys(flags.mirrorPrefix), sourceNamespaces: parseMirrorSourceNamespaces(flags.mirrorSourceNamespaces ?? ''), namespace: kube.allNamespaces ? undefined : kube.namespace });
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
async function reconcileCommand(kube: Kube, name: string, flags: { wait?: boolean; timeout: string }, out: Out, err: Out): Promise<number> {
  const timeoutMs = durationFlag('--timeout', flags.timeout);
  const object = await getConfigSync(kube, name);
  const id = `${kube.namespace}/${name}`;
  if (object.spec.suspend === true) {
    throw new Error(`${id} is suspended (spec.suspend: true): a reconcile request would do nothing; resume it first: kubectl patch csync ${name} -n ${kube.namespace} --type merge -p '{"spec":{"suspend":false}}'`);
  }
  const at = new Date().toISOString();
  await kube.rest.request({ method: 'PATCH', path: configSyncPath(kube.namespace, name), contentType: 'application/merge-patch+json', body: { metadata: { annotations: { [RECONCILE_REQUESTED_ANNOTATION]: at } } } });
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
      err(`error: timed out after ${flags.timeout} waiting for ${id} to handle the request (is the operator running?)${ready === undefined ? '' : `; Ready=${ready.status}: ${ready.message}`}\n`);
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

/**
 * An error as kubectl words it: `Error from server (NotFound): configsyncs.syncline.dev "web" not found`
 * for an API answer, `Unable to connect to the server: ...` when there was none, `error: ...` otherwise.
 * REST paths and HTTP details stay out.
 */
export function formatError(error: unknown): string {
  const message = stripRequest(error instanceof Error ? error.message : String(error));
  if (error instanceof ApiError) {
    if (error.status === 0) return `Unable to connect to the server: ${message}`;
    return `Error from server (${error.reason === 'Unknown' || /^[0-9]+$/.test(error.reason) ? httpReason(error.status) : error.reason}): ${message}`;
  }
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT|EAI_AGAIN|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_)/.test(code)) return `Unable to connect to the server: ${message}`;
  return `error: ${message}`;
}

/** Drops a leading `GET /apis/…: 404 ` (the REST request) from a message. */
function stripRequest(message: string): string {
  return message.replace(/(?:^|(?<=: ))(?:watch|GET|PUT|POST|PATCH|DELETE|HEAD) \/\S*: (?:[0-9]{3} )?/g, '');
}

function httpReason(status: number): string {
  const reasons: Record<number, string> = { 400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 409: 'Conflict', 410: 'Gone', 422: 'Invalid', 429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable', 504: 'Timeout' };
  return reasons[status] ?? `HTTP ${status}`;
}

/** `0.1.0 (commit abc123def456)` — the commit when this runs from a Git checkout. */
export function versionText(): string {
  const packageDir = join(import.meta.dirname, '..');
  const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string };
  const commit = gitCommit(join(packageDir, '..', '..'));
  return commit === undefined ? version : `${version} (commit ${commit.slice(0, 12)})`;
}

/** HEAD's commit read from .git (a worktree's .git file too), without running git; undefined if unknown. */
function gitCommit(root: string): string | undefined {
  try {
    let gitDir = join(root, '.git');
    if (!existsSync(gitDir)) return undefined;
    const asFile = (() => {
      try {
        return readFileSync(gitDir, 'utf8');
      } catch {
        return undefined;
      }
    })();
    if (asFile?.startsWith('gitdir:') === true) gitDir = resolve(root, asFile.slice('gitdir:'.length).trim());
    const head = readFileSync(join(gitDir, 'HEAD'), 'utf8').trim();
    if (!head.startsWith('ref:')) return /^[0-9a-f]{40,64}$/.test(head) ? head : undefined;
    const ref = head.slice('ref:'.length).trim();
    const common = existsSync(join(gitDir, 'commondir')) ? resolve(gitDir, readFileSync(join(gitDir, 'commondir'), 'utf8').trim()) : gitDir;
    for (const dir of [gitDir, common]) if (existsSync(join(dir, ref))) return readFileSync(join(dir, ref), 'utf8').trim();
    const packed = existsSync(join(common, 'packed-refs')) ? readFileSync(join(common, 'packed-refs'), 'utf8') : '';
    return packed.split('\n').find((line) => line.endsWith(` ${ref}`))?.split(' ')[0];
  } catch {
    return undefined;
  }
}

async function renderCommand(path: string, flags: { values: string[]; set: string[]; target: string; namespace: string }, out: Out): Promise<number> {
  const layers: Values[] = [];
  for (const file of flags.values) layers.push(parseValues(await readFile(file, 'utf8'), file));
  for (const assignment of flags.set) layers.push(setValue(assignment));
  const isDirectory = (await stat(path)).isDirectory();
  const root = isDirectory ? path : dirname(path);
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

/**
 * `syncline failover NAME` / `failback NAME`: sets spec.failover of a NamespaceReplication (so Git can drive
 * it too) and, with --wait, waits until the operator reports it done. Idempotent: safe to run again.
 */
async function failoverCommand(command: 'failover' | 'failback', kube: Kube, name: string, flags: { wait?: boolean; timeout: string }, out: Out): Promise<number> {
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
    const nr = await rest.request<{ metadata: { generation?: number }; status?: { observedGeneration?: number; conditions?: { type: string; status: string; message: string }[] } }>({ method: 'GET', path });
    const failedOver = nr.status?.conditions?.find((c) => c.type === 'FailedOver');
    const ready = nr.status?.conditions?.find((c) => c.type === 'Ready');
    if (nr.status?.observedGeneration === nr.metadata.generation && ready?.status === 'True' && (failedOver?.status === 'True') === failover) {
      out(`${namespace}/${name}: ${failedOver?.message ?? ready.message}\n`);
      return 0;
    }
    if (Date.now() > deadline) throw new Error(`${namespace}/${name}: not ${failover ? 'failed over' : 'failed back'} within ${flags.timeout}: ${ready?.message ?? 'no status yet'}`);
    await new Promise((done) => setTimeout(done, 250));
  }
}

/**
 * `syncline diff NAME`: renders what the operator would (its Git credentials, values and valuesFrom), plans
 * the apply, and prints per object a unified diff of live vs desired limited to the fields Syncline writes.
 * Exit 0: no differences; 1: differences; 2: error.
 */
async function diffCommand(options: Kube & { name: string; out: Out; err: Out; allowInsecureHttp: boolean }): Promise<number> {
  const { out, err } = options;
  const object = await getConfigSync(options, options.name);
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
    let changed = 0;
    for (const target of spec.targets) {
      if (target.cluster !== undefined) {
        err(`# target ${target.name} (cluster ${target.cluster.name}): not diffed (diff reads this cluster only)\n`);
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
      out(`# target ${target.name} @ ${revisionText(spec.source.git.revision, revision)}\n`);
      if (plan.blocked !== undefined) {
        out(`# blocked: ${plan.blocked}\n`);
        changed++;
      }
      for (const step of [...plan.apply, ...plan.prune]) {
        const text = stepDiff(step, live.objects.get(step.id));
        if (text.diff !== '') changed++;
        out(text.note === undefined ? '' : `# ${step.id}: ${text.note}\n`);
        out(text.diff);
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

/** One plan step as diff prints it: the unified diff of what would change, or a note on what is left. */
export function stepDiff(step: PlanStep, live: ApplyObject | undefined): { diff: string; note?: string } {
  const [group, kind, ns, name] = step.id.split('/');
  const label = `${group === '' ? 'core' : group}/${kind}/${ns === '' ? '' : `${ns}/`}${name}`;
  switch (step.type) {
    case 'apply': {
      const desired = normalizeSecret(step.object);
      const projected = live === undefined ? undefined : projectLive(live, desired);
      const masked = maskSecrets(projected, desired);
      const diff = unifiedDiff(diffYaml(masked.live), diffYaml(masked.desired), { from: live === undefined ? '/dev/null' : `live/${label}`, to: `desired/${label}` });
      return step.reason === undefined ? { diff } : { diff, note: step.reason };
    }
    case 'delete': {
      if (live === undefined) return { diff: '' };
      const { metadata, apiVersion, kind: liveKind } = live;
      const shown = { ...live, metadata: { name: metadata.name, namespace: metadata.namespace, labels: metadata.labels, annotations: metadata.annotations }, status: undefined, apiVersion, kind: liveKind };
      const masked = maskSecrets(shown, undefined);
      return { diff: unifiedDiff(diffYaml(masked.live), '', { from: `live/${label}`, to: '/dev/null' }), note: 'pruned' };
    }
    case 'unchanged':
      return { diff: '' };
    case 'skip':
      return { diff: '', note: `not applied: ${step.reason}` };
    case 'forget':
      return { diff: '', note: step.reason };
    case 'resolve':
    case 'resolveStale':
      return { diff: '', note: 'could not read the live object (its API is not served or not readable)' };
  }
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
  const rows = [['NAMESPACE', 'NAME', 'READY', 'REVISION', 'TARGETS', 'MESSAGE']];
  for (const item of items) {
    const ready = item.status?.conditions?.find((c) => c.type === 'Ready');
    rows.push([
      item.metadata.namespace ?? '',
      item.metadata.name,
      ready?.status ?? 'Unknown',
      (item.status?.sourceRevision ?? '').slice(0, 12),
      `${item.status?.appliedTargets ?? 0}/${item.spec.targets.length}`,
      (ready?.message ?? '').slice(0, 80),
    ]);
  }
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n') + '\n';
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

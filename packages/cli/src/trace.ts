// `syncline trace KIND/NAME -n NS` (as `flux trace`): which Syncline object produced a cluster object, for which
// target, at which commit (SHA, message, author) and from which file. Ownership is proven, never taken from
// labels: the object must be listed in its owner's status.inventory (ConfigSync, ManifestSync,
// NamespaceReplication); a mirroring replica must carry the replica label and name a source that still
// exists. A hook object (never in an inventory) is proven by its ConfigSync's hook record: same kind, name and
// uid in status.targets[].hooks. An object with Syncline's marks that neither lists is reported as not Syncline's.
import { createApplyClient, decodeInventory, objectId, type KubeObject, type ResourceInfo } from '@syncline/apply';
import { createGitSource, proxyFromEnvironment, type CommitMetadata } from '@syncline/source-git';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { ConfigSyncSpec, type ConfigSync, type TargetInventory, type TargetStatus } from '@syncline/api';
import { readGitAccess } from '@syncline/operator/client';
import { mirrorKeys } from '@syncline/operator/client';
import { KINDS } from './kinds.ts';
import type { Kube } from './commands.ts';
import type { Out } from './flags.ts';
import { revisionText } from './commands.ts';

const API = '/apis/syncline.dev/v1alpha1';
const OWNER_KIND_LABEL = 'syncline.dev/kind';
const OWNER_NAME_LABEL = 'syncline.dev/name';
const OWNER_NAMESPACE_LABEL = 'syncline.dev/namespace';
const OWNED_BY_ANNOTATION = 'syncline.dev/owned-by';

/** What trace found, as -o json|yaml prints it. */
export type Trace = {
  object: { apiVersion: string; kind: string; namespace?: string; name: string };
  managed: boolean;
  /** Why it is or is not Syncline's. */
  proof: string;
  owner?: { kind: string; namespace: string; name: string; target?: string; ready?: string; message?: string };
  /** Set when the object is a hook the owner ran: its record in status.targets[].hooks. */
  hook?: { hook: string; source: string; phase: string; revision?: string; startedAt?: string; duration?: string; message?: string };
  source?: {
    repo?: string;
    path?: string;
    revision?: string;
    commit?: { sha: string; message: string; author: string; authorEmail: string; time: string };
    appliedAt?: string;
    files?: string[];
    engine?: string;
    object?: string;
    note?: string;
  };
};

type Owned = { kind: string; namespace: string; name: string; target?: string };
type Synced = {
  metadata: { name: string; namespace?: string };
  status?: {
    inventory?: TargetInventory[];
    conditions?: Array<{ type: string; status: string; message?: string }>;
    targets?: Array<Pick<TargetStatus, 'name' | 'cluster' | 'hooks' | 'hooksRevision'>>;
  };
};

/** `KIND/NAME` or `KIND NAME` → kind and name; the kind as kubectl takes it (Kind, plural or singular, with .group). */
export function traceTarget(first: string, second: string | undefined): { kind: string; name: string } {
  if (second !== undefined) return { kind: first, name: second };
  const slash = first.indexOf('/');
  if (slash <= 0 || slash === first.length - 1)
    throw new Error(`trace takes KIND/NAME or KIND NAME (e.g. trace deployment/web -n apps), not ${JSON.stringify(first)}`);
  return { kind: first.slice(0, slash), name: first.slice(slash + 1) };
}

/** kubectl's short names of built-in kinds (discovery as the apply client keeps it does not carry them). */
const SHORT_NAMES: Record<string, string> = {
  cm: 'configmaps',
  deploy: 'deployments',
  svc: 'services',
  sa: 'serviceaccounts',
  ns: 'namespaces',
  po: 'pods',
  rs: 'replicasets',
  sts: 'statefulsets',
  ds: 'daemonsets',
  ing: 'ingresses',
  cj: 'cronjobs',
  pvc: 'persistentvolumeclaims',
  pv: 'persistentvolumes',
  netpol: 'networkpolicies',
  hpa: 'horizontalpodautoscalers',
  pdb: 'poddisruptionbudgets',
  crd: 'customresourcedefinitions',
  crds: 'customresourcedefinitions',
  ep: 'endpoints',
  quota: 'resourcequotas',
  limits: 'limitranges',
  sc: 'storageclasses',
  pc: 'priorityclasses',
};

/** The served resource a typed kind names: `deployment`, `deployments`, `deploy`, `Deployment`, `deployments.apps`, `csync`. */
export function findResource(kinds: readonly ResourceInfo[], typed: string): ResourceInfo {
  const syncline = KINDS.find((k) => k.names.includes(typed.toLowerCase().replace(/\.syncline\.dev$/, '')));
  const lower = syncline !== undefined ? `${syncline.plural}.syncline.dev` : (SHORT_NAMES[typed.toLowerCase()] ?? typed.toLowerCase());
  const dot = lower.indexOf('.');
  const [name, group] = dot === -1 ? [lower, undefined] : [lower.slice(0, dot), lower.slice(dot + 1)];
  const matches = kinds.filter((k) => (group === undefined || k.group === group) && [k.kind.toLowerCase(), k.plural].includes(name));
  // Core and built-in groups first, as kubectl prefers them for an unqualified name.
  const found = matches.sort((a, b) =>
    a.group === '' ? -1 : b.group === '' ? 1 : a.group.includes('.') === b.group.includes('.') ? 0 : a.group.includes('.') ? 1 : -1,
  )[0];
  if (found === undefined) throw new Error(`the server doesn't have a resource type "${typed}"`);
  return found;
}

export async function traceCommand(
  kube: Kube,
  typed: { kind: string; name: string },
  options: { output?: 'json' | 'yaml'; env: NodeJS.ProcessEnv; allowInsecureHttp?: boolean },
  out: Out,
): Promise<number> {
  const client = await createApplyClient(kube.connection);
  const resource = findResource((await client.discovery()).kinds(), typed.kind);
  const apiVersion = resource.group === '' ? resource.version : `${resource.group}/${resource.version}`;
  const namespace = resource.namespaced ? kube.namespace : '';
  const object = await kube.rest.request<KubeObject>({
    method: 'GET',
    path: `${resource.group === '' ? '/api' : '/apis/' + resource.group}/${resource.version}${namespace === '' ? '' : `/namespaces/${namespace}`}/${resource.plural}/${typed.name}`,
  });
  const id = objectId({ apiVersion, kind: resource.kind, metadata: { name: typed.name, ...(namespace === '' ? {} : { namespace }) } });
  const trace: Trace = { object: { apiVersion, kind: resource.kind, ...(namespace === '' ? {} : { namespace }), name: typed.name }, managed: false, proof: '' };
  const owned = claimedOwner(object);
  const mirrored = mirrorSource(object);
  if (owned !== undefined) await proveInventory(kube, { owned, id, object, trace });
  else if (mirrored !== undefined) await proveMirror(kube, { source: mirrored, object, trace });
  else trace.proof = 'it carries none of the marks Syncline puts on what it applies (syncline.dev/owned-by, syncline.dev/name) and is no mirroring replica';
  if (trace.managed && trace.owner?.kind === 'ConfigSync') await traceSource(kube, { trace, object, options });
  if (options.output === 'json') out(`${JSON.stringify(trace, null, 4)}\n`);
  else if (options.output === 'yaml') out(stringify(trace));
  else out(formatTrace(trace));
  return trace.managed ? 0 : 1;
}

function claimedOwner(object: KubeObject): Owned | undefined {
  const labels = object.metadata.labels ?? {};
  const ownedBy = object.metadata.annotations?.[OWNED_BY_ANNOTATION];
  const kind = labels[OWNER_KIND_LABEL];
  if (kind === 'Mirror') return undefined;
  // The annotation reads namespace/name/target, the name `Kind:name` for other kinds than ConfigSync (and the
  // only record of a name too long for a label).
  const [annotationNamespace, annotationOwner, target] = ownedBy?.split('/') ?? [];
  const [annotationKind, annotationName] = annotationOwner?.includes(':') === true ? annotationOwner.split(':', 2) : ['ConfigSync', annotationOwner];
  const name = labels[OWNER_NAME_LABEL] ?? annotationName;
  const namespace = labels[OWNER_NAMESPACE_LABEL] ?? annotationNamespace;
  if (name === undefined || namespace === undefined) return undefined;
  return { kind: kind ?? annotationKind ?? 'ConfigSync', namespace, name, ...(target === undefined ? {} : { target }) };
}

function mirrorSource(object: KubeObject): string | undefined {
  const keys = mirrorKeys();
  return object.metadata.labels?.[keys.syncReplica] === 'true' ? object.metadata.annotations?.[keys.source] : undefined;
}

const PLURALS: Record<string, string> = { ConfigSync: 'configsyncs', ManifestSync: 'manifestsyncs', NamespaceReplication: 'namespacereplications' };

/** The claimed owner is read; the object is Syncline's only when that owner's inventory lists it. */
async function proveInventory(kube: Kube, input: { owned: Owned; id: string; object: KubeObject; trace: Trace }): Promise<void> {
  const { owned, id, object, trace } = input;
  const plural = PLURALS[owned.kind];
  const label = `${owned.kind} ${owned.namespace}/${owned.name}`;
  if (plural === undefined) {
    trace.proof = `its labels name a ${owned.kind}, which Syncline does not record objects for`;
    return;
  }
  let owner: Synced;
  try {
    owner = await kube.rest.request<Synced>({ method: 'GET', path: `${API}/namespaces/${owned.namespace}/${plural}/${owned.name}` });
  } catch (error) {
    if ((error as { status?: number }).status !== 404) throw error;
    trace.proof = `its marks name ${label}, which does not exist: nothing updates or prunes this object (an orphan)`;
    return;
  }
  const listing = (owner.status?.inventory ?? []).find((entry) => decodeInventory(entry.entries).some((e) => e.id === id));
  const ready = owner.status?.conditions?.find((c) => c.type === 'Ready');
  trace.owner = {
    kind: owned.kind,
    namespace: owned.namespace,
    name: owned.name,
    ...(listing === undefined ? {} : { target: listing.target }),
    ready: ready?.status ?? 'Unknown',
    ...(ready?.message === undefined ? {} : { message: ready.message }),
  };
  if (listing === undefined) {
    if (proveHook(owner, object, trace, label)) return;
    trace.proof = `its marks name ${label}, but its status.inventory does not list it: Syncline neither updates nor prunes it`;
    return;
  }
  trace.managed = true;
  trace.proof = `listed in status.inventory of ${label}, target ${listing.target}${listing.cluster === undefined ? '' : ` (cluster ${listing.cluster})`}`;
}

/** A hook object: its owner's hook record names it with the same uid (a later object of that name is not the hook's). */
function proveHook(owner: Synced, object: KubeObject, trace: Trace, label: string): boolean {
  const uid = object.metadata.uid;
  const namespace = object.metadata.namespace;
  for (const target of owner.status?.targets ?? []) {
    if (target.cluster !== undefined) continue;
    const record = (target.hooks ?? []).find(
      (h) => h.kind === object.kind && h.name === object.metadata.name && h.namespace === namespace && h.uid !== undefined && h.uid === uid,
    );
    if (record === undefined) continue;
    trace.managed = true;
    trace.proof = `the ${record.hook} hook ${record.source} of ${label}, target ${target.name}: status.targets[].hooks records this object (same uid); hooks are created by the sync and never in its inventory`;
    if (trace.owner !== undefined) trace.owner.target = target.name;
    trace.hook = {
      hook: record.hook,
      source: record.source,
      phase: record.phase,
      ...(target.hooksRevision === undefined ? {} : { revision: target.hooksRevision }),
      ...(record.startedAt === undefined ? {} : { startedAt: record.startedAt }),
      ...(record.duration === undefined ? {} : { duration: record.duration }),
      ...(record.message === undefined ? {} : { message: record.message }),
    };
    return true;
  }
  return false;
}

async function proveMirror(kube: Kube, input: { source: string; object: KubeObject; trace: Trace }): Promise<void> {
  const { source, object, trace } = input;
  const [namespace = '', name = ''] = source.split('/');
  const plural = object.kind === 'Secret' ? 'secrets' : object.kind === 'ConfigMap' ? 'configmaps' : undefined;
  const exists =
    plural === undefined
      ? false
      : await kube.rest.request({ method: 'GET', path: `/api/v1/namespaces/${namespace}/${plural}/${name}` }).then(
          () => true,
          (error: unknown) => {
            if ((error as { status?: number }).status === 404) return false;
            throw error;
          },
        );
  trace.owner = { kind: 'Mirror', namespace, name };
  trace.managed = exists;
  trace.proof = exists
    ? `a mirroring replica (replica label) of ${object.kind} ${source}, which exists`
    : `labelled a mirroring replica of ${object.kind} ${source}, which no longer exists (stale)`;
}

/** The applied commit (message, author, time), when the target applied it, and the file(s) holding the object. */
async function traceSource(
  kube: Kube,
  input: { trace: Trace; object: KubeObject; options: { env: NodeJS.ProcessEnv; allowInsecureHttp?: boolean } },
): Promise<void> {
  const { trace, object } = input;
  const owner = trace.owner;
  if (owner === undefined) return;
  const sync = await kube.rest.request<ConfigSync>({ method: 'GET', path: `${API}/namespaces/${owner.namespace}/configsyncs/${owner.name}` });
  const spec = ConfigSyncSpec.parse(sync.spec);
  const target = spec.targets.find((t) => t.name === owner.target);
  const path = target?.path ?? spec.source.git.path;
  // A hook ran for its own commit (hooksRevision), which is not the applied one while a PreSync hook holds it.
  const sha = trace.hook?.revision ?? sync.status?.sourceRevision;
  trace.source = {
    repo: spec.source.git.repo,
    path: path === '' ? '.' : path,
    ...(sha === undefined ? {} : { revision: revisionText(spec.source.git.revision, sha) }),
  };
  const applied = [...(sync.status?.history ?? [])].reverse().find((h) => h.revision === sha);
  if (applied !== undefined) trace.source.appliedAt = applied.appliedAt;
  if (sha === undefined) return;
  const cacheDir = await mkdtemp(join(tmpdir(), 'syncline-trace-'));
  try {
    const git = createGitSource({ cacheDir, allowInsecureHttp: input.options.allowInsecureHttp, environmentProxy: proxyFromEnvironment(input.options.env) });
    const { auth, connection } = await readGitAccess(kube.rest, owner.namespace, spec.source.git);
    const snapshot = await git.fetchSnapshot({ repo: spec.source.git.repo, sha, auth, connection });
    trace.source.commit = commitOf(sha, await git.readCommit(snapshot));
    const files = await git.readPath(snapshot, path);
    // A hook with a generated name is found by its generateName, as the source spells it (Kind/generateName).
    const source = trace.hook?.source;
    const named = source === undefined ? object : { ...object, metadata: { ...object.metadata, name: source.slice(source.indexOf('/') + 1) } };
    const found = filesHolding(files, named);
    if (found.files.length > 0) trace.source.files = found.files;
    if (found.engine !== undefined) trace.source.engine = found.engine;
    if (found.note !== undefined) trace.source.note = found.note;
  } catch (error) {
    // The trace stands on the cluster's records; the commit's details are a bonus that needs Git access.
    trace.source.note = `the commit could not be read from Git: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    await rm(cacheDir, { recursive: true, force: true });
  }
}

function commitOf(sha: string, commit: CommitMetadata): NonNullable<NonNullable<Trace['source']>['commit']> {
  return { sha, message: commit.message.trimEnd(), author: commit.author.name, authorEmail: commit.author.email, time: commit.author.time };
}

/**
 * The files under the target's path that hold a document of this kind and name: a plain manifest is parsed; a
 * Handlebars template is matched by its text; Kustomize, Helm and Jsonnet render many files into one object.
 */
function filesHolding(files: ReadonlyArray<{ path: string; content: Uint8Array }>, object: KubeObject): { files: string[]; engine?: string; note?: string } {
  const marker = files.find((f) => /(^|\/)(kustomization\.ya?ml|Kustomization|Chart\.yaml)$/.test(f.path) || f.path.endsWith('.jsonnet'));
  if (marker !== undefined) {
    const engine = marker.path.endsWith('Chart.yaml') ? 'helm' : marker.path.endsWith('.jsonnet') ? 'jsonnet' : 'kustomize';
    return { files: [], engine, note: `rendered by ${engine} from ${marker.path}` };
  }
  const holding: string[] = [];
  for (const file of files) {
    const text = Buffer.from(file.content).toString('utf8');
    if (/\.(ya?ml|json)$/.test(file.path)) {
      const documents = parseAllDocuments(text).map((d) => d.toJS() as unknown);
      if (documents.some((d) => matches(d, object))) holding.push(file.path);
    } else if (
      file.path.endsWith('.hbs') &&
      new RegExp(`kind:\\s*["']?${escape(String(object.kind))}\\b`).test(text) &&
      new RegExp(`name:\\s*["']?${escape(object.metadata.name)}["']?\\s*$`, 'm').test(text)
    ) {
      holding.push(file.path);
    }
  }
  return holding.length === 0 ? { files: [], note: 'no file under the path names it literally (a template computes its name)' } : { files: holding };
}

function matches(document: unknown, object: KubeObject): boolean {
  if (typeof document !== 'object' || document === null) return false;
  const d = document as { kind?: unknown; metadata?: { name?: unknown; generateName?: unknown }; items?: unknown[] };
  if (Array.isArray(d.items)) return d.items.some((item) => matches(item, object));
  return (
    d.kind === object.kind &&
    (d.metadata?.name === object.metadata.name || (d.metadata?.name === undefined && d.metadata?.generateName === object.metadata.name))
  );
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function formatTrace(trace: Trace): string {
  const lines: Array<[string, string]> = [
    ['Object', `${trace.object.kind}/${trace.object.name}`],
    ...(trace.object.namespace === undefined ? [] : ([['Namespace', trace.object.namespace]] as Array<[string, string]>)),
    ['Status', trace.managed ? 'Managed by Syncline' : 'Not managed by Syncline'],
    ['Proof', trace.proof],
  ];
  const owner = trace.owner;
  if (owner !== undefined) {
    lines.push(['', ''], [owner.kind, `${owner.namespace}/${owner.name}`]);
    if (owner.target !== undefined) lines.push(['Target', owner.target]);
    if (owner.ready !== undefined) lines.push(['Ready', owner.ready]);
    if (owner.message !== undefined) lines.push(['Message', owner.message.replace(/\s*\n\s*/g, ' ')]);
  }
  const hook = trace.hook;
  if (hook !== undefined) {
    lines.push(['Hook', `${hook.hook} ${hook.source}`], ['Phase', `${hook.phase}${hook.duration === undefined ? '' : ` (${hook.duration})`}`]);
    if (hook.startedAt !== undefined) lines.push(['Started', hook.startedAt]);
    if (hook.message !== undefined) lines.push(['Hook message', hook.message.replace(/\s*\n\s*/g, ' ')]);
  }
  const source = trace.source;
  if (source !== undefined) {
    lines.push(['', ''], ['Repository', source.repo ?? ''], ['Path', source.path ?? '']);
    if (source.revision !== undefined) lines.push(['Revision', source.revision]);
    if (source.commit !== undefined) {
      const [subject = ''] = source.commit.message.split('\n');
      lines.push(
        ['Commit', `${source.commit.sha.slice(0, 12)} ${subject}`],
        ['Author', `${source.commit.author} <${source.commit.authorEmail}>, ${source.commit.time}`],
      );
    }
    if (source.appliedAt !== undefined) lines.push(['Applied', source.appliedAt]);
    if (source.files !== undefined) lines.push(['File', source.files.join(', ')]);
    if (source.note !== undefined) lines.push(['Note', source.note]);
  }
  const width = Math.max(...lines.map(([k]) => k.length)) + 2;
  return lines.map(([k, v]) => (k === '' ? '' : `${`${k}:`.padEnd(width)}${v}`)).join('\n') + '\n';
}

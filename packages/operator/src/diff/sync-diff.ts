// What a ConfigSync would change, object by object: its source rendered the operator's way (Git credentials,
// values and valuesFrom), planned against the live objects, each step a unified diff limited to the fields
// Syncline writes, Secret values masked. `syncline diff` prints it; the web UI shows it (and the objects'
// health), and compares two deploys of the history with `diffRevisions`.
import type { KubeRest } from '@syncline/kube';
import { decodeInventory, healthOf, planApply, readLive, type ApplyClient, type KubeObject as ApplyObject, type PlanStep } from '@syncline/apply';
import { layerValues, renderTarget, renderWithEngine, type ApiDiscovery, type RenderEngine, type SourceFile } from '@syncline/render';
import type { GitSource } from '@syncline/source-git';
import { ConfigSyncSpec, type ConfigSync } from '@syncline/api';
import { readGitAccess, readValues } from '../reconcile/inputs.ts';
import { createDecryptionContext, decryptFiles, readKeyRing, readValuesFiles } from '../reconcile/decryption.ts';
import { createChartSource, type ChartSource } from '@syncline/source-helm';
import { fetchPublishedChart } from '../reconcile/charts.ts';
import { capabilitiesOf, engineSpecFor, readsWholeRepository, serverVersion, targetPath } from '../reconcile/engines.ts';
import { diffYaml, maskSecrets, normalizeSecret, projectLive, unifiedDiff } from './diff.ts';

/** How an object stands against its source: `in-sync`, `drifted` (live differs), `missing`, `prune`, or `note`. */
export const ObjectChange = { InSync: 'in-sync', Drifted: 'drifted', Missing: 'missing', Prune: 'prune', Note: 'note' } as const;
export type ObjectChange = (typeof ObjectChange)[keyof typeof ObjectChange];

export type ObjectDiff = {
  /** group/Kind/namespace/name, as `syncline diff` labels it (`core/Secret/ns/db`). */
  label: string;
  change: ObjectChange;
  /** Unified diff live → desired ('' when equal); Secret values are masked. */
  diff: string;
  note?: string;
  /** kstatus health of the live object (Current, InProgress, Failed), when it exists. */
  health?: string;
  healthMessage?: string;
};

export type TargetDiff = {
  name: string;
  cluster?: string;
  revision: string;
  skipped?: string;
  blocked?: string;
  objects: ObjectDiff[];
  /** The engine that rendered it: handlebars, kustomize, helm or jsonnet. */ engine?: string;
};

/** The source files of a revision, and the revision's SHA. */
export type SourceRead = {
  revision: string;
  files: SourceFile[];
  /** Reads another path of the same revision (spec.valuesFiles). */ read?: (path: string) => Promise<SourceFile[]>;
};

/** The ConfigSync's source as the operator reads it: `revision` (default: spec's) resolved, its path read. */
export async function readSource(input: { rest: KubeRest; git: GitSource; object: ConfigSync; revision?: string }): Promise<SourceRead> {
  const spec = ConfigSyncSpec.parse(input.object.spec);
  const { auth, connection } = await readGitAccess(input.rest, input.object.metadata.namespace ?? 'default', spec.source.git);
  const repo = spec.source.git.repo;
  const revision = await input.git.resolveRevision({ repo, revision: input.revision ?? spec.source.git.revision, auth, connection });
  const snapshot = await input.git.fetchSnapshot({ repo, sha: revision, auth, connection });
  // As the operator reads it: the whole snapshot when an engine may reach beyond the path.
  let files = await input.git.readPath(snapshot, readsWholeRepository(spec) ? '' : spec.source.git.path);
  if (!readsWholeRepository(spec) && spec.source.git.path !== '' && readsWholeRepository(spec, files)) files = await input.git.readPath(snapshot, '');
  return { revision, files, read: (path) => input.git.readPath(snapshot, path) };
}

/** Published charts for previews, one source per render process (memory only; https and secure registries only). */
const previewCharts = new WeakMap<RenderEngine, ChartSource>();

function chartsFor(engine: RenderEngine | undefined): ChartSource | undefined {
  if (engine === undefined) return undefined;
  let charts = previewCharts.get(engine);
  if (charts === undefined) {
    charts = createChartSource({ chooseVersion: (versions, version) => engine.chooseChartVersion(versions, version) });
    previewCharts.set(engine, charts);
  }
  return charts;
}

/**
 * Each target's rendered objects and the engine that rendered them (targets of another cluster are left out:
 * they are read there, not here). Kustomize, Helm and Jsonnet need the render process (`engine`).
 */
export async function renderSync(input: {
  rest: KubeRest;
  object: ConfigSync;
  source: SourceRead;
  discovery: ApiDiscovery;
  engine?: RenderEngine | undefined;
  charts?: ChartSource;
}): Promise<{ name: string; cluster?: string; objects?: ApplyObject[]; engine?: string }[]> {
  const spec = ConfigSyncSpec.parse(input.object.spec);
  const namespace = input.object.metadata.namespace ?? 'default';
  // SOPS files decrypted in memory with the sync's key Secret, read with the caller's own rights (who may not
  // read it cannot decrypt); Secret values in the diff stay masked.
  const decryption = createDecryptionContext();
  const ring = await readKeyRing(input.rest, decryption, namespace, spec);
  const read = input.source.read ?? (() => Promise.resolve([]));
  const bytes = (f: SourceFile): { path: string; content: Uint8Array } => ({
    path: f.path,
    content: typeof f.content === 'string' ? new Uint8Array(Buffer.from(f.content)) : f.content,
  });
  const valuesFiles = await readValuesFiles(decryption, spec, ring, async (path) => (await read(path)).map(bytes));
  const roots = spec.targets.map((target) =>
    targetPath(spec, target)
      .split('/')
      .filter((part) => part !== '' && part !== '.')
      .join('/'),
  );
  const { files } = await decryptFiles(decryption, input.source.files.filter((f) => !valuesFiles.paths.has(f.path)).map(bytes), ring, roots);
  const values = layerValues([valuesFiles.spec, await readValues(input.rest, namespace, spec)], { keepNulls: true });
  // A published chart (helm.repository) is fetched with the sync's own Secret, as the operator fetches it.
  const chart = await fetchPublishedChart({ rest: input.rest, charts: input.charts ?? chartsFor(input.engine), namespace, spec, maxAgeMs: 60_000 });
  const out: { name: string; cluster?: string; objects?: ApplyObject[]; engine?: string }[] = [];
  for (const target of spec.targets) {
    if (target.cluster !== undefined) {
      out.push({ name: target.name, cluster: target.cluster.name });
      continue;
    }
    const path = targetPath(spec, target);
    const renderTargetSpec = {
      name: target.name,
      namespace: target.namespace ?? namespace,
      values: layerValues([valuesFiles.targets.get(target.name), target.values], { keepNulls: true }),
      patches: target.patches,
      data: target.data,
    };
    const source = { repo: spec.source.git.repo, revision: input.source.revision, path };
    const engineSpec = target.data === undefined ? engineSpecFor(spec, target, files, chart?.dir) : undefined;
    if (engineSpec === undefined) {
      out.push({
        name: target.name,
        engine: 'handlebars',
        objects: renderTarget({ files, path, values, target: renderTargetSpec, source, discovery: input.discovery }),
      });
      continue;
    }
    if (input.engine === undefined)
      throw new Error(`target ${target.name} renders with ${engineSpec.engine}: no render engine here (--render-engine, or SYNCLINE_RENDER_ENGINE)`);
    // .Capabilities as the operator gives them: this cluster's version and served API versions.
    const capabilities = engineSpec.engine === 'helm' ? capabilitiesOf(input.discovery, await serverVersion(input.rest)) : {};
    const objects = await renderWithEngine({
      engine: input.engine,
      spec: engineSpec,
      files: chart?.files ?? files,
      path,
      values,
      target: renderTargetSpec,
      source,
      discovery: input.discovery,
      capabilities,
      releaseName: input.object.metadata.name,
      ...(chart === undefined ? {} : { chartDigest: chart.digest }),
    });
    out.push({ name: target.name, engine: engineSpec.engine, objects: objects });
  }
  return out;
}

/** Live against desired for every target of this cluster: `syncline diff` as data. */
export async function diffSync(input: {
  rest: KubeRest;
  client: ApplyClient;
  object: ConfigSync;
  source: SourceRead;
  engine?: RenderEngine | undefined;
  charts?: ChartSource;
}): Promise<TargetDiff[]> {
  const spec = ConfigSyncSpec.parse(input.object.spec);
  const namespace = input.object.metadata.namespace ?? 'default';
  const discovery = await input.client.discovery();
  const rendered = await renderSync({
    rest: input.rest,
    object: input.object,
    source: input.source,
    discovery,
    engine: input.engine,
    ...(input.charts === undefined ? {} : { charts: input.charts }),
  });
  const out: TargetDiff[] = [];
  for (const target of rendered) {
    if (target.objects === undefined) {
      out.push({
        name: target.name,
        ...(target.cluster === undefined ? {} : { cluster: target.cluster }),
        revision: input.source.revision,
        skipped: `cluster ${target.cluster ?? ''}: not diffed (diff reads this cluster only)`,
        objects: [],
      });
      continue;
    }
    const inventory = decodeInventory(input.object.status?.inventory?.find((i) => i.target === target.name)?.entries);
    const live = await readLive({ client: input.client, desired: target.objects, inventory });
    const plan = planApply({
      desired: target.objects,
      inventory,
      live,
      owner: { namespace, name: input.object.metadata.name, target: target.name },
      policy: spec.policy,
      drift: spec.drift,
      prune: spec.prune,
      allowEmpty: spec.allowEmpty,
    });
    const desired = new Map(target.objects.map((o) => [idOf(o), o]));
    const objects = [...plan.apply, ...plan.prune].map((step) => objectDiff(reportedDrift(step, desired), live.objects.get(step.id)));
    out.push({
      name: target.name,
      revision: input.source.revision,
      ...(plan.blocked === undefined ? {} : { blocked: plan.blocked }),
      ...(target.engine === undefined ? {} : { engine: target.engine }),
      objects,
    });
  }
  return out;
}

/**
 * A drift that `drift: Report` leaves in place is planned as a skip; shown as the apply that would correct it
 * (its diff), with the skip's reason as the note, so the viewer sees what differs.
 */
function reportedDrift(step: PlanStep, desired: ReadonlyMap<string, ApplyObject>): PlanStep {
  const object = step.type === 'skip' && step.drift !== undefined ? desired.get(step.id) : undefined;
  if (step.type !== 'skip' || object === undefined) return step;
  return { type: 'apply', id: step.id, tier: step.tier, object, force: true, create: false, reason: step.reason };
}

function objectDiff(step: PlanStep, live: ApplyObject | undefined): ObjectDiff {
  const { diff, note } = stepDiff(step, live);
  const health = live === undefined ? undefined : healthOf(live);
  const change: ObjectChange =
    step.type === 'unchanged'
      ? ObjectChange.InSync
      : step.type === 'delete'
        ? ObjectChange.Prune
        : step.type === 'apply'
          ? live === undefined
            ? ObjectChange.Missing
            : diff === ''
              ? ObjectChange.InSync
              : ObjectChange.Drifted
          : ObjectChange.Note;
  return {
    label: objectLabel(step.id),
    change,
    diff,
    ...(note === undefined ? {} : { note }),
    ...(health === undefined ? {} : { health: health.status, healthMessage: health.message }),
  };
}

/** An object id (group/Kind/namespace/name) as diff names it: `core/Secret/ns/db`, `apps/Deployment/ns/web`. */
export function objectLabel(id: string): string {
  const [group, kind, ns, name] = id.split('/');
  return `${group === '' ? 'core' : group}/${kind}/${ns === '' ? '' : `${ns}/`}${name}`;
}

/** One plan step as diff prints it: the unified diff of what would change, or a note on what is left. */
export function stepDiff(step: PlanStep, live: ApplyObject | undefined): { diff: string; note?: string } {
  const label = objectLabel(step.id);
  switch (step.type) {
    case 'apply': {
      const desired = normalizeSecret(step.object);
      const projected = live === undefined ? undefined : projectLive(live, desired);
      const masked = maskSecrets(projected, desired);
      const diff = unifiedDiff(diffYaml(masked.live), diffYaml(masked.desired), {
        from: live === undefined ? '/dev/null' : `live/${label}`,
        to: `desired/${label}`,
      });
      return step.reason === undefined ? { diff } : { diff, note: step.reason };
    }
    case 'delete': {
      if (live === undefined) return { diff: '' };
      const { metadata, apiVersion, kind: liveKind } = live;
      const shown = {
        ...live,
        metadata: { name: metadata.name, namespace: metadata.namespace, labels: metadata.labels, annotations: metadata.annotations },
        status: undefined,
        apiVersion,
        kind: liveKind,
      };
      const masked = maskSecrets(shown, undefined);
      return { diff: unifiedDiff(diffYaml(masked.live), '', { from: `live/${label}`, to: '/dev/null' }), note: 'pruned' };
    }
    case 'unchanged':
      return { diff: '' };
    case 'skip':
      return { diff: '', note: `not applied: ${step.reason}` };
    case 'invalid':
      return { diff: '', note: `cannot be applied: ${step.reason}` };
    case 'forget':
      return { diff: '', note: step.reason };
    case 'resolve':
    case 'resolveStale':
      return { diff: '', note: 'could not read the live object (its API is not served or not readable)' };
  }
}

/**
 * What changed between two renders of the same sync (two deploys of its history), per target and object:
 * `from` → `to`, Secret values masked on both sides (a changed value shows as changed, never its text).
 */
export function diffRenders(
  from: readonly { name: string; objects?: ApplyObject[] }[],
  to: readonly { name: string; objects?: ApplyObject[] }[],
  labels: { from: string; to: string },
): { target: string; label: string; diff: string }[] {
  const out: { target: string; label: string; diff: string }[] = [];
  for (const target of to) {
    const before = new Map((from.find((t) => t.name === target.name)?.objects ?? []).map((o) => [idOf(o), o]));
    const after = new Map((target.objects ?? []).map((o) => [idOf(o), o]));
    for (const id of [...new Set([...before.keys(), ...after.keys()])].sort()) {
      const a = normalizeSecret(before.get(id));
      const b = normalizeSecret(after.get(id));
      const masked = maskSecrets(a, b);
      const label = objectLabel(id);
      const diff = unifiedDiff(diffYaml(masked.live), diffYaml(masked.desired), {
        from: a === undefined ? '/dev/null' : `${labels.from}/${label}`,
        to: b === undefined ? '/dev/null' : `${labels.to}/${label}`,
      });
      if (diff !== '') out.push({ target: target.name, label, diff });
    }
  }
  return out;
}

function idOf(object: ApplyObject): string {
  const group = object.apiVersion.includes('/') ? (object.apiVersion.split('/')[0] ?? '') : '';
  return `${group}/${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
}

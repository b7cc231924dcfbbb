// Which engine renders a target, and with which inputs: spec.source.kustomize|helm|jsonnet when the sync names
// one, otherwise what the path holds (a kustomization file, as Flux detects it; a Chart.yaml, as Argo CD does),
// otherwise Handlebars and plain manifests. Per-target fields go over the sync's.
import { EngineName, detectEngine, type ClusterCapabilities, type EngineSpec, type KustomizeOptions, type SourceFiles } from '@syncline/render';
import type { KubeRest } from '@syncline/kube';
import type { ConfigSyncSpec } from '@syncline/api';

type Target = ConfigSyncSpec['targets'][number];
type KustomizeFields = NonNullable<ConfigSyncSpec['source']['kustomize']>;

/**
 * detectEngine, remembered for the files it looked at. The snapshot reader hands every read of a path the same
 * file objects (in a new list each time), so a resync asks about the very same files: told apart by identity, in
 * order (a new commit, or a file decrypted anew, is another object and is looked at again). Keyed by the first
 * file, so what is remembered goes with the files.
 */
const detected = new WeakMap<object, { readonly files: readonly object[]; readonly engines: Map<string, EngineName | undefined> }>();

function engineAt(files: SourceFiles, path: string): EngineName | undefined {
  if (!Array.isArray(files)) return detectEngine(files, path);
  const list = files as readonly object[];
  const first = list[0];
  if (first === undefined) return detectEngine(files, path);
  let known = detected.get(first);
  if (known === undefined || !sameItems(known.files, list)) detected.set(first, (known = { files: [...list], engines: new Map() }));
  if (known.engines.has(path)) return known.engines.get(path);
  const engine = detectEngine(files, path);
  known.engines.set(path, engine);
  return engine;
}

function sameItems(a: readonly object[], b: readonly object[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The repo-relative path a target renders. */
export function targetPath(spec: ConfigSyncSpec, target: Target): string {
  return target.path ?? spec.source.git.path;
}

/**
 * Whether the sync needs the whole snapshot, not only its path: an engine's overlay reaches bases elsewhere in
 * the repository, a chart or library path may sit anywhere, and a target may render another path.
 */
export function readsWholeRepository(spec: ConfigSyncSpec, files?: SourceFiles): boolean {
  const source = spec.source;
  // A published chart (helm.repository) is fetched on its own: the Git source holds only values files then.
  if (source.kustomize !== undefined || (source.helm !== undefined && source.helm.repository === undefined) || source.jsonnet !== undefined) return true;
  if (spec.targets.some((t) => t.path !== undefined && t.path !== source.git.path)) return true;
  return files !== undefined && engineAt(files, source.git.path) !== undefined;
}

/**
 * The engine and its inputs for one target; undefined: Handlebars and plain manifests. `publishedChart` is the
 * directory of a chart fetched for helm.repository (the render's files are that chart's then).
 */
export function engineSpecFor(spec: ConfigSyncSpec, target: Target, files: SourceFiles, publishedChart?: string): EngineSpec | undefined {
  const source = spec.source;
  if (source.helm !== undefined) {
    const { releaseName, includeCRDs, skipTests, kubeVersion, apiVersions } = source.helm;
    const chart = source.helm.repository === undefined ? source.helm.chart : (publishedChart ?? source.helm.repository.chart);
    return {
      engine: EngineName.Helm,
      options: {
        ...(chart === undefined ? {} : { chart }),
        ...(releaseName === undefined ? {} : { releaseName }),
        includeCRDs,
        skipTests,
        ...(kubeVersion === undefined ? {} : { kubeVersion }),
        ...(apiVersions === undefined ? {} : { apiVersions }),
      },
    };
  }
  if (source.jsonnet !== undefined) {
    const j = source.jsonnet;
    return {
      engine: EngineName.Jsonnet,
      options: {
        ...(j.main === undefined ? {} : { main: j.main }),
        ...(j.libraryPaths === undefined ? {} : { libraryPaths: j.libraryPaths }),
        extVars: { ...j.extVars, ...target.jsonnet?.extVars },
        tlas: { ...j.tlas, ...target.jsonnet?.tlas },
      },
    };
  }
  const detected = source.kustomize === undefined ? engineAt(files, targetPath(spec, target)) : EngineName.Kustomize;
  if (detected === EngineName.Kustomize) return { engine: EngineName.Kustomize, options: kustomizeOptions(source.kustomize, target.kustomize) };
  if (detected === EngineName.Helm) return { engine: EngineName.Helm, options: { includeCRDs: true, skipTests: true } };
  return undefined;
}

function kustomizeOptions(sync: KustomizeFields | undefined, target: KustomizeFields | undefined): KustomizeOptions {
  const namespace = target?.targetNamespace ?? sync?.targetNamespace;
  const namePrefix = target?.namePrefix ?? sync?.namePrefix;
  const nameSuffix = target?.nameSuffix ?? sync?.nameSuffix;
  const labels = { ...sync?.commonMetadata?.labels, ...target?.commonMetadata?.labels };
  const annotations = { ...sync?.commonMetadata?.annotations, ...target?.commonMetadata?.annotations };
  const images = [...(sync?.images ?? []), ...(target?.images ?? [])];
  const patches = [...(sync?.patches ?? []), ...(target?.patches ?? [])];
  const components = [...(sync?.components ?? []), ...(target?.components ?? [])];
  return {
    ...(namespace === undefined ? {} : { namespace }),
    ...(namePrefix === undefined ? {} : { namePrefix }),
    ...(nameSuffix === undefined ? {} : { nameSuffix }),
    ...(images.length === 0 ? {} : { images }),
    ...(patches.length === 0
      ? {}
      : {
          patches: patches.map((p) => ({
            patch: p.patch,
            ...(p.target === undefined
              ? {}
              : { target: Object.fromEntries(Object.entries(p.target).filter((e): e is [string, string] => e[1] !== undefined)) }),
          })),
        }),
    ...(components.length === 0 ? {} : { components }),
    ...(Object.keys(labels).length === 0 && Object.keys(annotations).length === 0 ? {} : { commonMetadata: { labels, annotations } }),
  };
}

/** .Capabilities for Helm from the target cluster's discovery: every served group/version and group/version/Kind. */
export function capabilitiesOf(discovery: object, kubeVersion: string | undefined): ClusterCapabilities {
  const versions = new Set<string>();
  // The operator's discovery lists what it serves; a fixed discovery (no cluster) lists nothing.
  const listed = (discovery as { kinds?: unknown }).kinds;
  const kinds = typeof listed === 'function' ? (listed as () => readonly { group: string; version: string; kind: string }[]).call(discovery) : [];
  for (const r of kinds) {
    const groupVersion = r.group === '' ? r.version : `${r.group}/${r.version}`;
    versions.add(groupVersion);
    versions.add(`${groupVersion}/${r.kind}`);
  }
  return { ...(kubeVersion === undefined ? {} : { kubeVersion }), apiVersions: [...versions].sort() };
}

/** The cluster's version (GET /version), read once a few minutes per cluster, for Helm's .Capabilities. */
const versions = new WeakMap<KubeRest, { at: number; version: Promise<string | undefined> }>();
const VERSION_TTL_MS = 5 * 60_000;

export function serverVersion(rest: KubeRest): Promise<string | undefined> {
  const known = versions.get(rest);
  if (known !== undefined && Date.now() - known.at < VERSION_TTL_MS) return known.version;
  const version = rest
    .request<{ gitVersion?: string }>({ method: 'GET', path: '/version' })
    .then((v) => v.gitVersion)
    .catch(() => undefined);
  versions.set(rest, { at: Date.now(), version });
  return version;
}

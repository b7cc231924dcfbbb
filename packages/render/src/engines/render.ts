// Kustomize, Helm and Jsonnet renders: the snapshot's files and the sync's inputs go to the render process
// (process.ts); what it returns goes through the same checks as a Handlebars render (finishObjects). Renders are
// cached by everything they depend on, so a resync of an unchanged commit never renders again.
import { createHash } from 'node:crypto';
import { RenderError, RenderErrorReason } from '../errors.ts';
import { normalizePath, type SourceFiles } from '../files.ts';
import { checkObject, expandLists, type ApiDiscovery, type KubernetesObject, type Locate, type PlacedObject } from '../objects.ts';
import { finishObjects, type RenderSource, type RenderTarget } from '../render.ts';
import { layerValues, type Values } from '../values.ts';
import { mapHelmHooks } from './hooks.ts';
import { EngineFailure, EngineFailureKind, EngineName, type EngineFile, type EngineLimits, type EngineObject, type RenderEngine } from './process.ts';

/** The Flux Kustomization fields that change a build, written into the kustomization before it runs. */
export interface KustomizeOptions {
  /** Sets every namespaced object's namespace (Flux: targetNamespace). */
  readonly namespace?: string;
  readonly namePrefix?: string;
  readonly nameSuffix?: string;
  readonly images?: readonly { readonly name: string; readonly newName?: string; readonly newTag?: string; readonly digest?: string }[];
  readonly patches?: readonly { readonly patch?: string; readonly path?: string; readonly target?: Readonly<Record<string, string>> }[];
  readonly components?: readonly string[];
  readonly commonMetadata?: { readonly labels?: Readonly<Record<string, string>>; readonly annotations?: Readonly<Record<string, string>> };
}

export interface HelmOptions {
  /** Repo-relative chart directory; default: the render path. */
  readonly chart?: string;
  /** Default: the sync's name. */
  readonly releaseName?: string;
  readonly includeCRDs?: boolean;
  readonly skipTests?: boolean;
  /** .Capabilities.KubeVersion; default: the target cluster's version. */
  readonly kubeVersion?: string;
  /** Added to .Capabilities.APIVersions (the target cluster's served versions are there already). */
  readonly apiVersions?: readonly string[];
}

export interface JsonnetOptions {
  /** The file to evaluate, relative to the render path (a file path names it directly). */
  readonly main?: string;
  readonly libraryPaths?: readonly string[];
  readonly extVars?: Readonly<Record<string, string>>;
  readonly extCode?: Readonly<Record<string, string>>;
  readonly tlas?: Readonly<Record<string, string>>;
  readonly tlaCode?: Readonly<Record<string, string>>;
}

export type EngineSpec =
  | { readonly engine: typeof EngineName.Kustomize; readonly options: KustomizeOptions }
  | { readonly engine: typeof EngineName.Helm; readonly options: HelmOptions }
  | { readonly engine: typeof EngineName.Jsonnet; readonly options: JsonnetOptions };

/** What the target cluster says about itself, for Helm's .Capabilities. */
export interface ClusterCapabilities {
  readonly kubeVersion?: string;
  /** `group/version` and `group/version/Kind` entries, as Helm lists them. */
  readonly apiVersions?: readonly string[];
}

export interface EngineRenderOptions {
  readonly engine: RenderEngine;
  readonly spec: EngineSpec;
  /** The snapshot's files (the whole repository: overlays reach their bases elsewhere in it). */
  readonly files: SourceFiles;
  /** Repo-relative directory (or Jsonnet file) to render. */
  readonly path: string;
  /** spec.values layered with valuesFrom; the target's values go over these (Helm only). */
  readonly values?: Values;
  readonly target: RenderTarget;
  readonly source: RenderSource;
  readonly discovery: ApiDiscovery;
  readonly capabilities?: ClusterCapabilities;
  /** Default Helm release name (the sync's name). */
  readonly releaseName: string;
  readonly cache?: EngineRenderCache;
  readonly limits?: Partial<EngineLimits>;
  /**
   * The digest of a chart fetched from a Helm repository or an OCI registry, when `files` hold that chart: part
   * of the render's cache key, since the commit alone does not say which chart version rendered.
   */
  readonly chartDigest?: string;
}

export const kustomizationFileNames = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'] as const;

/**
 * Which engine a path asks for when the sync names none: a kustomization file (as Flux detects it) or a
 * Chart.yaml (as Argo CD does); otherwise Handlebars and plain manifests (undefined).
 */
export function detectEngine(files: SourceFiles, path: string): EngineName | undefined {
  const root = normalizePath(path);
  const prefix = root === '' ? '' : `${root}/`;
  const names = new Set<string>();
  for (const file of fileList(files)) {
    const normalized = normalizePath(file.path);
    if (normalized.startsWith(prefix) && !normalized.slice(prefix.length).includes('/')) names.add(normalized.slice(prefix.length));
  }
  if (kustomizationFileNames.some((name) => names.has(name))) return EngineName.Kustomize;
  if (names.has('Chart.yaml')) return EngineName.Helm;
  return undefined;
}

function fileList(files: SourceFiles): EngineFile[] {
  if (files instanceof Map) return [...(files as ReadonlyMap<string, Uint8Array | string>)].map(([path, content]) => ({ path, content }));
  return [...(files as readonly EngineFile[])];
}

/** Render one target with an engine: its objects in apply order, or a RenderError (never a partial result). */
export async function renderWithEngine(options: EngineRenderOptions): Promise<KubernetesObject[]> {
  const path = normalizePath(options.path);
  const { engine, input } = engineInput(options, path);
  const files = fileList(options.files).map((file) => ({ path: normalizePath(file.path), content: file.content }));
  const key =
    options.cache === undefined
      ? undefined
      : renderKey(`${options.source.revision}${options.chartDigest === undefined ? '' : `+${options.chartDigest}`}`, path, engine, input, options.target);
  let objects = key === undefined ? undefined : options.cache?.get(key);
  if (objects === undefined) {
    objects = await runEngine(options.engine, { engine, files, input }, options.limits);
    if (key !== undefined) options.cache?.set(key, objects);
  }
  const label = engine === EngineName.Helm ? (typeof input['chart'] === 'string' ? input['chart'] : path) : path;
  const locate: Locate = (origin) => ({ file: origin.file });
  const placed: PlacedObject[] = [];
  objects.forEach((entry, index) => {
    const file =
      entry.source === undefined
        ? `${engine} ${label === '' ? '.' : label}`
        : `${engine} ${label === '' ? '' : `${label}/`}${entry.source.replace(/^[^/]+\//, '')}`;
    // A copy: the cached output stays as the engine gave it.
    const items = expandLists(structuredClone(entry.object));
    items.forEach((item, i) => {
      const origin = { file, document: index, ...(items.length > 1 ? { item: i } : {}) };
      placed.push({ object: checkObject(item, origin, locate), origin });
    });
  });
  if (engine === EngineName.Helm) mapHelmHooks(placed, { skipTests: input['skipTests'] === true });
  return finishObjects(placed, { discovery: options.discovery, target: options.target, locate, manifests: true });
}

function engineInput(options: EngineRenderOptions, path: string): { engine: EngineName; input: Record<string, unknown> } {
  const { spec, target } = options;
  switch (spec.engine) {
    case EngineName.Kustomize: {
      const o = spec.options;
      const metadata = o.commonMetadata;
      return {
        engine: spec.engine,
        input: {
          path,
          ...(o.namespace === undefined ? {} : { namespace: o.namespace }),
          ...(o.namePrefix === undefined ? {} : { namePrefix: o.namePrefix }),
          ...(o.nameSuffix === undefined ? {} : { nameSuffix: o.nameSuffix }),
          ...(o.images === undefined ? {} : { images: o.images }),
          ...(o.patches === undefined ? {} : { patches: o.patches }),
          ...(o.components === undefined ? {} : { components: o.components }),
          ...(metadata?.labels === undefined ? {} : { labels: metadata.labels }),
          ...(metadata?.annotations === undefined ? {} : { annotations: metadata.annotations }),
        },
      };
    }
    case EngineName.Helm: {
      const o = spec.options;
      const capabilities = options.capabilities ?? {};
      return {
        engine: spec.engine,
        input: {
          chart: normalizePath(o.chart ?? path),
          releaseName: o.releaseName ?? options.releaseName,
          namespace: target.namespace ?? 'default',
          // Nulls stay for Helm, which deletes the chart defaults they name (see layerValues).
          values: layerValues([options.values, target.values], { keepNulls: true }),
          includeCRDs: o.includeCRDs ?? true,
          skipTests: o.skipTests ?? true,
          ...((o.kubeVersion ?? capabilities.kubeVersion) === undefined ? {} : { kubeVersion: o.kubeVersion ?? capabilities.kubeVersion }),
          apiVersions: [...(capabilities.apiVersions ?? []), ...(o.apiVersions ?? [])],
        },
      };
    }
    case EngineName.Jsonnet: {
      const o = spec.options;
      const main = o.main === undefined ? path : normalizePath(path === '' ? o.main : `${path}/${o.main}`);
      if (main === '' || !main.endsWith('sonnet')) {
        throw new RenderError({
          reason: RenderErrorReason.PathNotFound,
          file: main === '' ? '.' : main,
          detail: 'jsonnet: name the file to evaluate (spec.source.jsonnet.main, or a path that is a .jsonnet file)',
        });
      }
      return {
        engine: spec.engine,
        input: {
          main,
          ...(o.libraryPaths === undefined ? {} : { libraryPaths: o.libraryPaths.map((p) => normalizePath(p)) }),
          ...(o.extVars === undefined ? {} : { extVars: o.extVars }),
          ...(o.extCode === undefined ? {} : { extCode: o.extCode }),
          ...(o.tlas === undefined ? {} : { tlas: o.tlas }),
          ...(o.tlaCode === undefined ? {} : { tlaCode: o.tlaCode }),
        },
      };
    }
  }
}

async function runEngine(
  engine: RenderEngine,
  request: { engine: EngineName; files: EngineFile[]; input: Record<string, unknown> },
  limits: Partial<EngineLimits> | undefined,
): Promise<EngineObject[]> {
  try {
    return await engine.render(request, limits);
  } catch (error) {
    if (!(error instanceof EngineFailure)) throw error;
    switch (error.kind) {
      case EngineFailureKind.Invalid:
        throw new RenderError({ reason: RenderErrorReason.EngineFailed, detail: error.message });
      case EngineFailureKind.Refused:
        throw new RenderError({ reason: RenderErrorReason.EngineRefused, detail: error.message });
      case EngineFailureKind.Limit:
        throw new RenderError({ reason: RenderErrorReason.LimitExceeded, detail: error.message });
      case EngineFailureKind.Unavailable:
        // Transient: the caller retries (a fresh process starts on the next render).
        throw error;
    }
  }
}

function renderKey(revision: string, path: string, engine: EngineName, input: Record<string, unknown>, target: RenderTarget): string {
  return createHash('sha256')
    .update(JSON.stringify([revision, path, engine, input, target.name, target.namespace ?? '', target.cluster ?? '']))
    .digest('hex');
}

/**
 * Engine output by (commit, path, engine, inputs and values digest, target): bounded by entries and bytes,
 * least recently used first out. Holds the engine's output before the per-cluster checks, which run on each
 * use (they are cheap and depend on discovery).
 */
export class EngineRenderCache {
  readonly #entries = new Map<string, { objects: EngineObject[]; bytes: number }>();
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  #bytes = 0;
  hits = 0;
  misses = 0;

  constructor(options: { maxEntries?: number; maxBytes?: number } = {}) {
    this.#maxEntries = options.maxEntries ?? 1024;
    this.#maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  }

  get(key: string): EngineObject[] | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.objects;
  }

  set(key: string, objects: EngineObject[]): void {
    const bytes = objects.reduce((sum, o) => sum + JSON.stringify(o.object).length, 0);
    if (bytes > this.#maxBytes) return;
    const previous = this.#entries.get(key);
    if (previous !== undefined) {
      this.#bytes -= previous.bytes;
      this.#entries.delete(key);
    }
    this.#entries.set(key, { objects, bytes });
    this.#bytes += bytes;
    for (const [oldest, entry] of this.#entries) {
      if (this.#entries.size <= this.#maxEntries && this.#bytes <= this.#maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= entry.bytes;
    }
  }

  get size(): number {
    return this.#entries.size;
  }
}

// The shapes a chart fetch speaks in: the request, the fetched chart, limits and options, and what the
// repository and registry resolvers share with source.ts.
import type { HttpTransport } from '@syncline/source-git';
import type { ChartFile } from './archive.ts';

export interface ChartAuth {
  readonly username: string;
  readonly password: string;
}

export interface ChartRequest {
  /** https://host/path (a Helm repository) or oci://host/path (an OCI registry; the chart is a repository under it). */
  readonly url: string;
  readonly chart: string;
  /** An exact version, a semver range (`^1.2`, `>=1.0 <2`), or empty for the newest release. */
  readonly version: string;
  /** `sha256:<hex>`: the chart must have this digest (OCI: the manifest's; a repository: the archive's). */
  readonly digest?: string;
  readonly auth?: ChartAuth;
  /** PEM certificates trusted besides the system's roots. */
  readonly ca?: string;
  /** Plain HTTP to an OCI registry (needs allowInsecureHttp). */
  readonly insecure?: boolean;
  /** How old a resolution of the version may be; 0: ask the server now. */
  readonly maxAgeMs?: number;
}

export interface FetchedChart {
  /** The version chosen. */
  readonly version: string;
  /** `sha256:<hex>`: the OCI manifest's digest, or the archive's for a Helm repository. */
  readonly digest: string;
  /** The chart's directory in `files` (its name). */
  readonly dir: string;
  /** `<dir>/<path>` files of the chart. */
  readonly files: readonly ChartFile[];
}

export interface ChartLimits {
  readonly indexBytes: number;
  readonly archiveBytes: number;
  readonly unpackedBytes: number;
  readonly files: number;
  readonly timeoutMs: number;
}

export const defaultChartLimits: ChartLimits = { indexBytes: 64 << 20, archiveBytes: 32 << 20, unpackedBytes: 64 << 20, files: 5000, timeoutMs: 60_000 };

export interface ChartSourceOptions {
  /** Which version Helm would pick from those published (RenderEngine.chooseChartVersion). */
  readonly chooseVersion: (versions: readonly string[], version: string) => Promise<string>;
  /** Allow http:// repositories and `insecure` registries (tests, the demo). */
  readonly allowInsecureHttp?: boolean;
  /** Archives by digest on disk; memory only without it. */
  readonly cacheDir?: string;
  readonly transport?: HttpTransport;
  readonly limits?: Partial<ChartLimits>;
  /** Bytes of archives kept in memory. */
  readonly memoryBytes?: number;
  /** Bytes of archives kept in cacheDir; the least recently written go first (default 512 MiB). */
  readonly diskBytes?: number;
  readonly now?: () => number;
}

/** Where an archive is and what it must hash to, once the version is resolved. */
export interface Resolution {
  readonly version: string;
  readonly digest: string;
  readonly archive: { readonly digest: string; readonly fetch: () => Promise<Buffer> };
}

/** What resolving needs: the HTTP transport, limits, the request, and the version chooser. */
export interface ResolveContext {
  readonly request: ChartRequest;
  readonly transport: HttpTransport | undefined;
  readonly limits: ChartLimits;
  readonly chooseVersion: ChartSourceOptions['chooseVersion'];
  readonly allowInsecureHttp: boolean;
}

export interface ChartSource {
  fetchChart(request: ChartRequest): Promise<FetchedChart>;
  /** Statistics for tests and benches. */
  readonly stats: { resolutions: number; downloads: number };
}

// Public entry point of @syncline/source-helm: charts from Helm repositories and OCI registries, fetched,
// verified and cached by digest for the render step. Every export is named here.
export { createChartSource, defaultChartLimits } from './source.ts';
export type { ChartSource, ChartSourceOptions, ChartRequest, ChartAuth, ChartLimits, FetchedChart } from './source.ts';
export type { ChartFile } from './archive.ts';
export { ChartSourceError, ChartSourceErrorCode } from './errors.ts';
export { credentialsFromDockerConfig, registryHostOf } from './docker-config.ts';

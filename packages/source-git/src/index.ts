// Public entry point of @syncline/source-git: every export is named here.
export { createGitSource, authFromSecretData, gitAccessFromSecretData, proxyFromSecretData, defaultLimits } from './source.ts';
export type {
  GitSource,
  GitSourceOptions,
  GitSourceLimits,
  GitAuth,
  GitConnection,
  GitProxy,
  Clock,
  ResolveRequest,
  FetchRequest,
  Snapshot,
  SnapshotFile,
} from './source.ts';
export { GitSourceError, GitSourceErrorCode } from './errors.ts';
export { proxyFromEnvironment } from './proxy-env.ts';
export type { EnvironmentProxy } from './proxy-env.ts';
export { fetchTransport, nodeHttpTransport } from './http.ts';
export type { HttpTransport, HttpRequest, HttpResponse, HttpProxy, RateLimitEvent } from './http.ts';
export { parseRequestPath } from './paths.ts';
export type { CommitMetadata, CommitPerson } from './pack.ts';

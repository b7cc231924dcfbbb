// A published chart for a sync with spec.source.helm.repository: its credentials and CA read from a Secret in
// the sync's own namespace (never another's), then the chart resolved, downloaded, verified and cached by
// @syncline/source-helm. Runs as a source step, before render: a chart that cannot be fetched applies nothing.
import type { KubeRest } from '@syncline/kube';
import { KubeApiError } from '@syncline/kube';
import {
  ChartSourceError,
  ChartSourceErrorCode,
  credentialsFromDockerConfig,
  registryHostOf,
  type ChartRequest,
  type ChartSource,
  type FetchedChart,
} from '@syncline/source-helm';
import type { ConfigSyncSpec } from '@syncline/api';
import { Reason } from '@syncline/runtime';
import { StallError } from './inputs.ts';

type Repository = NonNullable<NonNullable<ConfigSyncSpec['source']['helm']>['repository']>;

const DOCKER_CONFIG_TYPE = 'kubernetes.io/dockerconfigjson';

/**
 * The repository's request: credentials and CA from its secretRef in `namespace` (only there: the reference
 * has no namespace). Keys as Flux's HelmRepository reads them: username+password (basic auth; for a registry
 * also what its token service is asked with) and ca.crt, or, for an OCI registry, a Secret of type
 * kubernetes.io/dockerconfigjson whose entry for the registry's host holds the credentials.
 */
export async function chartRequestFor(rest: KubeRest, namespace: string, repository: Repository, maxAgeMs: number): Promise<ChartRequest> {
  const request: ChartRequest = {
    url: repository.url,
    chart: repository.chart,
    version: repository.version,
    ...(repository.digest === undefined ? {} : { digest: repository.digest }),
    insecure: repository.insecure,
    maxAgeMs,
  };
  if (repository.secretRef === undefined) return request;
  const name = repository.secretRef.name;
  let secret: { type?: string; data?: Record<string, string> };
  try {
    secret = await rest.request<{ type?: string; data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${namespace}/secrets/${name}` });
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404)
      throw new StallError(Reason.FetchFailed, `the Secret ${namespace}/${name} named in spec.source.helm.repository.secretRef does not exist`);
    throw error;
  }
  const field = (key: string): string | undefined => (secret.data?.[key] === undefined ? undefined : Buffer.from(secret.data[key], 'base64').toString('utf8'));
  const ca = field('ca.crt');
  if (ca !== undefined && !ca.includes('-----BEGIN CERTIFICATE-----'))
    throw new StallError(Reason.FetchFailed, `the Secret ${namespace}/${name}: ca.crt is not a PEM certificate`);
  const withCa = ca === undefined ? request : { ...request, ca };
  const dockerConfig = field('.dockerconfigjson');
  if (secret.type === DOCKER_CONFIG_TYPE || dockerConfig !== undefined) {
    const host = registryHostOf(repository.url);
    if (host === undefined)
      throw new StallError(
        Reason.FetchFailed,
        `the Secret ${namespace}/${name} is a Docker config (${DOCKER_CONFIG_TYPE}), which only an oci:// registry reads: a Helm repository takes username and password`,
      );
    if (dockerConfig === undefined)
      throw new StallError(Reason.FetchFailed, `the Secret ${namespace}/${name} is of type ${DOCKER_CONFIG_TYPE} and has no .dockerconfigjson key`);
    return { ...withCa, auth: credentialsFromDockerConfig(dockerConfig, host, `the Secret ${namespace}/${name}`) };
  }
  const username = field('username');
  const password = field('password');
  if ((username === undefined) !== (password === undefined))
    throw new StallError(Reason.FetchFailed, `the Secret ${namespace}/${name}: username and password go together`);
  if (username === undefined && ca === undefined)
    throw new StallError(Reason.FetchFailed, `the Secret ${namespace}/${name} has none of username+password, .dockerconfigjson and ca.crt`);
  return { ...withCa, ...(username === undefined || password === undefined ? {} : { auth: { username, password } }) };
}

/** The chart for a sync that names a published one; undefined for every other sync. */
export async function fetchPublishedChart(options: {
  rest: KubeRest;
  charts: ChartSource | undefined;
  namespace: string;
  spec: ConfigSyncSpec;
  maxAgeMs: number;
}): Promise<FetchedChart | undefined> {
  const repository = options.spec.source.helm?.repository;
  if (repository === undefined) return undefined;
  if (options.charts === undefined)
    throw new StallError(
      Reason.FetchFailed,
      'spec.source.helm.repository needs the render engine, and this operator runs without it (syncline run --render-engine)',
    );
  const request = await chartRequestFor(options.rest, options.namespace, repository, options.maxAgeMs);
  try {
    return await options.charts.fetchChart(request);
  } catch (error) {
    // Which credentials were refused: the Secret by name (never its values), or none given.
    if (error instanceof ChartSourceError && error.code === ChartSourceErrorCode.AuthFailed) {
      const secret = repository.secretRef === undefined ? undefined : `the Secret ${options.namespace}/${repository.secretRef.name}`;
      const used =
        secret === undefined
          ? 'no spec.source.helm.repository.secretRef is set, and the server wants credentials'
          : request.auth === undefined
            ? `${secret} holds no credentials (username and password, or .dockerconfigjson), and the server wants some`
            : `credentials from ${secret}`;
      throw new ChartSourceError(ChartSourceErrorCode.AuthFailed, `${error.message}; ${used}`);
    }
    throw error;
  }
}

// A published chart for a sync with spec.source.helm.repository: its credentials and CA read from a Secret in
// the sync's own namespace (never another's), then the chart resolved, downloaded, verified and cached by
// @syncline/source-helm. Runs as a source step, before render: a chart that cannot be fetched applies nothing.
import type { KubeRest } from '@syncline/kube';
import { KubeApiError } from '@syncline/kube';
import type { ChartRequest, ChartSource, FetchedChart } from '@syncline/source-helm';
import type { ConfigSyncSpec } from '@syncline/api';
import { Reason } from '@syncline/runtime';
import { StallError } from './inputs.ts';

type Repository = NonNullable<NonNullable<ConfigSyncSpec['source']['helm']>['repository']>;

/** The repository's request: credentials and CA from its secretRef in `namespace`. */
export async function chartRequestFor(rest: KubeRest, namespace: string, repository: Repository, maxAgeMs: number): Promise<ChartRequest> {
  const request: ChartRequest = { url: repository.url, chart: repository.chart, version: repository.version, ...(repository.digest === undefined ? {} : { digest: repository.digest }), insecure: repository.insecure, maxAgeMs };
  if (repository.secretRef === undefined) return request;
  const name = repository.secretRef.name;
  let secret: { data?: Record<string, string> };
  try {
    secret = await rest.request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${namespace}/secrets/${name}` });
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404) throw new StallError(Reason.FetchFailed, `the Secret ${namespace}/${name} named in spec.source.helm.repository.secretRef does not exist`);
    throw error;
  }
  const field = (key: string): string | undefined => (secret.data?.[key] === undefined ? undefined : Buffer.from(secret.data[key], 'base64').toString('utf8'));
  const username = field('username');
  const password = field('password');
  const ca = field('ca.crt');
  if ((username === undefined) !== (password === undefined)) throw new StallError(Reason.FetchFailed, `the Secret ${namespace}/${name}: username and password go together`);
  if (username === undefined && ca === undefined) throw new StallError(Reason.FetchFailed, `the Secret ${namespace}/${name} has none of username+password and ca.crt`);
  if (ca !== undefined && !ca.includes('-----BEGIN CERTIFICATE-----')) throw new StallError(Reason.FetchFailed, `the Secret ${namespace}/${name}: ca.crt is not a PEM certificate`);
  return { ...request, ...(username === undefined || password === undefined ? {} : { auth: { username, password } }), ...(ca === undefined ? {} : { ca }) };
}

/** The chart for a sync that names a published one; undefined for every other sync. */
export async function fetchPublishedChart(options: { rest: KubeRest; charts: ChartSource | undefined; namespace: string; spec: ConfigSyncSpec; maxAgeMs: number }): Promise<FetchedChart | undefined> {
  const repository = options.spec.source.helm?.repository;
  if (repository === undefined) return undefined;
  if (options.charts === undefined) throw new StallError(Reason.FetchFailed, 'spec.source.helm.repository needs the render engine, and this operator runs without it (syncline run --render-engine)');
  return options.charts.fetchChart(await chartRequestFor(options.rest, options.namespace, repository, options.maxAgeMs));
}

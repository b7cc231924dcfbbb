// `syncline check` (as `flux check`): is this cluster ready for Syncline and is Syncline running? The
// Kubernetes version, the CRDs installed, established and equal to the ones this CLI carries, the operator
// reachable (its Deployments ready, a leader Lease renewed lately, or its /metrics answering), and the rights
// the person running it has (SelfSubjectAccessReviews). Exit 1 when a check fails.
import { canonicalJson } from '@syncline/apply';
import { customResourceDefinitions } from '@syncline/api';
import type { Kube } from './commands.ts';
import { OPERATOR_SELECTOR } from './verbs.ts';
import type { Out } from './flags.ts';

/** The oldest Kubernetes the chart installs on (its Chart.yaml kubeVersion). */
export const MIN_KUBERNETES = [1, 28] as const;

type Result = { ok: boolean; warn?: boolean; text: string };
type Crd = {
  metadata: { name: string };
  spec: {
    versions: Array<{ name: string; served?: boolean; schema?: { openAPIV3Schema?: unknown }; additionalPrinterColumns?: unknown[] }>;
    names?: { shortNames?: string[]; categories?: string[] };
  };
  status?: { conditions?: Array<{ type: string; status: string }> };
};

/** A live CRD against the one this CLI carries: missing, not established, or different (an older or newer install). */
export function compareCrd(bundled: ReturnType<typeof customResourceDefinitions>[number], live: Crd | undefined): Result {
  const name = (bundled['metadata'] as { name: string }).name;
  if (live === undefined) return { ok: false, text: `${name}: not installed (kubectl apply -f crds/, or the chart's crds/)` };
  if (live.status?.conditions?.find((c) => c.type === 'Established')?.status !== 'True') return { ok: false, text: `${name}: installed but not Established` };
  const want = (bundled['spec'] as Crd['spec']).versions[0];
  const have = live.spec.versions.find((v) => v.name === want?.name);
  if (want === undefined || have === undefined || have.served !== true) return { ok: false, text: `${name}: version ${want?.name ?? '?'} is not served` };
  const differs: string[] = [];
  if (canonicalJson(have.schema?.openAPIV3Schema) !== canonicalJson(want.schema?.openAPIV3Schema)) differs.push('schema');
  const columns = (list: unknown[] | undefined): string =>
    canonicalJson((list ?? []).map((c) => ({ name: (c as { name: string }).name, jsonPath: (c as { jsonPath: string }).jsonPath })));
  if (columns(have.additionalPrinterColumns) !== columns(want.additionalPrinterColumns)) differs.push('printer columns');
  const names = (n: Crd['spec']['names']): string =>
    canonicalJson({ shortNames: [...(n?.shortNames ?? [])].sort(), categories: [...(n?.categories ?? [])].sort() });
  if (names(live.spec.names) !== names((bundled['spec'] as Crd['spec']).names)) differs.push('short names or categories');
  if (differs.length > 0)
    return {
      ok: false,
      text: `${name}: installed, but its ${differs.join(', ')} differ from this CLI's (upgrade the CRDs, or use the CLI of the installed release)`,
    };
  return { ok: true, text: `${name}: installed, established, current` };
}

/** Kubernetes version text (`v1.32.4`, `v1.30.0-eks-1`) → at least MIN_KUBERNETES? */
export function versionResult(gitVersion: string): Result {
  const m = /^v?(\d+)\.(\d+)/.exec(gitVersion);
  const [major, minor] = m === null ? [0, 0] : [Number(m[1]), Number(m[2])];
  const ok = major > MIN_KUBERNETES[0] || (major === MIN_KUBERNETES[0] && minor >= MIN_KUBERNETES[1]);
  return { ok, text: `Kubernetes ${gitVersion} ${ok ? '>=' : '<'} ${MIN_KUBERNETES.join('.')}.0` };
}

/** What a person using the CLI needs, and what lacking it breaks. Writes are warnings: a read-only user is fine. */
const ACCESS: ReadonlyArray<{ verb: string; resource: string; group: string; needed: boolean; for: string }> = [
  { verb: 'list', resource: 'configsyncs', group: 'syncline.dev', needed: true, for: 'get, status' },
  { verb: 'watch', resource: 'configsyncs', group: 'syncline.dev', needed: false, for: 'get -w' },
  { verb: 'list', resource: 'manifestsyncs', group: 'syncline.dev', needed: true, for: 'get manifestsyncs' },
  { verb: 'list', resource: 'namespacereplications', group: 'syncline.dev', needed: true, for: 'get namespacereplications' },
  { verb: 'list', resource: 'remoteclusters', group: 'syncline.dev', needed: true, for: 'clusters' },
  { verb: 'list', resource: 'events', group: '', needed: true, for: 'events' },
  { verb: 'patch', resource: 'configsyncs', group: 'syncline.dev', needed: false, for: 'reconcile, suspend, resume, rollback' },
  { verb: 'create', resource: 'configsyncs', group: 'syncline.dev', needed: false, for: 'creating syncs' },
];

export async function checkCommand(kube: Kube, options: { operatorNamespace?: string; metricsUrl?: string; now?: () => Date }, out: Out): Promise<number> {
  let failed = 0;
  const print = (result: Result): void => {
    if (!result.ok && result.warn !== true) failed++;
    out(`${result.ok ? '✔' : result.warn === true ? '!' : '✗'} ${result.text}\n`);
  };
  out('► checking the cluster\n');
  const version = await kube.rest.request<{ gitVersion: string }>({ method: 'GET', path: '/version' });
  print(versionResult(version.gitVersion));

  out('► checking CRDs\n');
  for (const bundled of customResourceDefinitions()) {
    const name = (bundled['metadata'] as { name: string }).name;
    const live = await kube.rest
      .request<Crd>({ method: 'GET', path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}` })
      .catch((error: unknown) => {
        if ((error as { status?: number }).status === 404) return undefined;
        if ((error as { status?: number }).status === 403) return 'forbidden' as const;
        throw error;
      });
    if (live === 'forbidden') print({ ok: false, warn: true, text: `${name}: you may not read CRDs; not checked` });
    else print(compareCrd(bundled, live));
  }

  out('► checking the operator\n');
  for (const result of await operatorResults(kube, options)) print(result);

  out(`► checking your access in namespace ${kube.namespace}\n`);
  for (const access of ACCESS) {
    const review = await kube.rest.request<{ status?: { allowed?: boolean } }>({
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: { resourceAttributes: { namespace: kube.namespace, verb: access.verb, group: access.group, resource: access.resource } },
      },
    });
    const allowed = review.status?.allowed === true;
    const what = `${access.verb} ${access.resource}${access.group === '' ? '' : `.${access.group}`}`;
    print(allowed ? { ok: true, text: `${what} (${access.for})` } : { ok: false, warn: !access.needed, text: `${what}: not allowed (${access.for} need it)` });
  }
  out(failed === 0 ? '✔ all checks passed\n' : `✗ ${failed} check(s) failed\n`);
  return failed === 0 ? 0 : 1;
}

type Lease = { metadata: { name: string; namespace?: string }; spec?: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number } };
type Deployment = { metadata: { name: string; namespace?: string }; status?: { readyReplicas?: number; replicas?: number } };

/**
 * The operator counts as reachable when any of these answers: a Deployment the chart installed with ready
 * replicas, a leader Lease (syncline-leader*) renewed within two lease durations, or --metrics-url. One that
 * does not answer is a warning (a stale Lease of a shard that is gone); none answering is the failure.
 */
async function operatorResults(kube: Kube, options: { operatorNamespace?: string; metricsUrl?: string; now?: () => Date }): Promise<Result[]> {
  const results: Result[] = [];
  const now = (options.now ?? (() => new Date()))().getTime();
  const scope = options.operatorNamespace === undefined ? '' : `/namespaces/${options.operatorNamespace}`;
  let reachable = false;
  const forbidden = (error: unknown): undefined => {
    if ((error as { status?: number }).status === 403) return undefined;
    throw error;
  };
  const deployments = await kube.rest
    .request<{ items: Deployment[] }>({ method: 'GET', path: `/apis/apps/v1${scope}/deployments`, query: { labelSelector: OPERATOR_SELECTOR } })
    .catch(forbidden);
  for (const d of deployments?.items ?? []) {
    const ready = d.status?.readyReplicas ?? 0;
    reachable ||= ready > 0;
    results.push({ ok: ready > 0, warn: true, text: `Deployment ${d.metadata.namespace ?? ''}/${d.metadata.name}: ${ready}/${d.status?.replicas ?? 0} ready` });
  }
  const leases = await kube.rest.request<{ items: Lease[] }>({ method: 'GET', path: `/apis/coordination.k8s.io/v1${scope}/leases` }).catch(forbidden);
  for (const lease of (leases?.items ?? []).filter((l) => l.metadata.name.startsWith('syncline-leader'))) {
    const renewed = lease.spec?.renewTime === undefined ? undefined : now - Date.parse(lease.spec.renewTime);
    const fresh = renewed !== undefined && renewed < 2 * 1000 * (lease.spec?.leaseDurationSeconds ?? 15);
    reachable ||= fresh;
    results.push({
      ok: fresh,
      warn: true,
      text: `leader Lease ${lease.metadata.namespace ?? ''}/${lease.metadata.name}: held by ${lease.spec?.holderIdentity ?? 'nobody'}, renewed ${renewed === undefined ? 'never' : `${Math.round(renewed / 1000)}s ago`}`,
    });
  }
  if (options.metricsUrl !== undefined) {
    const answer = await fetch(options.metricsUrl, { signal: AbortSignal.timeout(10_000) }).then(
      async (response) => ({ status: response.status, text: await response.text() }),
      (error: unknown) => ({ status: 0, text: error instanceof Error ? error.message : String(error) }),
    );
    const ok = answer.status === 200 && answer.text.includes('syncline_');
    reachable ||= ok;
    results.push({
      ok,
      warn: true,
      text: `metrics ${options.metricsUrl}: ${ok ? 'answering' : answer.status === 0 ? `unreachable (${answer.text})` : `HTTP ${answer.status}${answer.status === 200 ? ', no syncline_ metrics' : ''}`}`,
    });
  }
  if (deployments === undefined && leases === undefined && options.metricsUrl === undefined)
    return [{ ok: false, text: 'you may not list Deployments or Leases: give --metrics-url to check the operator' }];
  if (results.length === 0)
    results.push({
      ok: false,
      text: `no operator found${options.operatorNamespace === undefined ? '' : ` in namespace ${options.operatorNamespace}`}: no Deployment labelled app.kubernetes.io/name=syncline, no syncline-leader Lease${options.metricsUrl === undefined ? ' (a single operator without --leader-elect holds no Lease: give --metrics-url)' : ''}`,
    });
  else if (!reachable) results.push({ ok: false, text: 'the operator is not reachable' });
  return results;
}

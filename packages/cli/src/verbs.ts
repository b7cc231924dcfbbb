// The generic verbs a Flux or kubectl user reaches for, for every Syncline kind: get (with -o wide, -l, -w),
// suspend, resume, reconcile, events; and version.
import { stringify } from 'yaml';
import type { KubeRest } from '@syncline/kube';
import { RECONCILE_REQUESTED_ANNOTATION } from '@syncline/api';
import type { NamespaceReplication } from '@syncline/api';
import { standbyViews } from './standby-view.ts';
import type { Out } from './flags.ts';
import { printTemplated, type OutputFormat } from './output.ts';
import { age, alignRows, collectionPath, formatTable, objectPath, type KindInfo } from './kinds.ts';

export type Target = { rest: KubeRest; namespace: string; allNamespaces: boolean };
type Item = Record<string, unknown> & { metadata: { name: string; namespace?: string; resourceVersion?: string; managedFields?: unknown } };
export type GetFlags = { output: OutputFormat; selector?: string; watch?: boolean; noHeaders?: boolean };

function withoutManagedFields(item: Item): Item {
  const { managedFields: _managedFields, ...metadata } = item.metadata;
  return { ...item, metadata };
}

function noResources(target: Target): string {
  return target.allNamespaces ? 'No resources found\n' : `No resources found in ${target.namespace} namespace.\n`;
}

/**
 * `get KIND [NAME]`: kubectl's output (the CRD's printer columns; -o wide adds the priority-1 ones), -l
 * selects by label, -w keeps printing rows as objects change until interrupted (or `signal` aborts).
 */
export async function getCommand(
  target: Target,
  info: KindInfo,
  name: string | undefined,
  flags: GetFlags,
  io: { out: Out; err: Out; signal?: AbortSignal; now?: () => Date },
): Promise<number> {
  if (name !== undefined && target.allNamespaces) throw new Error('a resource cannot be retrieved by name across all namespaces');
  if (name !== undefined && flags.selector !== undefined) throw new Error('when a name is given, a selector (-l) is not allowed');
  const now = io.now ?? (() => new Date());
  const namespace = target.allNamespaces ? undefined : target.namespace;
  const single = name !== undefined;
  let items: Item[];
  let resourceVersion: string | undefined;
  if (single) {
    const item = await target.rest.request<Item>({ method: 'GET', path: objectPath(info, target.namespace, name) });
    items = [item];
    resourceVersion = item.metadata.resourceVersion;
  } else {
    const list = await target.rest.request<{ items: Item[]; metadata?: { resourceVersion?: string } }>({
      method: 'GET',
      path: collectionPath(info, namespace),
      query: { labelSelector: flags.selector },
    });
    items = list.items.map((i) => ({ apiVersion: `syncline.dev/v1alpha1`, kind: info.kind, ...i }));
    resourceVersion = list.metadata?.resourceVersion;
  }
  // A NamespaceReplication's table rows also carry what its standby says (heartbeat, promotion), read live.
  if (info.kind === 'NamespaceReplication' && (flags.output === 'table' || flags.output === 'wide') && flags.watch !== true) {
    const views = await standbyViews(target.rest, items as unknown as NamespaceReplication[]);
    items = items.map((item) => ({ ...item, standbyView: views.get(`${item.metadata.namespace ?? 'default'}/${item.metadata.name}`) }));
  }
  const print = (rows: readonly Item[], headers: boolean): void => {
    if (typeof flags.output === 'object') {
      // As kubectl: the template sees the object as the API server sent it (managedFields too), a list as a v1 List.
      const value = single || flags.watch === true ? rows[0] : { apiVersion: 'v1', items: rows, kind: 'List', metadata: { resourceVersion: '' } };
      if (single || flags.watch !== true) io.out(printTemplated(flags.output, value, { items: rows, noHeaders: !headers || flags.noHeaders === true }));
      else for (const row of rows) io.out(printTemplated(flags.output, row, { items: [row], noHeaders: !headers || flags.noHeaders === true }));
    } else if (flags.output === 'json' || flags.output === 'yaml') {
      const clean = rows.map(withoutManagedFields);
      const value = single || flags.watch === true ? clean : [{ apiVersion: 'v1', kind: 'List', items: clean, metadata: { resourceVersion: '' } }];
      for (const v of value) io.out(flags.output === 'json' ? `${JSON.stringify(v, null, 4)}\n` : `${flags.watch === true ? '---\n' : ''}${stringify(v)}`);
    } else if (flags.output === 'name') {
      for (const row of rows) io.out(`${info.plural}.syncline.dev/${row.metadata.name}\n`);
    } else {
      io.out(
        formatTable(info, rows, {
          wide: flags.output === 'wide',
          allNamespaces: target.allNamespaces,
          now: now(),
          headers: headers && flags.noHeaders !== true,
        }),
      );
    }
  };
  if (items.length === 0 && flags.watch !== true) {
    if (flags.output === 'json' || flags.output === 'yaml' || typeof flags.output === 'object') print([], true);
    else io.err(noResources(target));
    return 0;
  }
  print(items, true);
  if (flags.watch !== true) return 0;
  // -w: the rows as they change, from the list's resourceVersion on (kubectl get -w prints no header again).
  const abort = new AbortController();
  io.signal?.addEventListener('abort', () => abort.abort(), { once: true });
  const stop = (): void => abort.abort();
  process.once('SIGINT', stop);
  try {
    await target.rest.watch(
      collectionPath(info, namespace),
      { resourceVersion, labelSelector: flags.selector, fieldSelector: single ? `metadata.name=${name}` : undefined, allowWatchBookmarks: false },
      (event) => {
        const { type, object } = event as { type?: string; object?: Item };
        if (object === undefined || type === 'BOOKMARK' || type === 'ERROR') return;
        print([{ apiVersion: 'syncline.dev/v1alpha1', kind: info.kind, ...object }], false);
      },
      abort.signal,
    );
  } finally {
    process.removeListener('SIGINT', stop);
  }
  return 0;
}

/** `suspend KIND NAME` / `resume KIND NAME`: sets spec.suspend (a merge patch, as `flux suspend` does). */
export async function suspendCommand(target: Target, info: KindInfo, name: string, suspend: boolean, out: Out): Promise<number> {
  if (!info.suspendable) throw new Error(`${info.kind} has no spec.suspend: a RemoteCluster is probed, not synced; suspend the syncs that target it`);
  await target.rest.request({
    method: 'PATCH',
    path: objectPath(info, target.namespace, name),
    contentType: 'application/merge-patch+json',
    body: { spec: { suspend } },
  });
  out(`${info.plural}.syncline.dev/${name} ${suspend ? 'suspended' : 'resumed'}\n`);
  return 0;
}

/**
 * `reconcile KIND NAME` for the kinds other than ConfigSync (whose reconcile, with --wait, is commands.ts's):
 * sets the request annotation, which wakes the operator for that object at once.
 */
export async function requestReconcile(target: Target, info: KindInfo, name: string, out: Out): Promise<number> {
  const path = objectPath(info, target.namespace, name);
  const object = await target.rest.request<Item & { spec?: { suspend?: boolean } }>({ method: 'GET', path });
  if (object.spec?.suspend === true)
    throw new Error(
      `${target.namespace}/${name} is suspended (spec.suspend: true): a reconcile request would do nothing; resume it first: syncline resume ${info.kind.toLowerCase()} ${name} -n ${target.namespace}`,
    );
  const at = new Date().toISOString();
  await target.rest.request({
    method: 'PATCH',
    path,
    contentType: 'application/merge-patch+json',
    body: { metadata: { annotations: { [RECONCILE_REQUESTED_ANNOTATION]: at } } },
  });
  out(`requested a reconcile of ${info.kind} ${target.namespace}/${name} at ${at}\n`);
  return 0;
}

type KubeEvent = {
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  eventTime?: string;
  involvedObject?: { kind?: string; name?: string };
  metadata: { name: string; namespace?: string; creationTimestamp?: string };
};

/** `events KIND NAME`: the object's Events, oldest first, as `kubectl events --for KIND/NAME` shows them. */
export async function eventsCommand(
  target: Target,
  info: KindInfo,
  name: string,
  flags: { output: 'table' | 'json' | 'yaml' },
  io: { out: Out; err: Out; now?: () => Date },
): Promise<number> {
  const list = await target.rest.request<{ items: KubeEvent[] }>({
    method: 'GET',
    path: `/api/v1/namespaces/${target.namespace}/events`,
    query: { fieldSelector: `involvedObject.kind=${info.kind},involvedObject.name=${name}` },
  });
  const when = (e: KubeEvent): string => e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata.creationTimestamp ?? '';
  const events = [...list.items].sort((a, b) => Date.parse(when(a)) - Date.parse(when(b)));
  if (flags.output !== 'table') {
    const value = { apiVersion: 'v1', kind: 'List', items: events, metadata: { resourceVersion: '' } };
    io.out(flags.output === 'json' ? `${JSON.stringify(value, null, 4)}\n` : stringify(value));
    return 0;
  }
  if (events.length === 0) {
    io.err(`No events found in ${target.namespace} namespace for ${info.kind.toLowerCase()}/${name}.\n`);
    return 0;
  }
  const now = (io.now ?? (() => new Date()))().getTime();
  const rows = events.map((e) => [
    when(e) === '' ? '<unknown>' : age(now - Date.parse(when(e))),
    e.type ?? '',
    e.reason ?? '',
    `${info.kind}/${name}`,
    `${(e.message ?? '').replace(/\s*\n\s*/g, ' ')}${(e.count ?? 1) > 1 ? ` (x${e.count ?? 1})` : ''}`,
  ]);
  io.out(alignRows([['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE'], ...rows]));
  return 0;
}

type Deployment = {
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: { template?: { spec?: { containers?: Array<{ name?: string; image?: string }> } } };
  status?: { readyReplicas?: number; replicas?: number };
};

/** The operator Deployments the chart installs (app.kubernetes.io/name syncline, and syncline-shard for shards). */
export const OPERATOR_SELECTOR = 'app.kubernetes.io/name in (syncline,syncline-shard)';

/**
 * `version`: the client's version, and each operator Deployment's (its app.kubernetes.io/version label, else
 * its image's tag) when the cluster answers; `--client` reads no cluster.
 */
export async function versionCommand(client: string, target: Target | undefined, flags: { output?: 'json' | 'yaml' | undefined }, out: Out): Promise<number> {
  let operators: Array<{ namespace: string; name: string; version: string; image: string; ready: string }> | undefined;
  let problem: string | undefined;
  if (target !== undefined) {
    try {
      const path = target.allNamespaces ? '/apis/apps/v1/deployments' : `/apis/apps/v1/namespaces/${target.namespace}/deployments`;
      const list = await target.rest.request<{ items: Deployment[] }>({ method: 'GET', path, query: { labelSelector: OPERATOR_SELECTOR } });
      operators = list.items.map((d) => {
        const image = d.spec?.template?.spec?.containers?.find((c) => c.name === 'syncline')?.image ?? d.spec?.template?.spec?.containers?.[0]?.image ?? '';
        const tag = /:([^:/@]+)(@sha256:[0-9a-f]+)?$/.exec(image)?.[1] ?? '';
        return {
          namespace: d.metadata.namespace ?? '',
          name: d.metadata.name,
          version: d.metadata.labels?.['app.kubernetes.io/version'] ?? tag,
          image,
          ready: `${d.status?.readyReplicas ?? 0}/${d.status?.replicas ?? 0}`,
        };
      });
    } catch (error) {
      problem = error instanceof Error ? error.message.replace(/^(GET|PATCH) \S+: /, '') : String(error);
    }
  }
  if (flags.output !== undefined) {
    const value = { client: { version: client }, ...(operators === undefined ? {} : { operators }), ...(problem === undefined ? {} : { error: problem }) };
    out(flags.output === 'json' ? `${JSON.stringify(value, null, 4)}\n` : stringify(value));
    return 0;
  }
  out(`Client Version: ${client}\n`);
  if (target === undefined) return 0;
  if (problem !== undefined) out(`Operator Version: unknown (${problem})\n`);
  else if (operators === undefined || operators.length === 0)
    out(
      `Operator Version: no operator Deployment found ${target.allNamespaces ? 'in any namespace' : `in namespace ${target.namespace} (use -n NAMESPACE or -A)`}\n`,
    );
  else
    for (const o of operators)
      out(`Operator Version: ${o.version === '' ? 'unknown' : o.version} (${o.namespace}/${o.name}, image ${o.image}, ready ${o.ready})\n`);
  return 0;
}

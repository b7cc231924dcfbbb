// `syncline failover --standby`, `syncline failback --standby --reset-standby` and `syncline dr status --standby`:
// disaster recovery run with nothing but the standby cluster's kubeconfig (the primary may be gone).
import { createApplyClient, type KubeObject } from '@syncline/apply';
import { stringify } from 'yaml';
import { readHeartbeat, HEARTBEAT_LABEL, type Heartbeat } from '@syncline/operator/client';
import { listStandbyNamespaces, promoteStandby, resetStandby, type StandbyNamespace } from '@syncline/operator/client';
import { DEFAULT_MIRROR_PREFIX } from '@syncline/operator/client';
import { mirrorKeys } from '@syncline/operator/client';
import type { ListFlags, Out } from './flags.ts';
import { table, type Kube } from './commands.ts';

/** What a listing of every standby says of a system namespace it left out (it carries a standby's marks). */
const skippedNote =
  (err: Out) =>
  (name: string): void =>
    err(`${name}: a system namespace, never listed among the standbys (name it to act on it, if an admin opted it in with --dr-allow-standby-namespaces)\n`);

/** Promotes the standby namespaces named (or every one): the fence first, then workloads to their counts. */
export async function standbyFailoverCommand(kube: Kube, names: readonly string[], options: { by: string }, out: Out, err: Out): Promise<number> {
  const client = await createApplyClient(kube.connection);
  const standbys = await listStandbyNamespaces(client, names, { skipped: skippedNote(err) });
  if (standbys.length === 0) throw new Error('no standby namespaces in this cluster (none carries proof of a NamespaceReplication): nothing promoted');
  for (const standby of standbys) {
    const { workloads, promotion } = await promoteStandby(standby, {
      client,
      rest: kube.rest,
      keys: mirrorKeys(DEFAULT_MIRROR_PREFIX),
      by: options.by,
      now: new Date(),
    });
    out(
      `${standby.name}: promoted at ${promotion.at} by ${promotion.by}; ${workloads} workload(s) at their recorded counts (replication from ${standby.replication} is fenced off)\n`,
    );
  }
  return 0;
}

/** Resets promoted standby namespaces (named, or every promoted one) so the primary replicates over them again. */
export async function standbyFailbackCommand(kube: Kube, names: readonly string[], options: { reset: boolean }, out: Out, err: Out): Promise<number> {
  if (!options.reset) {
    throw new Error(
      'failback --standby needs a choice: --reset-standby (the standby goes back to zero and the primary overwrites it) — or, to keep what changed in the standby, replicate it back to the primary first with a NamespaceReplication in the standby cluster',
    );
  }
  const client = await createApplyClient(kube.connection);
  const standbys = (await listStandbyNamespaces(client, names, { skipped: skippedNote(err) })).filter((s) => names.length > 0 || s.promotion !== undefined);
  if (standbys.length === 0) {
    out('no promoted standby namespaces: nothing to reset\n');
    return 0;
  }
  for (const standby of standbys) {
    const { workloads } = await resetStandby(standby, { client, rest: kube.rest, keys: mirrorKeys(DEFAULT_MIRROR_PREFIX), now: new Date() });
    out(`${standby.name}: reset: ${workloads} workload(s) at zero, promotion cleared; ${standby.replication} replicates over it again\n`);
  }
  return 0;
}

export type DrStatusRow = {
  namespace: string;
  replication: string;
  promoted: boolean;
  promotedAt?: string;
  promotedBy?: string;
  lastHeartbeat?: string;
  heartbeatAgeSeconds?: number;
  lastReplicatedChange?: string;
  lastChangeAgeSeconds?: number;
  replicationReady?: string;
};

/** One row per standby namespace, from its Namespace and its heartbeat Lease(s) (the newest counts). */
export function drStatusRows(standbys: readonly StandbyNamespace[], heartbeats: readonly Heartbeat[], nowMs: number): DrStatusRow[] {
  return standbys.map((standby) => {
    const beat = heartbeats
      .filter((h) => h.namespace === standby.name && h.replication === standby.replication)
      .sort((a, b) => (b.renewedAt ?? 0) - (a.renewedAt ?? 0))[0];
    const changeMs = beat?.lastChange === undefined ? Number.NaN : Date.parse(beat.lastChange);
    return {
      namespace: standby.name,
      replication: standby.replication,
      promoted: standby.promotion !== undefined,
      ...(standby.promotion === undefined ? {} : { promotedAt: standby.promotion.at, promotedBy: standby.promotion.by }),
      ...(beat?.renewedAt === undefined
        ? {}
        : { lastHeartbeat: new Date(beat.renewedAt).toISOString(), heartbeatAgeSeconds: Math.max(0, Math.round((nowMs - beat.renewedAt) / 1000)) }),
      ...(Number.isNaN(changeMs)
        ? {}
        : { lastReplicatedChange: new Date(changeMs).toISOString(), lastChangeAgeSeconds: Math.max(0, Math.round((nowMs - changeMs) / 1000)) }),
      ...(beat?.ready === undefined ? {} : { replicationReady: beat.ready }),
    };
  });
}

/** `1h2m`-style age, as kubectl prints it (seconds under two minutes). */
export function formatAge(seconds: number): string {
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${seconds % 60 === 0 ? '' : `${seconds % 60}s`}`;
  if (seconds < 48 * 3600) return `${Math.floor(seconds / 3600)}h${Math.floor((seconds % 3600) / 60)}m`;
  return `${Math.floor(seconds / 86400)}d`;
}

export function formatDrStatus(rows: readonly DrStatusRow[]): string {
  return table([
    ['NAMESPACE', 'REPLICATION', 'PROMOTED', 'LAST HEARTBEAT', 'HEARTBEAT AGE', 'LAST REPLICATED CHANGE', 'CHANGE AGE', 'REPLICATING'],
    ...rows.map((r) => [
      r.namespace,
      r.replication,
      r.promoted ? `yes (${r.promotedAt ?? ''} by ${r.promotedBy ?? ''})` : 'no',
      r.lastHeartbeat ?? 'never',
      r.heartbeatAgeSeconds === undefined ? '-' : formatAge(r.heartbeatAgeSeconds),
      r.lastReplicatedChange ?? 'unknown',
      r.lastChangeAgeSeconds === undefined ? '-' : formatAge(r.lastChangeAgeSeconds),
      r.replicationReady ?? 'unknown',
    ]),
  ]);
}

export async function drStatusCommand(kube: Kube, names: readonly string[], flags: Pick<ListFlags, 'output'>, out: Out, err: Out): Promise<number> {
  const client = await createApplyClient(kube.connection);
  const standbys = await listStandbyNamespaces(client, names, { skipped: skippedNote(err) });
  const leases = (
    await kube.rest.request<{ items: KubeObject[] }>({ method: 'GET', path: '/apis/coordination.k8s.io/v1/leases', query: { labelSelector: HEARTBEAT_LABEL } })
  ).items;
  const rows = drStatusRows(standbys, leases.map(readHeartbeat), Date.now());
  if (flags.output === 'json') out(`${JSON.stringify(rows, null, 2)}\n`);
  else if (flags.output === 'yaml') out(stringify(rows));
  else if (rows.length === 0) err('No standby namespaces found\n');
  else out(formatDrStatus(rows));
  return 0;
}

// The primary's heartbeat in the standby: one Lease per NamespaceReplication in its standby namespace, renewed
// by the leading operator every interval while it can also reach its own (primary) API server. It is the one
// deliberate write at steady state: one server-side apply per NamespaceReplication per interval (default 10 s,
// so 0.1 writes/s each). The Lease also carries what a person needs during an incident when the primary cannot
// be asked: the last replicated change (the recovery point) and whether replication was Ready. A standby-side
// operator with --dr-auto-failover-grace promotes a namespace whose Lease went stale (auto-failover.ts).
//
// A renewal asks what a replication pass asks first: may this replication write its standby at all
// (claims.ts), and is the standby promoted (fence.ts)? A promoted standby gets no write from the old primary,
// the heartbeat included, so the standby's audit log and its automatic failover see a clean cut; the primary
// says it is fenced in its own cluster (the replication's Fenced condition), nowhere in the standby.
import { appliedBy, type ApplyClient, type KubeObject } from '@syncline/apply';
import type { Logger } from 'pino';
import { NamespaceReplicationSpec, type NamespaceReplication } from '@syncline/api';
import type { KubeRest } from '@syncline/kube';
import type { RemoteClusters } from '../remote/clusters.ts';
import { claimsOf, standbyWriteVerdict, type StandbyContext } from './claims.ts';
import { readFence } from './fence.ts';

export const HEARTBEAT_LABEL = 'syncline.dev/heartbeat';
export const HEARTBEAT_FIELD_MANAGER = 'syncline-heartbeat';
export const REPLICATION_ANNOTATION = 'syncline.dev/replication';
export const LAST_CHANGE_ANNOTATION = 'syncline.dev/last-replicated-change';
export const REPLICATION_READY_ANNOTATION = 'syncline.dev/replication-ready';
/** On a heartbeat Lease or a standby Namespace: automatic failover leaves the namespace alone (maintenance). */
export const HOLD_ANNOTATION = 'syncline.dev/dr-hold';
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 10_000;

/** The Lease's name: one per NamespaceReplication (several could share a standby namespace). */
export function heartbeatLeaseName(replicationName: string): string {
  return `syncline-heartbeat-${replicationName}`.slice(0, 253).replace(/[-.]+$/, '');
}

/** The namespace in the standby cluster a NamespaceReplication replicates into. */
export function standbyNamespaceOf(nr: NamespaceReplication, spec: NamespaceReplicationSpec): string {
  return spec.destination.namespace ?? spec.sourceNamespace ?? nr.metadata.namespace ?? 'default';
}

/** The heartbeat Lease as applied: renewed now, valid for three intervals. */
export function heartbeatLease(options: { nr: NamespaceReplication; namespace: string; now: Date; intervalMs: number; identity: string }): KubeObject {
  const { nr } = options;
  const ready = nr.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? 'Unknown';
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: heartbeatLeaseName(nr.metadata.name),
      namespace: options.namespace,
      labels: { [HEARTBEAT_LABEL]: 'true' },
      annotations: {
        [REPLICATION_ANNOTATION]: `${nr.metadata.namespace ?? 'default'}/${nr.metadata.name}`,
        [LAST_CHANGE_ANNOTATION]: nr.status?.lastSyncedTime ?? '',
        [REPLICATION_READY_ANNOTATION]: ready,
      },
    },
    spec: {
      holderIdentity: options.identity,
      leaseDurationSeconds: Math.max(1, Math.ceil((3 * options.intervalMs) / 1000)),
      renewTime: options.now.toISOString().replace('Z', '000Z'),
    }, // MicroTime: microseconds
  };
}

export type Heartbeat = {
  readonly namespace: string;
  readonly name: string;
  readonly replication: string;
  /** When the primary last renewed it (ms since the epoch), undefined when never. */
  readonly renewedAt: number | undefined;
  readonly lastChange: string | undefined;
  readonly ready: string | undefined;
  readonly held: boolean;
};

/** A heartbeat Lease as read in the standby. */
export function readHeartbeat(lease: KubeObject): Heartbeat {
  const annotations = lease.metadata.annotations ?? {};
  const renewTime = (lease['spec'] as { renewTime?: unknown } | undefined)?.renewTime;
  const renewedAt = typeof renewTime === 'string' ? Date.parse(renewTime) : Number.NaN;
  return {
    namespace: lease.metadata.namespace ?? '',
    name: lease.metadata.name,
    replication: annotations[REPLICATION_ANNOTATION] ?? '',
    renewedAt: Number.isNaN(renewedAt) ? undefined : renewedAt,
    lastChange: annotations[LAST_CHANGE_ANNOTATION] === '' ? undefined : annotations[LAST_CHANGE_ANNOTATION],
    ready: annotations[REPLICATION_READY_ANNOTATION],
    held: isHeld(lease),
  };
}

export const isHeld = (object: KubeObject | undefined): boolean => {
  const value = object?.metadata.annotations?.[HOLD_ANNOTATION];
  return value !== undefined && value !== '' && value !== 'false';
};

export type HeartbeatDeps = {
  /** The primary's API: a tick that cannot reach it writes no heartbeat (the primary is not serving). */
  readonly rest: KubeRest;
  readonly applyClient: () => Promise<ApplyClient>;
  readonly remote: RemoteClusters;
  readonly replications: () => readonly NamespaceReplication[];
  readonly isLeader: () => boolean;
  readonly clock: { now(): Date };
  readonly logger: Logger;
  readonly intervalMs: number;
  readonly identity: string;
  /** Who may write which standby (claims.ts): a replication refused there gets no heartbeat either. */
  readonly standby: Omit<StandbyContext, 'claims'>;
  /** The replications whose last renewal failed (a failure is logged as a warning once). */
  readonly failing?: Set<string>;
  /** Where each replication's heartbeat was last renewed, to notice a new destination. */
  readonly renewedAt?: Map<string, HeartbeatLocation>;
  /** Heartbeats left at an old destination, removed (again each interval, until that works). */
  readonly retiring?: Map<string, HeartbeatLocation[]>;
  /** The replications whose standby was promoted at the last look (said once, at info). */
  readonly fenced?: Set<string>;
};

/** Where a heartbeat Lease lives: the standby cluster (undefined: this one) and namespace. */
type HeartbeatLocation = { readonly cluster: string | undefined; readonly namespace: string };

/** Renews every NamespaceReplication's heartbeat once (the leader only). */
export async function renewHeartbeats(deps: HeartbeatDeps): Promise<void> {
  if (!deps.isLeader()) return;
  try {
    await deps.rest.request({ method: 'GET', path: '/version' });
  } catch {
    return;
  }
  const replications = deps.replications();
  const standby: StandbyContext = { ...deps.standby, claims: claimsOf(replications) };
  await Promise.all(
    replications.map(async (nr) => {
      const parsed = NamespaceReplicationSpec.safeParse(nr.spec);
      if (!parsed.success || nr.metadata.deletionTimestamp !== undefined) return;
      const spec = parsed.data;
      const owner = nr.metadata.namespace ?? 'default';
      const key = `${owner}/${nr.metadata.name}`;
      const here: HeartbeatLocation = { cluster: spec.destination.cluster?.name, namespace: standbyNamespaceOf(nr, spec) };
      const before = deps.renewedAt?.get(key);
      // A standby the replication may not write gets no heartbeat either (its reconcile says why).
      if (standbyWriteVerdict(nr, spec, standby).allowed) await renewOne(deps, { nr, key, here });
      await retireMoved(deps, { owner, name: nr.metadata.name }, { here, before });
    }),
  );
}

/** One replication's renewal: its fence read first (a promoted standby gets nothing), then the Lease applied. */
async function renewOne(deps: HeartbeatDeps, input: { nr: NamespaceReplication; key: string; here: HeartbeatLocation }): Promise<void> {
  const { nr, key, here } = input;
  const owner = nr.metadata.namespace ?? 'default';
  try {
    const client = here.cluster === undefined ? await deps.applyClient() : (await deps.remote.clients(owner, here.cluster)).apply;
    // Promoted, or not known not to be: nothing is written there, the old Lease stays as it was.
    const fence = await readFence(client, here.namespace);
    if (fence.kind === 'unknown') throw new Error(fence.message);
    if (fence.kind === 'promoted') {
      if (deps.fenced?.has(key) !== true)
        deps.logger.info({ namespacereplication: key, promotedAt: fence.promotion.at }, 'the standby was promoted: no heartbeat is written there (fenced)');
      deps.fenced?.add(key);
      return;
    }
    if (deps.fenced?.delete(key) === true) deps.logger.info({ namespacereplication: key }, 'the standby is no longer promoted: heartbeat renewed again');
    await client.apply(heartbeatLease({ nr, namespace: here.namespace, now: deps.clock.now(), intervalMs: deps.intervalMs, identity: deps.identity }), {
      fieldManager: HEARTBEAT_FIELD_MANAGER,
      force: true,
    });
    deps.renewedAt?.set(key, here);
    if (deps.failing?.delete(key) === true) deps.logger.info({ namespacereplication: key }, 'heartbeat renewed again');
  } catch (error) {
    // The standby unreachable, or its namespace not created yet: said once (warn), then at debug.
    const level = deps.failing === undefined || deps.failing.has(key) ? 'debug' : 'warn';
    deps.failing?.add(key);
    deps.logger[level]({ namespacereplication: key, err: error instanceof Error ? error.message : String(error) }, 'heartbeat not renewed');
  }
}

const sameLocation = (a: HeartbeatLocation, b: HeartbeatLocation): boolean => a.cluster === b.cluster && a.namespace === b.namespace;

/**
 * A replication with a new destination: the heartbeat at the old one goes (tried again each interval until it
 * can be), or its expiry would read as the primary's death there, and an automatic failover would promote a
 * standby that is no longer replicated. Back at an old destination, that Lease is this one again: kept.
 */
async function retireMoved(
  deps: HeartbeatDeps,
  replication: { owner: string; name: string },
  at: { here: HeartbeatLocation; before: HeartbeatLocation | undefined },
): Promise<void> {
  const key = `${replication.owner}/${replication.name}`;
  const { here, before } = at;
  const pending = deps.retiring?.get(key) ?? [];
  if (before !== undefined && !sameLocation(before, here)) pending.push(before);
  const left: HeartbeatLocation[] = [];
  for (const where of pending) {
    if (sameLocation(where, here) || left.some((l) => sameLocation(l, where))) continue;
    if (!(await removeHeartbeatAt(deps, replication, where))) left.push(where);
  }
  if (left.length > 0) deps.retiring?.set(key, left);
  else deps.retiring?.delete(key);
}

/**
 * Removes the heartbeat of a deleted NamespaceReplication, so that a standby-side automatic failover does not
 * take a deletion for the primary's death. Best effort: a Lease left behind (the standby unreachable then) is
 * deleted by hand.
 */
export async function retireHeartbeat(deps: Pick<HeartbeatDeps, 'applyClient' | 'remote' | 'logger'>, nr: NamespaceReplication): Promise<void> {
  const parsed = NamespaceReplicationSpec.safeParse(nr.spec);
  if (!parsed.success) return;
  const removed = await removeHeartbeatAt(
    deps,
    { owner: nr.metadata.namespace ?? 'default', name: nr.metadata.name },
    { cluster: parsed.data.destination.cluster?.name, namespace: standbyNamespaceOf(nr, parsed.data) },
  );
  if (!removed)
    deps.logger.warn(
      { namespacereplication: `${nr.metadata.namespace ?? 'default'}/${nr.metadata.name}` },
      'the heartbeat Lease of a deleted NamespaceReplication could not be removed from its standby: delete it by hand',
    );
}

/** Deletes a replication's heartbeat Lease at `where` if it is ours (our heartbeat applied it); false when that failed. */
async function removeHeartbeatAt(
  deps: Pick<HeartbeatDeps, 'applyClient' | 'remote' | 'logger'>,
  replication: { owner: string; name: string },
  where: HeartbeatLocation,
): Promise<boolean> {
  try {
    const client = where.cluster === undefined ? await deps.applyClient() : (await deps.remote.clients(replication.owner, where.cluster)).apply;
    const id = `coordination.k8s.io/Lease/${where.namespace}/${heartbeatLeaseName(replication.name)}`;
    // A promoted standby is left exactly as it is: its old Lease is inert there (a promoted namespace is not
    // promoted again) and a reset by failback removes it.
    const fence = await readFence(client, where.namespace);
    if (fence.kind === 'unknown') throw new Error(fence.message);
    if (fence.kind === 'promoted') return true;
    const lease = await client.get(id);
    if (lease !== undefined && appliedBy(lease, HEARTBEAT_FIELD_MANAGER))
      await client.delete(id, { apiVersion: lease.apiVersion, ...(lease.metadata.uid === undefined ? {} : { uid: lease.metadata.uid }) });
    return true;
  } catch (error) {
    deps.logger.debug(
      { namespacereplication: `${replication.owner}/${replication.name}`, err: error instanceof Error ? error.message : String(error) },
      'a heartbeat Lease could not be removed',
    );
    return false;
  }
}

/** Renews the heartbeats every interval until stopped. */
export function startHeartbeats(options: HeartbeatDeps): { stop(): void } {
  const deps = {
    ...options,
    failing: options.failing ?? new Set<string>(),
    fenced: options.fenced ?? new Set<string>(),
    renewedAt: options.renewedAt ?? new Map<string, HeartbeatLocation>(),
    retiring: options.retiring ?? new Map<string, HeartbeatLocation[]>(),
  };
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const tick = (): void => {
    void renewHeartbeats(deps).finally(() => {
      if (!stopped) timer = setTimeout(tick, deps.intervalMs);
    });
  };
  timer = setTimeout(tick, Math.min(deps.intervalMs, 1000));
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

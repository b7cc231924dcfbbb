// Automatic failover, off by default: an operator running in the standby cluster with
// --dr-auto-failover-grace watches the heartbeat Leases the primary's operator renews there (heartbeat.ts) and
// promotes a standby namespace whose heartbeat is older than the grace period, with the same fence and the
// same proof of ownership as `syncline failover --standby` (standby.ts). A person holds it during planned
// maintenance with the syncline.dev/dr-hold annotation on the Lease or the Namespace. Every promotion, and
// every hold that stopped one, is an Event on the heartbeat Lease; promotions also count in
// syncline_dr_promotions_total. It is a periodic controller of the controller manager: one key (every heartbeat
// of the cluster), run again every quarter of the grace period, by the leader only.
import type { ApplyClient, KubeObject } from '@syncline/apply';
import type { ControllerDeclaration, ControllerRegistry, ReconcileOutcome } from '@syncline/runtime';
import type { Logger } from 'pino';
import type { EventRecorder } from '@syncline/kube';
import type { KubeRest } from '@syncline/kube';
import type { Metrics } from '../metrics.ts';
import type { MirrorKeys } from '../mirror/index.ts';
import { HEARTBEAT_LABEL, isHeld, readHeartbeat, type Heartbeat } from './heartbeat.ts';
import { listStandbyNamespaces, promoteStandby, type StandbyNamespace } from './standby.ts';
import { standbyNamespaceRefusal, type StandbyRules } from '../tenancy.ts';

export type AutoFailoverDecision = 'fresh' | 'held' | 'promoted' | 'promote';

/** What to do about one heartbeat: `promote` only when it is older than the grace period and nothing holds it. */
export function decideAutoFailover(options: { heartbeat: Heartbeat; standby: StandbyNamespace; nowMs: number; graceMs: number }): AutoFailoverDecision {
  const { heartbeat, standby } = options;
  if (standby.promotion !== undefined) return 'promoted';
  // Only the heartbeat of the replication that owns the namespace counts (not a Lease someone labelled alike).
  if (heartbeat.replication !== standby.replication) return 'fresh';
  // A Lease never renewed (no renewTime) counts from nothing: it is stale.
  if (heartbeat.renewedAt !== undefined && options.nowMs - heartbeat.renewedAt <= options.graceMs) return 'fresh';
  if (heartbeat.held || isHeld(standby.object)) return 'held';
  return 'promote';
}

export type AutoFailoverDeps = {
  readonly rest: KubeRest;
  readonly applyClient: () => Promise<ApplyClient>;
  readonly graceMs: number;
  readonly clock: { now(): Date };
  readonly logger: Logger;
  readonly metrics: Pick<Metrics, 'drPromotions'>;
  readonly events: EventRecorder;
  readonly keys: MirrorKeys;
  readonly identity: string;
  /** Where a standby may never be: such a namespace is never promoted, whatever Lease it holds. Default: no system namespace. */
  readonly standbyRules?: StandbyRules;
};

/**
 * What a check remembers for the next: the holds already reported (one Event each), and the promotions this
 * operator recorded but could not complete (retried, unlike a finished one: a person may scale a promoted
 * standby as they see fit).
 */
export type AutoFailoverMemory = { readonly held: Set<string>; readonly incomplete: Set<string> };

/** One look at every heartbeat in this cluster. */
export async function checkHeartbeats(deps: AutoFailoverDeps, memory: AutoFailoverMemory): Promise<void> {
  const { held, incomplete } = memory;
  const leases = (
    await deps.rest.request<{ items: KubeObject[] }>({ method: 'GET', path: '/apis/coordination.k8s.io/v1/leases', query: { labelSelector: HEARTBEAT_LABEL } })
  ).items;
  const client = await deps.applyClient();
  for (const lease of leases) {
    const heartbeat = readHeartbeat(lease);
    const key = `${heartbeat.namespace}/${heartbeat.name}`;
    const refused = standbyNamespaceRefusal(heartbeat.namespace, deps.standbyRules ?? { allowedSystem: new Set() });
    if (refused !== undefined) {
      deps.logger.debug({ lease: key, why: refused }, 'heartbeat in a namespace that is never a standby: ignored');
      continue;
    }
    const involved = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: heartbeat.name, namespace: heartbeat.namespace, ...(lease.metadata.uid === undefined ? {} : { uid: lease.metadata.uid }) },
    };
    let standby: StandbyNamespace | undefined;
    try {
      [standby] = await listStandbyNamespaces(client, [heartbeat.namespace]);
    } catch (error) {
      deps.logger.debug(
        { lease: key, err: error instanceof Error ? error.message : String(error) },
        'heartbeat in a namespace that is not a proven standby: ignored',
      );
      continue;
    }
    if (standby === undefined) continue;
    const now = deps.clock.now();
    const decided = decideAutoFailover({ heartbeat, standby, nowMs: now.getTime(), graceMs: deps.graceMs });
    const decision = decided === 'promoted' && incomplete.has(key) ? 'promote' : decided;
    if (decision !== 'held') held.delete(key);
    if (decision === 'held' && !held.has(key)) {
      held.add(key);
      const message = `no heartbeat from the primary since ${heartbeat.renewedAt === undefined ? 'ever' : new Date(heartbeat.renewedAt).toISOString()}, but automatic failover is held (syncline.dev/dr-hold): namespace ${heartbeat.namespace} not promoted`;
      deps.logger.warn({ lease: key }, message);
      await deps.events.record(involved, { type: 'Warning', reason: 'PromotionHeld', message });
    }
    if (decision !== 'promote') continue;
    const by = `auto-failover ${deps.identity} (no heartbeat from ${heartbeat.replication} for over ${Math.round(deps.graceMs / 1000)}s)`;
    let workloads: number;
    try {
      ({ workloads } = await promoteStandby(standby, { client, rest: deps.rest, keys: deps.keys, by, now }));
    } catch (error) {
      // The record may be written already (the fence holds); the next check scales what is left.
      incomplete.add(key);
      deps.logger.warn(
        { lease: key, err: error instanceof Error ? error.message : String(error) },
        'automatic failover: promotion incomplete; retrying at the next check',
      );
      continue;
    }
    incomplete.delete(key);
    deps.metrics.drPromotions.inc({ namespace: heartbeat.namespace, trigger: 'heartbeat' });
    const message = `promoted ${heartbeat.namespace}: no heartbeat from ${heartbeat.replication} since ${heartbeat.renewedAt === undefined ? 'ever' : new Date(heartbeat.renewedAt).toISOString()} (grace ${Math.round(deps.graceMs / 1000)}s); ${workloads} workload(s) at their recorded counts`;
    deps.logger.warn({ lease: key }, message);
    await deps.events.record(involved, { type: 'Warning', reason: 'StandbyPromoted', message });
  }
}

/** The controller name of automatic failover (queue metrics, logs, liveness). */
export const AUTO_FAILOVER_CONTROLLER = 'dr-auto-failover';
/** Its one key: a check looks at every heartbeat of the cluster. */
const HEARTBEATS = 'heartbeats';

/**
 * Registers automatic failover on the controller manager: a check of every heartbeat every quarter of the grace
 * period (at most every 5 s), from the start of leadership; a failed check is tried again at the next period.
 */
export function registerAutoFailover(controllers: ControllerRegistry, deps: AutoFailoverDeps): ControllerDeclaration<typeof HEARTBEATS> {
  const everyMs = Math.max(250, Math.min(5000, Math.floor(deps.graceMs / 4)));
  const memory: AutoFailoverMemory = { held: new Set(), incomplete: new Set() };
  return controllers.register<typeof HEARTBEATS, ControllerDeclaration<typeof HEARTBEATS>>(AUTO_FAILOVER_CONTROLLER, { concurrency: 1 }, () => ({
    keys: () => [HEARTBEATS],
    reconcile: async (): Promise<ReconcileOutcome> => {
      try {
        await checkHeartbeats(deps, memory);
      } catch (error) {
        deps.logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'automatic failover: could not check the heartbeats');
      }
      return { kind: 'wait', requeueAfterMs: everyMs };
    },
  }));
}

// The NamespaceReplication reconciler's guards around its apply into the standby: the operator's credentials
// left out of what is replicated (dr/credentials.ts), and the prune guard (dr/prune-guard.ts) that holds a mass
// deletion back. Holding is done with the apply engine as it is: the pass runs with prune off (stale objects
// stay in the standby, updates still flow), and the held ids go back into the inventory, so that they remain
// ours to prune once the hold is released.
import { OWNER_LABEL, decodeInventory, encodeInventory, objectId, ownerHash, type ApplyClient, type KubeObject, type Owner } from '@syncline/apply';
import type { Condition, NamespaceReplication, NamespaceReplicationSpec, TargetInventory } from '@syncline/api';
import { credentialSecretsIn, withoutCredentials, type CredentialHolders } from '../dr/credentials.ts';
import { decidePrune, PruneHoldReason, SETTLE_MS, type PruneDecision, type Settling, type SourceNamespaceState } from '../dr/prune-guard.ts';
import { Reason, removeCondition, setCondition, type ConditionInput } from '@syncline/runtime';
import { parseDuration } from '@syncline/runtime';
import { readableId, truncate } from './target.ts';

/** Whether the source namespace still exists and is not being deleted; a namespace that cannot be read counts as there. */
export async function sourceNamespaceState(client: ApplyClient, name: string): Promise<SourceNamespaceState> {
  let namespace: KubeObject | undefined;
  try {
    namespace = await client.get(`/Namespace//${name}`);
  } catch {
    // No right to read Namespaces (a namespace-scoped install): the deletion threshold still guards.
    return 'Active';
  }
  if (namespace === undefined) return 'Absent';
  const phase = (namespace['status'] as { phase?: unknown } | undefined)?.phase;
  return namespace.metadata.deletionTimestamp !== undefined || phase === 'Terminating' ? 'Terminating' : 'Active';
}

/**
 * The source namespace's objects without the operator's credentials; undefined while the caches that say which
 * Secrets those are have not been read yet (replicating then could copy one).
 */
export function replicableObjects(
  objects: readonly KubeObject[],
  sourceNamespace: string,
  holders: CredentialHolders | undefined,
): ReturnType<typeof withoutCredentials> | undefined {
  if (holders === undefined) return undefined;
  return withoutCredentials(objects, credentialSecretsIn(sourceNamespace, holders));
}

/** The guard's decision for one pass into the standby. */
export function guardPrune(input: {
  readonly spec: NamespaceReplicationSpec;
  readonly previous: NamespaceReplication['status'];
  readonly inventory: readonly string[] | undefined;
  readonly desired: readonly KubeObject[];
  /** Standby ids of credentials that were once replicated: their deletion is never held. */
  readonly credentialIds: ReadonlySet<string>;
  readonly sourceNamespace: SourceNamespaceState;
  /** Deletions still settling, per replication (memory only: a restart waits one settle time more). */
  readonly settling: Map<string, Settling>;
  readonly key: string;
  readonly now: Date;
}): PruneDecision {
  const { spec } = input;
  const desired = input.desired.map((d) => objectId(d));
  if (!spec.prune) return { action: 'prune', stale: [] };
  const decision = decidePrune({
    inventory: decodeInventory(input.inventory).map((e) => e.id),
    desired,
    alwaysPrunable: input.credentialIds,
    sourceNamespace: input.sourceNamespace,
    policy: {
      maxDeletions: spec.pruneGuard.maxDeletions,
      delayMs: spec.pruneGuard.delay === undefined ? undefined : parseDuration(spec.pruneGuard.delay),
      windowMs: parseDuration(spec.pruneGuard.window),
    },
    recent: input.previous?.recentDeletions,
    previous: input.previous?.pruneHold,
    confirmed: spec.confirmPrune,
    settling: input.settling.get(input.key),
    settleMs: SETTLE_MS,
    now: input.now,
  });
  if (decision.action === 'settle') input.settling.set(input.key, decision.settling);
  else input.settling.delete(input.key);
  return decision;
}

/**
 * The inventory the guard and the apply start from. Without a recorded one (a replication created anew over a
 * standby an earlier one of the same name filled, or a status that was lost), the standby's objects that
 * carry this replication's exact owner mark are listed and counted in: otherwise the apply engine would prune
 * those no longer in the source as strays of its own, past the guard.
 */
export async function guardedInventory(input: {
  readonly standby: ApplyClient;
  readonly owner: Owner;
  readonly types: readonly { readonly group: string; readonly kind: string }[];
  readonly namespace: string;
  readonly inventory: readonly string[] | undefined;
}): Promise<readonly string[] | undefined> {
  if (input.inventory !== undefined && input.inventory.length > 0) return input.inventory;
  const labelSelector = `${OWNER_LABEL}=${ownerHash(input.owner)}`;
  const lists = await Promise.all(
    input.types.map((t) => input.standby.list({ group: t.group, kind: t.kind, namespace: input.namespace, labelSelector }).catch((): KubeObject[] => [])),
  );
  const ids = lists.flat().map((o) => ({ id: objectId(o) }));
  return ids.length === 0 ? input.inventory : encodeInventory(ids);
}

/** The inventory after a held (or settling) pass: what the apply recorded, plus the held ids it forgot (prune was off). */
export function keepHeld(applied: TargetInventory, previous: readonly string[] | undefined, held: readonly string[]): TargetInventory {
  const entries = decodeInventory(applied.entries);
  const present = new Set(entries.map((e) => e.id));
  const holding = new Set(held);
  const restored = decodeInventory(previous).filter((e) => holding.has(e.id) && !present.has(e.id));
  return { ...applied, entries: encodeInventory([...entries, ...restored]) };
}

/** "ConfigMap/shop/a, ConfigMap/shop/b and 3 more": names, never contents. */
function sample(ids: readonly string[], max = 5): string {
  const names = ids.slice(0, max).map(readableId).join(', ');
  return ids.length > max ? `${names} and ${ids.length - max} more` : names;
}

/** The PruneHeld condition and the Event message of a held prune; `command` is how a person confirms it. */
export function heldPruneReport(
  decision: Extract<PruneDecision, { action: 'hold' }>,
  context: { spec: NamespaceReplicationSpec; sourceNamespace: string; command: string },
): { condition: ConditionInput; message: string } {
  const { hold, held } = decision;
  const why =
    hold.reason === PruneHoldReason.SourceNamespaceDeleted
      ? `the source namespace ${context.sourceNamespace} is being deleted or is gone`
      : `more than spec.pruneGuard.maxDeletions (${context.spec.pruneGuard.maxDeletions}) within ${context.spec.pruneGuard.window}${decision.earlier > 0 ? `, ${decision.earlier} already deleted in that time` : ''}`;
  const release = context.spec.pruneGuard.delay === undefined ? '' : `, or it goes ahead ${context.spec.pruneGuard.delay} after ${hold.since}`;
  const message = `${held.length} deletion(s) held in the standby (${why}): ${sample(held)}; confirm with \`${context.command}\` (spec.confirmPrune: ${hold.token})${release}`;
  return { condition: { type: 'PruneHeld', status: 'True', reason: Reason.PruneHeld, message: truncate(message) }, message };
}

/** Conditions after a pass: PruneHeld set while held, removed otherwise. */
export function pruneHeldConditions(
  conditions: readonly Condition[],
  held: ConditionInput | undefined,
  at: { generation: number | undefined; now: string },
): Condition[] {
  return held === undefined ? removeCondition(conditions, 'PruneHeld') : setCondition(conditions, held, at);
}

// Public entry point of @syncline/apply: every export is named here.
//
// Use: `const client = await createApplyClient(kc)`; `const live = await readLive({ client, desired, inventory })`;
// `const plan = planApply({ desired, inventory, live, owner, policy, drift })` (pure);
// `const changes = await executePlan(plan, { client })` (a skipped or failed entry says why as an ApplyCause: decide
// from that, never from its reason text); record `encodeInventory(changes.inventory)` in status
// and `recordHistory(history, { revision, appliedAt, objects, digest: digestRendered(desired) }, limit)`.
// Do not call planApply when fetch or render failed: the plan prunes whatever the desired set lacks.
// Health: `readHealth({ client, entries: changes.entries, desired, live })` judges what was applied (kstatus,
// `healthOf`); objects annotated `syncline.dev/apply-wave` run in waves, and `executePlan`'s `waveGate` may hold
// later waves back (e.g. until the earlier one is healthy).
export {
  objectId,
  parseObjectId,
  scopeOf,
  groupOf,
  ownerHash,
  ownedBy,
  ownershipOf,
  appliedBy,
  OWNER_LABEL,
  OWNER_NAME_LABEL,
  OWNER_NAMESPACE_LABEL,
  OWNER_KIND_LABEL,
  OWNERSHIP_LABELS,
  readableOwnerLabels,
  OWNED_BY_ANNOTATION,
  PRUNE_ANNOTATION,
  APPLIED_DIGEST_ANNOTATION,
  DEFAULT_FIELD_MANAGER,
  APPLY_WAVE_ANNOTATION,
} from './identity.ts';
export type { KubeObject, Owner, ObjectRef, Ownership } from './identity.ts';
export { encodeInventory, decodeInventory, diffInventory } from './inventory.ts';
export type { Inventory, InventoryEntry, EncodedInventory } from './inventory.ts';
export { canonicalJson, digestOf } from './canonical.ts';
export { differingPaths } from './compare.ts';
export { planApply, planObject, planProven, planStale, provenOwnership, withOwnership, tierOf, waveOf, Policy, DriftMode } from './plan.ts';
export type { Plan, PlanInput, PlanStep, PlanContext, LiveState, ProvenObject, Tier } from './plan.ts';
export { planFieldTakeover, editManagersOf, setBy, unionFields } from './takeover.ts';
export type { FieldTakeover, JsonPatchOperation } from './takeover.ts';
export { createApplyClient, ApiError } from './client.ts';
export { ApplyCause, causeOfError, isTransientCause } from './causes.ts';
export type { ApplyClient, ClientOptions, Discovery, ResourceInfo } from './client.ts';
export { executePlan, readLive, readHealth, pool, ChangeAction, DEFAULT_CONCURRENCY } from './execute.ts';
export type { ChangeSet, ChangeSetEntry, ExecuteOptions, WaveResult } from './execute.ts';
export { healthOf, healthNeedsLiveObject, HealthStatus } from './health.ts';
export type { Health } from './health.ts';
export { recordHistory, digestRendered, rollbackTarget } from './history.ts';
export { FingerprintMemo, applyFingerprint, provenObjects, recordNoop, stillUnchanged, unchangedChangeSet } from './unchanged.ts';
export type { NoopRecord, WatchedVersion, FingerprintInput } from './unchanged.ts';
export type { HistoryEntry } from './history.ts';

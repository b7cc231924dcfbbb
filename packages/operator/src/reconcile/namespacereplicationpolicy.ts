// The NamespaceReplicationPolicy controller: one NamespaceReplication per namespace the policy's selector
// matches, in the policy's own namespace (so the RemoteCluster the template names is the one there, and the
// replications may read other namespaces: see tenancy.ts). The plan is pure (dr/policy.ts); this module reads
// the caches, applies and removes replications, and writes the policy's status in the reconcile shell.
//
// A policy acts only in a trusted namespace (the operator's own, --trusted-namespaces): it makes the operator
// read namespaces other than its own and write standbys of them, which is what that trust stands for.
import { Informer, objectKey, type EventRecorder, type KubeRest, type WatchBudget } from '@syncline/kube';
import type { ApplyClient } from '@syncline/apply';
import type { Logger } from 'pino';
import {
  API_VERSION,
  NamespaceReplicationPolicySpec,
  type Condition,
  type NamespaceReplication,
  type NamespaceReplicationPolicy,
  type NamespaceReplicationPolicyStatus,
} from '@syncline/api';
import type { ControllerDeclaration, ControllerQueue, ControllerRegistry, ReconcileOutcome } from '@syncline/runtime';
import { POLICY_FIELD_MANAGER, planPolicy, summarise, type PolicyNamespace } from '../dr/policy.ts';
import type { Metrics } from '../metrics.ts';
import { SHARD_LABEL, shardSelector } from '../shard.ts';
import type { StandbyRules, TrustedNamespaces } from '../tenancy.ts';
import { claimsOf } from '../dr/claims.ts';
import { Reason, removeCondition, setCondition, truncate } from '@syncline/runtime';
import { createReconciler, type ShellEvent } from '@syncline/runtime';

export type ReplicationPolicyOptions = {
  readonly rest: KubeRest;
  readonly applyClient: () => Promise<ApplyClient>;
  readonly clock: { now(): Date };
  readonly logger: Logger;
  readonly metrics: Pick<Metrics, 'reconcileDuration' | 'reconcileTotal'>;
  readonly events: EventRecorder;
  readonly trusted: TrustedNamespaces;
  /** Where a standby may never be (tenancy.ts's allowedStandby); default: no system namespace. */
  readonly standbyRules?: StandbyRules;
  /** The shard this operator runs (see shard.ts): its policies, whose replications carry the same shard label. */
  readonly shard?: string | undefined;
  /** Resync every policy this often (missed events repaired); default 5 min. */
  readonly resyncMs?: number;
  /** The process's watch budget (three watches: policies, namespaces, replications). */
  readonly watchBudget?: WatchBudget;
};

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** The controller name of the policies (queue metrics, logs, liveness). */
export const POLICY_CONTROLLER = 'namespacereplicationpolicy';

/**
 * Registers the policy controller on the controller manager: its own caches (policies, namespaces, replications),
 * waited for before its first reconcile, and its lane (2 policies at once); only the leader reconciles.
 */
export function registerReplicationPolicies(controllers: ControllerRegistry, options: ReplicationPolicyOptions): ControllerDeclaration<string> {
  return controllers.register(POLICY_CONTROLLER, { concurrency: 2 }, (queue) => replicationPolicies(queue, options));
}

function replicationPolicies(queue: ControllerQueue<string>, options: ReplicationPolicyOptions): ControllerDeclaration<string> {
  const log = options.logger.child({ controller: POLICY_CONTROLLER });
  const selector = shardSelector(options.shard);
  const budget = options.watchBudget === undefined ? {} : { budget: options.watchBudget };
  const enqueueAll = (): void => {
    for (const policy of policies.list()) queue.add(objectKey(policy));
  };
  const policies = new Informer({
    ...budget,
    rest: options.rest,
    path: `/apis/syncline.dev/v1alpha1/namespacereplicationpolicies`,
    labelSelector: selector,
    onEvent: (type, object) => {
      if (type === 'DELETED') queue.forget(objectKey(object));
      else queue.add(objectKey(object));
    },
    onError: (error) => log.warn({ err: errorText(error) }, 'NamespaceReplicationPolicy watch failed; restarting'),
  });
  const namespaces = new Informer({
    ...budget,
    rest: options.rest,
    path: '/api/v1/namespaces',
    project: (object) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: object.metadata.name, labels: object.metadata['labels'] } }),
    onEvent: (type, object, previous) => {
      // Only a new, deleted or relabelled namespace can change what a policy matches.
      if (type === 'MODIFIED' && JSON.stringify(previous?.metadata['labels']) === JSON.stringify(object.metadata['labels'])) return;
      if (namespaces.synced) enqueueAll();
    },
    onError: (error) => log.warn({ err: errorText(error) }, 'namespace watch (replication policies) failed; restarting'),
  });
  const replications = new Informer({
    ...budget,
    rest: options.rest,
    path: '/apis/syncline.dev/v1alpha1/namespacereplications',
    onEvent: (_type, object) => {
      // The policies of its namespace: their status lines follow their replications (and a deleted one comes back).
      for (const policy of policies.list()) if (policy.metadata.namespace === object.metadata.namespace) queue.add(objectKey(policy));
    },
    onError: (error) => log.warn({ err: errorText(error) }, 'NamespaceReplication watch (replication policies) failed; restarting'),
  });

  const reconcile = createPolicyReconciler({
    ...options,
    logger: log,
    get: (key) => policies.get(key) as NamespaceReplicationPolicy | undefined,
    namespaces: () =>
      namespaces.synced
        ? namespaces.list().map((ns) => ({ name: ns.metadata.name, labels: ns.metadata['labels'] as Record<string, string> | undefined }))
        : undefined,
    replications: (namespace) =>
      replications.synced ? (replications.list() as unknown as NamespaceReplication[]).filter((nr) => nr.metadata.namespace === namespace) : undefined,
    allReplications: () => (replications.synced ? (replications.list() as unknown as NamespaceReplication[]) : undefined),
  });
  const keys = (): string[] => policies.list().map((policy) => objectKey(policy));
  return { for: policies, caches: [namespaces, replications], keys, resyncKeys: keys, resyncMs: options.resyncMs ?? 5 * 60_000, reconcile };
}

export type PolicyReconcilerDeps = Omit<ReplicationPolicyOptions, 'resyncMs' | 'watchBudget' | 'shard'> & {
  readonly get: (key: string) => NamespaceReplicationPolicy | undefined;
  /** The namespaces of the cluster with their labels; undefined until the cache has listed them. */
  readonly namespaces: () => readonly PolicyNamespace[] | undefined;
  /** The NamespaceReplications of one namespace; undefined until the cache has listed them. */
  readonly replications: (namespace: string) => readonly NamespaceReplication[] | undefined;
  /** Every NamespaceReplication of the cluster (the standby rule weighs them all); default: those of the policy's namespace. */
  readonly allReplications?: () => readonly NamespaceReplication[] | undefined;
};

export function createPolicyReconciler(deps: PolicyReconcilerDeps): (key: string) => Promise<ReconcileOutcome> {
  return createReconciler<NamespaceReplicationPolicy, NamespaceReplicationPolicySpec, NamespaceReplicationPolicyStatus>({
    kind: 'NamespaceReplicationPolicy',
    plural: 'namespacereplicationpolicies',
    rest: deps.rest,
    logger: deps.logger,
    events: deps.events,
    clock: deps.clock,
    metrics: deps.metrics,
    read: deps.get,
    parse: (spec) => NamespaceReplicationPolicySpec.safeParse(spec),
    invalid: (object, reason, message, now) => stalled(object, reason, message, now).status,
    suspend: {
      when: (spec) => spec.suspend,
      message: 'spec.suspend is true: no NamespaceReplication is created or removed; the ones created keep replicating',
    },
    run: async ({ object, spec }) => enforcePolicy(deps, object, spec),
  });
}

type Outcome = { status: NamespaceReplicationPolicyStatus; events: ShellEvent[]; result: ReconcileOutcome };

function stalled(object: NamespaceReplicationPolicy, reason: Reason, message: string, now: string): Outcome {
  const at = { generation: object.metadata.generation, now };
  let conditions: Condition[] = setCondition(object.status?.conditions ?? [], { type: 'Ready', status: 'False', reason, message: truncate(message) }, at);
  conditions = setCondition(conditions, { type: 'Stalled', status: 'True', reason, message: truncate(message) }, at);
  return {
    status: { ...object.status, observedGeneration: object.metadata.generation, conditions },
    events: [{ type: 'Warning', reason, message: truncate(message) }],
    result: { kind: 'stalled' },
  };
}

/** One pass: the plan, its writes (creations and updates, then removals), and the status that follows from them. */
async function enforcePolicy(deps: PolicyReconcilerDeps, policy: NamespaceReplicationPolicy, spec: NamespaceReplicationPolicySpec): Promise<Outcome> {
  const home = policy.metadata.namespace ?? 'default';
  const now = deps.clock.now().toISOString();
  const at = { generation: policy.metadata.generation, now };
  // Not allowedWrite's own-namespace case: every replication it makes reads another namespace.
  if (!deps.trusted.has(home)) {
    return stalled(
      policy,
      Reason.NamespaceNotAllowed,
      `${Reason.NamespaceNotAllowed}: a NamespaceReplicationPolicy replicates other namespaces, so only one in a trusted namespace (the operator's own, --trusted-namespaces) is honoured; ${home} is not: nothing created`,
      now,
    );
  }
  const namespaces = deps.namespaces();
  const replications = deps.replications(home);
  if (namespaces === undefined || replications === undefined)
    return { status: policy.status ?? {}, events: [], result: { kind: 'wait', requeueAfterMs: 1000 } };
  const shard = policy.metadata.labels?.[SHARD_LABEL];
  const claims = claimsOf(deps.allReplications?.() ?? replications);
  const plan = planPolicy({
    policy,
    spec,
    namespaces,
    replications,
    labels: shard === undefined ? {} : { [SHARD_LABEL]: shard },
    rules: deps.standbyRules ?? { allowedSystem: new Set() },
    claims,
  });

  const client = await deps.applyClient();
  const inventory = [...plan.inventory];
  const failures: string[] = [];
  const events: ShellEvent[] = [];
  for (const item of plan.apply) {
    try {
      const applied = await client.apply(item.object, { fieldManager: POLICY_FIELD_MANAGER, force: true });
      const uid = applied?.metadata.uid;
      // Bookkeeping follows the confirmed write: the uid the API server gave the replication.
      if (uid !== undefined && !inventory.some((e) => e.replication === item.object.metadata.name && e.uid === uid)) {
        inventory.push({ replication: item.object.metadata.name, uid, namespace: item.namespace });
        events.push({
          type: 'Normal',
          reason: 'ReplicationCreated',
          message: `NamespaceReplication ${home}/${item.object.metadata.name} replicates namespace ${item.namespace}`,
        });
      }
    } catch (error) {
      failures.push(`${item.namespace}: ${errorText(error)}`);
    }
  }
  for (const item of plan.remove) {
    try {
      // The replication only: a NamespaceReplication keeps no finalizer, so its standby stays as it is.
      await client.delete(`syncline.dev/NamespaceReplication/${home}/${item.name}`, { apiVersion: API_VERSION, uid: item.uid });
      inventory.splice(
        inventory.findIndex((e) => e.replication === item.name && e.uid === item.uid),
        1,
      );
      events.push({
        type: 'Normal',
        reason: 'ReplicationRemoved',
        message: `namespace ${item.namespace} no longer matches: NamespaceReplication ${home}/${item.name} removed; its standby stays as it is`,
      });
    } catch (error) {
      failures.push(`${item.namespace} (removing ${item.name}): ${errorText(error)}`);
    }
  }
  inventory.sort((a, b) => (a.replication < b.replication ? -1 : 1));

  const summary = summarise(plan.rows);
  const refused = plan.rows.filter((r) => r.replication === undefined);
  const ok = failures.length === 0;
  const message = ok
    ? `${summary.matched ?? 0} namespace(s) matched, ${summary.ready ?? 0} replicating${summary.promoted === 0 ? '' : `, ${summary.promoted ?? 0} promoted`}${refused.length === 0 ? '' : `; ${refused.length} not replicated: ${refused.map((r) => `${r.namespace}: ${r.message ?? ''}`).join('; ')}`}`
    : `${failures.length} write(s) failed: ${failures.join('; ')}`;
  let conditions = removeCondition(policy.status?.conditions ?? [], 'Stalled');
  conditions = setCondition(
    conditions,
    ok && refused.length === 0
      ? { type: 'Ready', status: 'True', reason: Reason.Succeeded, message: truncate(message) }
      : { type: 'Ready', status: 'False', reason: ok ? Reason.Conflict : Reason.ApplyFailed, message: truncate(message) },
    at,
  );
  if (!ok) events.push({ type: 'Warning', reason: Reason.ApplyFailed, message: truncate(message) });
  const status: NamespaceReplicationPolicyStatus = {
    ...policy.status,
    observedGeneration: policy.metadata.generation,
    conditions,
    ...summary,
    namespaces: [...plan.rows],
    inventory,
  };
  if (summary.oldestChange === undefined) delete status.oldestChange;
  return { status, events, result: ok ? { kind: 'done' } : { kind: 'retry' } };
}

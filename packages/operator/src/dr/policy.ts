// A NamespaceReplicationPolicy's plan, pure: from the namespaces of the cluster and the NamespaceReplications
// of the policy's namespace, which replications to apply (one per matching namespace), which to remove (those
// the policy created for a namespace that no longer matches) and one status line per namespace.
//
// A replication is the policy's only on proof: its own inventory (name and uid, recorded after the create
// succeeded), or, when that status write was lost, the policy's own server-side apply on the object together
// with a controller ownerReference to this policy's uid. A label or an ownerReference alone proves nothing
// (anyone who may create a NamespaceReplication there can copy them). Removing a replication never touches the
// standby: a NamespaceReplication keeps no finalizer, so its standby stays as it is.
import { createHash } from 'node:crypto';
import { appliedBy, type KubeObject } from '@syncline/apply';
import { sameJson } from '@syncline/runtime';
import {
  API_VERSION,
  type NamespaceMapping,
  type NamespaceReplication,
  type NamespaceReplicationPolicy,
  type NamespaceReplicationPolicySpec,
  type NamespaceReplicationPolicyStatus,
} from '@syncline/api';
import { matchesLabelSelector } from '../mirror/targets.ts';
import { allowedStandby, type StandbyClaim, type StandbyRules } from '../tenancy.ts';

export const POLICY_FIELD_MANAGER = 'syncline-policy';
/** On each replication a policy created: the policy's name (for people and label selectors; not a proof). */
export const POLICY_LABEL = 'syncline.dev/policy';
const MAX_ROWS = 500;

type Inventory = NonNullable<NamespaceReplicationPolicyStatus['inventory']>;
type Row = NonNullable<NamespaceReplicationPolicyStatus['namespaces']>[number];

/** The standby name of a source namespace: an explicit name, or prefix + name + suffix; an error when it is no DNS label. */
export function standbyNamespaceName(source: string, mapping: NamespaceMapping | undefined): { readonly name: string } | { readonly error: string } {
  const name = mapping?.names?.[source] ?? `${mapping?.prefix ?? ''}${source}${mapping?.suffix ?? ''}`;
  if (name.length > 63 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name))
    return { error: `namespaceMapping makes ${JSON.stringify(name)} of ${source}: not a namespace name (a DNS label of at most 63 characters)` };
  return { name };
}

/** The replication's name: `<policy>-<namespace>`, shortened with a hash of both when over 63 characters. */
export function replicationName(policy: string, namespace: string): string {
  const name = `${policy}-${namespace}`;
  if (name.length <= 63) return name;
  const hash = createHash('sha256').update(`${policy}/${namespace}`).digest('hex').slice(0, 10);
  return `${name.slice(0, 52).replace(/[-.]+$/, '')}-${hash}`;
}

/** Whether the policy created `nr`: its inventory says so, or (a lost status write) its own apply and ownerReference do. */
export function ownedByPolicy(nr: Pick<KubeObject, 'metadata'>, policy: Pick<NamespaceReplicationPolicy, 'metadata' | 'status'>): boolean {
  const uid = nr.metadata.uid;
  if (uid === undefined) return false;
  if ((policy.status?.inventory ?? []).some((entry) => entry.replication === nr.metadata.name && entry.uid === uid)) return true;
  const owner = ownerReferencesOf(nr).some((ref) => ref.controller === true && ref.uid === policy.metadata.uid && ref.kind === 'NamespaceReplicationPolicy');
  return owner && appliedBy(nr as KubeObject, POLICY_FIELD_MANAGER);
}

type OwnerReference = { readonly uid?: string; readonly kind?: string; readonly controller?: boolean };

function ownerReferencesOf(object: { readonly metadata: object }): readonly OwnerReference[] {
  const refs = (object.metadata as { ownerReferences?: unknown }).ownerReferences;
  return Array.isArray(refs) ? (refs as OwnerReference[]) : [];
}

export type PolicyNamespace = { readonly name: string; readonly labels?: Readonly<Record<string, string>> | undefined };

export type PolicyPlan = {
  /** Replications to apply (created or put back): the policy's own or not existing yet. */
  readonly apply: readonly { readonly namespace: string; readonly object: KubeObject; readonly exists: boolean }[];
  /** The policy's replications for namespaces that no longer match: deleted (uid precondition). */
  readonly remove: readonly { readonly name: string; readonly uid: string; readonly namespace: string }[];
  /** The inventory before this pass's writes: its entries that still exist, plus proven ones it had lost. */
  readonly inventory: Inventory;
  readonly rows: readonly Row[];
};

/**
 * The plan of one pass. `replications` are the NamespaceReplications of the policy's namespace (every one: a
 * namespace another replication there already covers is left to it).
 */
export function planPolicy(input: {
  readonly policy: NamespaceReplicationPolicy;
  readonly spec: NamespaceReplicationPolicySpec;
  readonly namespaces: readonly PolicyNamespace[];
  readonly replications: readonly NamespaceReplication[];
  /** Labels every replication carries besides the policy's (the shard label). */
  readonly labels?: Readonly<Record<string, string>>;
  /** Where a standby may never be; default: no system namespace. */
  readonly rules?: StandbyRules;
  /** Where every NamespaceReplication of the cluster reads and writes (dr/claims.ts's claimOf), for the standby rule. */
  readonly claims?: readonly StandbyClaim[];
}): PolicyPlan {
  const { policy, spec } = input;
  const home = policy.metadata.namespace ?? 'default';
  const byName = new Map(input.replications.map((nr) => [nr.metadata.name, nr]));
  const owned = input.replications.filter((nr) => ownedByPolicy(nr, policy));
  const ownedNames = new Set(owned.map((nr) => nr.metadata.name));
  const inventory: Inventory = owned
    .map((nr) => ({ replication: nr.metadata.name, uid: nr.metadata.uid ?? '', namespace: nr.spec.sourceNamespace ?? home }))
    .sort((a, b) => (a.replication < b.replication ? -1 : 1));
  // A namespace another replication of this namespace (not the policy's) already replicates is left to it.
  const coveredElsewhere = new Map<string, string>();
  for (const nr of input.replications) if (!ownedNames.has(nr.metadata.name)) coveredElsewhere.set(nr.spec.sourceNamespace ?? home, nr.metadata.name);

  const matching = input.namespaces.filter((ns) => matchesLabelSelector(spec.namespaceSelector, ns.labels)).sort((a, b) => (a.name < b.name ? -1 : 1));
  const apply: { namespace: string; object: KubeObject; exists: boolean }[] = [];
  const rows: Row[] = [];
  const wanted = new Set<string>();
  const others = standbyClaims({ policy, spec, matching: matching.map((ns) => ns.name), byName, claims: input.claims ?? [] });
  for (const ns of matching) {
    const name = replicationName(policy.metadata.name, ns.name);
    const standby = standbyNamespaceName(ns.name, spec.namespaceMapping);
    if ('error' in standby) {
      rows.push({ namespace: ns.name, message: standby.error });
      continue;
    }
    const existing = byName.get(name);
    const other = coveredElsewhere.get(ns.name);
    if (existing !== undefined && !ownedNames.has(name)) {
      rows.push({
        namespace: ns.name,
        standbyNamespace: standby.name,
        message: `a NamespaceReplication ${home}/${name} exists that this policy did not create: left alone, nothing created`,
      });
      continue;
    }
    if (other !== undefined && existing === undefined) {
      rows.push({ namespace: ns.name, standbyNamespace: standby.name, message: `already replicated by NamespaceReplication ${home}/${other}: left to it` });
      continue;
    }
    if (spec.template.destination.cluster === undefined && standby.name === ns.name) {
      rows.push({
        namespace: ns.name,
        message: 'the standby would be the namespace itself: name template.destination.cluster or rename with namespaceMapping',
      });
      continue;
    }
    // The standby rule (tenancy.ts): refused per namespace, nothing created (and a replication it had, removed).
    const claim = others.find((c) => c.replication === `${home}/${name}`);
    const verdict = claim === undefined ? { allowed: true as const } : allowedStandby({ claim, rules: input.rules ?? { allowedSystem: new Set() }, others });
    if (!verdict.allowed) {
      rows.push({ namespace: ns.name, standbyNamespace: standby.name, message: verdict.message });
      continue;
    }
    wanted.add(name);
    const object = replicationObject({ policy, spec, name, source: ns.name, standby: standby.name, labels: input.labels ?? {} });
    if (existing === undefined || !sameSpec(existing, object)) apply.push({ namespace: ns.name, object, exists: existing !== undefined });
    rows.push(rowOf(ns.name, standby.name, name, existing));
  }
  const remove = owned
    .filter((nr) => !wanted.has(nr.metadata.name))
    .map((nr) => ({ name: nr.metadata.name, uid: nr.metadata.uid ?? '', namespace: nr.spec.sourceNamespace ?? home }));
  return { apply, remove, inventory, rows: rows.slice(0, MAX_ROWS) };
}

/**
 * The claims the standby rule weighs: every replication of the cluster, this policy's as they would be after
 * this pass (existing ones with their creationTimestamp, new ones after every existing one, by name).
 */
function standbyClaims(input: {
  policy: NamespaceReplicationPolicy;
  spec: NamespaceReplicationPolicySpec;
  matching: readonly string[];
  byName: ReadonlyMap<string, NamespaceReplication>;
  claims: readonly StandbyClaim[];
}): StandbyClaim[] {
  const home = input.policy.metadata.namespace ?? 'default';
  const cluster = input.spec.template.destination.cluster?.name;
  const planned = input.matching.flatMap((namespace): StandbyClaim[] => {
    const standby = standbyNamespaceName(namespace, input.spec.namespaceMapping);
    if ('error' in standby) return [];
    const name = replicationName(input.policy.metadata.name, namespace);
    return [
      {
        replication: `${home}/${name}`,
        createdAt: input.byName.get(name)?.metadata.creationTimestamp,
        sourceNamespace: namespace,
        cluster: cluster === undefined ? undefined : `${home}/${cluster}`,
        standbyNamespace: standby.name,
      },
    ];
  });
  const plannedNames = new Set(planned.map((c) => c.replication));
  return [...input.claims.filter((c) => !plannedNames.has(c.replication)), ...planned];
}

/** One namespace's line: what its replication reports (Ready, the last replicated change, a promotion). */
function rowOf(namespace: string, standbyNamespace: string, replication: string, nr: NamespaceReplication | undefined): Row {
  const ready = nr?.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    namespace,
    standbyNamespace,
    replication,
    ready: ready?.status ?? 'Unknown',
    ...(nr?.status?.lastSyncedTime === undefined ? {} : { lastChange: nr.status.lastSyncedTime }),
    ...(nr?.status?.standbyPromotion === undefined ? {} : { promotedAt: nr.status.standbyPromotion.at }),
    ...(ready !== undefined && ready.status !== 'True' ? { message: ready.message } : {}),
  };
}

/** The replication as the policy applies it: the template, this namespace and its standby name, owned by the policy. */
export function replicationObject(input: {
  policy: NamespaceReplicationPolicy;
  spec: NamespaceReplicationPolicySpec;
  name: string;
  source: string;
  standby: string;
  labels: Readonly<Record<string, string>>;
}): KubeObject {
  const { policy, spec } = input;
  const { destination, ...template } = spec.template;
  return {
    apiVersion: API_VERSION,
    kind: 'NamespaceReplication',
    metadata: {
      name: input.name,
      namespace: policy.metadata.namespace ?? 'default',
      labels: { ...input.labels, [POLICY_LABEL]: policy.metadata.name },
      ownerReferences: [
        { apiVersion: API_VERSION, kind: 'NamespaceReplicationPolicy', name: policy.metadata.name, uid: policy.metadata.uid ?? '', controller: true },
      ],
    },
    spec: {
      ...template,
      sourceNamespace: input.source,
      destination: { ...(destination.cluster === undefined ? {} : { cluster: destination.cluster }), namespace: input.standby },
    },
  };
}

/** Whether the live replication already has every field the policy sets (so nothing is written). */
function sameSpec(live: NamespaceReplication, desired: KubeObject): boolean {
  const want = (desired as unknown as { spec: Record<string, unknown> }).spec;
  const have = live.spec as unknown as Record<string, unknown>;
  const labels = desired.metadata.labels ?? {};
  if (Object.entries(labels).some(([k, v]) => live.metadata.labels?.[k] !== v)) return false;
  const uid = ownerReferencesOf(desired)[0]?.uid;
  if (!ownerReferencesOf(live).some((ref) => ref.uid === uid && ref.controller === true)) return false;
  return Object.entries(want).every(([key, value]) => sameJson(have[key], value));
}

/** The policy's summary of its rows: how many match, replicate, were promoted, and the oldest last change. */
export function summarise(rows: readonly Row[]): Pick<NamespaceReplicationPolicyStatus, 'matched' | 'ready' | 'promoted' | 'oldestChange'> {
  const changes = rows
    .map((r) => r.lastChange)
    .filter((t): t is string => t !== undefined)
    .sort();
  return {
    matched: rows.length,
    ready: rows.filter((r) => r.ready === 'True').length,
    promoted: rows.filter((r) => r.promotedAt !== undefined).length,
    ...(changes[0] === undefined ? {} : { oldestChange: changes[0] }),
  };
}

// Whether a NamespaceReplication may write its standby at all, asked by each of its writers (the reconciler
// before a pass or a failover, the heartbeat before each renewal): the tenancy rule for its source and a
// standby in this cluster, a standby that is not its own source, and the standby rule (tenancy.ts's
// allowedStandby) against every other replication this operator sees.
import type { NamespaceReplication, NamespaceReplicationSpec } from '@syncline/api';
import { Reason } from '@syncline/runtime';
import { allowedStandby, allowedWrite, type StandbyClaim, type StandbyRules, type TrustedNamespaces } from '../tenancy.ts';

/**
 * Where `nr` reads and writes, from its spec as stored (no parse: asked of every replication in the cache at
 * each heartbeat); undefined without a destination (such a spec does not parse, and writes nothing).
 */
export function claimOf(nr: NamespaceReplication): StandbyClaim | undefined {
  const spec = nr.spec as Partial<NamespaceReplicationSpec> | undefined;
  if (spec?.destination === undefined) return undefined;
  const home = nr.metadata.namespace ?? 'default';
  const sourceNamespace = spec.sourceNamespace ?? home;
  const cluster = spec.destination.cluster?.name;
  return {
    replication: `${home}/${nr.metadata.name}`,
    createdAt: nr.metadata.creationTimestamp,
    sourceNamespace,
    cluster: cluster === undefined ? undefined : `${home}/${cluster}`,
    standbyNamespace: spec.destination.namespace ?? sourceNamespace,
  };
}

/** The claims of every live replication of a list (one being deleted no longer holds its namespaces). */
export function claimsOf(replications: readonly NamespaceReplication[]): StandbyClaim[] {
  return replications.flatMap((nr) => {
    const claim = nr.metadata.deletionTimestamp === undefined ? claimOf(nr) : undefined;
    return claim === undefined ? [] : [claim];
  });
}

export type StandbyContext = {
  readonly trusted: TrustedNamespaces;
  readonly rules: StandbyRules;
  /** The claims of every NamespaceReplication this operator sees (claimsOf its cache), to find the one that came first. */
  readonly claims: readonly StandbyClaim[];
};

export type StandbyWriteVerdict = { readonly allowed: true } | { readonly allowed: false; readonly reason: Reason; readonly message: string };

/** The one question before any write into `nr`'s standby: allowed, or the stalling reason and why. */
export function standbyWriteVerdict(nr: NamespaceReplication, spec: NamespaceReplicationSpec, context: StandbyContext): StandbyWriteVerdict {
  const claim = claimOf({ ...nr, spec });
  if (claim === undefined) return { allowed: false, reason: Reason.InvalidSpec, message: 'the spec has no destination' };
  const home = nr.metadata.namespace ?? 'default';
  // Tenancy: reading another namespace (to copy it to a cluster the tenant controls) and writing a standby in
  // this cluster (another namespace, and its Namespace object) are for trusted namespaces only; a standby in
  // another cluster is written with that RemoteCluster's credentials, which the API server there judges.
  const actor = { objectNamespace: home, serviceAccount: undefined, trusted: context.trusted };
  if (!allowedWrite({ ...actor, targetNamespace: claim.sourceNamespace }).allowed) {
    return {
      allowed: false,
      reason: Reason.SourceNotAllowed,
      message: `spec.sourceNamespace ${claim.sourceNamespace}: only a NamespaceReplication in a trusted namespace (the operator's own, --trusted-namespaces) may replicate another namespace`,
    };
  }
  // (The standby's Namespace object is cluster-scoped: it is refused whenever its namespace is.)
  const write = allowedWrite({ ...actor, cluster: spec.destination.cluster?.name, targetNamespace: claim.standbyNamespace });
  if (!write.allowed)
    return { allowed: false, reason: Reason.NamespaceNotAllowed, message: `destination.namespace ${claim.standbyNamespace}: ${write.message}` };
  if (claim.cluster === undefined && claim.standbyNamespace === claim.sourceNamespace) {
    return {
      allowed: false,
      reason: Reason.InvalidSpec,
      message: 'the standby would be the source itself: name destination.cluster or another destination.namespace',
    };
  }
  const standby = allowedStandby({ claim, rules: context.rules, others: context.claims });
  return standby.allowed ? { allowed: true } : { allowed: false, reason: Reason.NamespaceNotAllowed, message: standby.message };
}

// Whether a NamespaceReplication may write its standby at all, asked by each of its writers (the reconciler
// before a pass or a failover, the heartbeat before each renewal): the tenancy rule for its source and a
// standby in this cluster, a standby that is not its own source, and the standby rule (tenancy.ts's
// allowedStandby) against every other replication this operator sees.
import { NamespaceReplicationSpec, type NamespaceReplication } from '../api/v1alpha1.ts';
import { Reason } from '../reconcile/conditions.ts';
import { allowedStandby, allowedWrite, type StandbyClaim, type StandbyRules, type TrustedNamespaces } from '../tenancy.ts';

/** Where `nr` reads and writes; undefined when its spec does not parse (it writes nothing then). */
export function claimOf(nr: NamespaceReplication, parsed?: NamespaceReplicationSpec): StandbyClaim | undefined {
  const spec = parsed ?? NamespaceReplicationSpec.safeParse(nr.spec).data;
  if (spec === undefined) return undefined;
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

export type StandbyContext = {
  readonly trusted: TrustedNamespaces;
  readonly rules: StandbyRules;
  /** Every NamespaceReplication this operator sees (its cache), to find the one that claimed a namespace first. */
  readonly replications: () => readonly NamespaceReplication[];
};

export type StandbyWriteVerdict = { readonly allowed: true } | { readonly allowed: false; readonly reason: Reason; readonly message: string };

/** The one question before any write into `nr`'s standby: allowed, or the stalling reason and why. */
export function standbyWriteVerdict(nr: NamespaceReplication, spec: NamespaceReplicationSpec, context: StandbyContext): StandbyWriteVerdict {
  const claim = claimOf(nr, spec);
  if (claim === undefined) return { allowed: false, reason: Reason.InvalidSpec, message: 'the spec does not parse' };
  const home = nr.metadata.namespace ?? 'default';
  // Tenancy: reading another namespace (to copy it to a cluster the tenant controls) and writing a standby in
  // this cluster (another namespace, and its Namespace object) are for trusted namespaces only; a standby in
  // another cluster is written with that RemoteCluster's credentials, which the API server there judges.
  const actor = { objectNamespace: home, serviceAccount: undefined, trusted: context.trusted };
  if (!allowedWrite({ ...actor, targetNamespace: claim.sourceNamespace }).allowed) {
    return { allowed: false, reason: Reason.SourceNotAllowed, message: `spec.sourceNamespace ${claim.sourceNamespace}: only a NamespaceReplication in a trusted namespace (the operator's own, --trusted-namespaces) may replicate another namespace` };
  }
  // (The standby's Namespace object is cluster-scoped: it is refused whenever its namespace is.)
  const write = allowedWrite({ ...actor, cluster: spec.destination.cluster?.name, targetNamespace: claim.standbyNamespace });
  if (!write.allowed) return { allowed: false, reason: Reason.NamespaceNotAllowed, message: `destination.namespace ${claim.standbyNamespace}: ${write.message}` };
  if (claim.cluster === undefined && claim.standbyNamespace === claim.sourceNamespace) {
    return { allowed: false, reason: Reason.InvalidSpec, message: 'the standby would be the source itself: name destination.cluster or another destination.namespace' };
  }
  const others = context.replications().flatMap((other) => {
    const c = other.metadata.deletionTimestamp === undefined ? claimOf(other) : undefined;
    return c === undefined ? [] : [c];
  });
  const standby = allowedStandby({ claim, rules: context.rules, others });
  return standby.allowed ? { allowed: true } : { allowed: false, reason: Reason.NamespaceNotAllowed, message: standby.message };
}

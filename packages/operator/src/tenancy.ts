// Who may cause a write where: the one rule every reconciler asks before it writes (or reads a source) on
// behalf of an object a tenant may have created. Pure: no I/O, no clock.
//
// An object that names no ServiceAccount acts with the operator's own rights, so it acts only inside its own
// namespace, unless that namespace is trusted (the operator's namespace and --trusted-namespaces): otherwise
// anyone who may create a ConfigSync in a namespace could write into kube-system with the operator's rights.
// Cluster-scoped objects (ClusterRoles, CRDs, Namespaces, ...) lie outside every namespace, so the same holds
// for them. With a ServiceAccount, the API server decides per request with that account's RBAC: the operator
// adds nothing. In another cluster the RemoteCluster's credentials are the identity, and whoever could name
// that RemoteCluster can read its Secret and use those credentials directly: the API server there decides.

import { NAMESPACE_NOT_ALLOWED, type TrustedNamespaces } from '@syncline/runtime';

export { NAMESPACE_NOT_ALLOWED, type TrustedNamespaces };

/** The operator's namespace (when known) and the names given to --trusted-namespaces (comma-separated). */
export function trustedNamespaces(input: {
  readonly operatorNamespace?: string | undefined;
  readonly list?: string | readonly string[] | undefined;
}): TrustedNamespaces {
  const listed = typeof input.list === 'string' ? input.list.split(',') : (input.list ?? []);
  const names = new Set<string>();
  for (const raw of listed) {
    const name = raw.trim();
    if (name === '') continue;
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name) || name.length > 63)
      throw new Error(`--trusted-namespaces: ${JSON.stringify(name)} is not a namespace name (names only, no globs)`);
    names.add(name);
  }
  if (input.operatorNamespace !== undefined && input.operatorNamespace !== '') names.add(input.operatorNamespace);
  return names;
}

/** Who asks: the object that causes the write, and the identity the write goes with. */
export type Actor = {
  /** The namespace of the ConfigSync, ManifestSync, NamespaceReplication or mirroring source. */
  readonly objectNamespace: string;
  /** The ServiceAccount (in objectNamespace) the writes go with; undefined: the operator's own rights. */
  readonly serviceAccount: string | undefined;
  readonly trusted: TrustedNamespaces;
  /** A RemoteCluster the write goes to; undefined: this cluster. */
  readonly cluster?: string | undefined;
};

/** Where the write lands: a namespace, or outside every namespace. */
export type WriteScope = { readonly targetNamespace: string } | { readonly clusterScoped: true };

export type WriteVerdict =
  | { readonly allowed: true; readonly by: 'own-namespace' | 'trusted-namespace' | 'service-account' | 'remote-cluster' }
  | { readonly allowed: false; readonly reason: typeof NAMESPACE_NOT_ALLOWED; readonly message: string };

/** The rule: may `actor` cause a write (or a read of a source) in `scope`? */
export function allowedWrite(input: Actor & WriteScope): WriteVerdict {
  if (input.cluster !== undefined) return { allowed: true, by: 'remote-cluster' };
  if (input.serviceAccount !== undefined) return { allowed: true, by: 'service-account' };
  if (input.trusted.has(input.objectNamespace)) return { allowed: true, by: 'trusted-namespace' };
  if ('targetNamespace' in input && input.targetNamespace === input.objectNamespace) return { allowed: true, by: 'own-namespace' };
  const where = 'targetNamespace' in input ? `namespace ${input.targetNamespace}` : 'cluster-scoped objects';
  return {
    allowed: false,
    reason: NAMESPACE_NOT_ALLOWED,
    message: `${NAMESPACE_NOT_ALLOWED}: ${where}: an object in namespace ${input.objectNamespace} that names no serviceAccountName writes only into its own namespace (name a ServiceAccount whose RBAC allows it, or trust the namespace with --trusted-namespaces)`,
  };
}

/** An object as the filter needs it: its namespace ('' or none = cluster-scoped) and a name for the message. */
export type ScopedObject = { readonly kind: string; readonly metadata: { readonly name: string; readonly namespace?: string | undefined } };

/**
 * The objects of a write set `actor` may not write, each with why: a render may hold objects that name
 * another namespace, or cluster-scoped ones. Empty when every object is allowed.
 */
export function refusedObjects(actor: Actor, objects: readonly ScopedObject[]): { readonly object: string; readonly message: string }[] {
  const refused: { object: string; message: string }[] = [];
  for (const object of objects) {
    const namespace = object.metadata.namespace ?? '';
    const verdict = allowedWrite(namespace === '' ? { ...actor, clusterScoped: true } : { ...actor, targetNamespace: namespace });
    if (!verdict.allowed)
      refused.push({
        object: namespace === '' ? `${object.kind}/${object.metadata.name}` : `${object.kind}/${namespace}/${object.metadata.name}`,
        message: verdict.message,
      });
  }
  return refused;
}

/** One message for a refused write set: the rule once, then the objects (the first few). */
export function describeRefusal(refused: readonly { readonly object: string; readonly message: string }[], max = 5): string {
  const first = refused[0];
  if (first === undefined) return '';
  const names = refused.slice(0, max).map((r) => r.object);
  const more = refused.length > max ? ` and ${refused.length - max} more` : '';
  // Every refusal of one actor says the same but for the place: name the places, then the rule once.
  const rule = first.message.replace(/^[A-Za-z]+: (namespace \S+|cluster-scoped objects): /, '');
  return `${NAMESPACE_NOT_ALLOWED}: nothing written; refused ${names.join(', ')}${more}: ${rule}`;
}

// Where a DR standby may be: the second rule, asked by every writer of a standby (the NamespaceReplication
// reconciler, its heartbeat, a NamespaceReplicationPolicy's plan) and by whatever promotes one (automatic
// failover; `syncline failover --standby` lists no system namespace). A standby is taken over whole: its
// Namespace object is marked as the replication's, its objects pruned when the source loses them, and a
// failover scales what it holds. So whatever the writer's rights (the tenancy rule above, or a RemoteCluster's
// credentials), a standby is never a namespace the cluster itself runs on, the operator's own namespace, or a
// namespace another replication already writes into or reads from. Unlike a ConfigSync, which writes only
// the objects it renders and never takes over what it did not create, a standby lands wholesale.

/** The namespaces a cluster runs on: never a standby unless an admin opts one in (--dr-allow-standby-namespaces). */
export const SYSTEM_NAMESPACES: ReadonlySet<string> = new Set(['kube-system', 'kube-public', 'kube-node-lease', 'default']);

export type StandbyRules = {
  /** The operator's own namespace (when known): never a standby, in any cluster (a standby-side operator is installed alike). */
  readonly operatorNamespace?: string | undefined;
  /** System namespaces an admin opted in as standbys (--dr-allow-standby-namespaces). */
  readonly allowedSystem: ReadonlySet<string>;
};

/** The system namespaces given to --dr-allow-standby-namespaces (comma-separated); anything else is an error naming it. */
export function standbyRules(input: { readonly operatorNamespace?: string | undefined; readonly allow?: string | undefined }): StandbyRules {
  const allowedSystem = new Set<string>();
  for (const raw of (input.allow ?? '').split(',')) {
    const name = raw.trim();
    if (name === '') continue;
    if (!SYSTEM_NAMESPACES.has(name))
      throw new Error(
        `--dr-allow-standby-namespaces: ${JSON.stringify(name)} is not one of ${[...SYSTEM_NAMESPACES].join(', ')} (only system namespaces need opting in; the operator's own namespace is never a standby)`,
      );
    allowedSystem.add(name);
  }
  return { operatorNamespace: input.operatorNamespace === '' ? undefined : input.operatorNamespace, allowedSystem };
}

/** Why `namespace` may never be a standby by its name alone (any cluster), or undefined when it may. */
export function standbyNamespaceRefusal(namespace: string, rules: StandbyRules): string | undefined {
  if (namespace === rules.operatorNamespace)
    return `${NAMESPACE_NOT_ALLOWED}: standby namespace ${namespace}: the operator's own namespace is never a DR standby`;
  if (SYSTEM_NAMESPACES.has(namespace) && !rules.allowedSystem.has(namespace)) {
    return `${NAMESPACE_NOT_ALLOWED}: standby namespace ${namespace}: a system namespace (${[...SYSTEM_NAMESPACES].join(', ')}) is never a DR standby unless the operator's --dr-allow-standby-namespaces names it`;
  }
  return undefined;
}

/** Where one replication reads and writes: its source in this cluster, its standby in a cluster. */
export type StandbyClaim = {
  /** The NamespaceReplication, `namespace/name`. */
  readonly replication: string;
  /** Its creationTimestamp; undefined: not created yet (it comes after every existing one). */
  readonly createdAt: string | undefined;
  readonly sourceNamespace: string;
  /** The RemoteCluster of the standby as `namespace/name`; undefined: this cluster. */
  readonly cluster: string | undefined;
  readonly standbyNamespace: string;
};

/** Whether `a` was there first: the earlier creationTimestamp, then (same second, or neither created) the name. */
export function claimedFirst(a: StandbyClaim, b: StandbyClaim): boolean {
  if (a.createdAt !== b.createdAt) {
    if (a.createdAt === undefined) return false;
    if (b.createdAt === undefined) return true;
    return Date.parse(a.createdAt) < Date.parse(b.createdAt);
  }
  return a.replication < b.replication;
}

/** How `other` already uses the namespace `claim` would write into, if it does. */
function sharedWith(claim: StandbyClaim, other: StandbyClaim): string | undefined {
  if (other.cluster === claim.cluster && other.standbyNamespace === claim.standbyNamespace) return 'standby';
  if (claim.cluster === undefined && other.sourceNamespace === claim.standbyNamespace) return 'source';
  return undefined;
}

/**
 * The rule: may `claim` write its standby? Not into a namespace `standbyNamespaceRefusal` names, nor into one
 * that another replication created earlier uses as its standby (same cluster) or its source (this cluster):
 * the earlier one keeps it, whatever order they are reconciled in.
 */
export function allowedStandby(input: {
  readonly claim: StandbyClaim;
  readonly rules: StandbyRules;
  readonly others: readonly StandbyClaim[];
}): { readonly allowed: true } | { readonly allowed: false; readonly reason: typeof NAMESPACE_NOT_ALLOWED; readonly message: string } {
  const { claim } = input;
  const byName = standbyNamespaceRefusal(claim.standbyNamespace, input.rules);
  if (byName !== undefined) return { allowed: false, reason: NAMESPACE_NOT_ALLOWED, message: byName };
  const where = claim.cluster === undefined ? 'this cluster' : `RemoteCluster ${claim.cluster}`;
  const earlier = input.others
    .filter((other) => other.replication !== claim.replication && sharedWith(claim, other) !== undefined && claimedFirst(other, claim))
    .sort((a, b) => (claimedFirst(a, b) ? -1 : 1))[0];
  if (earlier === undefined) return { allowed: true };
  return {
    allowed: false,
    reason: NAMESPACE_NOT_ALLOWED,
    message: `${NAMESPACE_NOT_ALLOWED}: standby namespace ${claim.standbyNamespace} (${where}) is already the ${sharedWith(claim, earlier) ?? 'standby'} namespace of NamespaceReplication ${earlier.replication}, created first: two replications never share a standby, and a standby is never another's source`,
  };
}

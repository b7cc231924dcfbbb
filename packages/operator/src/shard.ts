// Sharding (the model Flux uses): N operator Deployments split the syncs by a label. `--shard NAME` takes the
// syncs labelled `syncline.dev/shard=NAME`; the default shard (no --shard) takes the unlabelled ones. Moving
// a sync between shards is a relabel: it leaves one shard's label-selected watch (a DELETED there, with no
// deletionTimestamp, so no finalizer runs) and appears in the other's.

/** The label that assigns a ConfigSync, ManifestSync, NamespaceReplication or RemoteCluster to a shard. */
export const SHARD_LABEL = 'syncline.dev/shard';

/** Shard names are DNS labels: they end up in Lease and Deployment names. */
const SHARD_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The shard name as given, or an error that says what a shard name may be. Undefined is the default shard. */
export function parseShard(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.length > 63 || !SHARD_NAME.test(value)) {
    throw new Error(
      `--shard ${JSON.stringify(value)}: expected a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)`,
    );
  }
  if (value === 'default')
    throw new Error('--shard default: the default shard is the operator without --shard (it takes the unlabelled syncs); name the others');
  return value;
}

/** The label selector of a shard's sync watches: its own label, or (default shard) no shard label at all. */
export function shardSelector(shard: string | undefined): string {
  return shard === undefined ? `!${SHARD_LABEL}` : `${SHARD_LABEL}=${shard}`;
}

/** The label selector of every other shard's objects (the webhook receiver wakes them through the API). */
export function otherShardsSelector(shard: string | undefined): string {
  return shard === undefined ? SHARD_LABEL : `${SHARD_LABEL}!=${shard}`;
}

/** Whether an object belongs to a shard (the selector, applied in memory). */
export function inShard(shard: string | undefined, labels: Readonly<Record<string, string>> | undefined): boolean {
  const value = labels?.[SHARD_LABEL];
  return shard === undefined ? value === undefined : value === shard;
}

/** Each shard elects its own leader: the Lease name gets the shard as a suffix. */
export function shardLeaseName(name: string, shard: string | undefined): string {
  return shard === undefined ? name : `${name}-${shard}`;
}

/** A push's wake-up: this shard's own syncs as usual, another shard's through the API (its own watch sees it). */
export function shardedWaker(inOtherShard: (key: string) => boolean, own: (key: string) => void, other: (key: string) => void): (key: string) => void {
  return (key) => (inOtherShard(key) ? other(key) : own(key));
}

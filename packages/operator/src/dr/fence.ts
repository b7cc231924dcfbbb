// The fence against split-brain: a standby promoted without the primary (`syncline failover --standby`, or an
// automatic failover) says so on its own Namespace, and a NamespaceReplication reads that before every
// replication pass and stops instead of replicating over it. The record is an annotation a person can read
// with kubectl; the primary's server-side applies never remove it (another field manager owns it).
import type { ApplyClient, KubeObject } from '@syncline/apply';

export const PROMOTED_AT_ANNOTATION = 'syncline.dev/promoted-at';
export const PROMOTED_BY_ANNOTATION = 'syncline.dev/promoted-by';

export type Promotion = { readonly at: string; readonly by: string };

/** The promotion recorded on a standby Namespace, if any. */
export function promotionOf(namespace: KubeObject | undefined): Promotion | undefined {
  const at = namespace?.metadata.annotations?.[PROMOTED_AT_ANNOTATION];
  if (at === undefined || at === '') return undefined;
  return { at, by: namespace?.metadata.annotations?.[PROMOTED_BY_ANNOTATION] ?? 'unknown' };
}

export type FenceState =
  { readonly kind: 'clear' } | { readonly kind: 'promoted'; readonly promotion: Promotion } | { readonly kind: 'unknown'; readonly message: string };

/** Reads the standby Namespace: a replication pass may run only when it is `clear` (absent counts as clear). */
export async function readFence(standby: ApplyClient, namespace: string): Promise<FenceState> {
  try {
    const promotion = promotionOf(await standby.get(`/Namespace//${namespace}`));
    return promotion === undefined ? { kind: 'clear' } : { kind: 'promoted', promotion };
  } catch (error) {
    return {
      kind: 'unknown',
      message: `could not read the standby namespace ${namespace} to check for a promotion: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}

/** What a fenced replication says in its condition and Event: who promoted, and the two ways back. */
export function fencedMessage(options: { namespace: string; cluster: string; promotion: Promotion }): string {
  const { namespace, cluster, promotion } = options;
  return (
    `the standby ${cluster}/${namespace} was promoted at ${promotion.at} by ${promotion.by}; replication stopped so it is not overwritten. ` +
    `To fail back, either reset the standby (syncline failback --standby --reset-standby ${namespace}, with the standby's kubeconfig: ` +
    `its workloads go to zero and replication from here resumes, overwriting what changed there) or replicate the standby back here first`
  );
}

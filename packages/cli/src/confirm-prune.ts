// `syncline confirm-prune NAME`: a person confirms the deletion a NamespaceReplication holds back from its
// standby. It confirms exactly the held set it read (status.pruneHold.token goes to spec.confirmPrune, so
// Git can do the same); a set that changed in between is held again under a new token and needs a new
// confirmation. With --wait it waits until the operator has deleted it (or held a changed set again).
import type { NamespaceReplicationStatus } from '@syncline/api';
import type { Out } from './flags.ts';
import { parseDuration } from '@syncline/operator/client';
import type { KubeRest } from '@syncline/kube';

type Replication = { metadata: { generation?: number }; status?: NamespaceReplicationStatus };

export type ConfirmPruneOptions = {
  readonly rest: KubeRest;
  readonly namespace: string;
  readonly name: string;
  /** Confirm only this token (as the PruneHeld Event showed it); refused when the held set has changed since. */
  readonly token?: string | undefined;
  readonly wait?: boolean | undefined;
  readonly timeout: string;
  readonly out: Out;
};

const heldMessage = (status: NamespaceReplicationStatus | undefined): string => status?.conditions?.find((c) => c.type === 'PruneHeld')?.message ?? '';

export async function confirmPruneCommand(options: ConfirmPruneOptions): Promise<number> {
  const { rest, namespace, name, out } = options;
  const path = `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/namespacereplications/${name}`;
  const timeoutMs = /^[0-9]+$/.test(options.timeout) ? Number(options.timeout) * 1000 : parseDuration(options.timeout);
  const nr = await rest.request<Replication>({ method: 'GET', path });
  const hold = nr.status?.pruneHold;
  if (hold === undefined) throw new Error(`${namespace}/${name}: no deletion is held`);
  if (options.token !== undefined && options.token !== hold.token) {
    throw new Error(
      `${namespace}/${name}: the held set has changed: ${hold.objects} object(s) are held now under token ${hold.token}, not ${options.token}; look again (kubectl describe) and confirm that one`,
    );
  }
  await rest.request({ method: 'PATCH', path, contentType: 'application/merge-patch+json', body: { spec: { confirmPrune: hold.token } } });
  out(`${namespace}/${name}: deletion of ${hold.objects} standby object(s) confirmed (token ${hold.token})\n`);
  if (options.wait !== true) return 0;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const now = await rest.request<Replication>({ method: 'GET', path });
    const next = now.status?.pruneHold;
    const handled = now.status?.observedGeneration !== undefined && now.status.observedGeneration >= (now.metadata.generation ?? 0);
    if (handled && next === undefined) {
      out(`${namespace}/${name}: ${now.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? 'pruned'}\n`);
      return 0;
    }
    if (handled && next !== undefined && next.token !== hold.token)
      throw new Error(`${namespace}/${name}: the held set changed before the operator acted; held again: ${heldMessage(now.status)}`);
    if (Date.now() > deadline)
      throw new Error(
        `${namespace}/${name}: the confirmed deletion was not applied within ${options.timeout}${next === undefined ? '' : `: ${heldMessage(now.status)}`}`,
      );
    await new Promise((done) => setTimeout(done, 250));
  }
}

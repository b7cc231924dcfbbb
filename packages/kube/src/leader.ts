// Leader election on a coordination.k8s.io Lease, the client-go way: acquire when the lease is free or
// expired, renew every retry period, and give up leadership (the caller exits) when renewals fail for
// longer than the renew deadline, so two replicas never write at once for long.
import { KubeApiError, type KubeRest } from './rest.ts';
import { sleep } from './sleep.ts';

export type LeaderElectionOptions = {
  readonly rest: KubeRest;
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  readonly clock?: { now(): Date };
  readonly onStartedLeading: () => void;
  /** Every successful acquire or renewal (the liveness probe judges the time since the last one). */
  readonly onRenewed?: () => void;
  readonly onStoppedLeading: () => void;
  readonly onError?: (error: unknown) => void;
};

/** client-go's default: a leader that has not renewed for this long stops leading. */
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;

type Lease = {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
};

/** Runs until the signal aborts; releases the lease on the way out so a successor need not wait. */
export async function runLeaderElection(options: LeaderElectionOptions, signal: AbortSignal): Promise<void> {
  const leaseDurationMs = options.leaseDurationMs ?? 15_000;
  const renewDeadlineMs = options.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS;
  const retryPeriodMs = options.retryPeriodMs ?? 2_000;
  const clock = options.clock ?? { now: () => new Date() };
  // Like client-go, an attempt may take until the renew deadline (a leader's: from its last renewal), and no
  // longer: a hung request must not outlast the lease.
  let attemptEndsAt = 0;
  const remainingMs = (): number => Math.max(1, attemptEndsAt - Date.now());
  const path = `/apis/coordination.k8s.io/v1/namespaces/${options.namespace}/leases/${options.name}`;
  let leading = false;
  let lastRenew = 0;

  const tryAcquireOrRenew = async (): Promise<boolean> => {
    const now = clock.now();
    const nowIso = now.toISOString().replace('Z', '000Z'); // MicroTime
    let lease: Lease | undefined;
    try {
      lease = await options.rest.request<Lease>({ method: 'GET', path, signal, timeoutMs: remainingMs() });
    } catch (error) {
      if (!(error instanceof KubeApiError && error.status === 404)) throw error;
    }
    const spec = { holderIdentity: options.identity, leaseDurationSeconds: Math.round(leaseDurationMs / 1000), renewTime: nowIso };
    if (lease === undefined) {
      await options.rest.request({
        method: 'POST',
        path: `/apis/coordination.k8s.io/v1/namespaces/${options.namespace}/leases`,
        body: {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: options.name, namespace: options.namespace },
          spec: { ...spec, acquireTime: nowIso, leaseTransitions: 0 },
        },
        signal,
        timeoutMs: remainingMs(),
      });
      return true;
    }
    const holder = lease.spec?.holderIdentity;
    const renewed = lease.spec?.renewTime !== undefined ? Date.parse(lease.spec.renewTime) : 0;
    const duration = (lease.spec?.leaseDurationSeconds ?? 15) * 1000;
    const mine = holder === options.identity;
    const expired = holder === undefined || holder === '' || renewed + duration < now.getTime();
    if (!mine && !expired) return false;
    await options.rest.request({
      method: 'PUT',
      path,
      body: {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: lease.metadata, // carries resourceVersion: a concurrent taker makes this fail with 409
        spec: {
          ...lease.spec,
          ...spec,
          acquireTime: mine ? lease.spec?.acquireTime : nowIso,
          leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + (mine ? 0 : 1),
        },
      },
      signal,
      timeoutMs: remainingMs(),
    });
    return true;
  };

  while (!signal.aborted) {
    let held: boolean | undefined; // undefined: the API server did not answer
    try {
      attemptEndsAt = leading ? Math.max(lastRenew + renewDeadlineMs, Date.now() + retryPeriodMs) : Date.now() + renewDeadlineMs;
      held = await tryAcquireOrRenew();
    } catch (error) {
      if (!signal.aborted) options.onError?.(error);
    }
    if (held === true) {
      lastRenew = Date.now();
      options.onRenewed?.();
      if (!leading) {
        leading = true;
        options.onStartedLeading();
      }
    } else if (leading && (held === false || Date.now() - lastRenew > renewDeadlineMs)) {
      // Another replica holds the lease, or we could not renew in time: stop writing now.
      leading = false;
      options.onStoppedLeading();
      return;
    }
    await sleep(retryPeriodMs, signal);
  }
  if (leading) {
    // Release: an empty holder lets the next replica take over at once.
    await options.rest
      .request({
        method: 'PATCH',
        path,
        contentType: 'application/merge-patch+json',
        body: { spec: { holderIdentity: null, renewTime: null } },
        timeoutMs: retryPeriodMs,
      })
      .catch(() => undefined);
  }
}

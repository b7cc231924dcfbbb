// What a notification says, taken from an Event the operator records anyway: the object, the severity, the
// Event's reason, and the category a NotificationAlert filters on. Pure: the recorder tap calls this in process.
import type { EventCategory } from '@syncline/api';

export type InvolvedObject = {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly generation?: number;
    readonly labels?: Readonly<Record<string, string>>;
  };
  readonly status?: unknown;
};

export type RecordedEvent = { readonly type: 'Normal' | 'Warning'; readonly reason: string; readonly message: string; readonly repeat?: boolean };

export type NotificationEvent = {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** info: a Normal Event; error: a Warning. */
  readonly severity: 'info' | 'error';
  readonly reason: string;
  readonly category: EventCategory;
  readonly message: string;
  /** A Normal Event that follows a Warning of the same object: it recovered. */
  readonly recovered: boolean;
  /** The commit the Event names, as far as it does (ConfigSync messages carry its first 12 hex digits). */
  readonly revision?: string;
  readonly timestamp: string;
};

/** Event reasons that say a standby took over (or gave back). */
const FAILOVER_REASONS = new Set(['FailedOver', 'FailedBack', 'StandbyPromoted', 'PromotionHeld']);
const HEALTH_REASONS = new Set(['HealthCheckFailed']);
/** A PreSync, Sync, PostSync or SyncFail hook of a sync failed (reconcile/hooks.ts). */
const HOOK_REASONS = new Set(['HookFailed']);

/**
 * The category of a recorded Event. A sync's Normal Event at the revision and generation it had already
 * applied is a correction of drift (something in the cluster changed back to what Git says); a Normal Event
 * after a Warning of the same object is a recovery.
 */
export function categorize(
  object: InvolvedObject,
  event: RecordedEvent,
  recovered: boolean,
  revision: string | undefined = object.kind === 'ConfigSync' ? revisionIn(event.message) : undefined,
): EventCategory {
  if (FAILOVER_REASONS.has(event.reason)) return 'Failover';
  if (HEALTH_REASONS.has(event.reason)) return 'HealthDegraded';
  if (HOOK_REASONS.has(event.reason)) return 'HookFailed';
  if (event.type === 'Warning') return 'Failed';
  if (recovered) return 'Recovered';
  if ((event.reason === 'Synced' || event.reason === 'Replicated') && sameRevisionAndGeneration(object, revision)) return 'DriftCorrected';
  return 'Applied';
}

/** `revision`: the one the ConfigSync's Event names (revisionIn), read once by the caller. */
function sameRevisionAndGeneration(object: InvolvedObject, revision: string | undefined): boolean {
  const status = (object.status ?? {}) as { observedGeneration?: number; sourceRevision?: string };
  if (status.observedGeneration === undefined || status.observedGeneration !== object.metadata.generation) return false;
  if (object.kind !== 'ConfigSync') return true;
  return revision !== undefined && status.sourceRevision !== undefined && status.sourceRevision.startsWith(revision);
}

/** A ConfigSync's Synced message starts `revision <12 hex digits>:`. */
export function revisionIn(message: string): string | undefined {
  return /^revision ([0-9a-f]{7,40})\b/.exec(message)?.[1];
}

/**
 * Remembers which objects' last Event was a Warning, so that the next Normal one reads as a recovery. Bounded:
 * the oldest objects are forgotten first (a recovery of one of those reads as a plain success).
 */
export class RecoveryTracker {
  readonly #failing = new Map<string, true>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = max;
  }

  /** Whether this Event ends a failure of its object; records it either way. */
  observe(key: string, type: RecordedEvent['type']): boolean {
    const wasFailing = this.#failing.has(key);
    this.#failing.delete(key);
    if (type === 'Warning') {
      this.#failing.set(key, true);
      for (const oldest of this.#failing.keys()) {
        if (this.#failing.size <= this.#max) break;
        this.#failing.delete(oldest);
      }
      return false;
    }
    return wasFailing;
  }
}

export function notificationEvent(input: { object: InvolvedObject; event: RecordedEvent; recovered: boolean; now: Date }): NotificationEvent {
  const { object, event } = input;
  const revision = object.kind === 'ConfigSync' ? revisionIn(event.message) : undefined;
  return {
    kind: object.kind,
    namespace: object.metadata.namespace ?? '',
    name: object.metadata.name,
    labels: object.metadata.labels ?? {},
    severity: event.type === 'Warning' ? 'error' : 'info',
    reason: event.reason,
    category: categorize(object, event, input.recovered, revision),
    message: event.message,
    recovered: input.recovered,
    ...(revision === undefined ? {} : { revision }),
    timestamp: input.now.toISOString(),
  };
}

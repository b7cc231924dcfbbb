// Why an object was skipped or failed, as data: every `skipped` and `failed` change set entry carries one of
// these causes beside its reason. Callers decide from the cause (retry, wait, report a conflict); the reason is
// for people and may be reworded freely. A closed set, each cause marked transient (retrying with backoff may
// help) or not (someone must change the source, the spec, RBAC or the other object first), the way
// @syncline/source-git marks its error codes. Adding a cause: add it here with its doc line, decide whether it
// is transient, and let the exhaustive switches of the callers say where it needs a decision.
import { ApiError } from './client.ts';

export const ApplyCause = {
  /** Skipped: the object is marked as another owner's (another sync or target). Not transient: a person decides. */
  Conflict: 'Conflict',
  /** Skipped: the object exists and is not Syncline's (or its marks are unproven); policy Sync leaves it. Not transient. */
  NotOwned: 'NotOwned',
  /** Skipped: a Namespace left in place because it holds objects that are not this sync's. Not transient. */
  Orphaned: 'Orphaned',
  /** Skipped: policy Keep never modifies an existing object. Not transient. */
  Kept: 'Kept',
  /** Skipped: the object drifted and drift Report leaves it (the entry lists the paths). Not transient. */
  Drifted: 'Drifted',
  /** Skipped: a later apply wave held back (an earlier one failed or is not healthy yet). Transient. */
  HeldBack: 'HeldBack',
  /** Skipped: a stale object not pruned because an apply failed or a wave was held back. Transient. */
  PruneHeldBack: 'PruneHeldBack',
  /** Skipped: a stale object left in place (prune off, no longer ours, prune disabled, a Namespace we did not create). Not transient. */
  Left: 'Left',
  /**
   * The object cannot be applied as written: skipped for a duplicate or a namespaced Namespace; failed for an
   * invalid apply wave or the API server's 400/422. Transient: an API server's answer may change with a CRD.
   */
  Invalid: 'Invalid',
  /** Failed: the API server refused the request (401/403). Not transient: RBAC must change. */
  Forbidden: 'Forbidden',
  /** Failed: a field conflict with another field manager, or the object changed under the request (409). Transient. */
  FieldConflict: 'FieldConflict',
  /** Failed: the kind is not served, or the object vanished during the request (404). Transient. */
  NotFound: 'NotFound',
  /** Failed: no answer within the request's deadline (or a CRD not Established in time). Transient. */
  Timeout: 'Timeout',
  /** Failed: the connection to the API server failed. Transient. */
  Transport: 'Transport',
  /** Failed: writes are fenced (this replica lost its lease). Transient. */
  Fenced: 'Fenced',
  /** Failed: any other answer of the API server (5xx, 429, …) or an unexpected error. Transient. */
  ServerError: 'ServerError',
} as const;
export type ApplyCause = (typeof ApplyCause)[keyof typeof ApplyCause];

const notTransient: ReadonlySet<ApplyCause> = new Set([
  ApplyCause.Conflict,
  ApplyCause.NotOwned,
  ApplyCause.Orphaned,
  ApplyCause.Kept,
  ApplyCause.Drifted,
  ApplyCause.Left,
  ApplyCause.Forbidden,
]);

/** True when retrying with backoff may help; false when someone must change something first. */
export function isTransientCause(cause: ApplyCause): boolean {
  return !notTransient.has(cause);
}

/** The cause of an error an ApplyClient call rejected with (see client.ts: every answer is an ApiError). */
export function causeOfError(error: unknown): ApplyCause {
  if (!(error instanceof ApiError)) return ApplyCause.ServerError;
  // The API server's own 504 (reason Timeout) or 500 (ServerTimeout), or our request deadline (status 0).
  if (error.reason === 'Timeout' || error.reason === 'ServerTimeout') return ApplyCause.Timeout;
  if (error.status === 401 || error.status === 403) return ApplyCause.Forbidden;
  if (error.status === 409) return ApplyCause.FieldConflict;
  if (error.status === 404) return ApplyCause.NotFound;
  if (error.status === 400 || error.status === 422) return ApplyCause.Invalid;
  if (error.status === 0 && error.reason === 'TransportError') return ApplyCause.Transport;
  if (error.status === 0 && error.reason === 'Fenced') return ApplyCause.Fenced;
  return ApplyCause.ServerError;
}

/** The ServiceAccount a sync should apply as does not exist: a spec problem, not a transient one. */
export class ServiceAccountError extends Error {
  override readonly name = 'ServiceAccountError';
}

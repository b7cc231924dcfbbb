// Errors of source-helm. Every error that leaves the package is a ChartSourceError with a code from a closed
// set, each marked stalling (the spec or its Secret must change) or transient (retried with backoff). Messages
// name the repository, chart and version, never a credential: conditions and events are readable by anyone who
// can read the object.

export const ChartSourceErrorCode = {
  /** The URL is not https:// or oci:// (or plain HTTP without the operator's consent). Stalling. */
  InvalidUrl: 'InvalidUrl',
  /** The credential Secret lacks username+password, or its ca.crt is no PEM. Stalling. */
  InvalidAuth: 'InvalidAuth',
  /** 401/403 from the repository or registry. Stalling until the Secret changes. */
  AuthFailed: 'AuthFailed',
  /** The index has no such chart, or the registry no such repository. Transient: it may be published yet. */
  ChartNotFound: 'ChartNotFound',
  /** No published version matches the version asked for. Transient: it may be published yet. */
  VersionNotFound: 'VersionNotFound',
  /** What was downloaded does not have the digest the index, the registry or spec.digest says. Transient. */
  DigestMismatch: 'DigestMismatch',
  /** The server's TLS certificate does not verify. Transient (a renewed certificate fixes it). */
  UntrustedCertificate: 'UntrustedCertificate',
  /** DNS, connection refused, reset. Transient. */
  Unreachable: 'Unreachable',
  /** The server was too slow. Transient. */
  Timeout: 'Timeout',
  /** 5xx, or an answer that is not an index, a manifest or a chart archive. Transient. */
  ServerError: 'ServerError',
  /** An index, a manifest or an archive over its size limit. Stalling. */
  LimitExceeded: 'LimitExceeded',
  /** The archive is no chart: not gzip/tar, a path leaving the chart, a link, no Chart.yaml. Stalling. */
  InvalidChart: 'InvalidChart',
} as const;
export type ChartSourceErrorCode = (typeof ChartSourceErrorCode)[keyof typeof ChartSourceErrorCode];

const transientCodes: ReadonlySet<ChartSourceErrorCode> = new Set([
  ChartSourceErrorCode.ChartNotFound,
  ChartSourceErrorCode.VersionNotFound,
  ChartSourceErrorCode.DigestMismatch,
  ChartSourceErrorCode.UntrustedCertificate,
  ChartSourceErrorCode.Unreachable,
  ChartSourceErrorCode.Timeout,
  ChartSourceErrorCode.ServerError,
]);

export class ChartSourceError extends Error {
  override readonly name = 'ChartSourceError';
  readonly code: ChartSourceErrorCode;
  /** True when retrying with backoff may help; false when the spec or its Secret must change first. */
  readonly retryable: boolean;

  constructor(code: ChartSourceErrorCode, message: string) {
    super(message);
    this.code = code;
    this.retryable = transientCodes.has(code);
  }
}

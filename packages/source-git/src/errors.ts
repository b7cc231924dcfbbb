// Errors of source-git. Every error that leaves the package is a GitSourceError whose message has been
// through `redact`: no credential, token or file content ever appears in it (users paste errors into tickets,
// and conditions and events are readable by anyone who can read the object).

export const GitSourceErrorCode = {
  /** The repo URL is not https (or otherwise unusable). Stalling: fix the spec. */
  InvalidRepoUrl: 'InvalidRepoUrl',
  /** Empty revision, short SHA, malformed SHA. Stalling. */
  InvalidRevision: 'InvalidRevision',
  /** No branch or tag of that name. Stalling until the source changes. */
  RevisionNotFound: 'RevisionNotFound',
  /** The commit does not exist on the server. Stalling. */
  CommitNotFound: 'CommitNotFound',
  /** The repository does not exist (404). Stalling. */
  RepoNotFound: 'RepoNotFound',
  /** 401/403. Stalling until the Secret changes. */
  AuthFailed: 'AuthFailed',
  /** The server's TLS certificate does not verify (unknown CA, wrong name, expired). Transient: a server's renewed certificate fixes it too. */
  UntrustedCertificate: 'UntrustedCertificate',
  /** DNS, connection refused, reset. Transient. */
  Unreachable: 'Unreachable',
  /** The server was too slow or hung. Transient. */
  Timeout: 'Timeout',
  /** 5xx, or a response that is not Git. Transient. */
  ServerError: 'ServerError',
  /** A response, snapshot, file count or file size over its limit. Stalling. */
  LimitExceeded: 'LimitExceeded',
  /** `spec.path` or a tree entry or symlink that would leave the snapshot. Stalling. */
  UnsafePath: 'UnsafePath',
  /** The requested path is not in the commit. Stalling. */
  PathNotFound: 'PathNotFound',
  /** A tree entry we cannot turn into files (a submodule, a symlink to a directory). Stalling. */
  UnsupportedEntry: 'UnsupportedEntry',
  /** The auth Secret has neither username+password nor bearerToken. Stalling. */
  InvalidAuth: 'InvalidAuth',
  /** The cached snapshot was evicted or damaged; fetch it again. Transient. */
  SnapshotUnavailable: 'SnapshotUnavailable',
} as const;
export type GitSourceErrorCode = (typeof GitSourceErrorCode)[keyof typeof GitSourceErrorCode];

const transientCodes: ReadonlySet<GitSourceErrorCode> = new Set([
  GitSourceErrorCode.Unreachable,
  GitSourceErrorCode.Timeout,
  GitSourceErrorCode.ServerError,
  GitSourceErrorCode.SnapshotUnavailable,
  GitSourceErrorCode.UntrustedCertificate,
]);

export class GitSourceError extends Error {
  override readonly name = 'GitSourceError';
  readonly code: GitSourceErrorCode;
  /** True when retrying with backoff may help; false when the spec, Secret or source must change first. */
  readonly retryable: boolean;

  constructor(code: GitSourceErrorCode, message: string) {
    super(message);
    this.code = code;
    this.retryable = transientCodes.has(code);
  }
}

/** Replaces each secret, and any `scheme://user:pass@` userinfo (but an ssh:// user name), with `***`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length === 0) continue;
    out = out.split(secret).join('***');
    const encoded = encodeURIComponent(secret);
    if (encoded !== secret) out = out.split(encoded).join('***');
  }
  // An SSH URL's user name (ssh://git@host/…) is no credential; a password beside it would be.
  return out.replace(/([a-z][a-z0-9+.-]*:\/\/)([^/@\s]*)@/gi, (all: string, scheme: string, info: string) =>
    /^(ssh|git\+ssh|ssh\+git):\/\/$/i.test(scheme) && !info.includes(':') ? all : `${scheme}***@`,
  );
}

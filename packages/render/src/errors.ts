// One error type for everything that can go wrong while rendering. Its message always starts with
// `file:line:column` when a position is known, and never carries a value or file contents beyond the offending
// template token (values may come from Secrets).

export const RenderErrorReason = {
  /** The requested path holds no file, or no renderable file. */
  PathNotFound: 'PathNotFound',
  /** A Handlebars template does not compile (syntax, unclosed block, the `}}}` gotcha). */
  TemplateSyntax: 'TemplateSyntax',
  /** A template calls a helper that does not exist. */
  UnknownHelper: 'UnknownHelper',
  /** A template names a partial that `_partials/` does not hold, or uses a dynamic partial name. */
  MissingPartial: 'MissingPartial',
  /** Partials include each other deeper than the limit (usually a partial that includes itself). */
  PartialDepth: 'PartialDepth',
  /** A template reads a value that is not set. */
  MissingValue: 'MissingValue',
  /** `{{required "msg" x}}` found no value, or a helper was called with bad arguments. */
  HelperFailed: 'HelperFailed',
  /** A mapping or list was interpolated with `{{ }}`; it needs `toYaml`/`toJson`. */
  NotAScalar: 'NotAScalar',
  /** A template produced more output, or did more work, than the limits allow. */
  LimitExceeded: 'LimitExceeded',
  /** The YAML (a plain manifest or a template's output) does not parse, or expands aliases too far. */
  InvalidYaml: 'InvalidYaml',
  /** A `.json` manifest does not parse. */
  InvalidJson: 'InvalidJson',
  /**
   * A document is not a Kubernetes object (no apiVersion, kind or metadata.name, not a mapping), or a Secret's
   * or ConfigMap's data is not what the API server decodes (see data-fields.ts).
   */
  InvalidObject: 'InvalidObject',
  /** API discovery does not know the kind, so we cannot tell whether it is namespaced. */
  UnknownKind: 'UnknownKind',
  /** A namespaced object names no namespace and the target has none; or a cluster-scoped one names one. */
  NamespaceMismatch: 'NamespaceMismatch',
  /** Two documents describe the same object. */
  DuplicateObject: 'DuplicateObject',
  /** A target patch matches no rendered object or is not a JSON merge patch. */
  InvalidPatch: 'InvalidPatch',
  /** Values (spec.values, a valuesFrom source, target.values) are not valid YAML or not a mapping. */
  InvalidValues: 'InvalidValues',
  /** Data mode cannot build its ConfigMap/Secret (duplicate keys, bad key, `key` with several files). */
  InvalidDataMode: 'InvalidDataMode',
  /** Kustomize, Helm or Jsonnet reported an error in the repository's input (the message names the engine). */
  EngineFailed: 'EngineFailed',
  /**
   * The input asks an engine for what a render may not do: fetch (remote bases, chart dependencies, schema
   * references), run a program (KRM functions, plugins), read a cluster (Helm's lookup) or leave the repository.
   */
  EngineRefused: 'EngineRefused',
} as const;
export type RenderErrorReason = (typeof RenderErrorReason)[keyof typeof RenderErrorReason];

export interface RenderErrorInit {
  readonly reason: RenderErrorReason;
  /** Repo-relative path of the offending file, or the values source (e.g. `valuesFrom[1] Secret/app`). */
  readonly file?: string | undefined;
  /** 1-based line. */
  readonly line?: number | undefined;
  /** 1-based column. */
  readonly column?: number | undefined;
  /** What is wrong, without the location prefix. */
  readonly detail: string;
}

export class RenderError extends Error {
  override readonly name = 'RenderError';
  readonly reason: RenderErrorReason;
  readonly file: string | undefined;
  readonly line: number | undefined;
  readonly column: number | undefined;
  readonly detail: string;

  constructor(init: RenderErrorInit) {
    super(`${formatLocation(init)}${init.detail}`);
    this.reason = init.reason;
    this.file = init.file;
    this.line = init.line;
    this.column = init.column;
    this.detail = init.detail;
  }
}

function formatLocation(init: RenderErrorInit): string {
  if (init.file === undefined) return '';
  if (init.line === undefined) return `${init.file}: `;
  return `${init.file}:${init.line}:${init.column ?? 1}: `;
}

export function isRenderError(error: unknown): error is RenderError {
  return error instanceof RenderError;
}

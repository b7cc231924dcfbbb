// Entry point `@syncline/operator/options`: the flags of `syncline run` and their parsing into the options
// runOperator takes, and the default mirror prefix the CLI's flags show. Light on purpose: the CLI imports it
// when it starts (before any command), so --help stays fast.
export { parseRunOptions } from './run-options.ts';
export type { RunFlags, RunOptions } from './run-options.ts';
export { DEFAULT_MIRROR_PREFIX } from './mirror/labels.ts';

// Public entry point of @syncline/cli: the `syncline` command line. It is a client of the operator: it reads the
// API from @syncline/api and the operator's domains through @syncline/operator/client (and /options, /run),
// never through their files.
export { runCli, versionText } from './cli.ts';
export type { RunOptions } from './cli.ts';
export { main } from './main.ts';
export { formatStatus, rollbackRevision } from './commands.ts';

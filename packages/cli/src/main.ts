#!/usr/bin/env node
// The composition root of the `syncline` binary: the CLI, with the operator (@syncline/operator's runOperator)
// loaded only for `run`, so --help and the other commands start faster. bin/syncline.js and the release's
// standalone executable are this file with a Node version check in front; tests and scripts run it directly
// (`node packages/cli/src/main.ts run …`).
import { runCli } from './cli.ts';

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  return runCli(argv, { env, runOperator: async (flags) => (await import('@syncline/operator/run')).runOperator(flags, env) });
}

if (import.meta.main) {
  main(process.argv.slice(2), process.env).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    },
  );
}

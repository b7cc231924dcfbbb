#!/usr/bin/env node
// The composition root of the `syncline` binary: the CLI, and for `run` the operator (@syncline/operator's
// runOperator) with the web UI (@syncline/ui) and notifications (@syncline/notify) plugged in, loaded only then, so --help and the other commands
// start faster. bin/syncline.js and the release's standalone executable run the CLI with this runOperator; tests
// and scripts run this file directly (`node packages/cli/src/main.ts run …`).
import { runCli, type RunOptions } from './cli.ts';

/** `syncline run`: the operator, serving the web UI and sending notifications. */
export async function runOperator(flags: RunOptions, env: NodeJS.ProcessEnv): Promise<number> {
  const [operator, ui, notify] = await Promise.all([import('@syncline/operator/run'), import('@syncline/ui'), import('@syncline/notify')]);
  return operator.runOperator(flags, env, { ui: ui.createWebUi(), notifications: notify.startNotifications });
}

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  return runCli(argv, { env, runOperator: (flags) => runOperator(flags, env) });
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

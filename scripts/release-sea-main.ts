// The entry of the standalone `syncline` executable (scripts/release.ts bundles it into one CommonJS script
// for Node's single-executable applications). It is packages/cli/bin/syncline.js without the Node
// version check (the executable carries its own Node) and without top-level await, which a CommonJS bundle
// cannot hold.
import { runCli } from '../packages/cli/src/cli.ts';

// The operator and the web UI (the CLI package's main.ts, the composition root) are evaluated only for `run`, as in bin/syncline.js.
const runOperator: Parameters<typeof runCli>[1]['runOperator'] = async (flags) => (await import('../packages/cli/src/main.ts')).runOperator(flags, process.env);
runCli(process.argv.slice(2), { env: process.env, runOperator }).then(
  (code) => {
    process.exit(code);
  },
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);

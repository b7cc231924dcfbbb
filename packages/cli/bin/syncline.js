#!/usr/bin/env node
// The `syncline` executable (package.json "bin"): `./pnpm exec syncline …` in a checkout, `syncline …` in the
// image. Node 24 runs the TypeScript sources directly; they live outside node_modules (workspace links
// resolve to packages/), where type stripping applies.
import process from 'node:process';

const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    `error: syncline needs Node 24 or newer (this is Node ${process.versions.node}); in a checkout run it as ./pnpm exec syncline, which brings its own Node\n`,
  );
  process.exit(1);
}
// Imported only now, so an old Node gets the line above instead of a parse error from a .ts file. The
// operator and the web UI (src/main.ts, the composition root) load only for `run`: --help and the other commands start faster.
const { runCli } = await import('../src/cli.ts');
const runOperator = async (flags) => (await import('../src/main.ts')).runOperator(flags, process.env);
runCli(process.argv.slice(2), { env: process.env, runOperator }).then(
  (code) => {
    // `run` and the waits end by themselves; exit anyway so a lingering keep-alive socket does not hold the CLI.
    process.exit(code);
  },
  (error) => {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);

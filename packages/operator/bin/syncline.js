#!/usr/bin/env node
// The `syncline` executable (package.json "bin"): `pnpm exec syncline …` in a checkout, `syncline …` in the
// image. Node 24 runs the TypeScript sources directly; they live outside node_modules (workspace links
// resolve to packages/), where type stripping applies.
import process from 'node:process';
import { main } from '../src/main.ts';

main(process.argv.slice(2), process.env).then(
  (code) => {
    process.exitCode = code;
    // `run` and the waits end by themselves; exit anyway so a lingering keep-alive socket does not hold the CLI.
    process.exit(code);
  },
  (error) => {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);

#!/usr/bin/env -S node --liftoff-only
// --liftoff-only: the API client's HTTP parser (undici's llhttp) is WebAssembly, and V8's optimizing tier would
// compile it a second time, about 9 MB of resident memory for no measurable speed. V8 takes the flag only on
// the command line (not from NODE_OPTIONS, not at run time), hence here, where the image's `syncline` starts.
// The entry of the prebuilt `syncline`: build/bundle.ts bundles it into dist/syncline/syncline.mjs (what the image
// runs), and scripts/release.ts into the one CommonJS script of the standalone executable. It is bin/syncline.js
// without the Node version check (the image, the bundle's target and the executable carry Node 24), with no
// TypeScript left to strip at start, and without top-level await, which a CommonJS bundle cannot hold.
import process from 'node:process';
import { runCli } from './cli.ts';

// The operator, the web UI and notifications (main.ts, the composition root) are evaluated only for `run`, as in
// bin/syncline.js: the bundle keeps them in chunks of their own.
const runOperator: Parameters<typeof runCli>[1]['runOperator'] = async (flags) => (await import('./main.ts')).runOperator(flags, process.env);
runCli(process.argv.slice(2), { env: process.env, runOperator }).then(
  (code) => {
    // `run` and the waits end by themselves; exit anyway so a lingering keep-alive socket does not hold the CLI.
    process.exit(code);
  },
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);

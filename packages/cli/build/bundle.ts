#!/usr/bin/env node
// Bundles the `syncline` binary (the CLI, and for `run` the operator with the web UI and notifications) into plain JavaScript with esbuild: dist/syncline/syncline.mjs and its
// chunks (each dynamic import stays a chunk loaded on first use, as the sources load it), plus the pack indexer's
// worker. The image runs it (scripts/install-production.sh builds it, the Dockerfile links it as `syncline`) and
// so do `pnpm bench operator` and `pnpm bench notify`, which run this file and read the entry's path it prints. Running the .ts sources costs the operator Node's TypeScript stripper: its
// WebAssembly module and its own source text, ~18 MB of resident memory, plus every module's source kept as
// TypeScript; the bundle loads none of that.
import { build, type BuildOptions, type Plugin } from 'esbuild';
import { chmod, readFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';

const packageDir = join(import.meta.dirname, '..');
export const OPERATOR_BUNDLE_DIR = join(packageDir, 'dist', 'syncline');
/** The bundled `syncline` executable (`node dist/syncline/syncline.mjs run …`). */
export const OPERATOR_BUNDLE = join(OPERATOR_BUNDLE_DIR, 'syncline.mjs');

/**
 * A module's `import.meta.dirname` means its source directory (the UI server finds dist/ui, the CLI its
 * package.json from there): in a chunk it would be the bundle's directory, so each workspace module gets its
 * own directory back, as a path relative to the chunk that holds it.
 */
function sourceDirname(outdir: string): Plugin {
  return {
    name: 'source-dirname',
    setup(builder) {
      builder.onLoad({ filter: /\.ts$/ }, async (args) => {
        if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
        const text = await readFile(args.path, 'utf8');
        if (!text.includes('import.meta.dirname')) return { contents: text, loader: 'ts' };
        const fromChunk = JSON.stringify(`${sep}${relative(outdir, dirname(args.path))}`);
        return { contents: text.replaceAll('import.meta.dirname', `(import.meta.dirname + ${fromChunk})`), loader: 'ts' };
      });
    },
  };
}

/**
 * Writes the bundle into `outdir`; returns its entry. Chunks are named by their content and nothing is removed
 * first, so an operator started from an earlier build still finds the chunks it loads later (the entry and the
 * worker, read at start, are written over).
 */
export async function buildOperatorBundle(outdir: string = OPERATOR_BUNDLE_DIR): Promise<string> {
  const common: BuildOptions = {
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'esm',
    outdir,
    // Whitespace and syntax only: the source text V8 keeps for every loaded module shrinks by about half, and
    // names (stack traces, error messages naming a class) stay.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none',
    logLevel: 'warning',
    // The packages' settings are these; the repository's tsconfig files are for the typecheck.
    tsconfigRaw: {},
    // CommonJS dependencies bundled into ES modules still call require() for Node's built-ins.
    banner: { js: "import { createRequire as __syncline_require } from 'node:module'; const require = __syncline_require(import.meta.url);" },
    // ssh2's optional native speed-ups: it falls back to JavaScript when they do not load.
    external: ['cpu-features', '*.node'],
    // No bundled module is a process's entry: main.ts's own `if (import.meta.main)` stays off. `esbuildDetection`
    // is undici's own switch for a bundled build (Node's built-in copy is built so): its experimental Milo HTTP
    // parser and the WebAssembly it carries as text stay out, ~0.7 MB of the operator's resident memory; undici
    // parses with llhttp, as it does by default.
    define: { 'import.meta.main': 'false', esbuildDetection: 'true' },
    plugins: [sourceDirname(outdir)],
  };
  await build({
    ...common,
    entryPoints: { syncline: join(packageDir, 'src', 'bundle-entry.ts') },
    splitting: true,
    chunkNames: '[name]-[hash]',
    outExtension: { '.js': '.mjs' },
  });
  // The pack indexer's worker thread runs a file of its own (index-pack-worker.ts finds it beside its chunk).
  await build({
    ...common,
    entryPoints: { 'index-pack-worker': join(packageDir, '..', 'source-git', 'src', 'index-pack-worker.ts') },
    outExtension: { '.js': '.mjs' },
  });
  const entry = join(outdir, 'syncline.mjs');
  await chmod(entry, 0o755);
  return entry;
}

if (import.meta.main) process.stdout.write(`${await buildOperatorBundle()}\n`);

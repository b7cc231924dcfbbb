#!/usr/bin/env node
// Bundles the web UI's page script (Preact + htm, no JSX step) and style with esbuild into dist/ui, where the
// UI server reads them. `pnpm build:ui` runs this; `pnpm test`, the browser tests and the image build call it.
import { build } from 'esbuild';
import { join } from 'node:path';
import { UI_ASSETS_DIR } from './server.ts';

export async function buildUiAssets(outdir: string = UI_ASSETS_DIR): Promise<void> {
  const client = join(import.meta.dirname, 'client');
  await build({
    // app.js and style.css
    entryPoints: [join(client, 'app.ts'), join(client, 'style.css')],
    outdir,
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022'],
    legalComments: 'none',
    logLevel: 'warning',
    // The page's settings are these; the client's tsconfig.json is for the typecheck only (its base file is not
    // in the image build).
    tsconfigRaw: {},
  });
}

if (import.meta.main) await buildUiAssets();

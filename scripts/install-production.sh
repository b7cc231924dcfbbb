#!/usr/bin/env bash
# The production install of Syncline, run by the Dockerfile and by CI (test/dockerfile/dockerfile.test.ts)
# so the image's steps cannot rot unnoticed. Into a source tree (what .dockerignore lets into the image):
# production dependencies only, from the lockfile. The workspace packages stay links to their sources: Node
# strips TypeScript types natively, but not for files under node_modules, so `pnpm deploy` (which copies
# them there) would not run. Then it drops tests, fixtures and benchmarks, builds the web UI's page and the
# operator's JavaScript bundle (what the image's `syncline` runs), and checks both CLIs start.
#
# Usage: scripts/install-production.sh DIR [pnpm install flags, e.g. --offline --store-dir PATH]
set -euo pipefail
dir="${1:?usage: scripts/install-production.sh DIR [pnpm install flags]}"
shift
cd "$dir"

pnpm install --prod --frozen-lockfile --ignore-scripts "$@"

# Node 24 runs the .ts sources as they are (bin/syncline.js); the image runs the bundle built below, which
# leaves Node's TypeScript stripper (~18 MB resident) unloaded. What only tests and benchmarks use goes.
find packages -name node_modules -prune -o \
  \( -type d \( -name bench -o -name testdata \) -prune -print0 \) -o \
  \( -type f \( -name '*.test.ts' -o -name test-support.ts \) -print0 \) | xargs -0 rm -rf

# The web UI's page (Preact + htm), bundled by esbuild into packages/ui/dist/ui, where `--ui-addr` serves it.
node packages/ui/src/build.ts

# The CLI and operator as JavaScript, bundled by esbuild into packages/cli/dist/syncline (the Dockerfile
# links its syncline.mjs as `syncline`).
node packages/cli/build/bundle.ts >/dev/null

node packages/cli/bin/syncline.js --help >/dev/null
node packages/cli/dist/syncline/syncline.mjs --help >/dev/null

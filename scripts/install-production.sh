#!/usr/bin/env bash
# The production install of Syncline, run by the Dockerfile and by CI (test/dockerfile/dockerfile.test.ts)
# so the image's steps cannot rot unnoticed. Into a source tree (what .dockerignore lets into the image):
# production dependencies only, from the lockfile. The workspace packages stay links to their sources: Node
# strips TypeScript types natively, but not for files under node_modules, so `pnpm deploy` (which copies
# them there) would not run. Then it drops tests, fixtures and benchmarks, builds the web UI's page and checks
# the CLI starts.
#
# Usage: scripts/install-production.sh DIR [pnpm install flags, e.g. --offline --store-dir PATH]
set -euo pipefail
dir="${1:?usage: scripts/install-production.sh DIR [pnpm install flags]}"
shift
cd "$dir"

pnpm install --prod --frozen-lockfile --ignore-scripts "$@"

# No build step: Node 24 runs the .ts sources as they are. What only tests and benchmarks use goes.
find packages -name node_modules -prune -o \
  \( -type d \( -name bench -o -name testdata \) -prune -print0 \) -o \
  \( -type f \( -name '*.test.ts' -o -name test-support.ts \) -print0 \) | xargs -0 rm -rf

# The web UI's page (Preact + htm), bundled by esbuild into packages/ui/dist/ui, where `--ui-addr` serves it.
node packages/ui/src/build.ts

node packages/cli/bin/syncline.js --help >/dev/null

#!/usr/bin/env bash
# Sourced by ./pnpm and .ci/run: makes sure this machine has what the project needs, then puts the
# project's own Node 24 and pnpm first on PATH. Everything comes from package registries, so a fresh
# machine needs nothing but bash, curl-less npm (any version) and, for the test control plane, Go.
set -euo pipefail

SYNCLINE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODE_VERSION="24.21.0"
PNPM_VERSION="10.34.8"
TOOLCHAIN_DIR="$SYNCLINE_ROOT/.toolchain"

say() { printf '\033[2m[toolchain]\033[0m %s\n' "$*" >&2; }

ensure_debian_packages() {
  local missing=()
  command -v git >/dev/null 2>&1 || missing+=(git)
  [ ${#missing[@]} -eq 0 ] && return 0
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    say "installing ${missing[*]} from Debian packages"
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
  else
    echo "Syncline needs: ${missing[*]}. Install it with your package manager (Debian: apt-get install ${missing[*]})." >&2
    exit 1
  fi
}

ensure_node_and_pnpm() {
  local bin="$TOOLCHAIN_DIR/node_modules/.bin"
  if [ -x "$bin/node" ] && [ "$("$bin/node" --version 2>/dev/null)" = "v$NODE_VERSION" ] \
     && [ "$("$bin/pnpm" --version 2>/dev/null)" = "$PNPM_VERSION" ]; then
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "Syncline installs Node $NODE_VERSION from the npm registry and needs any npm to do it: install Node.js/npm first." >&2
    exit 1
  fi
  say "installing Node $NODE_VERSION and pnpm $PNPM_VERSION into .toolchain/ (from the npm registry)"
  rm -rf "$TOOLCHAIN_DIR"
  mkdir -p "$TOOLCHAIN_DIR"
  printf '{"name":"syncline-toolchain","private":true}\n' > "$TOOLCHAIN_DIR/package.json"
  npm install --prefix "$TOOLCHAIN_DIR" --no-save --no-audit --no-fund --loglevel=error \
    "node@$NODE_VERSION" "pnpm@$PNPM_VERSION" >&2
}

ensure_dependencies() {
  local stamp="$SYNCLINE_ROOT/node_modules/.syncline-lock-hash"
  local want
  want="$(cat "$SYNCLINE_ROOT/pnpm-lock.yaml" "$SYNCLINE_ROOT"/package.json "$SYNCLINE_ROOT"/packages/*/package.json "$SYNCLINE_ROOT"/test/support/package.json 2>/dev/null | sha256sum | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  say "installing dependencies (pnpm install)"
  (cd "$SYNCLINE_ROOT" && pnpm install --frozen-lockfile --reporter=silent >&2)
  echo "$want" > "$stamp"
}

ensure_debian_packages
ensure_node_and_pnpm
export PATH="$TOOLCHAIN_DIR/node_modules/.bin:$PATH"
export GOTOOLCHAIN=local
if [ "${SYNCLINE_SKIP_INSTALL:-}" != 1 ]; then
  ensure_dependencies
fi

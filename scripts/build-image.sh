#!/usr/bin/env bash
# Builds the Syncline image from the Dockerfile without a Docker daemon (buildah, chroot isolation, overlay
# or vfs storage: no daemon or user-namespace support needed), then unpacks it as an OCI runtime bundle
# (rootfs/ and config.json) so it can run without a container runtime. CI runs it through
# test/dockerfile/image.int.test.ts.
#
# Where the `node:` base image cannot be pulled (no Docker Hub), an equivalent base is built first: a
# minimal Debian bookworm (debootstrap --variant=minbase, docs, locales and apt lists removed, as in
# debian:bookworm-slim), the Node binary this checkout's toolchain installed from the npm registry's `node`
# package at /usr/local/bin/node, npm at /usr/local/lib/node_modules/npm, and the unprivileged user
# `node` with uid and gid 1000: the layout of node:<version>-bookworm-slim. The Dockerfile takes it through
# its BASE_IMAGE build argument, so the same Dockerfile steps run on either base.
#
# The render process (syncline-render) is built on this machine by the Go module's own build.sh
# (packages/render/engine; Go from the toolchain, modules from the Go module proxy) and given to the
# Dockerfile as its prebuilt binary (RENDER_ENGINE=prebuilt, build context render-engine-binary), so no
# golang image is pulled. It is cached under ~/.cache/syncline/render-engine/<hash of its sources>, the key
# test/support's ensureRenderEngine uses, so tests and image builds share one build.
#
# Usage: scripts/build-image.sh OUT_DIR [--pull]
#   --pull   use the Dockerfile's default base (node:…-bookworm-slim from a registry) instead
# Environment: SYNCLINE_IMAGE_STORAGE  buildah's storage root (default: OUT_DIR/../containers)
#              SYNCLINE_IMAGE_STORAGE_DRIVER  overlay or vfs (default: overlay where it works)
#              SYNCLINE_BUILD_CA      a CA bundle for the registry steps (default: $NODE_EXTRA_CA_CERTS, else
#                                     $SSL_CERT_FILE, else the system's /etc/ssl/certs/ca-certificates.crt)
# Writes OUT_DIR/oci (OCI image layout, tag `syncline`), OUT_DIR/bundle/{config.json,rootfs} and
# OUT_DIR/size.json ({"uncompressedBytes", "compressedBytes"}).
set -euo pipefail

SYNCLINE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: scripts/build-image.sh OUT_DIR [--pull]}"
pull="${2:-}"
NODE_VERSION="$(sed -n 's/^ARG NODE_VERSION=//p' "$SYNCLINE_ROOT/Dockerfile")"
NPM_VERSION="11.6.2"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

say() { printf '\033[2m[image]\033[0m %s\n' "$*" >&2; }

# buildah builds, debootstrap makes the base, umoci unpacks the result: Debian packages, installed here when
# missing, as scripts/toolchain.sh installs git.
ensure_image_tools() {
  local missing=()
  command -v buildah >/dev/null 2>&1 || missing+=(buildah)
  command -v umoci >/dev/null 2>&1 || missing+=(umoci)
  [ "$pull" = --pull ] || command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  [ ${#missing[@]} -eq 0 ] && return 0
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    say "installing ${missing[*]} from Debian packages"
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
  else
    echo "Building the Syncline image needs: ${missing[*]}, and root (debootstrap, chroot builds). Install them with your package manager (Debian: apt-get install ${missing[*]}) and run as root." >&2
    exit 1
  fi
}

storage="${SYNCLINE_IMAGE_STORAGE:-$(dirname "$out")/containers}"
# overlay when this kernel and filesystem allow it (each layer stores only its changes); else vfs, which
# works anywhere but copies the whole root filesystem for every layer (several times slower).
driver="${SYNCLINE_IMAGE_STORAGE_DRIVER:-}"
if [ -z "$driver" ]; then
  driver=vfs
  if grep -qw overlay /proc/filesystems; then
    probe="$(mktemp -d)"
    if buildah --root "$probe/root" --runroot "$probe/run" --storage-driver overlay from scratch >/dev/null 2>&1 &&
       buildah --root "$probe/root" --runroot "$probe/run" --storage-driver overlay mount working-container >/dev/null 2>&1; then
      driver=overlay
    fi
    buildah --root "$probe/root" --runroot "$probe/run" --storage-driver overlay rm --all >/dev/null 2>&1 || true
    rm -rf "$probe" 2>/dev/null || true
  fi
fi
bah() { buildah --root "$storage/$driver/root" --runroot "$storage/$driver/run" --storage-driver "$driver" "$@"; }

# The base is named by the hash of what makes it, so a changed Node version or recipe builds a new one.
base_key() {
  { sed -n '/^build_base()/,/^}/p' "${BASH_SOURCE[0]}"; echo "$NODE_VERSION $NPM_VERSION"; } | sha256sum | cut -c1-16
}

build_base() {
  local image="$1" work node
  node="$(command -v node)"
  if [ "$("$node" --version)" != "v$NODE_VERSION" ]; then
    echo "The base needs Node $NODE_VERSION (the Dockerfile's NODE_VERSION); $node is $("$node" --version). Run through ./pnpm, which puts the project's Node first on PATH." >&2
    exit 1
  fi
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  say "building the base $image: debootstrap bookworm (minbase) + Node $NODE_VERSION + npm $NPM_VERSION"
  debootstrap --variant=minbase bookworm "$work/rootfs" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  local r="$work/rootfs"
  rm -rf "$r"/usr/share/doc/* "$r"/usr/share/man/* "$r"/usr/share/info/* "$r"/usr/share/locale/* \
    "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/* "$r"/var/cache/debconf/*-old "$r"/var/log/* "$r"/dev/*
  install -D -m 0755 "$node" "$r/usr/local/bin/node"
  mkdir -p "$r/usr/local/lib/node_modules/npm"
  (cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
  tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$r/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$r/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$r/usr/local/bin/npx"
  chroot "$r" groupadd --gid 1000 node
  chroot "$r" useradd --uid 1000 --gid node --shell /bin/bash --create-home node

  local c
  c="$(bah from scratch)"
  cp -a "$r/." "$(bah mount "$c")/"
  bah umount "$c" >/dev/null
  bah config --env NODE_VERSION="$NODE_VERSION" --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd node --label org.opencontainers.image.description="Debian bookworm (minbase) with Node $NODE_VERSION, as node:$NODE_VERSION-bookworm-slim" "$c"
  bah commit --quiet --rm "$c" "$image" >/dev/null
}

# The hash of what goes into syncline-render's build, as test/support/src/render-engine.ts computes it:
# go.mod, go.sum, build.sh and the non-test .go files, sorted, each as name NUL contents NUL.
render_engine_key() {
  local dir="$SYNCLINE_ROOT/packages/render/engine" f
  (cd "$dir" && for f in $(ls | LC_ALL=C sort); do
    case "$f" in go.mod | go.sum | build.sh) ;; *_test.go) continue ;; *.go) ;; *) continue ;; esac
    printf '%s\0' "$f"; cat "$f"; printf '\0'
  done) | sha256sum | cut -c1-16
}

# Prints the directory holding syncline-render for this checkout's sources, building it when not cached.
ensure_render_engine() {
  local dir aside
  dir="${XDG_CACHE_HOME:-$HOME/.cache}/syncline/render-engine/$(render_engine_key)"
  if [ ! -x "$dir/syncline-render" ]; then
    if ! command -v go >/dev/null 2>&1; then
      echo "Building the image needs Go $(sed -n 's/^go //p' "$SYNCLINE_ROOT/packages/render/engine/go.mod") or later on PATH to build syncline-render (packages/render/engine/build.sh); or build with \`docker build .\`, whose golang stage builds it." >&2
      exit 1
    fi
    say "building syncline-render from packages/render/engine (first build for these sources; minutes)"
    mkdir -p "$dir"
    # Built aside, then renamed: a build that dies half way leaves no binary under the key.
    aside="$dir/syncline-render.$$"
    sh "$SYNCLINE_ROOT/packages/render/engine/build.sh" "$aside" >&2 || { rm -f "$aside"; exit 1; }
    mv -f "$aside" "$dir/syncline-render"
  fi
  printf '%s\n' "$dir"
}

ensure_image_tools
mkdir -p "$storage"
engine_dir="$(ensure_render_engine)"
args=(--build-arg RENDER_ENGINE=prebuilt --build-context "render-engine-binary=$engine_dir")
if [ "$pull" != --pull ]; then
  base="localhost/syncline-node-base:$NODE_VERSION-$(base_key)"
  bah inspect --type image "$base" >/dev/null 2>&1 || build_base "$base"
  args+=(--build-arg "BASE_IMAGE=$base")
fi

# The CA bundle this machine trusts (a TLS-inspecting proxy's CA, say) reaches the registry steps as a build
# secret, never a layer of the image.
ca="${SYNCLINE_BUILD_CA:-${NODE_EXTRA_CA_CERTS:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}}"
if [ -n "$ca" ] && [ -f "$ca" ]; then args+=(--secret "id=build-ca,src=$ca"); fi

say "building the image from the Dockerfile (buildah bud, chroot isolation)"
# Layers are kept (--layers): a rebuild after a source change reuses the base, pnpm and `pnpm fetch` steps.
bah bud --quiet --layers --isolation chroot "${args[@]}" -f "$SYNCLINE_ROOT/Dockerfile" -t localhost/syncline:build "$SYNCLINE_ROOT" >/dev/null

# Each source change leaves its layers behind as untagged images (the next rebuild's cache); past 3 GB
# they go, and the next rebuild fetches the dependencies again.
if [ "$(du -sm "$storage/$driver" | cut -f1)" -gt 3000 ]; then
  say "pruning buildah's untagged layers (storage over 3 GB)"
  bah rmi --prune >/dev/null 2>&1 || true
fi

rm -rf "$out"
mkdir -p "$out"
bah push --quiet localhost/syncline:build "oci:$out/oci:syncline"
umoci unpack --image "$out/oci:syncline" "$out/bundle" >/dev/null
uncompressed="$(du -sb "$out/bundle/rootfs" | cut -f1)"
# The registry transfer size: the gzip-compressed layer blobs of the image's manifest.
compressed="$(node -e '
  const fs = require("node:fs"), dir = process.argv[1];
  const index = JSON.parse(fs.readFileSync(dir + "/index.json", "utf8"));
  const blob = (d) => JSON.parse(fs.readFileSync(dir + "/blobs/" + d.replace(":", "/"), "utf8"));
  const manifest = blob(index.manifests[0].digest);
  process.stdout.write(String(manifest.layers.reduce((sum, l) => sum + l.size, 0)));
' "$out/oci")"
printf '{"uncompressedBytes":%s,"compressedBytes":%s}\n' "$uncompressed" "$compressed" > "$out/size.json"
say "image: $((uncompressed / 1000000)) MB unpacked, $((compressed / 1000000)) MB compressed; bundle in $out/bundle"

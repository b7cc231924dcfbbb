# syntax=docker/dockerfile:1
# Syncline operator image: Node 24, production dependencies only, non-root, `syncline run`.
# The install steps live in scripts/install-production.sh, which CI runs too (test/dockerfile).
ARG NODE_VERSION=24.21.0
# Any image with the layout of node:<NODE_VERSION>-bookworm-slim (Node and npm on PATH, a user with uid 1000).
# Where Docker Hub is out of reach, scripts/build-image.sh builds one from Debian and the npm registry and
# passes it here: `--build-arg BASE_IMAGE=localhost/syncline-node-base:…`.
ARG BASE_IMAGE=node:${NODE_VERSION}-bookworm-slim
# The render process for Kustomize, Helm and Jsonnet (syncline-render, packages/render/engine) goes to
# /usr/local/bin/syncline-render, where the chart's --render-engine points. Where it comes from:
#   source    (default) built here from the Go module by its build.sh in a golang stage, for a plain
#             `docker build .`; GO_IMAGE names the Go image (at least the go.mod's Go version).
#   prebuilt  a binary built beforehand (`packages/render/engine/build.sh DIR/syncline-render`), given as
#             the build context `render-engine-binary`: `--build-arg RENDER_ENGINE=prebuilt
#             --build-context render-engine-binary=DIR`. scripts/build-image.sh does this (no Docker Hub).
# Podman and Buildah: pass --build-arg RENDER_ENGINE=… either way (Buildah 1.28 resolves the stage below only
# from a command-line value, not from this default).
ARG RENDER_ENGINE=source
ARG GO_IMAGE=golang:1.26-bookworm

FROM ${GO_IMAGE} AS render-engine-source
WORKDIR /src
COPY packages/render/engine/ ./
RUN --mount=type=secret,id=build-ca \
    if [ -f /run/secrets/build-ca ]; then export SSL_CERT_FILE=/run/secrets/build-ca; fi; \
    sh build.sh /out/syncline-render

FROM scratch AS render-engine-prebuilt
COPY --from=render-engine-binary --chmod=0755 syncline-render /out/syncline-render

# The stage RENDER_ENGINE names; the builder skips the other one.
FROM render-engine-${RENDER_ENGINE} AS render-engine

FROM ${BASE_IMAGE} AS build
ARG PNPM_VERSION=10.34.8
# Behind a TLS-inspecting proxy the registry's certificate chain ends in your CA: pass its bundle as a build
# secret (`--secret id=build-ca,src=/path/ca.crt`). It is mounted for these two steps only, never in a layer.
RUN --mount=type=secret,id=build-ca \
    if [ -f /run/secrets/build-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/build-ca; fi; \
    npm install --global --no-audit --no-fund --no-update-notifier --loglevel=error "pnpm@${PNPM_VERSION}"
WORKDIR /app
# Dependencies first, from the lockfile alone: this layer is reused until pnpm-lock.yaml changes.
COPY pnpm-lock.yaml pnpm-workspace.yaml ./
RUN --mount=type=secret,id=build-ca \
    if [ -f /run/secrets/build-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/build-ca; fi; \
    pnpm fetch --prod
COPY . .
RUN scripts/install-production.sh /app --offline

FROM ${BASE_IMAGE}
ENV NODE_ENV=production
# A young generation of at most 3 × 4 MB: V8 reads the bound only at start, and its default (3 × 32 MB) is
# most of the operator's peak RSS in a burst of reconciles (test/support's OPERATOR_NODE_FLAGS, same value).
ENV NODE_OPTIONS=--max-semi-space-size=4
# Two glibc malloc arenas rather than up to 8 per core: each thread that allocates (V8's compiler and GC helpers,
# libuv's pool) would get one of its own, and what it freed stays resident there (test/support's OPERATOR_ENV).
ENV MALLOC_ARENA_MAX=2
WORKDIR /app
# Owned by root and not writable by the user the operator runs as; the Git snapshot cache goes to a
# volume (the Helm chart mounts an emptyDir at /var/cache/syncline and passes --cache-dir).
COPY --from=build /app /app
# Root-owned and 0755: the operator's user runs it and cannot replace it.
COPY --from=render-engine --chown=0:0 --chmod=0755 /out/syncline-render /usr/local/bin/syncline-render
# As root, before USER: `syncline` on PATH is the binary bundled into JavaScript by install-production.sh
# (packages/cli/build/bundle.ts; the package's bin, packages/cli/bin/syncline.js, would run the .ts sources and
# load Node's TypeScript stripper, ~18 MB more resident memory), so `docker run IMAGE status -A` works; the cache
# directory is the one path the operator's user may write.
RUN ln -s /app/packages/cli/dist/syncline/syncline.mjs /usr/local/bin/syncline \
 && mkdir -p /var/cache/syncline && chown 1000:1000 /var/cache/syncline
# The base image's unprivileged `node` user, numerically so runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 8080 9292 9393
ENTRYPOINT ["syncline"]
CMD ["run", "--cache-dir=/var/cache/syncline"]

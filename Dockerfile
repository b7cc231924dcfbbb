# syntax=docker/dockerfile:1
# Syncline operator image: Node 24, production dependencies only, non-root, `syncline run`.
# The install steps live in scripts/install-production.sh, which CI runs too (test/dockerfile).
ARG NODE_VERSION=24.21.0

FROM node:${NODE_VERSION}-bookworm-slim AS build
ARG PNPM_VERSION=10.34.8
RUN npm install --global --no-audit --no-fund --loglevel=error "pnpm@${PNPM_VERSION}"
WORKDIR /app
# Dependencies first, from the lockfile alone: this layer is reused until pnpm-lock.yaml changes.
COPY pnpm-lock.yaml pnpm-workspace.yaml ./
RUN pnpm fetch --prod
COPY . .
RUN scripts/install-production.sh /app --offline

FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production
# A young generation of at most 3 × 8 MB: V8 reads the bound only at start, and its default (3 × 32 MB) is
# most of the operator's peak RSS in a burst of reconciles (test/support's OPERATOR_NODE_FLAGS, same value).
ENV NODE_OPTIONS=--max-semi-space-size=8
WORKDIR /app
# Owned by root and not writable by the user the operator runs as; the Git snapshot cache goes to a
# volume (the Helm chart mounts an emptyDir at /var/cache/syncline and passes --cache-dir).
COPY --from=build /app /app
RUN mkdir -p /var/cache/syncline && chown 1000:1000 /var/cache/syncline
# The node image's unprivileged `node` user, numerically so runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 8080 9292
# `syncline` on PATH is the package's bin (packages/operator/bin/syncline.js): `docker run IMAGE status -A`.
RUN ln -s /app/packages/operator/bin/syncline.js /usr/local/bin/syncline
ENTRYPOINT ["syncline"]
CMD ["run", "--cache-dir=/var/cache/syncline"]

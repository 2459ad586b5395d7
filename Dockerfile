# syntax=docker/dockerfile:1.7
# One image for every process of webhook-fanout: the entrypoint is the CLI
# (`webhook-fanout <ingest|consumer|worker|operator|migrate|setup-transport>`), the Helm chart picks
# the command per Deployment. Runs as a non-root user on a read-only root filesystem: the only
# writable path it needs is /tmp (HOME points there), mounted as an emptyDir by the chart.
#
#   docker build -t webhook-fanout:dev .
#   docker run --rm --read-only --tmpfs /tmp webhook-fanout:dev --help
#
# Build arguments: NODE_IMAGE (pin it by digest in CI: node:24-bookworm-slim@sha256:...),
# VERSION, REVISION, CREATED, SOURCE (OCI labels).
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: all dependencies, compile TypeScript to dist/ -------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
ENV npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
COPY package.json package-lock.json ./
# the root's postinstall applies patches/ (patch-package, a devDependency here)
COPY scripts/postinstall.mjs ./scripts/
COPY patches ./patches
# install scripts run (package.json "allowScripts": bcrypt, protobufjs, @swc/core, ...); the
# native packages ship prebuilt binaries for linux-x64/arm64 glibc, so no compiler is needed.
# `npm install`, not `npm ci`: the lock file lacks other platforms' optional packages (the
# registry it was made against has none), which `npm ci` refuses; versions still come from it.
RUN --mount=type=cache,target=/root/.npm npm install --no-save
COPY tsconfig.json tsconfig.build.json console.vite.config.ts ./
COPY scripts/bundle-workflows.ts ./scripts/
COPY scripts/console/build.ts ./scripts/console/
COPY src ./src
# `npm run build`: tsc (src/ -> dist/, without dev mode and the console: tsconfig.build.json), the
# prebuilt workflow bundles, dist/workflow-bundle.js and (with the tracing interceptors)
# dist/workflow-bundle-traced.js, and the web console (Vite, devDependencies of
# this stage) into dist/console. The worker loads the bundle, so the workflow sources go
# (names.js and start/ stay: the consumer and the admin API start workflows with them).
RUN npm run build \
 && test -f dist/console/index.html && test ! -e dist/console/.vite \
 && rm dist/workflows/index.js* dist/workflows/fanout.js* \
 && chmod 0755 dist/cmd/cli.js \
 && test -f dist/workflow-bundle.js && test -f dist/workflow-bundle-traced.js && test -f dist/workflows/names.js \
 && test ! -e dist/dev && test ! -e dist/cmd/dev.js

# ---- deps: production dependencies only, pruned -----------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
COPY package.json package-lock.json ./
COPY scripts/postinstall.mjs ./scripts/
COPY scripts/image/prune-node-modules.sh /usr/local/bin/prune-node-modules
# the npm cache is a cache mount: it never lands in a layer (and can not be removed: busy)
RUN --mount=type=cache,target=/root/.npm npm install --no-save --omit=dev
# patch-package is a devDependency: the patched package comes from the build stage, where
# `npm install` applied patches/ (the worker checks at start-up that the patch is there)
COPY --from=build /src/node_modules/@temporalio/worker/lib ./node_modules/@temporalio/worker/lib
# prune: this platform's native libraries only, no declarations/maps/docs/tests of dependencies
RUN prune-node-modules /app/node_modules

# ---- runtime ----------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=https://github.com/webhook-fanout/webhook-fanout
LABEL org.opencontainers.image.title="webhook-fanout" \
      org.opencontainers.image.description="Kubernetes-native webhook fanout: receives third-party webhooks and durably re-delivers each to every configured downstream endpoint." \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.base.name="docker.io/library/node:24-bookworm-slim"

# HOME and TMPDIR in /tmp: with a read-only root filesystem nothing else is writable.
# MALLOC_ARENA_MAX: glibc gives each thread that allocates (libuv's pool, the worker's Temporal
# core runtime) an arena of its own; two keep the worker's native memory about 30 MB smaller
# (docs/benchmarks.md). NODE_OPTIONS: each component's chart settings add its V8 heap limits;
# source maps map our own frames only (src/cmd/cli.ts: the dependencies' maps are not loaded).
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    HOME=/tmp \
    TMPDIR=/tmp \
    npm_config_cache=/tmp/.npm \
    npm_config_update_notifier=false \
    NODE_OPTIONS=--enable-source-maps \
    PORT=8080 \
    MANAGEMENT_PORT=9090

WORKDIR /app
# owned by root and not writable by the runtime user: the application can not modify itself
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
# migrations are SQL files read at run time by `webhook-fanout migrate` (dist/db/migrate.js
# resolves ../../migrations, as src/db/migrate.ts does from a checkout)
COPY migrations ./migrations
RUN ln -s /app/dist/cmd/cli.js /usr/local/bin/webhook-fanout

# the "node" user of the base image (uid/gid 1000), numeric so runAsNonRoot can verify it
USER 1000:1000
# 8080: ingest and admin API (PORT); 9090: /metrics, /healthz, /readyz (MANAGEMENT_PORT)
EXPOSE 8080 9090
# the chart repeats this as the container's command when a component has nodeFlags (node <flags>
# /app/dist/cmd/cli.js; test/chart/render.test.ts reads it from here)
ENTRYPOINT ["node", "/app/dist/cmd/cli.js"]
CMD ["--help"]

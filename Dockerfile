# One image for every process role: `docker run <image> api|dispatcher|worker|migrate|cli|platform-sim`.
# Build: `docker build -t listing .` (on an engine without BuildKit: DOCKER_BUILDKIT=0 works too).
ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build: the locked dependencies, the build, then only production dependencies ----
FROM ${NODE_IMAGE} AS build
# Marks this stage's images, so CI can remove the ones a newer build replaced (ci-containers.sh).
LABEL listing.stage=build
# python3/make/g++: better-sqlite3's addon (the simulator's state file) is compiled from source.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/* \
 && npm install -g --no-fund --no-audit pnpm@12.4.2
WORKDIR /app
# Manifests first: the install layer stays cached while only sources change.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml tsconfig.base.json .swcrc ./
COPY apps/api/package.json apps/api/
COPY apps/platform-sim/package.json apps/platform-sim/
COPY apps/platform-sim/scripts apps/platform-sim/scripts
COPY packages/client/package.json packages/client/
COPY packages/db/package.json packages/db/
COPY packages/idempotency/package.json packages/idempotency/
COPY packages/outbox/package.json packages/outbox/
COPY packages/testing/package.json packages/testing/
COPY bench/package.json bench/
RUN pnpm install --frozen-lockfile --reporter=append-only
COPY . .
RUN pnpm run build \
 # Prune to production dependencies (pnpm keeps the workspace links), then drop what no role runs.
 && CI=true pnpm install --frozen-lockfile --prod --offline --reporter=append-only \
 && rm -rf bench docs scripts/local-images packages/testing packages/client \
      apps/*/src apps/*/test packages/*/src packages/*/test \
 && find . -name '*.map' -path '*/dist/*' -delete

# ---- runtime: non-root, an init process, production mode ----
FROM ${NODE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    OPS_HOST=0.0.0.0 \
    OBJECT_STORAGE_DIR=/app/var/objects \
    SIM_STATE_FILE=/app/var/platform-sim.db
WORKDIR /app
COPY --from=build /app /app
# var/: media objects and the simulator's state (mount a volume there); the rest is read-only.
RUN mkdir -p /app/var/objects && chown -R node:node /app/var \
 && install -m 755 scripts/container/entrypoint.sh /usr/local/bin/listing
USER node
EXPOSE 3000 9464
# Per role: api → GET :PORT/health/ready; dispatcher, worker → GET :OPS_PORT/health/ready;
# platform-sim → GET :PORT/health; migrate and cli → always healthy (they exit).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "/app/scripts/container/healthcheck.cjs"]
ENTRYPOINT ["tini", "--", "listing"]
CMD ["api"]

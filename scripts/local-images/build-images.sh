#!/usr/bin/env bash
# Builds the local images from Debian packages (no image registry), then tags them with the names
# the project uses:
#   localhost/postgres:15-alpine, localhost/redis:7-alpine  (Testcontainers with
#       TESTCONTAINERS_HUB_IMAGE_NAME_PREFIX=localhost/ : no harness change, no official name shadowed)
#   postgres:15-alpine, redis:7-alpine, node:20-bookworm-slim (only with --compose-names: what
#       docker-compose.yml names; shadows the official names on this engine)
# usage: build-images.sh [--compose-names] [--no-node]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
COMPOSE_NAMES=0; NODE=1
for a in "$@"; do case "$a" in --compose-names) COMPOSE_NAMES=1 ;; --no-node) NODE=0 ;; *) echo "unknown $a" >&2; exit 2 ;; esac; done
export DOCKER_BUILDKIT=0 # the docker CLI here has no buildx; the engine is 20.10
t() { local s=$SECONDS; "$@"; echo "  ($(( SECONDS - s ))s)" >&2; }

docker image inspect local/debian:bookworm >/dev/null 2>&1 || t bash "$HERE/build-base.sh"
echo "postgres" >&2; t docker build -q -t local/postgres:15 "$HERE/postgres" >/dev/null
echo "redis" >&2;    t docker build -q -t local/redis:7 "$HERE/redis" >/dev/null
docker tag local/postgres:15 localhost/postgres:15-alpine
docker tag local/redis:7 localhost/redis:7-alpine

if [ "$NODE" = 1 ]; then
  ctx="$(mktemp -d)"; trap 'rm -rf "$ctx"' EXIT
  cp "$HERE/node/Dockerfile" "$HERE/node/docker-entrypoint.sh" "$ctx/"
  node_bin="$(readlink -f "$(command -v node)")"
  "$node_bin" -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=18)?0:1)' \
    || { echo "host node $("$node_bin" --version) is older than 20.18" >&2; exit 1; }
  cp "$node_bin" "$ctx/node"
  npm_root="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")" # …/node_modules/npm
  mkdir -p "$ctx/lib"; cp -a "$npm_root" "$ctx/lib/npm"
  [ -d "$(dirname "$npm_root")/corepack" ] && cp -a "$(dirname "$npm_root")/corepack" "$ctx/lib/corepack"
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/ca-bundle.crt"
  # Node's headers, as the official image ships them: native addons build without a download.
  cp -a "$(dirname "$(dirname "$node_bin")")/include" "$ctx/include"
  echo "node ($("$node_bin" --version))" >&2; t docker build -q -t local/node:20 "$ctx" >/dev/null
fi

if [ "$COMPOSE_NAMES" = 1 ]; then
  docker tag local/postgres:15 postgres:15-alpine
  docker tag local/redis:7 redis:7-alpine
  [ "$NODE" = 1 ] && docker tag local/node:20 node:20-bookworm-slim
fi
docker images --format '{{.Repository}}:{{.Tag}}\t{{.ID}}\t{{.Size}}' | grep -E '^(local|localhost)/|^(postgres:15-alpine|redis:7-alpine|node:20-bookworm-slim)' >&2

#!/usr/bin/env bash
# The container half of CI (.ci/run calls it after the suites): a Docker engine, then
#   (a) the integration project through Testcontainers (TEST_DATABASE_URL/TEST_REDIS_URL unset),
#   (b) the project image, the compose stack from docker-compose.yml with a smoke flow through its
#       loopback ports, and each role of the image started in production mode as a non-root user.
# Everything it creates (containers, networks, volumes) is removed at the end, also on failure.
#
# No image registry is reachable on the CI machines: scripts/local-images/ builds Debian-based
# stand-ins for postgres:15-alpine, redis:7-alpine and node:20-bookworm-slim first. Elsewhere
# set LOCAL_IMAGES=0 and the official images are pulled as usual.
#   usage: bash scripts/ci-containers.sh [COMPOSE_FILE]
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
COMPOSE_FILE="${1:-docker-compose.yml}"
PROJECT="listing-ci-$$"
IMAGE="listing:ci-$$"
export DOCKER_BUILDKIT="${DOCKER_BUILDKIT:-0}" # the Debian docker CLI here has no buildx
s0=$SECONDS
step() { log "$* (+$(( SECONDS - s0 ))s)"; }

ensure_docker() {
  if ! command -v dockerd >/dev/null || ! command -v docker-compose >/dev/null || ! command -v debootstrap >/dev/null; then
    step "installing docker.io, docker-compose, debootstrap (apt)"
    apt_install docker.io docker-compose debootstrap
  fi
  if ! docker info >/dev/null 2>&1; then
    step "starting dockerd"
    (nohup dockerd >"${TMPDIR:-/tmp}/dockerd.log" 2>&1 &)
    for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
    docker info >/dev/null 2>&1 || { tail -n 20 "${TMPDIR:-/tmp}/dockerd.log" >&2; exit 1; }
  fi
}

compose() { docker-compose -p "$PROJECT" -f "$COMPOSE_FILE" "$@"; }

cleanup() {
  local rc=$?
  step "removing what this run created"
  if [ "$rc" != 0 ] && [ -n "${COMPOSE_UP:-}" ]; then compose logs --no-color --tail 40 >&2 || true; fi
  compose down -v --remove-orphans >/dev/null 2>&1 || true
  local ids # one query per label: docker ANDs the filters of one query
  ids="$(docker ps -aq --filter "label=listing.ci=$PROJECT"; docker ps -aq --filter label=org.testcontainers=true)"
  [ -z "$ids" ] || docker rm -f -v $ids >/dev/null 2>&1 || true
  docker image rm "$IMAGE" >/dev/null 2>&1 || true
  exit "$rc"
}
trap cleanup EXIT

ensure_docker
if [ "${LOCAL_IMAGES:-1}" = 1 ]; then
  step "building the local base images (no registry here)"
  bash scripts/local-images/build-images.sh --compose-names >/dev/null
fi

step "(a) the integration project through Testcontainers"
(
  unset TEST_DATABASE_URL TEST_REDIS_URL
  export TESTCONTAINERS_RYUK_DISABLED=true # testcontainers/ryuk cannot be pulled: cleanup removes by label
  export TESTCONTAINERS_HUB_IMAGE_NAME_PREFIX=localhost/ # postgres:15-alpine → the local stand-in
  export TESTCONTAINERS_HOST_OVERRIDE=localhost # the machine has /.dockerenv: skip the gateway probe
  # One worker, as before the suites ran two: in a container PostgreSQL answers slower, and once
  # (2026-12-02) the dispatcher fairness test saw its small workspace split across claims there.
  npx jest --selectProjects integration --maxWorkers=1
)

step "(b) the project image"
# The build stage under a fixed tag: the next run reuses it as its cache (the install layers),
# and the one it replaces, otherwise left dangling after every run with new sources, is removed.
docker build -q --target build -t listing:ci-build . >/dev/null
docker build -q -t "$IMAGE" . >/dev/null
docker image prune -f --filter label=listing.stage=build >/dev/null
docker images "$IMAGE" --format 'image size: {{.Size}}'

step "compose: up (${COMPOSE_FILE})"
export LISTING_IMAGE="$IMAGE" API_PORT="${CI_API_PORT:-13000}" SIM_PORT="${CI_SIM_PORT:-14010}"
COMPOSE_UP=1
compose up -d --no-build
step "compose: smoke flow"
node scripts/compose-smoke.mjs "http://127.0.0.1:$API_PORT" "http://127.0.0.1:$SIM_PORT"
for service in api dispatcher worker platform-sim; do
  for _ in $(seq 1 60); do
    state="$(docker inspect -f '{{.State.Health.Status}}' "$(compose ps -q "$service")")"
    [ "$state" = healthy ] && break
    sleep 1
  done
  [ "$state" = healthy ] || { echo "compose: $service is $state" >&2; exit 1; }
done
echo "compose: api, dispatcher, worker and platform-sim are healthy"

step "the image's roles in production mode (non-root)"
network="$(docker inspect -f '{{range $k, $v := .NetworkSettings.Networks}}{{$k}}{{end}}' "$(compose ps -q api)")"
prod_env=(
  -e NODE_ENV=production
  -e ADMIN_DATABASE_URL=postgres://postgres:postgres@postgres:5432/postgres
  -e DATABASE_URL=postgres://app_user:app_user@postgres:5432/listing
  -e OUTBOX_DATABASE_URL=postgres://outbox_agent:outbox_agent@postgres:5432/listing
  -e OWNER_DATABASE_PASSWORD=listing_owner
  -e REDIS_URL=redis://redis:6379
  -e PLATFORM_BASE_URL=http://platform-sim:4010
  -e "CREDENTIAL_KEYS=ci-1:$(head -c 32 /dev/urandom | base64)" -e CREDENTIAL_KEY_ID=ci-1
  -e "IDEMPOTENCY_FINGERPRINT_KEYS=ci-1:$(head -c 24 /dev/urandom | base64 | tr -d '=+/')" -e IDEMPOTENCY_FINGERPRINT_KEY_ID=ci-1
  -e "AUTH_REFRESH_KEY=$(head -c 48 /dev/urandom | base64 | tr -d '=+/')"
)
docker run --rm --label "listing.ci=$PROJECT" --network "$network" "${prod_env[@]}" "$IMAGE" migrate
echo "migrate: exit 0"
for role in api dispatcher worker; do
  id="$(docker run -d --rm --label "listing.ci=$PROJECT" --network "$network" "${prod_env[@]}" "$IMAGE" "$role")"
  for _ in $(seq 1 60); do docker exec "$id" node /app/scripts/container/healthcheck.cjs && break; sleep 0.5; done
  docker exec "$id" node /app/scripts/container/healthcheck.cjs || { docker logs "$id" | tail -n 20 >&2; exit 1; }
  echo "$role: ready as uid $(docker exec "$id" id -u)"
  [ "$(docker exec "$id" id -u)" != 0 ] || { echo "$role runs as root" >&2; exit 1; }
  docker stop -t 30 "$id" >/dev/null
done
leftover="$(docker ps -aq --filter "label=listing.ci=$PROJECT")"
[ -z "$leftover" ] || docker rm -f $leftover >/dev/null
step "containers: passed"

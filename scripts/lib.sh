# Shared by scripts/start.sh, scripts/test.sh and .ci/run. Each function is idempotent: it
# installs or starts only what is missing, so the scripts are fast on a prepared machine.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PNPM_VERSION=12.4.2
export ADMIN_DATABASE_URL="${ADMIN_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  if [ -z "${APT_UPDATED:-}" ]; then as_root apt-get update -qq; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_pnpm() {
  if [ "$(pnpm --version 2>/dev/null || true)" != "$PNPM_VERSION" ]; then
    log "installing pnpm $PNPM_VERSION"
    as_root npm install -g --silent "pnpm@$PNPM_VERSION"
  fi
}

ensure_dependencies() {
  ensure_pnpm
  log "installing dependencies (frozen lockfile)"
  (cd "$ROOT" && pnpm install --frozen-lockfile --reporter=append-only | tail -n 3)
}

postgres_ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }

ensure_postgres() {
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    log "installing PostgreSQL (apt)"
    apt_install postgresql postgresql-client
  fi
  if ! postgres_ready; then
    local version
    version="$(ls /etc/postgresql | sort -V | tail -n 1)"
    log "starting PostgreSQL $version"
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    for _ in $(seq 1 60); do postgres_ready && break; sleep 0.5; done
    postgres_ready || { echo "PostgreSQL did not start" >&2; exit 1; }
  fi
  # A stock Debian cluster asks for a password over TCP: give the superuser the one the
  # scripts use. Harmless where trust auth is configured.
  if ! psql "$ADMIN_DATABASE_URL" -Atqc 'select 1' >/dev/null 2>&1; then
    log "setting the local postgres superuser password"
    (cd / && as_root runuser -u postgres -- psql -qc "ALTER ROLE postgres PASSWORD 'postgres'") >/dev/null
  fi
}

redis_ready() { redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; }

ensure_redis() {
  if ! command -v redis-server >/dev/null 2>&1; then
    log "installing Redis (apt)"
    apt_install redis-server
  fi
  if ! redis_ready; then
    log "starting Redis"
    mkdir -p /tmp/redis-listing
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /tmp/redis-listing --logfile /tmp/redis-listing/redis.log
    for _ in $(seq 1 40); do redis_ready && break; sleep 0.25; done
    redis_ready || { echo "Redis did not start" >&2; exit 1; }
  fi
}

# Debian's chromium for the browser tests (playwright-core drives /usr/bin/chromium; never a
# downloaded browser).
ensure_chromium() {
  if [ ! -x /usr/bin/chromium ]; then
    log "installing chromium (apt)"
    apt_install chromium
  fi
}

# Debian's PgBouncer (1.18), for the suites that run through a pooler (docs/scaling.md). The
# package's own service is not used: each test starts one on a free port.
ensure_pgbouncer() {
  if [ ! -x /usr/sbin/pgbouncer ]; then
    log "installing pgbouncer (apt)"
    apt_install pgbouncer
  fi
}

ensure_services() {
  ensure_postgres
  ensure_redis
}

build() {
  log "building"
  (cd "$ROOT" && pnpm run build >/dev/null)
}

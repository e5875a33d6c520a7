#!/usr/bin/env bash
# Runs every test suite (unit, integration, e2e) against a real PostgreSQL and Redis, then the
# idempotency and outbox suites once more through PgBouncer, and once more on a Redis Cluster.
# Installs and starts what is missing. To use Testcontainers instead (Docker engine), run
# `pnpm test` with TEST_DATABASE_URL and TEST_REDIS_URL unset.
source "$(dirname "$0")/lib.sh"

ensure_dependencies
ensure_services
ensure_chromium
ensure_pgbouncer
export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/listing_test}"
export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"
cd "$ROOT"
pnpm test "$@" # builds first: the e2e suites run the built processes
# Then the idempotency and outbox suites again, every application connection through PgBouncer in
# transaction mode (TEST_POOLER; docs/scaling.md). Skipped when arguments narrow the run.
[ $# -gt 0 ] || pnpm run test:pooled
# Then the outbox, idempotency and login-limit suites on a 3-master Redis Cluster the harness starts
# (TEST_REDIS_CLUSTER; REDIS_CLUSTER=1 and a hash-tagged prefix), without the two tests that fault
# one Redis server of their own (redis-outage, redis-failover) and the one that starts a cluster of
# its own (cluster-failover).
[ $# -gt 0 ] || pnpm run test:cluster

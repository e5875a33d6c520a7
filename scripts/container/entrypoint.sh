#!/bin/sh
# The image's entry point: the first argument names the process role (see Dockerfile).
set -e
role="${1:-api}"
[ $# -gt 0 ] && shift
# The health check runs apart from this process: it reads the role from here.
echo "$role" > /tmp/listing-role
case "$role" in
  api) exec node /app/apps/api/dist/main.js "$@" ;;
  dispatcher) export OPS_PORT="${OPS_PORT:-9464}"; exec node /app/apps/api/dist/dispatcher.js "$@" ;;
  worker) export OPS_PORT="${OPS_PORT:-9464}"; exec node /app/apps/api/dist/worker.js "$@" ;;
  # Roles, database and migrations (ADMIN_DATABASE_URL, DATABASE_URL); exits 0 when done.
  migrate) exec node /app/packages/db/dist/setup-cli.js "$@" ;;
  cli) exec node /app/apps/api/dist/cli.js "$@" ;;
  platform-sim) exec node /app/apps/platform-sim/dist/main.js "$@" ;;
  *) echo "listing: unknown role '$role' (api, dispatcher, worker, migrate, cli, platform-sim)" >&2; exit 64 ;;
esac

#!/usr/bin/env bash
# Runs the whole system on this machine: installs what is missing, starts PostgreSQL and Redis
# when they are not running, applies migrations, then runs every process role in the
# foreground. Ctrl-C (or SIGTERM) stops them all gracefully.
source "$(dirname "$0")/lib.sh"

ensure_dependencies
ensure_services
build
cd "$ROOT"
log "preparing the database (roles, database, migrations)"
node packages/db/dist/setup-cli.js

export NODE_ENV="${NODE_ENV:-development}"
pids=()
run_role() { # name, command...
  local name=$1; shift
  log "starting $name"
  # Output goes through a process substitution, so $! is the role's own pid (not a subshell's).
  # The prefixing sed ignores INT/TERM (Ctrl-C reaches the whole process group): it must outlive
  # its role, which logs while it shuts down and would block on a closed pipe. It ends at EOF.
  "$@" > >(trap '' INT TERM; exec sed -u "s/^/[$name] /") 2>&1 &
  pids+=($!)
}
stop_all() {
  trap - INT TERM EXIT
  log "stopping"
  kill -TERM "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
}
trap stop_all INT TERM EXIT

# apps/api/roles.json maps each process role to its entry point and environment.
# dispatcher and worker expose /metrics and health on their own ops port (the api serves its own).
declare -A ops_port=([dispatcher]="${DISPATCHER_OPS_PORT:-9101}" [worker]="${WORKER_OPS_PORT:-9102}")
while read -r role entry envs; do
  read -r -a role_env <<< "$envs"
  if [ -n "${ops_port[$role]:-}" ]; then role_env+=("OPS_PORT=${ops_port[$role]}"); fi
  run_role "$role" env "${role_env[@]}" node "apps/api/$entry"
done < <(node -e '
  for (const [role, { entry, env = {} }] of Object.entries(require("./apps/api/roles.json")))
    console.log(role, entry, ...Object.entries(env).map(([k, v]) => `${k}=${v}`));')
# The first role to exit stops the rest: a half-running system hides failures.
wait -n

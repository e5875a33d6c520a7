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

# apps/api/roles.json maps each process role to its entry point and environment. node hands the
# fields over NUL-separated (a value may hold spaces), an empty field ending each role.
# dispatcher and worker expose /metrics and health on their own ops port (the api serves its own);
# an OPS_PORT in roles.json wins.
declare -A ops_port=([dispatcher]="${DISPATCHER_OPS_PORT:-9101}" [worker]="${WORKER_OPS_PORT:-9102}")
mapfile -d '' -t fields < <(node -e '
  for (const [role, { entry, env = {} }] of Object.entries(require("./apps/api/roles.json")))
    for (const field of [role, entry, ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ""])
      process.stdout.write(field + "\0");')
role="" entry="" role_env=()
for field in "${fields[@]}"; do
  if [ -n "$field" ] && [ -z "$role" ]; then role=$field
  elif [ -n "$field" ] && [ -z "$entry" ]; then entry=$field
  elif [ -n "$field" ]; then role_env+=("$field")
  else
    if [ -n "${ops_port[$role]:-}" ]; then role_env=("OPS_PORT=${ops_port[$role]}" "${role_env[@]}"); fi
    run_role "$role" env "${role_env[@]}" node "apps/api/$entry"
    role="" entry="" role_env=()
  fi
done
# The first role to exit stops the rest: a half-running system hides failures.
wait -n

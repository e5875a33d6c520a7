#!/usr/bin/env bash
# Regenerates the typed client's inputs in packages/client from the API itself: openapi.json (the
# document GET /docs/openapi.json serves, keys sorted; apps/api/src/openapi-dump.ts builds it
# without a port, PostgreSQL or Redis) and src/schema.ts (openapi-typescript's types of it), both
# formatted by Prettier. See packages/client/README.md.
#
#   bash scripts/client-generate.sh           # (pnpm client:generate) rewrites both files
#   bash scripts/client-generate.sh --check   # (pnpm client:check) fails with a diff when the
#                                             # committed files are not what the API generates
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

mode=write
case "${1:-}" in
  '') ;;
  --check) mode=check ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

spec="packages/client/openapi.json"
types="packages/client/src/schema.ts"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The dump runs the built API (apps/api/dist): build it and what it imports (swc, ~2 s).
if ! pnpm --filter '@listing/api...' run build >"$work/build.log" 2>&1; then
  cat "$work/build.log" >&2
  echo "client: the API does not build" >&2
  exit 1
fi
node apps/api/dist/openapi-dump.js "$work/openapi.json"
if ! packages/client/node_modules/.bin/openapi-typescript "$work/openapi.json" --output "$work/schema.ts" \
  --empty-objects-unknown >"$work/openapi-typescript.log" 2>&1; then
  cat "$work/openapi-typescript.log" >&2
  exit 1
fi
# The repository's Prettier settings, also for files outside it (the temporary ones).
node_modules/.bin/prettier --config .prettierrc.json --log-level warn --write "$work/openapi.json" "$work/schema.ts"

if [ "$mode" = check ]; then
  stale=0
  for pair in "$spec:$work/openapi.json" "$types:$work/schema.ts"; do
    committed="${pair%%:*}"
    generated="${pair#*:}"
    if [ ! -f "$committed" ]; then
      echo "client: $committed is missing" >&2
      stale=1
    elif ! diff -u --label "$committed (committed)" --label "$committed (from the API)" \
      "$committed" "$generated" | head -n 60; then
      stale=1
    fi
  done
  if [ "$stale" = 1 ]; then
    echo "client: packages/client is out of date with the API's OpenAPI document;" \
      "run \`pnpm client:generate\` and commit the result (never edit openapi.json or src/schema.ts by hand)" >&2
    exit 1
  fi
  log "client: $spec and $types match the API"
else
  cp "$work/openapi.json" "$spec"
  cp "$work/schema.ts" "$types"
  log "client: wrote $spec and $types"
fi

#!/usr/bin/env bash
# Regenerates sql/schema.sql: the schema the migrations produce, normalized pg_dump --schema-only
# of a throwaway database (listing_schema_<random>, migrated by packages/db's migrator, dropped
# afterwards) on the local server. See docs/database.md.
#
#   bash scripts/schema-snapshot.sh           # (pnpm db:schema) rewrites sql/schema.sql
#   bash scripts/schema-snapshot.sh --check   # (pnpm db:schema:check) fails with a diff when the
#                                             # committed file is not what the migrations produce
#
# ADMIN_DATABASE_URL: a superuser of the server (default from scripts/lib.sh); PG_DUMP: the
# pg_dump binary, of the server's major version (default: pg_dump on PATH).
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

mode=write
case "${1:-}" in
  '') ;;
  --check) mode=check ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

snapshot="sql/schema.sql"
generated="$(mktemp)"
trap 'rm -f "$generated"' EXIT

# packages/db runs from source (no build needed): ts-node only strips the types.
TS_NODE_TRANSPILE_ONLY=true TS_NODE_COMPILER_OPTIONS='{"rootDir":".","ignoreDeprecations":"6.0"}' \
  node -r ts-node/register packages/db/src/schema-snapshot-cli.ts >"$generated"

if [ "$mode" = check ]; then
  if [ ! -f "$snapshot" ]; then
    echo "schema snapshot: $snapshot is missing; run \`pnpm db:schema\` and commit it" >&2
    exit 1
  fi
  if ! diff -u --label "$snapshot (committed)" --label "$snapshot (from the migrations)" "$snapshot" "$generated"; then
    echo "schema snapshot: $snapshot differs from what the migrations produce;" \
      "run \`pnpm db:schema\` and commit the result (never edit it by hand)" >&2
    exit 1
  fi
  log "schema snapshot: $snapshot matches the migrations"
else
  cp "$generated" "$snapshot"
  log "schema snapshot: wrote $snapshot"
fi

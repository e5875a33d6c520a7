#!/usr/bin/env bash
# Runs the test suites of the committed HEAD under another Node.js major (22, 24, …) beside the
# machine's own: `bash scripts/test-node.sh 24 [test.sh arguments]`.
#
# The Node.js binary comes from the npm registry (the node-linux-<arch> package, headers
# included), since nodejs.org may be unreachable; it is kept under
# ~/.cache/listing-platform/node-<major>/ (outside the checkout, which jest and the linters crawl).
# HEAD is cloned next to it and installed there with that Node (better-sqlite3, the one addon built
# for one Node ABI, is compiled against its headers), so the main checkout's node_modules stay
# as they are. The suites use databases of their own (listing_node<major>_test); still, run one
# suite at a time on a 2-core machine.
source "$(dirname "$0")/lib.sh"

major="${1:?usage: scripts/test-node.sh <node major> [scripts/test.sh arguments]}"
shift
[[ "$major" =~ ^[0-9]+$ ]] || { echo "not a Node.js major version: $major" >&2; exit 2; }

ensure_pnpm
ensure_services
dir="${XDG_CACHE_HOME:-$HOME/.cache}/listing-platform/node-$major"
arch="$(node -p process.arch)"
if [ ! -x "$dir/node/bin/node" ]; then
  version="$(npm view "node-linux-$arch@$major" version | tail -n 1 | awk '{print $NF}' | tr -d "'")"
  log "fetching Node.js $version (node-linux-$arch from the npm registry)"
  rm -rf "$dir/node" && mkdir -p "$dir/node"
  tarball="$(cd "$dir" && npm pack --silent "node-linux-$arch@$version")"
  tar -xzf "$dir/$tarball" -C "$dir/node" --strip-components=1
  rm -f "$dir/$tarball"
fi
export PATH="$dir/node/bin:$PATH" npm_config_nodedir="$dir/node"
log "Node.js $(node --version): cloning $(git -C "$ROOT" rev-parse --short HEAD) into $dir/repo"
rm -rf "$dir/repo"
git clone --quiet --no-hardlinks "$ROOT" "$dir/repo"
export TEST_DATABASE_URL="postgres://postgres:postgres@127.0.0.1:5432/listing_node${major}_test"
export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"
bash "$dir/repo/scripts/test.sh" "$@"

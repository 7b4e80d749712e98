#!/usr/bin/env bash
# Builds the web dashboard into dashboard/dist, which the next build of the broker embeds: the
# TypeScript SDK it uses first (sdks/typescript/dist), then the dashboard, each with `npm ci`
# when its lock file changed and a build when a source changed. Does nothing when all is current.
#
# Usage: scripts/dashboard-build.sh [--optional]
#   --optional  without Node.js/npm, warn and succeed (the broker then serves a page saying how
#               to build the dashboard) instead of failing
set -euo pipefail
cd "$(dirname "$0")/.."

usable_node() {
  command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1 &&
    node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'
}

if ! usable_node; then
  message="dashboard: Node.js >= 20 and npm are needed to build the web dashboard"
  if [[ ${1:-} == --optional ]]; then
    echo "$message; skipped (the broker serves a page saying how to build it)" >&2
    exit 0
  fi
  echo "$message" >&2
  exit 1
fi

# True when $1 is missing or any of the following paths holds a newer file.
stale() {
  local stamp=$1
  shift
  [[ ! -e $stamp ]] && return 0
  [[ -n $(find "$@" -newer "$stamp" -type f -print -quit 2>/dev/null) ]]
}

install() {
  if stale "$1/node_modules/.package-lock.json" "$1/package-lock.json" "$1/package.json"; then
    echo "dashboard: npm ci in $1"
    (cd "$1" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

install sdks/typescript
if stale sdks/typescript/dist/index.js sdks/typescript/src sdks/typescript/package-lock.json sdks/typescript/tsconfig.json; then
  echo "dashboard: building the TypeScript SDK"
  (cd sdks/typescript && npm run --silent build)
fi

install dashboard
# The stamp, not dist's own files, records the last build: a build that produces the same files
# leaves dist untouched, so the broker (which embeds dist) is not compiled again for nothing (the
# SDK's own tests rebuild sdks/typescript/dist, which makes the dashboard look stale).
stamp=dashboard/node_modules/.regina-dist-stamp
if [[ ! -e dashboard/dist/index.html ]] || stale "$stamp" dashboard/src dashboard/public \
  dashboard/index.html dashboard/package-lock.json dashboard/vite.config.ts sdks/typescript/dist; then
  echo "dashboard: building dashboard/dist"
  rm -rf dashboard/.dist-next
  (cd dashboard && npm run --silent build -- --outDir .dist-next --emptyOutDir)
  if [[ -d dashboard/dist ]] && diff -rq dashboard/dist dashboard/.dist-next >/dev/null; then
    rm -rf dashboard/.dist-next
  else
    rm -rf dashboard/dist
    mv dashboard/.dist-next dashboard/dist
  fi
  touch "$stamp"
fi

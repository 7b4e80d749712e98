#!/usr/bin/env bash
# The TypeScript SDK's test entry point: installs the dependencies from package-lock.json, checks
# that the generated wire types match api/openapi.json, builds the package (with type
# declarations), type-checks sources and tests, checks formatting, then runs the whole vitest
# suite — unit tests and the conformance scenarios — against a throw-away PostgreSQL and broker
# started by ../run-tests.sh (set REGINA_BIN to use a prebuilt broker).
#
# Usage: sdks/typescript/test.sh [VITEST ARGS...]
set -euo pipefail
cd "$(dirname "$0")"

command -v node >/dev/null || { echo "test.sh: Node.js >= 20 is required" >&2; exit 1; }
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
  { echo "test.sh: Node.js >= 20 is required (found $(node --version))" >&2; exit 1; }

npm ci --no-audit --no-fund --loglevel=error
# The wire types are generated from the broker's OpenAPI document; a stale copy fails the suite.
npm run --silent generate:check >/dev/null ||
  { echo "test.sh: src/openapi.ts does not match api/openapi.json; run npm run generate" >&2; exit 1; }
npm run --silent build
npm run --silent typecheck
npm run --silent lint >/dev/null

report=$(mktemp /tmp/regina-ts-report-XXXXXX.json)
trap 'rm -f -- "$report"' EXIT
status=0
../run-tests.sh npx vitest run --reporter=default --reporter=json --outputFile.json="$report" "$@" || status=$?

# One plain closing line, whatever the reporter printed above it.
if [[ -s $report ]]; then
  node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    console.log(`typescript: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
  ' "$report"
fi
exit "$status"

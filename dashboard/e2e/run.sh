#!/usr/bin/env bash
# The dashboard's browser tests: headless Chromium from Debian (installed here when missing; as
# root, as CI runs) driven by playwright-core, against a throw-away PostgreSQL and a broker started
# by ../sdks/run-tests.sh. Two runs: the main suite, then sign-in against a broker with
# authentication on. Screenshots land in target/dashboard-screenshots/.
#
# Usage: dashboard/e2e/run.sh        (REGINA_BIN: the broker to test; it serves the dashboard)
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ! -x /usr/bin/chromium ]]; then
  if [[ $(id -u) != 0 ]]; then
    echo "dashboard e2e: /usr/bin/chromium is missing; install it with: apt-get install -y chromium" >&2
    exit 1
  fi
  echo "dashboard e2e: installing chromium"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

report=$(mktemp /tmp/regina-dashboard-XXXXXX)
trap 'rm -f -- "$report" "$report.auth"' EXIT
status=0
# Stats refreshed every second, so the status feeds show the seeded data at once; a key, so the
# encrypted queue can be seeded; room for the pushes that create thousands of partitions each on a
# busy machine.
STATS_INTERVAL_MS=1000 REGINA_ENCRYPTION_KEY=$(printf '5a%.0s' {1..32}) DB_STATEMENT_TIMEOUT=120000 \
  ../sdks/run-tests.sh node --import tsx --test --test-reporter=spec --test-reporter=tap \
  --test-reporter-destination=stdout --test-reporter-destination="$report" e2e/dashboard.test.ts || status=$?
JWT_ENABLED=true JWT_SECRET=dashboard-e2e-secret JWT_ALGORITHM=HS256 \
  ../sdks/run-tests.sh node --import tsx --test --test-reporter=spec \
  --test-reporter=tap --test-reporter-destination=stdout --test-reporter-destination="$report.auth" \
  e2e/auth.test.ts || status=$?

# One plain closing line over both runs.
count() { cat "$report" "$report.auth" 2>/dev/null | awk -v key="# $1 " 'index($0, key) == 1 { n += $3 } END { print n + 0 }'; }
echo "dashboard: $(count pass) passed, $(( $(count fail) + $(count cancelled) )) failed, $(count skipped) skipped"
exit "$status"

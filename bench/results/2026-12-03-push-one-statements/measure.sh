#!/usr/bin/env bash
# The push functions (sql/functions/20_push.sql) of OLD_REV against the working tree's, by
# bench/ab-functions.sh: the e2e scenario's two calls (../2026-12-03-small-call-overhead/
# e2e-call.sql: a push to one of 100 partitions, then a long-poll consumer's pop). The pop is the
# same code in both builds: it gauges the machine.
# ./measure.sh OLD_REV DATABASE_URL [ROUNDS], from the repository root.
set -euo pipefail
rev=$1 url=$2 rounds=${3:-3}
here=$(dirname "$0")
PGOPTIONS="-c client_min_messages=warning" psql -X -q "$url" \
  -c "select regina.configure('{\"queue\": \"e2eq\"}')" >/dev/null
exec bench/ab-functions.sh sql/functions/20_push.sql "$rev" "$url" \
  "$here/../2026-12-03-small-call-overhead/e2e-call.sql" "$rounds"

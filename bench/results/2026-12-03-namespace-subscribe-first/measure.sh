#!/usr/bin/env bash
# The pop functions (sql/functions/40_pop.sql) of OLD_REV against the working tree's, by
# bench/ab-functions.sh: each cycle (cycle.sql) pushes one message to one of a namespace's three
# queues and pops the namespace (autoAck, group g, one partition), as a single-message consumer of
# a namespace does. The push is the same code in both builds: it gauges the machine.
# ./measure.sh OLD_REV DATABASE_URL [ROUNDS], from the repository root.
set -euo pipefail
rev=$1 url=$2 rounds=${3:-3}
here=$(dirname "$0")
PGOPTIONS="-c client_min_messages=warning" psql -X -q "$url" \
  -c "select regina.configure('{\"queue\": \"nsa\", \"namespace\": \"ns\"}')" \
  -c "select regina.configure('{\"queue\": \"nsb\", \"namespace\": \"ns\"}')" \
  -c "select regina.configure('{\"queue\": \"nsc\", \"namespace\": \"ns\"}')" >/dev/null
exec bench/ab-functions.sh sql/functions/40_pop.sql "$rev" "$url" "$here/cycle.sql" "$rounds"

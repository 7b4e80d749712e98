#!/usr/bin/env bash
# Alternates the consumer-group details of detail.sql under two builds' 70_consumer_groups.sql on
# the fixture of `regina-bench explain --keep-db`: ./detail.sh OLD_REV NEW_FILE (run from the
# repository). _group_lag is dropped before each load: its result type changed.
set -euo pipefail
P="psql -X -q -h localhost -p 61442 -U postgres -d regina_bench"
for round in 1 2 3; do
  for build in old new; do
    $P -c "drop function if exists regina._group_lag(regina.partitions, regina.cursors, timestamptz)" >/dev/null
    if [ $build = old ]; then git show "$1":sql/functions/70_consumer_groups.sql | $P >/dev/null 2>&1
    else $P -f "$2" >/dev/null 2>&1; fi
    echo "round $round $build: $($P -f "$(dirname "$0")/detail.sql" | grep Time | awk '{printf "%s ", $2}')"
  done
done

#!/usr/bin/env bash
# Alternates a stats batch of 5 000 partitions with ready rows under two builds' _group_lag:
# ./refresh.sh OLD_REV NEW_FILE, from the repository, on the fixture of `regina-bench explain
# --keep-db`; prints the batch, its partition_lag insert and its partition_stats insert (ms).
set -euo pipefail
P="psql -X -q -h localhost -p 61442 -U postgres -d regina_bench"
for round in 1 2 3 4; do
  for build in old new; do
    $P -c "drop function if exists regina._group_lag(regina.partitions, regina.cursors, timestamptz)" >/dev/null
    if [ $build = old ]; then git show "$1":sql/functions/70_consumer_groups.sql | $P >/dev/null 2>&1
    else $P -f "$2" >/dev/null 2>&1; fi
    t=$($P -f "$(dirname "$0")/refresh.sql" 2>&1 | grep -A1 "duration" | grep -v "^--" | paste - - \
        | awk -F'duration: ' '{print $2}' | awk '/stats_refresh_batch/ {b=$1} /partition_lag/ {l=$1} /partition_stats as s/ {s=$1} END {print "batch " b " lag " l " stats " s}')
    echo "round $round $build: $t"
  done
done

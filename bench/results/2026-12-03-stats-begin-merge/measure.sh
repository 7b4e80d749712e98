#!/usr/bin/env bash
# Alternates 91_stats_refresh.sql of OLD_REV and of the working tree on one database and times
# the start of a stats pass (regina.stats_refresh_begin, rolled back) three times under each:
# ./measure.sh OLD_REV DATABASE_URL, from the repository root. The database is the fixture of
# `regina-bench explain --keep-db` (100 000 partitions, every one counted).
set -euo pipefail
rev=$1 url=$2
P="psql -X -q $url"
f=sql/functions/91_stats_refresh.sql
for round in 1 2 3; do
  for build in old new; do
    if [ $build = old ]; then git show "$rev:$f"; else cat "$f"; fi | $P >/dev/null 2>&1
    times=$(for _ in 1 2 3; do
      printf '\\timing on\nbegin;\nselect regina.stats_refresh_begin();\nrollback;\n' | $P 2>&1 \
        | grep -oE 'Time: [0-9.]+ ms' | sed -n '2s/Time: //p'
    done | paste -sd ' ')
    echo "round $round $build: $times"
  done
done

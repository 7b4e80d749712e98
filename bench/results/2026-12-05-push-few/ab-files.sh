#!/usr/bin/env bash
# Alternates two versions of a functions file on one database, each loaded in turn and followed
# by a pgbench session (one client, prepared statements, 2 s of warm-up, then 10 s measured)
# running CYCLE; prints the mean time of the cycle's `count(idx)` call (measured) and of its
# other `regina.…_text` call (the gauge: a call the change does not touch), per round and side.
# Usage: ab-files.sh OLD_SQL NEW_SQL DATABASE_URL CYCLE [ROUNDS]; the database as for
# bench/ab-functions.sh (one `regina migrate` set up, pg_stat_statements preloaded).
set -euo pipefail
old=$1 new=$2 url=$3 cycle=$4 rounds=${5:-3}
pgbench=/usr/lib/postgresql/15/bin/pgbench
export PGOPTIONS="-c client_min_messages=warning"
P="psql -X -q $url"
for round in $(seq 1 "$rounds"); do
  for build in old new; do
    f=$old; [ $build = new ] && f=$new
    $P < "$f" >/dev/null
    $pgbench -n -M prepared -f "$cycle" -T 2 -c 1 "$url" >/dev/null 2>&1
    $P -c "select pg_stat_statements_reset()" >/dev/null
    $pgbench -n -M prepared -f "$cycle" -T 10 -c 1 "$url" >/dev/null 2>&1
    echo "round $round $build: $($P -Atc "select string_agg(
        case when query like '%count(idx)%' then 'measured' else 'gauge' end || ' '
        || round((total_exec_time / calls * 1000)::numeric, 1) || ' us', ', ' order by query)
        from pg_stat_statements where toplevel and query ~ 'regina\.[a-z_]+_text\('
        and dbid = (select oid from pg_database where datname = current_database())")"
  done
done

#!/usr/bin/env bash
# Measures a change to one file of sql/functions by alternating it on one database: the file as
# it is at OLD_REV and as it is in the working tree, loaded in turn, each time followed by a
# pgbench session (one client, prepared statements, 2 s of warm-up, then 10 s measured) that runs
# CYCLE. Prints, per round and build, the mean time of a call of each top-level statement of
# CYCLE that calls a `regina.…_text` function (`push_text`, `pop_text`, `push_pop_text`;
# pg_stat_statements), by function name. A call the change does not touch gauges the machine's
# speed in that stretch: compare the ratios.
#
# Usage, from the repository root:
#   bench/ab-functions.sh FILE OLD_REV DATABASE_URL CYCLE [ROUNDS]
# FILE: e.g. sql/functions/40_pop.sql; CYCLE: a pgbench script; ROUNDS: 3 by default. The
# database is one `regina migrate` set up, on a cluster that preloads pg_stat_statements.
set -euo pipefail
file=$1 rev=$2 url=$3 cycle=$4 rounds=${5:-3}
pgbench=${PGBENCH:-/usr/lib/postgresql/15/bin/pgbench}
export PGOPTIONS="-c client_min_messages=warning"
P="psql -X -q $url"
$P -c "create extension if not exists pg_stat_statements" >/dev/null
for round in $(seq 1 "$rounds"); do
  for build in old new; do
    if [ $build = old ]; then git show "$rev:$file" | $P >/dev/null
    else $P < "$file" >/dev/null; fi
    $pgbench -n -M prepared -f "$cycle" -T 2 -c 1 "$url" >/dev/null 2>&1
    $P -c "select pg_stat_statements_reset()" >/dev/null
    $pgbench -n -M prepared -f "$cycle" -T 10 -c 1 "$url" >/dev/null 2>&1
    echo "round $round $build: $($P -Atc "select string_agg(
        substring(query from 'regina\.([a-z_]+_text)\(') || ' '
        || round((total_exec_time / calls * 1000)::numeric, 1) || ' us', ', ' order by query)
        from pg_stat_statements where toplevel and query ~ 'regina\.[a-z_]+_text\('
        and dbid = (select oid from pg_database where datname = current_database())")"
  done
done

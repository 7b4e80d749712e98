#!/usr/bin/env bash
# Alternates the e2e cycle (a one-item push, then regina.pop_text's one-request autoAck pop) with
# the same push followed by the prototype of lean-pop-prototype.sql, pgbench sessions of 10 s
# after 2 s of warm-up, and prints each top-level call's mean time (pg_stat_statements).
# ./lean-pop-measure.sh DATABASE_URL [ROUNDS], from the repository root, with the prototype loaded.
set -euo pipefail
url=$1 rounds=${2:-4}
here=bench/results/2026-12-04-call-start-up
pgbench=${PGBENCH:-/usr/lib/postgresql/15/bin/pgbench}
P="psql -X -q $url"
for round in $(seq 1 "$rounds"); do
  for cycle in bench/results/2026-12-03-small-call-overhead/e2e-call.sql $here/lean-pop-cycle.sql; do
    $pgbench -n -M prepared -f "$cycle" -T 2 -c 1 "$url" >/dev/null 2>&1
    $P -c "select pg_stat_statements_reset()" >/dev/null
    $pgbench -n -M prepared -f "$cycle" -T 10 -c 1 "$url" >/dev/null 2>&1
    echo "round $round $(basename "$cycle"): $($P -Atc "select string_agg(
        substring(query from 'regina\.([a-z_]+)\(') || ' '
        || round((total_exec_time / calls * 1000)::numeric, 1) || ' us', ', ' order by query)
        from pg_stat_statements where toplevel and query ~ 'regina\.[a-z_]+\('
        and query !~ 'pg_stat_statements'
        and dbid = (select oid from pg_database where datname = current_database())")"
  done
done

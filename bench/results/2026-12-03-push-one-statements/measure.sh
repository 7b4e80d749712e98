#!/usr/bin/env bash
# Alternates the push functions (sql/functions/20_push.sql) of OLD_REV and of the working tree
# on one database and reports the mean time of a one-item push call and of a one-message
# autoAck pop call (pg_stat_statements, top level) in a pgbench session (prepared statements,
# 10 s per build and round, each cycle committed): the e2e scenario's two calls
# (../2026-12-03-small-call-overhead/e2e-call.sql: a push to one of 100 partitions, then a
# long-poll consumer's pop). The pop is the same code in both builds: it gauges the machine.
# ./measure.sh OLD_REV DATABASE_URL [ROUNDS], from the repository root (the database set up by
# `regina migrate` on a cluster that preloads pg_stat_statements).
set -euo pipefail
rev=$1 url=$2 rounds=${3:-3}
here=$(dirname "$0")
call=$here/../2026-12-03-small-call-overhead/e2e-call.sql
pgbench=${PGBENCH:-/usr/lib/postgresql/15/bin/pgbench}
export PGOPTIONS="-c client_min_messages=warning"
P="psql -X -q $url"
$P -c "create extension if not exists pg_stat_statements" \
   -c "select regina.configure('{\"queue\": \"e2eq\"}')" >/dev/null
for round in $(seq 1 "$rounds"); do
  for build in old new; do
    if [ $build = old ]; then git show "$rev:sql/functions/20_push.sql" | $P >/dev/null
    else $P < sql/functions/20_push.sql >/dev/null; fi
    $pgbench -n -M prepared -f "$call" -T 2 -c 1 "$url" >/dev/null 2>&1
    $P -c "select pg_stat_statements_reset()" >/dev/null
    $pgbench -n -M prepared -f "$call" -T 10 -c 1 "$url" >/dev/null 2>&1
    echo "round $round $build: $($P -Atc "select string_agg(case when query like '%pop_text%'
        then 'pop ' else 'push ' end || round((total_exec_time / calls * 1000)::numeric, 1) || ' us',
        ', ' order by query desc) from pg_stat_statements where toplevel
        and query ~ 'regina\.(pop|push)_text\('
        and dbid = (select oid from pg_database where datname = current_database())")"
  done
done

#!/usr/bin/env bash
# Where the time of a one-message push call and a one-message autoAck pop call goes: the e2e
# scenario's two calls (`e2e-call.sql`: a push to one of 100 partitions, then a long-poll
# consumer's pop, batch 10, one partition), committed, in one pgbench session (prepared
# statements, as the broker sends them) for 10 s after a 5 s warm-up, with every nested
# statement (`pg_stat_statements.track = all`) and every function (`track_functions = all`)
# counted. pg_stat_statements counts a statement's run, not its executor start-up and shut-down
# nor the PL/pgSQL work between statements; pg_stat_user_functions' self time counts everything
# a function does itself, its statements included.
# ./measure.sh DATABASE_URL (a database `regina migrate` set up, on a cluster that preloads
# pg_stat_statements; its role may set pg_stat_statements.track), from this directory.
set -euo pipefail
url=$1
here=$(dirname "$0")
pgbench=${PGBENCH:-/usr/lib/postgresql/15/bin/pgbench}
export PGOPTIONS="-c pg_stat_statements.track=all -c track_functions=all -c client_min_messages=warning"
P="psql -X -q $url"
$P -c "create extension if not exists pg_stat_statements" \
   -c "select regina.configure('{\"queue\": \"e2eq\"}')" >/dev/null
$pgbench -n -M prepared -f "$here/e2e-call.sql" -T 5 -c 1 "$url" >/dev/null 2>&1
$P -c "select pg_stat_statements_reset()" -c "select pg_stat_reset()" >/dev/null
$pgbench -n -M prepared -f "$here/e2e-call.sql" -T 10 -c 1 "$url" 2>&1 \
  | grep -E 'number of transactions actually processed|latency average'
sleep 1
$P -c "select calls, round(total_exec_time::numeric / calls * 1000, 1) as us_per_call,
              toplevel, regexp_replace(left(query, 90), '\s+', ' ', 'g') as statement
       from pg_stat_statements
       where dbid = (select oid from pg_database where datname = current_database())
         and query !~ 'pg_stat'
       order by total_exec_time desc limit 20"
$P -c "select funcname, calls, round((total_time / calls * 1000)::numeric, 1) as total_us,
              round((self_time / calls * 1000)::numeric, 1) as self_us
       from pg_stat_user_functions where calls > 0 order by self_time desc limit 12"

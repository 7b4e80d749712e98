#!/usr/bin/env bash
# Alternates the pop functions (sql/functions/40_pop.sql) of OLD_REV and of the working tree on
# one database and reports the mean time of a namespace pop call (pg_stat_statements, top level)
# in a pgbench session (prepared statements, 10 s per build and round): each cycle pushes one
# message to one of the namespace's three queues and pops the namespace (autoAck, group g, one
# partition), as a single-message consumer of a namespace does.
# ./measure.sh OLD_REV DATABASE_URL [ROUNDS], from the repository root (the database set up by
# `regina migrate` on a cluster that preloads pg_stat_statements).
set -euo pipefail
rev=$1 url=$2 rounds=${3:-3}
here=$(dirname "$0")
pgbench=${PGBENCH:-/usr/lib/postgresql/15/bin/pgbench}
export PGOPTIONS="-c client_min_messages=warning"
P="psql -X -q $url"
$P -c "create extension if not exists pg_stat_statements" \
   -c "select regina.configure('{\"queue\": \"nsa\", \"namespace\": \"ns\"}')" \
   -c "select regina.configure('{\"queue\": \"nsb\", \"namespace\": \"ns\"}')" \
   -c "select regina.configure('{\"queue\": \"nsc\", \"namespace\": \"ns\"}')" >/dev/null
cat > "$here/.cycle.sql" <<'SQL'
\set q random(0, 2)
select count(*) from regina.push_text(('[{"queue": "ns' || chr(97 + :q) || '", "partition": "p", "transactionId": "' || gen_random_uuid() || '", "messageId": "' || gen_random_uuid() || '"}]')::jsonb, '[1]');
select count(*) from regina.pop_text('[{"queue": null, "namespace": "ns", "consumerGroup": "g", "batch": 1, "partitions": 1, "autoAck": true}]');
SQL
for round in $(seq 1 "$rounds"); do
  for build in old new; do
    if [ $build = old ]; then git show "$rev:sql/functions/40_pop.sql" | $P >/dev/null
    else $P < sql/functions/40_pop.sql >/dev/null; fi
    $pgbench -n -M prepared -f "$here/.cycle.sql" -T 2 -c 1 "$url" >/dev/null 2>&1
    $P -c "select pg_stat_statements_reset()" >/dev/null
    $pgbench -n -M prepared -f "$here/.cycle.sql" -T 10 -c 1 "$url" >/dev/null 2>&1
    echo "round $round $build: $($P -Atc "select string_agg(case when query like '%pop_text%'
        then 'pop ' else 'push ' end || round((total_exec_time / calls * 1000)::numeric, 1) || ' us',
        ', ' order by query desc) from pg_stat_statements where toplevel
        and query ~ 'regina\.(pop|push)_text\('
        and dbid = (select oid from pg_database where datname = current_database())")"
  done
done
rm -f "$here/.cycle.sql"

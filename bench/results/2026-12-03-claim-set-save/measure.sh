#!/usr/bin/env bash
# Alternates the pop functions (sql/functions/40_pop.sql) of OLD_REV and of the working tree on
# one database and reports the mean time of a pop call (pg_stat_statements, top level) in a
# pgbench session (prepared statements, 10 s per build and round, committed): each cycle pushes
# one message to each of P partitions drawn at random from 1 000 (a queue with group g), then
# pops them back, autoAck, batch P, at most P partitions: every claim is one message.
# ./measure.sh OLD_REV DATABASE_URL P, from the repository root (the database set up by
# `regina migrate` on a cluster that preloads pg_stat_statements).
set -euo pipefail
rev=$1 url=$2 parts=$3
here=$(dirname "$0")
pgbench=${PGBENCH:-/usr/lib/postgresql/15/bin/pgbench}
export PGOPTIONS="-c client_min_messages=warning"
P="psql -X -q $url"
$P -c "create extension if not exists pg_stat_statements" \
   -c "select regina.configure('{\"queue\": \"cs\"}')" \
   -c "select count(*) from regina.pop('[{\"queue\": \"cs\", \"consumerGroup\": \"g\", \"autoAck\": true}]')" >/dev/null
cat > "$here/.cycle.sql" <<SQL
select count(*) from regina.push_text((select jsonb_agg(jsonb_build_object('queue', 'cs',
    'partition', 'p' || k, 'transactionId', gen_random_uuid(), 'messageId', gen_random_uuid()))
    from (select distinct (random() * 999)::int as k from generate_series(1, $parts * 2)
          limit $parts) x), (select json_agg(1) from generate_series(1, $parts)));
select count(*) from regina.pop_text('[{"queue": "cs", "consumerGroup": "g", "autoAck": true,
    "batch": $parts, "partitions": $parts}]');
SQL
for round in 1 2 3; do
  for build in old new; do
    if [ $build = old ]; then git show "$rev:sql/functions/40_pop.sql" | $P >/dev/null
    else $P < sql/functions/40_pop.sql >/dev/null; fi
    $pgbench -n -M prepared -f "$here/.cycle.sql" -T 2 -c 1 "$url" >/dev/null 2>&1
    $P -c "select pg_stat_statements_reset()" >/dev/null
    $pgbench -n -M prepared -f "$here/.cycle.sql" -T 10 -c 1 "$url" >/dev/null 2>&1
    echo "P=$parts round $round $build: $($P -Atc "select string_agg(case when query like '%pop_text%'
        then 'pop ' else 'push ' end || round((total_exec_time / calls * 1000)::numeric, 1) || ' us',
        ', ' order by query) from pg_stat_statements where toplevel and query ~ 'regina\.(pop|push)_text\('
        and dbid = (select oid from pg_database where datname = current_database())")"
  done
done
rm -f "$here/.cycle.sql"

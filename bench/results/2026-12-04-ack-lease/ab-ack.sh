#!/bin/bash
# The ack call's resolution statement (`regina._ack_items`) timed in pa-cycle.sql's `pa_cycle`
# (push 100 messages over PARTS partitions, lease-pop them, ack/batch them all), with
# sql/functions/50_ack.sql as at HEAD and as in the working tree, alternating. From the
# repository root, on a database that `regina migrate` set up and that preloads
# pg_stat_statements, after `psql URL -f bench/results/2026-12-04-ack-lease/pa-cycle.sql`:
#   bench/results/2026-12-04-ack-lease/ab-ack.sh URL PARTS ROUNDS
url=$1 parts=$2 rounds=$3
P="psql -X -q $url"
cycle=$(mktemp)
printf '\\set p random(1, 1000)\nselect public.pa_cycle(:p, %s);\n' "$parts" > "$cycle"
for r in $(seq 1 "$rounds"); do for b in old new; do
  if [ $b = old ]; then git show HEAD:sql/functions/50_ack.sql | $P >/dev/null 2>&1
  else $P < sql/functions/50_ack.sql >/dev/null 2>&1; fi
  export PGOPTIONS="-c pg_stat_statements.track=all"
  pgbench -n -M prepared -f "$cycle" -T 2 -c 1 "$url" >/dev/null 2>&1
  $P -c "select pg_stat_statements_reset()" >/dev/null
  pgbench -n -M prepared -f "$cycle" -T 8 -c 1 "$url" >/dev/null 2>&1
  unset PGOPTIONS
  echo "round $r $b: $($P -Atc "select string_agg(round((total_exec_time/calls)::numeric,2) || ' ms '
      || left(regexp_replace(query, '\s+', ' ', 'g'), 30), '; ' order by query)
      from pg_stat_statements
      where query ~ '^SELECT regina.push_text' or query ~ 'from regina._ack_items'")"
done; done

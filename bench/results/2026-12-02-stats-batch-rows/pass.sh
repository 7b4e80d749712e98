#!/usr/bin/env bash
# One stats pass over every partition of the database `deep` (fill.sql), as the leader runs it,
# with batches of 1 000 partitions and the row bound given (empty: none): each batch's statement
# time and what it took. Usage: pass.sh PSQL_CONNINFO [ROWS]
set -euo pipefail
conn=$1
rows=${2:-null}
q() { psql "$conn" -qAt -c "$1"; }
# Every partition changed since the last pass: one more message in each.
q "select count(*) from regina.push((select jsonb_agg(jsonb_build_object('queue', 'dq',
     'partition', 'p' || i, 'transactionId', 'more-' || gen_random_uuid(),
     'messageId', gen_random_uuid(), 'payload', 0)) from generate_series(0, 199) i))" >/dev/null
q "select pg_advisory_lock(8243108395492638739); select regina.stats_refresh_begin()" >/dev/null
total=0
while :; do
  start=$(date +%s%N)
  taken=$(q "select regina.stats_refresh_batch(1000, null, $rows)")
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "batch: took $taken partitions in $ms ms"
  total=$(( total + ${taken#-} ))
  if (( taken >= 0 && taken < 1000 )); then break; fi
done
q "select regina.stats_refresh_end($total)" >/dev/null
echo "pass: $total partitions"

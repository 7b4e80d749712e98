#!/usr/bin/env bash
# The pop functions (sql/functions/40_pop.sql) of OLD_REV against the working tree's, by
# bench/ab-functions.sh: each cycle pushes one message to each of P partitions drawn at random
# from 1 000 (a queue with group g), then pops them back, autoAck, batch P, at most P partitions:
# every claim is one message. The push is the same code in both builds: it gauges the machine.
# ./measure.sh OLD_REV DATABASE_URL P, from the repository root.
set -euo pipefail
rev=$1 url=$2 parts=$3
here=$(dirname "$0")
PGOPTIONS="-c client_min_messages=warning" psql -X -q "$url" \
  -c "select regina.configure('{\"queue\": \"cs\"}')" \
  -c "select count(*) from regina.pop('[{\"queue\": \"cs\", \"consumerGroup\": \"g\", \"autoAck\": true}]')" >/dev/null
cycle=$(mktemp)
trap 'rm -f "$cycle"' EXIT
cat > "$cycle" <<SQL
select count(*) from regina.push_text((select jsonb_agg(jsonb_build_object('queue', 'cs',
    'partition', 'p' || k, 'transactionId', gen_random_uuid(), 'messageId', gen_random_uuid()))
    from (select distinct (random() * 999)::int as k from generate_series(1, $parts * 2)
          limit $parts) x), (select json_agg(1) from generate_series(1, $parts)));
select count(*) from regina.pop_text('[{"queue": "cs", "consumerGroup": "g", "autoAck": true,
    "batch": $parts, "partitions": $parts}]');
SQL
bench/ab-functions.sh sql/functions/40_pop.sql "$rev" "$url" "$cycle" 3

#!/usr/bin/env bash
# Alternates the push functions (sql/functions/20_push.sql, with the working tree's other files)
# of OLD_REV and of the working tree on one database and times the push call the broker makes,
# in a rolled-back transaction (pgbench, one session, 10 s per build and round): OLD_REV's
# `regina.push` read as text, the working tree's `regina.push_text`. 100 items of
# `{"message": "Hello World", "n": N}` over 20 partitions of queue pt (bp-100's shape), which
# exist already.
# ./measure.sh OLD_REV DATABASE_URL, from the repository root.
set -euo pipefail
rev=$1 url=$2
here=$(dirname "$0")
export PGOPTIONS="-c client_min_messages=warning"
P="psql -X -q $url"
pgbench=${PGBENCH:-/usr/lib/postgresql/15/bin/pgbench}
$P -c "select regina.configure('{\"queue\": \"pt\"}')" >/dev/null
items=$($P -Atc "select jsonb_agg(jsonb_build_object('queue', 'pt', 'partition', 'p' || (i % 20),
          'transactionId', 'm-' || i, 'messageId', gen_random_uuid(),
          'payload', jsonb_build_object('message', 'Hello World', 'n', i)))
        from generate_series(1, 100) i")
# The partitions exist before the timed calls (one push, committed).
$P -c "select count(*) from regina.push((select jsonb_agg(jsonb_build_object('queue', 'pt',
         'partition', 'p' || (i % 20), 'transactionId', 'w-' || i, 'messageId', gen_random_uuid(),
         'payload', 1)) from generate_series(1, 20) i))" >/dev/null
drop="drop function if exists regina._push_one(jsonb, json, boolean, timestamptz),
  regina.push_text(jsonb, json, boolean, timestamptz, boolean),
  regina.push(jsonb, json, boolean, timestamptz, boolean)"
for round in 1 2 3; do
  for build in old new; do
    $P -c "$drop" >/dev/null
    if [ $build = old ]; then
      git show "$rev:sql/functions/20_push.sql" | $P >/dev/null
      call="select count(r) from (select result::text as r from regina.push('$items')) x;"
    else
      $P < sql/functions/20_push.sql >/dev/null
      call="select count(r) from (select result as r from regina.push_text('$items')) x;"
    fi
    printf 'begin;\n%s\nrollback;\n' "$call" > "$here/.call.sql"
    echo "round $round $build: $($pgbench -n -f "$here/.call.sql" -T 10 -c 1 "$url" 2>&1 \
      | grep -E 'latency average')"
  done
done
rm -f "$here/.call.sql"

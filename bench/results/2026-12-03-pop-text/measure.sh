#!/usr/bin/env bash
# Alternates the pop functions (sql/functions/40_pop.sql) of OLD_REV and of the working tree on
# one database and times the pop call the broker makes, each in a rolled-back transaction
# (pgbench, one session, 10 s): OLD_REV's `regina.pop` read as text, the working tree's
# `regina.pop_text`. A pop of group g2 over queue jb: batch 100, 10 partitions (10 messages from
# each of 10 partitions of 2 000 messages), with a lease. ./measure.sh OLD_REV DATABASE_URL, from
# the repository root, with the queue pushed as in setup.sql.
set -euo pipefail
rev=$1 url=$2
here=$(dirname "$0")
P="psql -X -q $url"
export PGOPTIONS="-c client_min_messages=warning"
pgbench=${PGBENCH:-/usr/lib/postgresql/15/bin/pgbench}
drop="drop function if exists
  regina._pop_read(regina.cursors, regina.queues, regina.partitions, integer, text, timestamptz),
  regina._pop_claim(regina.queues, regina.partitions, text, integer, boolean, uuid, timestamptz, timestamptz),
  regina._pop_claim_set(regina.queues, regina.cursors[], integer, boolean, uuid, timestamptz, uuid[]),
  regina._pop_claim_many(regina.queues, text, integer, integer, boolean, uuid, timestamptz, timestamptz, bigint[], timestamptz, bigint, uuid[]),
  regina._pop_one(regina.pop_request, timestamptz, bigint[], timestamptz, bigint),
  regina._pop_run(regina.pop_request[], timestamptz, bigint[], timestamptz, bigint),
  regina.pop(jsonb, timestamptz), regina.pop_text(jsonb, timestamptz)"
req='[{"queue":"jb","consumerGroup":"g2","batch":100,"partitions":10,"leaseId":"0196a000-0000-7000-8000-0000000000b2"}]'
for round in 1 2 3; do
  for build in old new; do
    $P -c "$drop" >/dev/null
    if [ $build = old ]; then
      git show "$rev:sql/functions/40_pop.sql" | $P >/dev/null 2>&1
      call="select length(result::text) from regina.pop('$req');"
    else
      $P < sql/functions/40_pop.sql >/dev/null 2>&1
      call="select length(result) from regina.pop_text('$req');"
    fi
    printf 'begin;\n%s\nrollback;\n' "$call" > "$here/.call.sql"
    echo "round $round $build: $($pgbench -n -f "$here/.call.sql" -T 10 -c 1 "$url" 2>&1 \
      | grep -E 'latency average')"
  done
done
rm -f "$here/.call.sql"

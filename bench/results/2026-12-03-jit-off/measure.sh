#!/usr/bin/env bash
# Alternates the function files of OLD_REV and of the working tree on one database and runs
# calls.sql under each: ./measure.sh OLD_REV DATABASE_URL, from the repository root, with
# target/release/regina built. The server keeps its JIT settings (on, default thresholds).
set -euo pipefail
rev=$1 url=$2
P="psql -X -q $url"
DATABASE_URL=$url target/release/regina migrate >/dev/null
$P -c "select regina.configure('{\"queue\": \"jit.a\"}'), regina.configure('{\"queue\": \"jit.b\"}')" >/dev/null
$P -c "select count(*) from regina.push((select jsonb_agg(jsonb_build_object(
          'queue', 'jit.' || (array['a', 'b'])[1 + i % 2], 'partition', 'p' || (i % 100),
          'transactionId', 't' || i, 'messageId', gen_random_uuid(),
          'payload', jsonb_build_object('n', i))) from generate_series(1, 20000) i))" >/dev/null
$P -Atc "select 'jit=' || current_setting('jit') || ' available=' || pg_jit_available()"
for round in 1 2 3; do
  for build in old new; do
    for f in sql/functions/*.sql; do
      if [ $build = old ]; then git show "$rev:$f"; else cat "$f"; fi
    done | $P >/dev/null 2>&1
    echo "round $round $build: $($P -f "$(dirname "$0")/calls.sql" 2>&1 | sed 's/.*NOTICE:  //' | paste -sd ';')"
  done
done

#!/usr/bin/env bash
# A push and a long-poll consumer's pop of the e2e shape, as two transactions
# (separate-transactions.sql: regina.push_text, then regina.pop_text) and as one
# (one-transaction.sql: regina.push_pop_text), alternated ROUNDS times on one database: pgbench,
# one client, prepared statements, 12 s each. Prints cycles per second, pgbench's mean latency,
# and the CPU its backend used per cycle (read from /proc between seconds 2 and 10).
# ./measure.sh DATABASE_URL [ROUNDS], from the repository root, on the machine of the database;
# the database is one `regina migrate` set up.
set -euo pipefail
url=$1 rounds=${2:-3}
here=$(dirname "$0")
pgbench=${PGBENCH:-/usr/lib/postgresql/15/bin/pgbench}
P="psql -X -q -At $url"
$P -c "select regina.configure('{\"queue\": \"e2eq\"}')" >/dev/null
# The group subscribes (push_pop_text runs the pops of subscribed groups only).
$P -c "select count(*) from regina.pop_text('[{\"queue\":\"e2eq\",\"consumerGroup\":\"e2e\",\"batch\":1,\"autoAck\":true}]')" >/dev/null
out=$(mktemp)
for round in $(seq 1 "$rounds"); do
  for cycle in separate-transactions one-transaction; do
    $pgbench -n -M prepared -f "$here/$cycle.sql" -T 12 -c 1 "$url" >"$out" 2>&1 &
    sleep 2
    pid=$($P -c "select pid from pg_stat_activity where application_name = 'pgbench' limit 1")
    c0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    sleep 8
    c1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    wait
    n=$(awk '/number of transactions actually processed/ {print $NF}' "$out" | cut -d/ -f1)
    lat=$(awk '/latency average/ {print $4}' "$out")
    # Ticks of 10 ms over 8 s: the backend's busy share, times the mean cycle.
    echo "round $round $cycle: $((n / 12)) cycles/s, latency $lat ms, backend cpu" \
      "$(echo "scale=1; ($c1 - $c0) * 10000 / 8 * $lat / 1000" | bc) us/cycle"
  done
done
rm -f "$out"

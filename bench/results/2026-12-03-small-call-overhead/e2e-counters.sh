#!/bin/bash
# ./e2e-counters.sh BIN OUT [KEY=VALUE...]
# The e2e scenario against a broker started here (BIN, on port 6677, a fresh database of the
# harness's cluster, which must exist: run any `regina-bench run` once), and the broker's own
# counters afterwards: pop requests that reached PostgreSQL (regina_batch_requests{op="pop"}),
# long-polls that parked without asking (quiet parks) and deliveries. From the repository root,
# after `cargo build --release -p regina-bench`; extra arguments are KEY=VALUE for the broker.
bin=$1 out=$2; shift 2
cd "$(git rev-parse --show-toplevel)"
pkill -f "regina[-a-z]* serve" ; sleep 1
su postgres -c "/usr/lib/postgresql/15/bin/pg_ctl -D .regina/bench-pg -l /tmp/bench-pg.log -w start" >/dev/null 2>&1
psql -X -q postgresql://postgres@127.0.0.1:61442/postgres -c "drop database if exists e2em" -c "create database e2em" 2>/dev/null
env "$@" DATABASE_URL=postgresql://postgres@127.0.0.1:61442/e2em PORT=6677 $bin serve > /tmp/regina-broker.log 2>&1 &
sleep 5
pid=$(pgrep -f "regina[-a-z]* serve")
target/release/regina-bench run e2e --target broker --duration 20 --url http://127.0.0.1:6677 --database-url postgresql://postgres@127.0.0.1:61442/e2em --broker-pid $pid --out "$out" 2>&1 | tail -2 | head -1 | grep -o "pg cpu [0-9.]* µs/msg pushed\|e2e p50.*p99.9 [0-9.]* ms\|check.*"
curl -s localhost:6677/metrics/prometheus | grep -E '^regina_(batch_requests_(sum|count)\{op="pop"|longpoll_quiet_parks_total|messages_delivered_total\{queue="bench)' | awk '{printf "%s ", $0} END {print ""}'
pkill -f "regina[-a-z]* serve"

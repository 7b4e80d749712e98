#!/usr/bin/env bash
# e2e pairs, the build before (the ready set truncated by vacuums) first, each run watched by a
# sampler of pg_stat_activity every 20 ms (sample.sql): autovacuum workers and their wait events,
# and client statements active for more than 8 ms.
# Usage, from the repository root: runs.sh OLD_BIN NEW_BIN OUT_DIR [PAIRS]
set -euo pipefail
old=$1 new=$2 out=$3 pairs=${4:-4}
here=$(dirname "$0")
mkdir -p "$out"
run() { # name bin
  target/release/regina-bench run e2e --target broker --duration 20 --regina-bin "$2" \
    --out "$out/$1" > "$out/$1.log" 2>&1 &
  local bench=$!
  until psql -X -q -h 127.0.0.1 -p 61442 -U postgres -d postgres -c 'select 1' >/dev/null 2>&1; do
    sleep 0.2
  done
  psql -X -q -h 127.0.0.1 -p 61442 -U postgres -d postgres -f "$here/sample.sql" \
    > "$out/$1.samples" 2>&1 || true
  wait "$bench"
}
for i in $(seq 1 "$pairs"); do
  run "before-$i" "$old"
  run "after-$i" "$new"
done

#!/usr/bin/env bash
# Alternating runs of one build with BATCH_HOLD_US=500 (the default before) and =1000, the 500 µs
# run first in each pair. Usage, from the repository root:
#   runs.sh OUT_DIR NAME SHAPE PAIRS [regina-bench args...]
# e.g. runs.sh out e2e e2e 3; runs.sh out ack e2e-ack 2; runs.sh out one bp-1 1 --connections 1
# (the sweep/ directory held 1000, 1500 and 2000 in turn: `hold NAME SHAPE US` below).
set -euo pipefail
out=$1 name=$2 shape=$3 pairs=$4
shift 4
mkdir -p "$out"
hold() { # run name, shape, hold in µs
  BATCH_HOLD_US=$3 target/release/regina-bench run "$2" --target broker --duration 20 \
    --regina-bin target/release/regina "${args[@]}" --out "$out/$1" > "$out/$1.log" 2>&1
}
args=("$@")
for i in $(seq 1 "$pairs"); do
  hold "$name-$i-h500" "$shape" 500
  hold "$name-$i-h1000" "$shape" 1000
done

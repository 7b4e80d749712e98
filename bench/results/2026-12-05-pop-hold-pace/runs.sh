#!/usr/bin/env bash
# Alternating broker runs of two builds, OLD first in each pair. Usage, from the repository root:
#   runs.sh OLD_BIN NEW_BIN OUT_DIR NAME SHAPE PAIRS [regina-bench args...]
# e.g. runs.sh old new final lone pop-ack 1 --consumers 1 --pop-batch 1 --prefill 20000 --drain 120
set -euo pipefail
old=$1 new=$2 out=$3 name=$4 shape=$5 pairs=$6
shift 6
mkdir -p "$out"
for i in $(seq 1 "$pairs"); do
  for side in before after; do
    bin=$old; [ $side = after ] && bin=$new
    target/release/regina-bench run "$shape" --target broker --duration 20 --regina-bin "$bin" "$@" \
      --out "$out/$name-$i-$side" > "$out/$name-$i-$side.log" 2>&1
  done
done

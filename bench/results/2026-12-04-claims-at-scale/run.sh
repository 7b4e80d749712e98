#!/bin/bash
# Alternating benchmark runs of broker builds, one line of results per run.
#   run.sh "<shapes>" <rounds> name:BROKER_BINARY …
# Run from the repository's root after `cargo build --release -p regina-bench`. OUT (default
# target/claims-at-scale) receives each run's log and report; DURATION sets --duration (20);
# FIRST numbers the rounds from that value.
set -u
out=${OUT:-target/claims-at-scale}
mkdir -p "$out"
shapes=$1; rounds=$2; shift 2
for r in $(seq "${FIRST:-1}" $((${FIRST:-1} + rounds - 1))); do
  for cfg in "$@"; do
    name=${cfg%%:*}; bin=${cfg#*:}
    for shape in $shapes; do
      log=$out/$shape-$name-$r.log
      target/release/regina-bench run "$shape" --target broker --duration "${DURATION:-20}" \
        --regina-bin "$bin" --out "$out/out-$shape-$name-$r" > "$log" 2>&1
      echo "$(date +%T) $shape $name r$r: $(grep -o 'delivered [0-9]* msg/s\|e2e p50 [0-9.]* ms p99 [0-9.]* ms p99.9 [0-9.]* ms\|pg cpu [0-9.]* µs/msg delivered\|lost [0-9]*' "$log" | tr '\n' ' ')"
    done
  done
done

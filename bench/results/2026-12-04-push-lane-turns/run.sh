#!/bin/bash
# Alternating benchmark runs, one line of results per run.
#   run.sh "<shapes>" <rounds> name:ENV[,ENV…] …     (ENV "-": the defaults)
# Run from the repository's root after `cargo build --release -p regina -p regina-bench`.
# OUT (default target/lane-turns) receives each run's log and report; RATE sets --rate; FIRST
# numbers the rounds from that value.
set -u
out=${OUT:-target/lane-turns}
mkdir -p "$out"
shapes=$1; rounds=$2; shift 2
for r in $(seq "${FIRST:-1}" $((${FIRST:-1} + rounds - 1))); do
  for cfg in "$@"; do
    name=${cfg%%:*}; envs=${cfg#*:}
    args=()
    for e in ${envs//,/ }; do [ "$e" = "-" ] || args+=(--broker-env "$e"); done
    for shape in $shapes; do
      log=$out/$shape-$name-$r.log
      target/release/regina-bench run "$shape" --target broker --duration 20 ${RATE:+--rate "$RATE"} \
        --out "$out/out-$shape-$name-$r" "${args[@]}" > "$log" 2>&1
      echo "$(date +%T) $shape $name r$r: $(grep -o 'pushed [0-9]* msg/s\|push p50 [0-9.]* ms\|e2e p50 [0-9.]* ms p99 [0-9.]* ms p99.9 [0-9.]* ms\|pg cpu [0-9.]* µs/msg pushed\|lost [0-9]*' "$log" | tr '\n' ' ')"
    done
  done
done

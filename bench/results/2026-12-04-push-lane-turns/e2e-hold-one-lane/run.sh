#!/bin/bash
# alternating e2e runs: configs given as name=ENV pairs
cd /work/main
rounds=$1; shift
for r in $(seq 1 $rounds); do
  for cfg in "$@"; do
    name=${cfg%%:*}; envs=${cfg#*:}
    args=()
    for e in ${envs//,/ }; do [ "$e" = "-" ] || args+=(--broker-env "$e"); done
    target/release/regina-bench run e2e --target broker --duration 20 --out /tmp/b/hold/out-$name-$r "${args[@]}" > /tmp/b/hold/$name-$r.log 2>&1
    echo "$(date +%T) $name-$r: $(grep -o 'e2e p50[^,]*, pg cpu [0-9.]* µs/msg pushed [0-9.]* ms/push call\|e2e p50.*p99.9 [0-9.]* ms' /tmp/b/hold/$name-$r.log | head -2 | tr '\n' ' ')"
  done
done

#!/usr/bin/env bash
# Three alternating pairs of e2e-ack, the build before first in each pair.
# Usage, from the repository root: pairs.sh OLD_BIN NEW_BIN OUT_DIR
set -euo pipefail
old=$1 new=$2 out=$3
for i in 1 2 3; do
  for v in old new; do
    bin=$old; [ $v = new ] && bin=$new
    target/release/regina-bench run e2e-ack --target broker --duration 20 --regina-bin "$bin" \
      --out "$out/$v-$i" > "$out/$v-$i.log" 2>&1
  done
done

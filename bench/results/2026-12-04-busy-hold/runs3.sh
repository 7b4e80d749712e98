#!/usr/bin/env bash
# e2e at 100 msg/s once more, the new build first, after a light run; then one closed-loop
# producer of single-message pushes (to one partition, then over 1 000), before and busy.
# Usage, from the repository root: runs3.sh OLD_BIN NEW_BIN OUT_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
run "e2e100-busy-3" "$new" e2e --rate 100
run "e2e100-before-3" "$old" e2e --rate 100
for v in before busy; do
  bin=$old; [ $v = busy ] && bin=$new
  run "bp1c1p1-$v-1" "$bin" bp-1 --connections 1 --partitions 1
  run "bp1c1-$v-1" "$bin" bp-1 --connections 1
done

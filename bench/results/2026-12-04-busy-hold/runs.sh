#!/usr/bin/env bash
# The hold that waits only while a batcher is busy, against no hold and a hold on every call.
# Usage, from the repository root: runs.sh OLD_BIN NEW_BIN OUT_DIR
#   before: OLD_BIN as it was (BATCH_HOLD_US 0)
#   always: OLD_BIN with BATCH_HOLD_US=500 (every lone request waits)
#   busy:   NEW_BIN with its defaults (BATCH_HOLD_US 500, BATCH_HOLD_GAP_US 3 000)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
for i in 1 2; do
  run "e2e-before-$i" "$old" e2e
  BATCH_HOLD_US=500 run "e2e-always-$i" "$old" e2e
  run "e2e-busy-$i" "$new" e2e
done
for v in before busy; do
  bin=$old; [ $v = busy ] && bin=$new
  run "e2e100-$v-1" "$bin" e2e --rate 100
  run "e2eack-$v-1" "$bin" e2e-ack
  run "bp1-$v-1" "$bin" bp-1
  run "bp100-$v-1" "$bin" bp-100
done

#!/usr/bin/env bash
# More pairs, the build before first: e2e-ack, e2e at 100 msg/s, app and mixed.
# Usage, from the repository root: runs2.sh OLD_BIN NEW_BIN OUT_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
for i in 2 3; do
  pair e2eack "$i" e2e-ack
done
for v in before busy; do
  bin=$old; [ $v = busy ] && bin=$new
  run "e2e100-$v-2" "$bin" e2e --rate 100
  run "app-$v-1" "$bin" app
  run "mixed-$v-1" "$bin" mixed
done

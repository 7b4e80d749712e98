#!/usr/bin/env bash
# Two more e2e pairs of the final build, for its tail latencies (into final/).
# Usage, from the repository root: more.sh OLD_BIN NEW_BIN OUT_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
for i in 3 4; do
  pair e2e "$i" e2e
done

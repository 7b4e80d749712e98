#!/usr/bin/env bash
# The final build (pace and payoff) against the build before, alternating, the build before
# first in each pair.
# Usage, from the repository root: final.sh OLD_BIN NEW_BIN OUT_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
for i in 1 2; do
  pair e2e "$i" e2e
  pair e2eack "$i" e2e-ack
done
pair bp1c1p1 1 bp-1 --connections 1 --partitions 1
pair bp1c1 1 bp-1 --connections 1
pair bp1 1 bp-1
pair bp100 1 bp-100
pair e2e100 1 e2e --rate 100

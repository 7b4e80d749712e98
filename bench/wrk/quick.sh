#!/usr/bin/env bash
# Quick throughput check of a running broker with wrk: single-message and 100-message pushes,
# then draining with autoAck pops and with explicit acks. Prints the broker's resident memory
# (current and peak) after each step. Usage:
#   bench/wrk/quick.sh [URL] [SECONDS]      (defaults: http://127.0.0.1:6632, 10)
# The broker's pid is found with pgrep (`regina serve`); set REGINA_PID to choose another.
set -euo pipefail
url=${1:-http://127.0.0.1:6632}
secs=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
pid=${REGINA_PID:-$(pgrep -f 'regina serve' | head -n 1)}

rss() {
  awk '/VmRSS|VmHWM/ { printf "%s %.1f MB  ", $1, $2 / 1024 }' "/proc/$pid/status"
  echo
}

run() {  # name, then wrk arguments
  local name=$1; shift
  printf '%-28s ' "$name"
  wrk "$@" | tail -n 1
  printf '%-28s ' "  broker memory"; rss
}

queue="quick-$(date +%s)"
echo "broker pid $pid, queue $queue, ${secs}s per step, 50 connections, 1000 partitions"
QUEUE=$queue ITEMS=1 run "push 1 msg/request" -t2 -c50 -d"${secs}s" -s "$here/push.lua" "$url"
QUEUE=$queue ITEMS=100 run "push 100 msg/request" -t2 -c50 -d"${secs}s" -s "$here/push.lua" "$url"
QUEUE=$queue MODE=autoack BATCH=100 POP_PARTITIONS=10 \
  run "pop autoAck batch 100" -t2 -c50 -d"${secs}s" -s "$here/pop.lua" "$url"
# A fresh backlog for the explicit-ack consumers (the autoAck step may have drained the first).
QUEUE=$queue-ack ITEMS=100 run "push 100 msg/request (again)" -t2 -c50 -d"${secs}s" -s "$here/push.lua" "$url"
QUEUE=$queue-ack MODE=ack BATCH=100 POP_PARTITIONS=10 \
  run "pop + ack/batch batch 100" -t2 -c50 -d"${secs}s" -s "$here/pop.lua" "$url"

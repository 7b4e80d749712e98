#!/usr/bin/env bash
# Runs a command against a live Regina: starts a throw-away PostgreSQL cluster and a broker on free
# loopback ports, exports REGINA_URL, runs the command, then stops both (whatever the outcome).
# The broker re-checks parked pops only on events (LONGPOLL_RECHECK_MS=0 unless set): a test whose
# long-poll is answered before its timeout knows the wake-up it waits for did it.
#
# Usage: sdks/run-tests.sh COMMAND [ARGS...]
#   REGINA_BIN  the broker binary to run (default: build target/release/regina with cargo)
#   KEEP_LOGS=1 keep the broker log (printed on failure either way)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -gt 0 ]] || { echo "usage: sdks/run-tests.sh COMMAND [ARGS...]" >&2; exit 2; }

if [[ -z ${REGINA_BIN:-} ]]; then
  (cd "$root" && cargo build --release -q -p regina)
  REGINA_BIN=$root/${CARGO_TARGET_DIR:-target}/release/regina
fi

bin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
as_postgres=()
[[ $(id -u) == 0 ]] && as_postgres=(runuser -u postgres --)

work=$(mktemp -d /tmp/regina-sdk-XXXXXX)
chmod 755 "$work"
mkdir -p "$work/pg" "$work/buffer"
[[ $(id -u) == 0 ]] && chown postgres "$work/pg"
pg_port=$(free_port)
broker_pid=

cleanup() {
  local status=$?
  [[ -n $broker_pid ]] && kill "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null || true
  (cd / && "${as_postgres[@]}" "$bin/pg_ctl" -D "$work/pg" -m immediate -w -s stop) >/dev/null 2>&1 || true
  if [[ $status != 0 || ${KEEP_LOGS:-} == 1 ]]; then
    echo "--- broker log (tail) ---" >&2
    tail -n 40 "$work/broker.log" >&2 || true
  fi
  rm -rf -- "$work"
  exit "$status"
}
trap cleanup EXIT INT TERM

(cd / && "${as_postgres[@]}" "$bin/initdb" -D "$work/pg" -U postgres -A trust -E UTF8 --no-sync >/dev/null)
(cd / && "${as_postgres[@]}" "$bin/pg_ctl" -D "$work/pg" -w -s -l "$work/pg/server.log" \
  -o "-h 127.0.0.1 -p $pg_port -k '' -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start)

broker_port=$(free_port)
DATABASE_URL="postgres://postgres@127.0.0.1:$pg_port/postgres" HOST=127.0.0.1 PORT=$broker_port \
  FILE_BUFFER_DIR="$work/buffer" LOG_LEVEL=warn LONGPOLL_RECHECK_MS=${LONGPOLL_RECHECK_MS:-0} \
  "$REGINA_BIN" serve >"$work/broker.log" 2>&1 &
broker_pid=$!

export REGINA_URL="http://127.0.0.1:$broker_port"
# A minute: migrating a fresh database can take a while on a busy machine.
for _ in $(seq 1 600); do
  curl -fsS "$REGINA_URL/health" >/dev/null 2>&1 && break
  kill -0 "$broker_pid" 2>/dev/null || { echo "run-tests: the broker exited" >&2; exit 1; }
  sleep 0.1
done
curl -fsS "$REGINA_URL/health" >/dev/null || { echo "run-tests: the broker did not become healthy" >&2; exit 1; }

"$@"

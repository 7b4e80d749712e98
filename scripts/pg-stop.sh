#!/usr/bin/env bash
# Stops the private PostgreSQL cluster that crates/regina-devdb runs in DATA_DIR (following
# DATA_DIR.location when it fell back to the temp directory); with --delete, also removes it.
# Usage: scripts/pg-stop.sh [--delete] DATA_DIR
set -euo pipefail

delete=false
if [[ ${1:-} == --delete ]]; then
  delete=true
  shift
fi
requested=$(realpath -m -- "${1:?usage: pg-stop.sh [--delete] DATA_DIR}")
dir=$requested
if [[ -f $requested.location ]]; then
  dir=$(cat "$requested.location")
fi

# The binaries of the cluster's own major version, else the highest installed, else pg_config's.
bin=
if [[ -f $dir/PG_VERSION && -x /usr/lib/postgresql/$(cat "$dir/PG_VERSION")/bin/pg_ctl ]]; then
  bin=/usr/lib/postgresql/$(cat "$dir/PG_VERSION")/bin
elif compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null; then
  bin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
else
  bin=$(pg_config --bindir 2>/dev/null || true)
fi

if [[ -f $dir/postmaster.pid && -x $bin/pg_ctl ]]; then
  as_postgres=()
  if [[ $(id -u) == 0 ]]; then
    as_postgres=(runuser -u postgres --)
  fi
  (cd / && "${as_postgres[@]}" "$bin/pg_ctl" -D "$dir" -m fast -w -s stop) ||
    echo "pg-stop: could not stop the cluster in $dir" >&2
fi

if $delete; then
  rm -rf -- "$dir" "$requested" "$requested.location"
fi

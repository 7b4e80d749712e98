#!/usr/bin/env bash
# Stops the private PostgreSQL cluster that crates/regina-devdb runs in DATA_DIR (following
# DATA_DIR.location when it lives elsewhere: in memory, or the temp-directory fallback); with
# --delete, also removes it; with --delete-memory, removes it only when it lives in memory
# (/dev/shm), whose space is the machine's RAM and outlives the checkout.
# Usage: scripts/pg-stop.sh [--delete | --delete-memory] DATA_DIR
set -euo pipefail

delete=false
delete_memory=false
case ${1:-} in
  --delete) delete=true; shift ;;
  --delete-memory) delete_memory=true; shift ;;
esac
requested=$(realpath -m -- "${1:?usage: pg-stop.sh [--delete | --delete-memory] DATA_DIR}")
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

if $delete_memory && [[ $dir == /dev/shm/* ]]; then
  delete=true
fi
if $delete; then
  rm -rf -- "$dir" "$requested" "$requested.location"
fi

#!/usr/bin/env bash
# Before and after, three rounds alternating: the builds' 85_admin_status.sql and 88_messages.sql
# loaded in turn into one database prepared by setup.sql. Usage: run.sh PSQL-ARGS… (BEFORE=commit)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
before=${BEFORE:-9c9d9ed}
for round in 1 2 3; do
  for build in before after; do
    for f in 85_admin_status.sql 88_messages.sql; do
      if [[ $build == before ]]; then git -C "$root" show "$before:sql/functions/$f"
      else cat "$root/sql/functions/$f"; fi
    done | psql "$@" -q >/dev/null
    echo "== round $round, $build"
    psql "$@" -f "$here/listing.sql" | grep -E '^Time|^ +[0-9]+$' | paste - -
  done
done

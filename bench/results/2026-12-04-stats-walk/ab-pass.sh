#!/usr/bin/env bash
# One whole stats pass (begin, batches of 1 000 under the default row bound, end) over three
# quarters of the partitions of the database's largest queue, whose counts are made stale first
# (`partition_stats.next_seq` lowered by one) in the same transaction, rolled back after. The
# functions of sql/functions/85_admin_status.sql and 91_stats_refresh.sql as they are at OLD_REV
# and as they are in the working tree are loaded in turn; each round prints, per build, the time
# of the pass's start, of its batches, and how many partitions it recounted.
#
# Usage, from the repository root: ab-pass.sh DATABASE_URL OLD_REV [ROUNDS]
# The database is one `regina migrate` (of the tree) set up, after one committed pass, so that
# only the stale partitions wait.
set -euo pipefail
url=$1 rev=$2 rounds=${3:-3}
P="psql -X -q $url"
export PGOPTIONS="-c client_min_messages=warning"
cycle=$(mktemp)
trap 'rm -f "$cycle"' EXIT
cat > "$cycle" <<'SQL'
begin;
update regina.partition_stats s set next_seq = s.next_seq - 1
where s.partition_id in (select p.id from regina.partitions p
                         where p.queue_id = (select p2.queue_id from regina.partitions p2
                                             group by p2.queue_id order by count(*) desc limit 1)
                           and p.id % 4 <> 0);
do $$
declare
    t timestamptz;
    v_begin interval;
    v_n integer := 0;
    k integer;
begin
    t := clock_timestamp();
    perform regina.stats_refresh_begin(clock_timestamp());
    v_begin := clock_timestamp() - t;
    t := clock_timestamp();
    loop
        k := regina.stats_refresh_batch(1000, null, 2000000);
        v_n := v_n + abs(k);
        exit when k >= 0 and k < 1000;
    end loop;
    raise warning 'pass: begin % ms, batches % ms, % recounted',
        round(extract(epoch from v_begin)::numeric * 1000, 1),
        round(extract(epoch from clock_timestamp() - t)::numeric * 1000, 1), v_n;
    perform regina.stats_refresh_end(0);
end $$;
rollback;
SQL
for round in $(seq 1 "$rounds"); do
  for build in old new; do
    if [ $build = old ]; then
      (echo "drop function if exists regina._partition_counts(bigint[], timestamptz);"
       git show "$rev:sql/functions/85_admin_status.sql"
       git show "$rev:sql/functions/91_stats_refresh.sql") | $P >/dev/null
    else
      cat sql/functions/85_admin_status.sql sql/functions/91_stats_refresh.sql | $P >/dev/null
    fi
    $P -f "$cycle" >/dev/null 2>&1   # warm-up
    echo "round $round $build: $($P -f "$cycle" 2>&1 | grep -o 'pass: .*')"
  done
done

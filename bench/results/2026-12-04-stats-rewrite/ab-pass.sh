#!/usr/bin/env bash
# One whole stats pass (start, batches of 1 000 under the default row bound, end) over three
# quarters of the partitions of the database's largest queue, whose counts are made stale first
# (`partition_stats.next_seq` lowered by one, committed, then a vacuum of the table). The functions
# of sql/functions/85_admin_status.sql and 91_stats_refresh.sql as they are at OLD_REV and as they
# are in the working tree are loaded in turn; each round prints, per build, the pass's wall time,
# the CPU time of its backend (/proc/self/stat, read through pg_read_file: a superuser's session),
# how many partitions it recounted, and the WAL it wrote (pg_stat_wal: run it on a database
# cluster nothing else writes to meanwhile).
#
# Usage, from the repository root: ab-pass.sh DATABASE_URL OLD_REV [ROUNDS]
# The database is one `regina migrate` (of the tree) set up, with more partitions than the pass's
# window (100 000), after one committed pass: a pass over the largest queue's window follows each
# measured one to bring the window back round.
set -euo pipefail
url=$1 rev=$2 rounds=${3:-3}
P="psql -X -q $url"
export PGOPTIONS="-c client_min_messages=notice"
pass=$(mktemp)
trap 'rm -f "$pass"' EXIT
cat > "$pass" <<'SQL'
select pg_stat_reset_shared('wal');
do $$
declare
    t timestamptz;
    v_n integer := 0;
    k integer;
    v_cpu bigint[];
    v_stat text[];
begin
    for i in 1 .. 2 loop
        v_stat := regexp_split_to_array(split_part(pg_read_file('/proc/self/stat'), ') ', 2), ' ');
        v_cpu[i] := v_stat[12]::bigint + v_stat[13]::bigint;
        exit when i = 2;
        t := clock_timestamp();
        perform regina.stats_refresh_begin(clock_timestamp());
        loop
            k := regina.stats_refresh_batch(1000, null, 2000000);
            v_n := v_n + abs(k);
            exit when k >= 0 and k < 1000;
        end loop;
        perform regina.stats_refresh_end(0);
    end loop;
    raise notice 'pass: % ms, % ms of CPU, % recounted',
        round(extract(epoch from clock_timestamp() - t)::numeric * 1000),
        (v_cpu[2] - v_cpu[1]) * 10, v_n;
end $$;
-- This session's WAL counters reach pg_stat_wal when it next goes idle.
select pg_stat_force_next_flush();
select 'WAL: ' || wal_records || ' records, ' || wal_bytes || ' bytes' from pg_stat_wal;
SQL
stale="update regina.partition_stats s set next_seq = s.next_seq - 1
       where s.partition_id in (select p.id from regina.partitions p
                                where p.queue_id = (select p2.queue_id from regina.partitions p2
                                                    group by p2.queue_id
                                                    order by count(*) desc limit 1)
                                  and p.id % 4 <> 0)"
for round in $(seq 1 "$rounds"); do
  for build in old new; do
    if [ $build = old ]; then
      (git show "$rev":sql/functions/85_admin_status.sql; git show "$rev":sql/functions/91_stats_refresh.sql) | $P >/dev/null 2>&1
    else
      cat sql/functions/85_admin_status.sql sql/functions/91_stats_refresh.sql | $P >/dev/null 2>&1
    fi
    $P -c "$stale" -c "vacuum regina.partition_stats" >/dev/null
    out=$($P -At -f "$pass" 2>&1 | grep -o 'pass:.*\|WAL:.*' | tr '\n' ' ')
    $P -At -f "$pass" >/dev/null 2>&1
    echo "round $round $build: $out"
  done
done

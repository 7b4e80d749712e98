#!/bin/bash
# Watches the benchmark cluster while a `regina-bench run` uses it, from the repository's root:
#   profile/watch.sh statements|wal|waits SECONDS WINDOW
# waits until the cluster answers, sleeps SECONDS (the warm-up), then over WINDOW seconds prints:
# - statements: the difference of pg_stat_statements (run the bench with a --pg-conf that adds
#   `pg_stat_statements.track = 'all'` to count nested statements);
# - wal: the WAL records written, by type and relation (pg_waldump between two positions);
# - waits: the wait events of the active client sessions, sampled every 25 ms, by statement kind.
set -u
kind=$1; after=$2; window=$3
S=$PWD/.regina/bench-pg
BIN=/usr/lib/postgresql/15/bin
Q() { su postgres -c "$BIN/psql -h $S -p 61442 -d ${DB:-postgres} -AtF'|' -c \"$1\"" 2>/dev/null; }
until [ -n "$(Q 'select 1')" ]; do sleep 1; done
sleep "$after"
tmp=$(mktemp -d)
case $kind in
statements)
  db=$(Q "select datname from pg_database where datname not in ('postgres','template0','template1') order by oid desc limit 1")
  snap="select queryid, sum(calls), sum(total_exec_time), regexp_replace(left(min(query),150), E'[\\\\n|]+', ' ', 'g') from pg_stat_statements group by queryid"
  DB=$db Q "$snap" > "$tmp/a"; sleep "$window"; DB=$db Q "$snap" > "$tmp/b"
  python3 - "$tmp/a" "$tmp/b" <<'PY'
import sys
a = {}
for l in open(sys.argv[1]):
    p = l.rstrip('\n').split('|', 3)
    if len(p) == 4: a[p[0]] = (int(p[1]), float(p[2]))
rows = []
for l in open(sys.argv[2]):
    p = l.rstrip('\n').split('|', 3)
    if len(p) < 4: continue
    c0, t0 = a.get(p[0], (0, 0.0)); c = int(p[1]) - c0; t = float(p[2]) - t0
    if c > 0: rows.append((t, c, p[3]))
rows.sort(reverse=True)
for t, c, q in rows[:45]: print('%9.0f ms %8d calls %8.1f us/call  %s' % (t, c, 1000 * t / c, q))
PY
  ;;
wal)
  a=$(Q "select pg_current_wal_lsn()"); sleep "$window"; b=$(Q "select pg_current_wal_lsn()")
  echo "window $a .. $b"
  for d in $(Q "select datname from pg_database where datname not in ('postgres','template0','template1')"); do
    DB=$d Q "select pg_relation_filenode(c.oid)||' '||c.relname from pg_class c where c.relkind in ('r','i') and pg_relation_filenode(c.oid) is not null"
  done | tr '|' ' ' > "$tmp/rels"
  $BIN/pg_waldump -p "$S/pg_wal" -s "$a" -e "$b" 2>/dev/null > "$tmp/wal"
  python3 - "$tmp/rels" "$tmp/wal" <<'PY'
import re, sys, collections
names = dict(l.split() for l in open(sys.argv[1]) if len(l.split()) == 2)
count = collections.Counter(); commits = 0
for l in open(sys.argv[2]):
    r = re.search(r'rmgr: (\w+)\s.*desc: (\w+)', l)
    if not r: continue
    commits += r.group(2) == 'COMMIT'
    rel = re.search(r'rel \d+/\d+/(\d+)', l)
    count[(r.group(1) + '/' + r.group(2), names.get(rel.group(1), rel.group(1)) if rel else '-')] += 1
print('commits', commits)
for (kind, rel), n in count.most_common(45): print('%8d %-28s %s' % (n, kind, rel))
PY
  ;;
waits)
  su postgres -c "$BIN/psql -h $S -p 61442 -d postgres -At" <<SQL
create temp table w (ev text);
do \$\$ begin for i in 1 .. $((window * 40)) loop
  insert into w select coalesce(wait_event_type || ':' || wait_event, 'CPU') || ' ' ||
      case when query like '%pop_text%' then 'pop' when query like '%push_text%' then 'push'
           when query like '%stats_refresh%' then 'stats' else left(query, 20) end
  from pg_stat_activity where state = 'active' and pid <> pg_backend_pid()
    and backend_type = 'client backend';
  perform pg_sleep(0.025); end loop; end \$\$;
select count(*), ev from w group by ev order by 1 desc limit 30;
SQL
  ;;
esac
rm -rf "$tmp"

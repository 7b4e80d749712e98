#!/usr/bin/env bash
# cpu-split.sh SECONDS: CPU seconds (user and system) of the bench cluster's processes over SECONDS,
# by backend type and application name (as pg_stat_activity has them at the end).
tmp=$(mktemp -d)
snap() { for p in $(pgrep -u postgres postgres); do awk -v p=$p '{print p, $14+$15, $14, $15}' /proc/$p/stat 2>/dev/null; done | sort; }
a=$(snap); sleep $1; b=$(snap)
types=$(psql -X -A -t -F' ' -h 127.0.0.1 -p 61442 -U postgres -d postgres -c "select pid, replace(backend_type,' ','_')||':'||coalesce(nullif(application_name,''),'-')||':'||coalesce(datname,'-') from pg_stat_activity")
join <(echo "$a") <(echo "$b") | awk '{print $1, $5-$2, $6-$3, $7-$4}' | sort > $tmp/delta
echo "$types" | sort > $tmp/types
join -a1 $tmp/delta $tmp/types | awk -v hz=$(getconf CLK_TCK) '{t=$5; if(t=="") t="exited/other"; s[t]+=$2/hz; u[t]+=$3/hz; y[t]+=$4/hz} END{for(k in s) printf "%8.2f s (user %.2f sys %.2f)  %s\n", s[k], u[k], y[k], k}' | sort -rn

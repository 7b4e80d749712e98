#!/bin/bash
# stats-cpu.sh BIN OUT: one `regina-bench run hi-part-100k --target broker --duration 30 --keep-db`
# of the broker BIN, reports in OUT; meanwhile, once a second, the CPU ticks (1/100 s) of the
# PostgreSQL backend running the stats refresh (/proc/PID/stat). Prints the run's delivery, the
# partitions the passes recounted and how many passes (regina.job_runs), and the last sample.
cd "$(git rev-parse --show-toplevel)"
bin=$1 out=$2
rm -f $out.samples
( sleep 8; for i in $(seq 1 60); do
    pid=$(psql -X -At postgres://postgres@127.0.0.1:61442/regina_bench -c "select pid from pg_stat_activity where query like '%stats_refresh%' and pid <> pg_backend_pid() limit 1" 2>/dev/null)
    if [ -n "$pid" ] && [ -r /proc/$pid/stat ]; then echo "$(date +%s.%N) $pid $(awk '{print $14+$15}' /proc/$pid/stat)" >> $out.samples; fi
    sleep 1
  done ) &
sampler=$!
target/release/regina-bench run hi-part-100k --target broker --duration 30 --regina-bin $bin --keep-db --out $out > $out.log 2>&1
kill $sampler 2>/dev/null
grep "^hi-part-100k broker" $out.log | grep -o 'delivered [0-9]* msg/s\|pg cpu [0-9.]* µs/msg delivered'
psql -X -At postgres://postgres@127.0.0.1:61442/regina_bench -c "select sum(removed), count(*) from regina.job_runs where job = 'stats_refresh'"
# last sample per pid
awk '{last[$2]=$3} END {for (p in last) print "pid", p, "ticks", last[p]}' $out.samples

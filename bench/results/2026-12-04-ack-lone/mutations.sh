#!/bin/bash
# Runs sql/tests/ack_lone_settles_as_the_general_path.sql against mutations of
# sql/functions/50_ack.sql (a \n in a pattern stands for a line break), each on a fresh database
# that `regina migrate` set up, and prints the test's first error for each (SURVIVED: the test
# passed). From the repository root:
#   bench/results/2026-12-04-ack-lone/mutations.sh POSTGRES_URL REGINA_BIN
# POSTGRES_URL: a cluster's URL without a database name (postgresql://user@host:port).
url=$1 bin=$2
script=$(mktemp) mutated=$(mktemp)
cat sql/tests/helpers/*.sql sql/tests/ack_lone_settles_as_the_general_path.sql > "$script"
mut() {
  python3 -c "
import sys
s = open('sql/functions/50_ack.sql').read()
a, b = (x.replace('\\\\n', '\\n') for x in sys.argv[1:3])
assert a in s, a
open(sys.argv[3], 'w').write(s.replace(a, b, 1))" "$1" "$2" "$mutated" || return
  psql -X -q "$url/postgres" -c "drop database if exists ack_lone_mutation" \
       -c "create database ack_lone_mutation" 2>/dev/null
  DATABASE_URL=$url/ack_lone_mutation "$bin" migrate >/dev/null 2>&1
  psql -X -q "$url/ack_lone_mutation" < "$mutated" >/dev/null
  r=$(psql -X -q -1 -v ON_ERROR_STOP=1 "$url/ack_lone_mutation" -f "$script" 2>&1 \
      | grep -E "ERROR" | cut -c30-110 | head -1)
  echo "${r:-SURVIVED} <= $3"
}
mut "and c.lease_id = i.lease_id" "and c.lease_id = i.lease_id" "NO CHANGE (control)"
mut "and c.next_seq = i.seq and i.seq <= c.lease_end_seq" "and i.seq <= c.lease_end_seq" "head check dropped"
mut "c.batches_consumed + h.ends::integer" "c.batches_consumed + 1" "batches always +1"
mut "and p.next_seq <= x.next_seq" "and p.next_seq < x.next_seq" "drained off by one"
mut "and c.n = 1" "and c.n >= 1" "one cursor naming the lease"
mut "and c.lease_expires_at > i_now" "" "expiry check dropped"
mut "in ('completed', 'success')" "in ('completed', 'success', 'retry')" "retry taken"
mut "(nullif(t.\"consumerGroup\", '') is null or t.\"consumerGroup\" = c.grp)" "true" "group check dropped"
mut "and cardinality(c.marks) = 0 and cardinality(c.lease_marks) = 0" "" "marks check dropped"
mut "where rq.partition_id = p.id and rq.for_group is not null" "where false and rq.partition_id = p.id and rq.for_group is not null" "requeued check dropped"
mut "count(distinct (r.pid, r.grp)) = count(*)" "true" "distinct check dropped"
mut "and not x.lease_active and not coalesce(x.retry_after > i_now, false)" "and not x.lease_active" "retry instant in delete"
mut "when x.retry_after > i_now then x.retry_after" "when false then null" "retry instant in update"
mut "c.total_consumed + 1" "c.total_consumed" "consumed count"
mut "case when h.ends then c.lease_id else c.last_lease_id end" "c.lease_id" "last lease always"
mut "when x.lease_active then x.lease_expires_at" "when x.lease_active then i_now" "ready at lease end"
mut "and m.seq > i_seq" "and m.seq >= i_seq" "next head includes itself"
mut "                    i_seq + 1)" "                    i_seq + 2)" "head past end"
mut "    if v_gone < v_n then" "    if false then" "ready update skipped"
# The one-item update of regina.ack_text (its resolution is _ack_head_items, mutated above).
mut "c.lease_expires_at > v_now and c.next_seq = r.seq" "c.lease_expires_at > v_now" "one item: head check dropped"
mut "and c.lease_id = r.lease and c.lease_expires_at > v_now" "and c.lease_id = r.lease" "one item: expiry check dropped"
mut "c.batches_consumed + (h.next_seq > c.lease_end_seq)::integer" "c.batches_consumed + 1" "one item: batches always +1"
mut "and r.seq <= c.lease_end_seq and cardinality(c.marks) = 0" "and r.seq <= c.lease_end_seq and true" "one item: kept marks check dropped"
mut "and cardinality(c.lease_marks) = 0\n        returning" "\n        returning" "one item: lease marks check dropped"
mut "and cardinality(c.marks) = 0 and cardinality(c.lease_marks) = 0;" "and cardinality(c.lease_marks) = 0;" "kept marks check dropped"
mut "and cardinality(c.marks) = 0 and cardinality(c.lease_marks) = 0;" "and cardinality(c.marks) = 0;" "lease marks check dropped"
mut "total_consumed = c.total_consumed + 1,\n            batches_consumed = c.batches_consumed + (h" "total_consumed = c.total_consumed,\n            batches_consumed = c.batches_consumed + (h" "one item: consumed count"
mut "last_lease_id = case when h.next_seq > c.lease_end_seq then c.lease_id" "last_lease_id = case when true then c.lease_id" "one item: last lease always"
psql -X -q "$url/postgres" -c "drop database if exists ack_lone_mutation"
rm -f "$script" "$mutated"

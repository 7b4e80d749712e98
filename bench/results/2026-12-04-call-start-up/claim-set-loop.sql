-- A one-cursor autoAck claim set (regina._pop_claim_set) called 30 000 times in one transaction,
-- under the plan settings of regina.pop_text, on a cursor of queue `e2eq` at its partition's end
-- (it finds nothing, writes nothing but the share lock on the partition row): what each call
-- costs when no per-transaction set-up is left to pay. psql -X -f claim-set-loop.sql <database>
-- (run once first to warm the session's caches).
set plan_cache_mode = force_generic_plan;
set enable_seqscan = off;
set jit = off;
\timing on
do $$
declare q regina.queues; c regina.cursors; r record;
begin
  select * into q from regina.queues where name = 'e2eq';
  select * into c from regina.cursors
  where queue_id = q.id and consumer_group = 'e2e' order by partition_id limit 1;
  for i in 1 .. 30000 loop
    r := regina._pop_claim_set(q, array[c], 10, true, null::uuid, now(), null::uuid[]);
  end loop;
end $$;

-- The same call as claim-set-loop.sql, one per transaction (pgbench -M prepared -c 1, with
-- PGOPTIONS="-c plan_cache_mode=force_generic_plan -c enable_seqscan=off -c jit=off"); the share
-- lock makes each transaction write, so each commit waits for its WAL flush.
select (regina._pop_claim_set(q::regina.queues, array[c::regina.cursors], 10, true, null::uuid,
                              now(), null::uuid[])).o_left
from regina.queues q,
     lateral (select c from regina.cursors c
              where c.queue_id = q.id and c.consumer_group = 'e2e'
              order by c.partition_id limit 1) c
where q.name = 'e2eq';

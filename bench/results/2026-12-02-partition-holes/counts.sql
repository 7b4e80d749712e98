-- regina._partition_counts on one partition of 10 000 000 messages and on 1 000 partitions of a
-- few messages each, on the database a hi-part-100k run left (`regina-bench run hi-part-100k
-- --target broker --duration 20 --keep-db`), idle. Load the build's 85_admin_status.sql (and, for
-- the build after, migrations/0018_partition_holes.sql and 91_stats_refresh.sql) first.
select count(*) from regina.push('[{"queue":"deepq","partition":"hot","payload":1,
    "transactionId":"t0","messageId":"00000000-0000-0000-0000-000000000001"}]'::jsonb);
select p.id as pid from regina.partitions p join regina.queues q on q.id = p.queue_id
where q.name = 'deepq' \gset
insert into regina.messages (partition_id, seq, id, transaction_id, created_at, payload)
select :pid, s, gen_random_uuid(), 't' || s, now(), '{"n":1}'::json
from generate_series(1, 10000000) s;
update regina.partitions set next_seq = 10000001 where id = :pid;
\timing on
select sum(c.total) from regina._partition_counts(array(select id from regina.partitions
    where id <> :pid order by id limit 1000), now()) c;
select c.total from regina._partition_counts(array[:pid]::bigint[], now()) c;

-- A partition whose dead-letter queue holds 1 000 000 entries, and 1 000 partitions of two
-- messages with one dead letter each (moved by hand, a statement each), on a database migrated
-- by the build after (`regina migrate`); the counting of the build before is loaded beside it as
-- regina._partition_counts_old (its 85_admin_status.sql, the function renamed).
select count(*) from regina.push('[{"queue":"deepq","partition":"hot","payload":1,
    "transactionId":"t0","messageId":"00000000-0000-0000-0000-000000000001"}]'::jsonb);
select p.id as pid, p.queue_id as qid from regina.partitions p join regina.queues q on q.id = p.queue_id
where q.name = 'deepq' \gset
insert into regina.dead_letters (queue_id, partition_id, consumer_group, message_id, seq,
                                 transaction_id, payload, created_at, error_message, failed_at)
select :qid, :pid, 'g', gen_random_uuid(), s, 't' || s, '{"n":1}'::json, now(), 'failed', now()
from generate_series(1, 1000000) s;
select count(*) from regina.push((select jsonb_agg(jsonb_build_object(
    'queue', 'tiny', 'partition', 'p' || i, 'transactionId', 't' || i || '-' || k,
    'messageId', gen_random_uuid(), 'payload', i))
    from generate_series(1, 1000) i cross join generate_series(0, 1) k));
select count(*) from (select regina.message_dead_letter(p.uuid::text, 't' || substr(p.name, 2) || '-0', 'g', 'by hand')
                      from regina.partitions p join regina.queues q on q.id = p.queue_id
                      where q.name = 'tiny') x;
vacuum analyze;

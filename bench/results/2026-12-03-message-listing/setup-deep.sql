-- A partition of 2 000 000 messages two hours old followed by 10 of the last minute (after
-- setup.sql, on the same database).
select count(*) from regina.push('[{"queue":"deep","partition":"d","payload":1,
    "transactionId":"t0","messageId":"00000000-0000-0000-0000-00000000000d"}]'::jsonb,
    i_now => now() - interval '2 hours');
insert into regina.messages (partition_id, seq, id, transaction_id, created_at, payload)
select p.id, s, gen_random_uuid(), 'd' || s, now() - interval '2 hours' + s * interval '1 microsecond',
       '{"n":1}'::json
from generate_series(1, 2000000) s
join regina.partitions p on p.name = 'd'
join regina.queues q on q.id = p.queue_id and q.name = 'deep';
update regina.partitions p set next_seq = 2000001, last_created_at = now() - interval '1 hour'
from regina.queues q where q.id = p.queue_id and q.name = 'deep';
select count(*) from regina.push((select jsonb_agg(jsonb_build_object('queue', 'deep',
    'partition', 'd', 'transactionId', 'new' || i, 'messageId', gen_random_uuid(), 'payload', 1))
    from generate_series(0, 9) i), i_now => now() - interval '1 minute');
vacuum analyze;

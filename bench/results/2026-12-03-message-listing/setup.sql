-- A busy queue `big` (2 000 000 messages of the last five minutes over 100 partitions) next to a
-- quiet queue `small` (10 messages over 3 partitions, ten minutes old), on a migrated database.
select count(*) from regina.push((select jsonb_agg(jsonb_build_object('queue', 'big',
    'partition', 'p' || (i % 100), 'transactionId', 's' || i, 'messageId', gen_random_uuid(),
    'payload', 1)) from generate_series(0, 99) i));
select count(*) from regina.push((select jsonb_agg(jsonb_build_object('queue', 'small',
    'partition', 'p' || (i % 3), 'transactionId', 's' || i, 'messageId', gen_random_uuid(),
    'payload', 1)) from generate_series(0, 9) i), i_now => now() - interval '10 minutes');
insert into regina.messages (partition_id, seq, id, transaction_id, created_at, payload)
select p.id, 1000 + s, gen_random_uuid(), 'b' || s,
       now() - interval '5 minutes' + s * interval '100 microseconds', '{"n":1}'::json
from generate_series(1, 2000000) s
join regina.partitions p on p.name = 'p' || (s % 100)
join regina.queues q on q.id = p.queue_id and q.name = 'big';
update regina.partitions p set next_seq = 3000000 from regina.queues q
where q.id = p.queue_id and q.name = 'big';
vacuum analyze;

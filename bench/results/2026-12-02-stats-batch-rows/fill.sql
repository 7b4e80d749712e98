-- 4 000 000 messages over 200 partitions of queue dq, in pushes of 100 000 (run 40 times with
-- psql -v c=<run>), on a database a broker migrated; then `vacuum analyze regina.messages`.
select count(*) from regina.push((select jsonb_agg(jsonb_build_object('queue', 'dq',
    'partition', 'p' || (i % 200), 'transactionId', 't-' || :'c' || '-' || i,
    'messageId', gen_random_uuid(), 'payload', jsonb_build_object('n', i)))
    from generate_series(0, 99999) i));

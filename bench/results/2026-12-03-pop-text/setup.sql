-- The queue of measure.sh: 20 000 messages over 10 partitions.
select regina.configure('{"queue": "jb"}');
select count(*) from regina.push((select jsonb_agg(jsonb_build_object(
    'queue', 'jb', 'partition', 'p' || (i % 10), 'transactionId', 't' || i,
    'messageId', gen_random_uuid(),
    'payload', jsonb_build_object('message', 'Hello World', 'n', i)))
  from generate_series(1, 20000) i));

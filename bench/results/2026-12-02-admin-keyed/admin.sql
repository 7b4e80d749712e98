-- Calls on one small partition, with the statistics of regina.messages taken while a single
-- partition held the table (a first queue loaded with a backlog before any other existed: the
-- planner then believes every message belongs to that partition, and that a lookup by any
-- partition matches the whole table).
-- Run with psql on a database the broker migrated and that has not served anything, as:
--   psql -v r=<run tag> -f admin.sql
-- after loading the functions to measure (sql/functions/65_streams.sql, 72_seek.sql and
-- 87_queue_admin.sql of the build to measure). The first run sets the tables up.
\set ON_ERROR_STOP on
select not exists (select 1 from regina.queues where name = 'big') as fresh \gset
\if :fresh
do $$ declare v text; begin
    for v in select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
             where n.nspname = 'regina' and c.relkind = 'r' loop
        execute format('alter table regina.%I set (autovacuum_enabled = false)', v);
    end loop; end $$;
select count(*) from regina.push((select jsonb_agg(jsonb_build_object('queue', 'big',
    'partition', 'p0', 'transactionId', 'b-' || i, 'messageId', gen_random_uuid(), 'payload', 1))
    from generate_series(0, 199999) i));
analyze;
select regina.stream_register('{"name": "s", "source_queue": "small", "config_hash": "h",
    "query_id": "0196a000-0000-7000-8000-00000000cafe"}');
\endif
-- A small queue of one partition, three messages.
select count(*) from regina.push((select jsonb_agg(jsonb_build_object('queue', 'small',
    'partition', 'p-' || :'r', 'transactionId', 's-' || i, 'messageId', gen_random_uuid(),
    'payload', 1)) from generate_series(0, 2) i));
select uuid as part from regina.partitions where name = 'p-' || :'r' \gset
select count(*) from regina.pop(('[{"queue": "small", "partition": "p-' || :'r' || '",
    "consumerGroup": "g", "batch": 1, "leaseId": "00000000-0000-4000-8000-00000000000' || :'r'
    || '"}]')::jsonb);
\timing on
-- A stream cycle acking the leased message and pushing one.
select count(*) from regina.stream_cycle(jsonb_build_object(
    'query_id', '0196a000-0000-7000-8000-00000000cafe', 'partition_id', :'part',
    'state_ops', '[{"type": "upsert", "key": "k", "value": 1}]'::jsonb,
    'push_items', jsonb_build_array(jsonb_build_object('queue', 'small', 'partition', 'p-' || :'r',
        'transactionId', 'after', 'messageId', gen_random_uuid(), 'payload', 1)),
    'ack', jsonb_build_object('transactionId', 's-0', 'partitionId', :'part',
        'leaseId', '00000000-0000-4000-8000-00000000000' || :'r', 'consumerGroup', 'g')));
-- A seek of the group back to the partition's start, then to its end.
select regina.consumer_group_seek(jsonb_build_object('queue', 'small', 'partition', 'p-' || :'r',
    'consumerGroup', 'g', 'timestamp', '2000-01-01T00:00:00Z')) is not null;
select regina.consumer_group_seek(jsonb_build_object('queue', 'small', 'partition', 'p-' || :'r',
    'consumerGroup', 'g', 'toEnd', true)) is not null;
-- A clear of the partition.
select count(*) from regina.queue_clear('small', 'p-' || :'r');

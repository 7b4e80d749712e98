-- A push of 100 items into a partition of 100 000 messages, with the statistics of
-- regina.messages taken while it held one message (a caught-up queue before a burst).
-- Run with psql on a database the broker migrated and that has not served anything, as:
--   psql -v r=<run tag> -f burst.sql
-- after loading the regina.push to measure (sql/functions/21_capacity.sql, then
-- sql/functions/20_push.sql, of the build to measure). The first run sets the partition up.
\set ON_ERROR_STOP on
select not exists (select 1 from regina.queues where name = 'dq') as fresh \gset
\if :fresh
do $$ declare v text; begin
    for v in select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
             where n.nspname = 'regina' and c.relkind = 'r' loop
        execute format('alter table regina.%I set (autovacuum_enabled = false)', v);
    end loop; end $$;
select count(*) from regina.push((select jsonb_agg(jsonb_build_object('queue', 'dq',
    'partition', 'p0', 'transactionId', 'a-' || i, 'messageId', gen_random_uuid(), 'payload', 1))
    from generate_series(0, 0) i));
select count(*) from regina.pop('[{"queue":"dq","consumerGroup":"g","batch":1,"partitions":1,"autoAck":true}]');
analyze regina.messages;
select count(*) from regina.push((select jsonb_agg(jsonb_build_object('queue', 'dq',
    'partition', 'p0', 'transactionId', 'b-' || i, 'messageId', gen_random_uuid(), 'payload', 1))
    from generate_series(0, 99999) i));
\endif
\timing on
select count(*) from regina.push((select jsonb_agg(jsonb_build_object('queue', 'dq',
    'partition', 'p0', 'transactionId', 'd-' || :'r' || '-' || i, 'messageId', gen_random_uuid(),
    'payload', 1)) from generate_series(0, 99) i));
select count(*) from regina.push((select jsonb_agg(jsonb_build_object('queue', 'dq',
    'partition', 'p0', 'transactionId', 'd-' || :'r' || '-' || i, 'messageId', gen_random_uuid(),
    'payload', 1)) from generate_series(100, 199) i));
select count(*) from regina.push((select jsonb_agg(jsonb_build_object('queue', 'dq',
    'partition', 'p0', 'transactionId', 'd-' || :'r' || '-' || i, 'messageId', gen_random_uuid(),
    'payload', 1)) from generate_series(200, 299) i));

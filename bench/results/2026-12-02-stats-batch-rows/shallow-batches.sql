select pg_advisory_lock(8243108395492638739);
\o /dev/null
select count(*) from regina.push((select jsonb_agg(jsonb_build_object('queue', 'wide', 'partition', 'w' || i, 'transactionId', 'x-' || gen_random_uuid(), 'messageId', gen_random_uuid(), 'payload', 0)) from generate_series(0, 999) i));
select regina.stats_refresh_begin();
\o
\timing on
select regina.stats_refresh_batch(1000, null, :rows);
\timing off
\o /dev/null
select regina.stats_refresh_end(0);

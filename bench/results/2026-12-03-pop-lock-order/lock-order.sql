-- The cost of regina._pop_lock_order for a call of two requests of one queue and two groups that
-- are both subscribed already (the steady state: one statement that finds nothing to create), on
-- a database a broker migrated, after one push to queue `q`. Prints the mean per call.
set plan_cache_mode = force_generic_plan;
set enable_seqscan = off;
do $$
declare
    r regina.pop_request[] := array(select r from jsonb_populate_recordset(null::regina.pop_request,
        '[{"queue":"q","consumerGroup":"g1"},{"queue":"q","consumerGroup":"g2"}]') r);
    t timestamptz := clock_timestamp();
begin
    perform regina._pop_lock_order(r, now(), false);
    t := clock_timestamp();
    for i in 1..20000 loop
        perform regina._pop_lock_order(r, now(), false);
    end loop;
    raise notice 'per call % us', extract(epoch from clock_timestamp() - t) * 1e6 / 20000;
end
$$;

-- Mean wall time of three calls that ran statements compiled by JIT before this change, each
-- repeated in one session: a namespace pop (autoAck, one message), a stats pass over a few
-- partitions, a page of 10 of the message listing. One session and nothing else running: the
-- wall time is the backend's CPU.
do $$
declare
    t0 timestamptz;
    i integer;
begin
    t0 := clock_timestamp();
    for i in 1..50 loop
        perform count(*) from regina.pop('[{"namespace": "jit", "consumerGroup": "g",
                                           "batch": 1, "autoAck": true}]');
    end loop;
    raise notice 'namespace pop: % ms', round(extract(epoch from clock_timestamp() - t0) * 1000 / 50, 2);

    t0 := clock_timestamp();
    for i in 1..20 loop
        perform regina.stats_refresh_begin(clock_timestamp());
        while regina.stats_refresh_batch(1000) = 1000 loop end loop;
        perform regina.stats_refresh_end(0);
    end loop;
    raise notice 'stats pass: % ms', round(extract(epoch from clock_timestamp() - t0) * 1000 / 20, 2);

    t0 := clock_timestamp();
    for i in 1..50 loop
        perform regina.messages_list(jsonb_build_object('queue', 'jit.a', 'limit', 10));
    end loop;
    raise notice 'message listing page: % ms', round(extract(epoch from clock_timestamp() - t0) * 1000 / 50, 2);
end
$$;

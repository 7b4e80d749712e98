-- The stats refresh (91_stats_refresh.sql): a pass recounts the partitions that changed since
-- the previous one and only those, in batches; queue sums, group lag, the lag history and the
-- cluster gauges follow; old metrics history is trimmed in batches.

create function pg_temp.counts(i_partition text) returns jsonb
language sql as $$
    select jsonb_build_object('total', s.total, 'pending', s.pending, 'processing', s.processing,
                              'completed', s.completed, 'failed', s.failed, 'deadLetter', s.dead_letter)
    from regina.partition_stats s join regina.partitions p on p.id = s.partition_id
    where p.name = i_partition
$$;

do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v jsonb;
    v_n bigint;
    pid text;
begin
    perform regina.configure('{"queue":"sq","options":{"retryLimit":0}}');
    perform regina.push((select jsonb_agg(jsonb_build_object(
                             'queue', 'sq', 'partition', case when i <= 5 then 'p1' else 'p2' end,
                             'payload', i, 'transactionId', 'm' || i, 'messageId', gen_random_uuid()))
                         from generate_series(1, 8) i), i_now => t0);

    v_n := pg_temp.stats_pass(t0 + interval '1 second', 2);
    assert v_n = 3, format('first pass counts every partition: %s', v_n);
    assert pg_temp.counts('p1') = '{"total":5,"pending":5,"processing":0,"completed":0,"failed":0,"deadLetter":0}',
        format('p1 %s', pg_temp.counts('p1'));
    assert (select (s.total, s.pending) = (8::bigint, 8::bigint)
            from regina.queue_stats s join regina.queues q on q.id = s.queue_id where q.name = 'sq'),
        'queue sums';
    assert regina._stats_age(t0 + interval '4 seconds') = 3, 'statsAge from the end of the pass';

    v_n := pg_temp.stats_pass(t0 + interval '2 seconds', 2);
    assert v_n = 0, format('nothing changed, nothing recounted: %s', v_n);

    -- Queue mode's first pop subscribes it (every partition of the queue is recounted) and leases
    -- m1, m2.
    select result into v from regina.pop('[{"queue":"sq","partition":"p1","batch":2,
                                            "leaseId":"0196a000-0000-7000-8000-000000002001"}]',
                                         t0 + interval '3 seconds');
    pid := v ->> 'partitionId';
    v_n := pg_temp.stats_pass(t0 + interval '4 seconds', 2);
    assert v_n = 3, format('a new known group: the queue is recounted %s', v_n);
    assert pg_temp.counts('p1') ->> 'processing' = '2', format('leased %s', pg_temp.counts('p1'));

    -- An ack inside the lease leaves the ready row alone; the live lease keeps p1 recounted.
    perform regina.ack(jsonb_build_array(jsonb_build_object('transactionId', 'm1', 'partitionId', pid,
        'leaseId', '0196a000-0000-7000-8000-000000002001')), t0 + interval '5 seconds');
    v_n := pg_temp.stats_pass(t0 + interval '6 seconds', 2);
    assert v_n = 1, format('only the leased partition: %s', v_n);
    assert pg_temp.counts('p1') = '{"total":5,"pending":3,"processing":1,"completed":1,"failed":0,"deadLetter":0}',
        format('p1 after the ack %s', pg_temp.counts('p1'));

    -- A delete is recorded by the trigger: p2 is recounted although nothing else moved there.
    perform regina.message_delete((select p.uuid::text from regina.partitions p where p.name = 'p2'),
                                  'm8', t0 + interval '7 seconds');
    assert exists (select 1 from regina.stats_dirty d join regina.partitions p on p.id = d.partition_id
                   where p.name = 'p2'), 'the delete marked p2';
    v_n := pg_temp.stats_pass(t0 + interval '8 seconds', 2);
    assert v_n = 2, format('p2 and the leased p1: %s', v_n);
    assert pg_temp.counts('p2') ->> 'total' = '2', format('p2 %s', pg_temp.counts('p2'));

    -- The lease fails: m2 is dead-lettered (retryLimit 0); the ready row moves.
    perform regina.ack(jsonb_build_array(jsonb_build_object('transactionId', 'm2', 'partitionId', pid,
        'leaseId', '0196a000-0000-7000-8000-000000002001', 'status', 'failed', 'error', 'boom')),
        t0 + interval '9 seconds');
    v_n := pg_temp.stats_pass(t0 + interval '10 seconds', 2);
    assert v_n = 1, format('p1 only: %s', v_n);
    assert pg_temp.counts('p1') = '{"total":5,"pending":3,"processing":0,"completed":2,"failed":0,"deadLetter":1}',
        format('p1 after the failure %s', pg_temp.counts('p1'));

    -- Lag of queue mode: m3..m5 in p1, and the two messages left of offsets 0..2 in p2 (m8's
    -- offset was deleted: a hole, not a message); the oldest head was created at t0.
    assert (select (g.partitions_with_lag, g.offset_lag, g.oldest_head_at) = (2::bigint, 5::bigint, t0)
            from regina.group_stats g where g.consumer_group = '__QUEUE_MODE__'),
        format('group lag %s', (select row_to_json(g) from regina.group_stats g));
    assert (select (h.depth, h.lag_samples, h.lag_ms_max) = (5::bigint, 6::bigint, 10000::double precision)
            from regina.queue_lag_history h where h.queue_name = 'sq'),
        format('lag history of the minute %s', (select json_agg(h) from regina.queue_lag_history h));

    -- A second queue, beyond a label limit of one: summed under _other.
    perform regina.push('[{"queue":"sr","partition":"Default","payload":1,"transactionId":"r1","messageId":"0196a000-0000-7000-8000-000000002101"}]',
                        i_now => t0);
    perform pg_temp.stats_pass(t0 + interval '11 seconds', 2);
    assert (select jsonb_object_agg(g.metric || '/' || g.queue || '/' || coalesce(g.consumer_group, ''), g.value)
            from regina.metrics_cluster_gauges(1, t0 + interval '12 seconds') g)
           = '{"queue_depth/sq/": 5, "queue_depth/_other/": 1, "dlq_depth/sq/": 1, "dlq_depth/_other/": 0,
               "consumer_lag_messages/sq/__QUEUE_MODE__": 5, "consumer_lag_seconds/sq/__QUEUE_MODE__": 12}',
        format('gauges %s', (select json_agg(g) from regina.metrics_cluster_gauges(1, t0 + interval '12 seconds') g));

    -- Trimming: rows older than the retention go, a batch per table at a time.
    insert into regina.worker_metrics (bucket, worker_id, hostname, version, started_at, last_seen)
    select t0 - i * interval '1 day', 'w', 'h', 'v', t0 - interval '200 days', t0 - i * interval '1 day'
    from generate_series(0, 99) i;
    insert into regina.queue_metrics (bucket, queue_name, worker_id)
    select t0 - i * interval '1 day', 'sq', 'w' from generate_series(0, 99) i;
    assert regina.metrics_trim(90, 12, t0) = 12, 'a full batch';
    assert regina.metrics_trim(90, 12, t0) = 6, 'the rest';
    assert regina.metrics_trim(90, 12, t0) = 0, 'nothing left';
    -- (The test's broker writes rows of its own instance meanwhile: only the fixture's count.)
    assert (select count(*) from regina.worker_metrics where worker_id = 'w') = 91
           and (select min(bucket) from regina.worker_metrics where worker_id = 'w')
               = t0 - interval '90 days',
        'rows within the retention stay';
end
$$;

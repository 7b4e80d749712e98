-- The streams cycle (streams-api.md §3.3) at SQL level: a cumulative `completed` ack settles the
-- prefix of the lease, `release_lease: false` parks the lease and its expiry charges no attempt,
-- `true` ends it at once without a charge, a retried cycle is a replay that applies nothing, and
-- a refused cycle applies nothing at all.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v jsonb;
    pid text;
    qid uuid := '0196a000-0000-7000-8000-00000000cafe';
    l1 text := '0196a000-0000-7000-8000-0000000000f1';
    l2 text := '0196a000-0000-7000-8000-0000000000f2';
    l3 text := '0196a000-0000-7000-8000-0000000000f3';
    c regina.cursors;
    refused boolean;
begin
    perform regina.configure('{"queue":"src","options":{"retryLimit":0,"leaseTime":30}}');
    perform regina.push((select jsonb_agg(jsonb_build_object('queue','src','partition','p',
                             'payload', i, 'transactionId', 't' || i,
                             'messageId', ('0196a000-0000-7000-8000-' || lpad(i::text, 12, '0'))::uuid))
                         from generate_series(1, 5) i), i_now => t0);
    v := regina.stream_register(jsonb_build_object('name','q1','source_queue','src',
                                'config_hash','h1','query_id',qid), t0);
    assert (v ->> 'fresh')::boolean, format('first registration is fresh: %s', v);

    select result into v from regina.pop(jsonb_build_array(jsonb_build_object(
        'queue','src','batch',5,'leaseId',l1)), t0);
    pid := v ->> 'partitionId';

    -- Partial ack of t2 with release_lease false: t1, t2 settled, the lease stays (parked).
    select result into v from regina.stream_cycle(jsonb_build_object(
        'query_id', qid, 'partition_id', pid,
        'state_ops', '[{"type":"upsert","key":"k","value":{"windowEnd":5}}]'::jsonb,
        'ack', jsonb_build_object('transactionId','t2','partitionId',pid,'leaseId',l1),
        'release_lease', false), null, t0) where kind = 'ack';
    assert (v ->> 'count')::int = 2 and not (v ->> 'lease_released')::boolean, format('parked: %s', v);
    select * into c from regina.cursors where consumer_group = '__QUEUE_MODE__';
    assert c.lease_active and c.parked_lease_id = l1::uuid and c.next_seq = 2,
        format('head past t2, lease parked: %s', row_to_json(c));

    -- The same cycle again is a replay: nothing applied (the state op would be visible).
    select result into v from regina.stream_cycle(jsonb_build_object(
        'query_id', qid, 'partition_id', pid,
        'state_ops', '[{"type":"delete","key":"k"}]'::jsonb,
        'ack', jsonb_build_object('transactionId','t2','partitionId',pid,'leaseId',l1),
        'release_lease', false), null, t0) where kind = 'cycle';
    assert (v ->> 'replayed')::boolean, format('replayed: %s', v);
    assert exists (select 1 from regina.stream_state where key = 'k'), 'replay deleted nothing';

    -- The parked lease expires: no attempt charged although retryLimit is 0 (else: dead letter).
    perform regina.lease_sweep(100, t0 + interval '31 seconds');
    select * into c from regina.cursors where consumer_group = '__QUEUE_MODE__';
    assert not c.lease_active and c.head_attempts = 0 and c.next_seq = 2 and c.retry_after is null,
        format('expiry of a parked lease charges nothing: %s', row_to_json(c));
    assert not exists (select 1 from regina.dead_letters), 'nothing dead-lettered';

    -- The tail comes again, in order; a cycle acking t4 with release_lease true ends the lease
    -- at once, t5 deliverable again at once with nothing charged.
    select result into v from regina.pop(jsonb_build_array(jsonb_build_object(
        'queue','src','batch',5,'leaseId',l2)), t0 + interval '32 seconds');
    assert v -> 'messages' -> 0 ->> 'transactionId' = 't3', format('tail in order: %s', v);
    select result into v from regina.stream_cycle(jsonb_build_object(
        'query_id', qid, 'partition_id', pid,
        'ack', jsonb_build_object('transactionId','t4','partitionId',pid,'leaseId',l2)),
        null, t0 + interval '33 seconds') where kind = 'ack';
    assert (v ->> 'count')::int = 2 and (v ->> 'lease_released')::boolean, format('released: %s', v);
    select result into v from regina.pop(jsonb_build_array(jsonb_build_object(
        'queue','src','batch',5,'leaseId',l3)), t0 + interval '33 seconds');
    assert v -> 'messages' -> 0 ->> 'transactionId' = 't5' and (v -> 'messages' -> 0 ->> 'retryCount')::int = 0,
        format('t5 again, uncharged: %s', v);

    -- A refused cycle (stale lease l2) applies nothing: state, sink and cursor unchanged.
    begin
        perform regina.stream_cycle(jsonb_build_object(
            'query_id', qid, 'partition_id', pid,
            'state_ops', '[{"type":"delete","key":"k"}]'::jsonb,
            'push_items', '[{"queue":"sink","partition":"Default","transactionId":"e1","messageId":"0196a000-0000-7000-8000-0000000000e1"}]'::jsonb,
            'ack', jsonb_build_object('transactionId','t5','partitionId',pid,'leaseId',l2)),
            '[1]', t0 + interval '34 seconds');
        refused := false;
    exception when sqlstate 'RGTXA' then
        refused := true;
        get stacked diagnostics v = pg_exception_detail;
    end;
    assert refused and v ->> 'code' = 'lease_expired', format('stale lease refused: %s', v);
    assert exists (select 1 from regina.stream_state where key = 'k'), 'state unchanged';
    assert not exists (select 1 from regina.queues where name = 'sink'), 'sink unchanged';

    -- state/get: literal prefix and numeric windowEnd.
    perform regina.stream_cycle(jsonb_build_object('query_id', qid, 'partition_id', pid,
        'state_ops', '[{"type":"upsert","key":"a%_b","value":{"windowEnd":10.5}},
                       {"type":"upsert","key":"aXYb","value":{"windowEnd":9}},
                       {"type":"upsert","key":"a%_c","value":{"windowEnd":"1"}}]'::jsonb),
        null, t0 + interval '35 seconds');
    v := regina.stream_state_get(jsonb_build_object('query_id', qid, 'partition_id', pid,
            'keys', '[]'::jsonb, 'key_prefix', 'a%_', 'ripe_at_or_before', 10.5))::jsonb;
    assert jsonb_array_length(v -> 'rows') = 1 and v -> 'rows' -> 0 ->> 'key' = 'a%_b',
        format('literal prefix and numeric windowEnd: %s', v);
end $$;

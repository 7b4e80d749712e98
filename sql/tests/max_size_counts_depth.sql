-- maxSize admits new messages while the queue's depth (stored, unexpired messages some known
-- group has not settled) stays below it; duplicates never count; failover replay ignores it.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    items jsonb;
    v jsonb;
    q_id bigint;
begin
    perform regina.configure('{"queue":"m","options":{"maxSize":3,"ttl":100}}');
    select id into q_id from regina.queues where name = 'm';
    select jsonb_agg(jsonb_build_object('queue', 'm', 'partition', 'p' || (i % 2), 'payload', i,
                                        'transactionId', 't' || i, 'messageId', gen_random_uuid()))
    into items from generate_series(0, 4) i;
    assert (select array_agg(r.result ->> 'status' order by r.idx) from regina.push(items, i_now => t0) r)
           = '{queued,queued,queued,failed,failed}', 'a prefix of three across partitions';
    assert regina.queue_depth(q_id, t0) = 3, 'no known group: every stored message';
    assert (select array_agg(r.result ->> 'status' order by r.idx) from regina.push(items, i_now => t0) r)
           = '{duplicate,duplicate,duplicate,failed,failed}', 'duplicates are answered, not refused';

    -- A group settles one message: room for one.
    perform regina.pop('[{"queue":"m","partition":"p0","consumerGroup":"g","batch":1,"autoAck":true}]', t0 + interval '1 second');
    assert regina.queue_depth(q_id, t0 + interval '1 second') = 2, 'g settled t0';
    -- A delivery under a lease settles nothing yet.
    select result::jsonb into v from regina.pop('[{"queue":"m","partition":"p0","consumerGroup":"g","batch":1,"leaseId":"0196a000-0000-7000-8000-000000000aa1"}]',
                                                t0 + interval '2 seconds');
    assert regina.queue_depth(q_id, t0 + interval '2 seconds') = 2, 'leased, not settled';

    -- Expired messages do not count.
    assert regina.queue_depth(q_id, t0 + interval '101 seconds') = 0, 'all expired';

    -- Failover replay ignores maxSize.
    select jsonb_agg(jsonb_build_object('queue', 'm', 'partition', 'p0', 'payload', i,
                                        'transactionId', 'r' || i, 'messageId', gen_random_uuid()))
    into items from generate_series(0, 4) i;
    assert (select count(*) from regina.push(items, i_now => t0 + interval '3 seconds', i_ignore_capacity => true) r
            where r.result ->> 'status' = 'queued') = 5, 'replay stores everything';
    assert regina.queue_depth(q_id, t0 + interval '3 seconds') = 7, 'depth may exceed maxSize after replay';
end $$;

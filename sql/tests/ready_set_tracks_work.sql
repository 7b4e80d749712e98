-- The ready set holds exactly the (partition, group) pairs with work, with the instant each may
-- next be claimed: filled by pushes and new subscriptions, moved by leases and retry delays,
-- emptied when a group's head reaches the partition's end. Pops only look there.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v jsonb;
    n integer;
    seen text[] := '{}';
    pid text;
    items jsonb;
begin
    perform regina.configure('{"queue":"rs","options":{"retryDelay":5000,"retryLimit":5,"leaseTime":30}}');
    select jsonb_agg(jsonb_build_object('queue', 'rs', 'partition', 'p' || i, 'payload', i,
                                        'transactionId', 'm' || i,
                                        'messageId', gen_random_uuid()))
    into items from generate_series(0, 49) i;
    perform regina.push(items, i_now => t0);
    assert (select count(*) from regina.ready) = 0, 'no subscription yet: no ready rows';

    -- A group's first pop subscribes it and adds the partitions holding messages.
    select result into v from regina.pop('[{"queue":"rs","consumerGroup":"g","batch":1,"autoAck":true}]',
                                         t0 + interval '1 second');
    seen := seen || (v ->> 'partition');
    assert (select count(*) from regina.ready where consumer_group = 'g') = 49,
        format('49 partitions left with work: %s', (select count(*) from regina.ready));

    -- One partition per pop: each is claimed once, then the set is empty.
    for i in 1 .. 49 loop
        select result into v from regina.pop('[{"queue":"rs","consumerGroup":"g","batch":1,"autoAck":true}]',
                                             t0 + interval '2 seconds');
        assert v ->> 'success' = 'true', format('pop %s: %s', i, v);
        assert not (v ->> 'partition') = any (seen), format('partition %s twice', v ->> 'partition');
        seen := seen || (v ->> 'partition');
    end loop;
    assert (select count(*) from regina.ready where consumer_group = 'g') = 0, 'drained: no ready rows';
    select result into v from regina.pop('[{"queue":"rs","consumerGroup":"g","batch":1,"autoAck":true}]',
                                         t0 + interval '3 seconds');
    assert v ->> 'empty' = 'empty', format('nothing left: %s', v);

    -- A push adds rows for the subscribed groups of the partitions it writes.
    perform regina.push('[{"queue":"rs","partition":"p7","payload":1,"transactionId":"x1","messageId":"0196a000-0000-7000-8000-0000000001a1"},
                          {"queue":"rs","partition":"p8","payload":2,"transactionId":"x2","messageId":"0196a000-0000-7000-8000-0000000001a2"}]',
                        i_now => t0 + interval '10 seconds');
    assert (select count(*) from regina.ready where consumer_group = 'g') = 2, 'two partitions with work';

    -- A lease moves its row to the lease's expiry; a failed ack to the retry instant.
    select result into v from regina.pop('[{"queue":"rs","consumerGroup":"g","batch":1,"partition":"p7","leaseId":"0196a000-0000-7000-8000-0000000001b1"}]',
                                         t0 + interval '11 seconds');
    pid := v ->> 'partitionId';
    select count(*) into n from regina.ready r join regina.partitions p on p.id = r.partition_id
    where p.name = 'p7' and r.eligible_at = t0 + interval '41 seconds';
    assert n = 1, 'leased: claimable at lease expiry';
    perform regina.ack(jsonb_build_array(jsonb_build_object('transactionId', 'x1', 'partitionId', pid,
        'status', 'failed', 'leaseId', '0196a000-0000-7000-8000-0000000001b1')), t0 + interval '12 seconds');
    select count(*) into n from regina.ready r join regina.partitions p on p.id = r.partition_id
    where p.name = 'p7' and r.eligible_at = t0 + interval '17 seconds';
    assert n = 1, 'failed: claimable after the retry delay';
    select result into v from regina.pop('[{"queue":"rs","consumerGroup":"g","batch":5,"partitions":5,"leaseId":"0196a000-0000-7000-8000-0000000001b2"}]',
                                         t0 + interval '13 seconds');
    assert v ->> 'partition' = 'p8' and (v ->> 'partitionsClaimed')::int = 1,
        format('only p8 is claimable while p7 rests: %s', v);
    -- Completing the lease ends the work on p8: its row goes.
    perform regina.ack(jsonb_build_array(jsonb_build_object('transactionId', 'x2',
        'partitionId', v ->> 'partitionId', 'leaseId', '0196a000-0000-7000-8000-0000000001b2')),
        t0 + interval '14 seconds');
    assert not exists (select 1 from regina.ready r join regina.partitions p on p.id = r.partition_id
                       where p.name = 'p8'), 'p8 done: no row';

    -- A group subscribing to new messages only gets no rows for old ones; queue mode is a
    -- subscription like any group.
    perform regina.pop('[{"queue":"rs","consumerGroup":"late","subscriptionMode":"new","batch":1,"autoAck":true}]',
                       t0 + interval '20 seconds');
    assert (select count(*) from regina.ready where consumer_group = 'late') = 0, 'new-only: nothing old';
    perform regina.pop('[{"queue":"rs","batch":1,"autoAck":true}]', t0 + interval '20 seconds');
    assert exists (select 1 from regina.subscriptions where consumer_group = '__QUEUE_MODE__'),
        'queue mode subscribed';
    assert (select count(*) from regina.ready where consumer_group = '__QUEUE_MODE__') = 49,
        format('queue mode: all 50 partitions but the one just popped: %s',
               (select count(*) from regina.ready where consumer_group = '__QUEUE_MODE__'));
    perform regina.push('[{"queue":"rs","partition":"p9","payload":3,"transactionId":"x3","messageId":"0196a000-0000-7000-8000-0000000001a3"}]',
                        i_now => t0 + interval '21 seconds');
    assert exists (select 1 from regina.ready r join regina.partitions p on p.id = r.partition_id
                   where p.name = 'p9' and r.consumer_group = 'late'), 'pushed: late has work on p9';
end $$;

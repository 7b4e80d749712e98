-- Seeks, group deletes and subscription changes keep the ready set true (ADR 0005): a seek back
-- gives a drained partition its row back so pops claim it again, a seek to the end lets rows go,
-- a seek by a newcomer subscribes it, a delete that keeps the subscription re-derives the rows,
-- one that drops it leaves none, and an earlier subscription start adds rows.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    g_pop constant jsonb := '[{"queue":"sk","consumerGroup":"g","batch":10,"partitions":10,"autoAck":true}]';
    v json;
    r jsonb;
    rows_of_g integer;
begin
    perform regina.push('[{"queue":"sk","partition":"a","payload":1,"transactionId":"a1","messageId":"0196a000-0000-7000-8000-0000000005a1"},
                          {"queue":"sk","partition":"a","payload":2,"transactionId":"a2","messageId":"0196a000-0000-7000-8000-0000000005a2"},
                          {"queue":"sk","partition":"b","payload":3,"transactionId":"b1","messageId":"0196a000-0000-7000-8000-0000000005b1"}]',
                        i_now => t0);
    select result into v from regina.pop(g_pop, t0 + interval '1 second');
    assert json_array_length(v -> 'messages') = 3, format('g drains sk: %s', v);
    assert not exists (select 1 from regina.ready where consumer_group = 'g'), 'drained: no rows';

    -- Back before every message: both partitions have work again and a pop claims it.
    r := regina.consumer_group_seek('{"queue":"sk","consumerGroup":"g","timestamp":"2025-12-31T00:00:00Z"}',
                                    t0 + interval '2 seconds');
    assert (r ->> 'partitionsUpdated')::integer = 2, format('seek: %s', r);
    select count(*) into rows_of_g from regina.ready
    where consumer_group = 'g' and eligible_at = t0 + interval '2 seconds';
    assert rows_of_g = 2, format('seek back: claimable rows %s', rows_of_g);
    select result into v from regina.pop(g_pop, t0 + interval '3 seconds');
    assert json_array_length(v -> 'messages') = 3, format('replayed: %s', v);

    -- Exclusive: after the instant of the first push, nothing of it is replayed.
    perform regina.consumer_group_seek('{"queue":"sk","consumerGroup":"g","timestamp":"2026-01-01T00:00:00Z"}',
                                       t0 + interval '4 seconds');
    assert not exists (select 1 from regina.ready r join regina.cursors c
                         on c.partition_id = r.partition_id and c.consumer_group = r.consumer_group
                       join regina.partitions p on p.id = c.partition_id
                       where r.consumer_group = 'g' and c.next_seq < p.next_seq),
        'a seek past every message leaves no work';

    -- A seek back then to the end: the lease it ends is gone, and so is the work.
    perform regina.consumer_group_seek('{"queue":"sk","consumerGroup":"g","timestamp":"2025-12-31T00:00:00Z"}',
                                       t0 + interval '5 seconds');
    select result into v from regina.pop('[{"queue":"sk","consumerGroup":"g","batch":1,"leaseId":"0196a000-0000-7000-8000-0000000005c1"}]',
                                         t0 + interval '6 seconds');
    assert v ->> 'leaseId' = '0196a000-0000-7000-8000-0000000005c1', format('leased: %s', v);
    perform regina.consumer_group_seek('{"queue":"sk","consumerGroup":"g","toEnd":true}',
                                       t0 + interval '7 seconds');
    assert not exists (select 1 from regina.cursors where consumer_group = 'g' and lease_active),
        'the seek ended the lease';
    assert not exists (select 1 from regina.ready where consumer_group = 'g'), 'at the end: no rows';
    select result into v from regina.pop(g_pop, t0 + interval '8 seconds');
    assert v ->> 'empty' = 'empty', format('nothing left after toEnd: %s', v);

    -- A group the queue never saw: cursors on every partition, a subscription, rows for the work.
    perform regina.consumer_group_seek('{"queue":"sk","consumerGroup":"newcomer","timestamp":"2025-12-31T00:00:00Z"}',
                                       t0 + interval '9 seconds');
    assert (select count(*) from regina.cursors where consumer_group = 'newcomer') = 2, 'cursors made';
    assert exists (select 1 from regina.subscriptions where consumer_group = 'newcomer' and mode = 'all'),
        'newcomer subscribed';
    assert (select count(*) from regina.ready where consumer_group = 'newcomer') = 2, 'newcomer has work';

    -- Deleting g but keeping where it starts: everything is work for it again.
    r := regina.consumer_group_delete('g', null, false, t0 + interval '10 seconds');
    assert (r ->> 'deletedPartitions')::integer = 2, format('delete: %s', r);
    assert not exists (select 1 from regina.cursors where consumer_group = 'g'), 'cursors gone';
    assert (select count(*) from regina.ready where consumer_group = 'g') = 2, 'rows re-derived';
    select result into v from regina.pop(g_pop, t0 + interval '11 seconds');
    assert json_array_length(v -> 'messages') = 3, format('g starts afresh: %s', v);

    -- Deleting with the subscription: no rows and no subscription remain.
    perform regina.consumer_group_delete('g', 'sk', true, t0 + interval '12 seconds');
    assert not exists (select 1 from regina.ready where consumer_group = 'g'), 'rows dropped';
    assert not exists (select 1 from regina.subscriptions where consumer_group = 'g'), 'unsubscribed';

    -- A group subscribed to new messages only has no rows; an earlier start gives it some.
    perform regina.pop('[{"queue":"sk","consumerGroup":"late","subscriptionMode":"new","batch":1}]',
                       t0 + interval '13 seconds');
    assert not exists (select 1 from regina.ready where consumer_group = 'late'), 'new: nothing old';
    r := regina.consumer_group_subscription('late', t0 - interval '1 day', t0 + interval '14 seconds');
    assert (r ->> 'rowsUpdated')::integer = 1, format('subscription: %s', r);
    assert (select count(*) from regina.ready where consumer_group = 'late') = 2, 'earlier start: work';
end $$;

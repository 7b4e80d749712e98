-- A one-item push to a partition that exists, of a queue without maxSize whose encryption it
-- satisfies, is stored by regina._push_one: same offsets, createdAt, payload text, ready rows,
-- duplicate answer and result members as the batch path. Anything else takes the batch path.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    t1 timestamptz := '2026-01-01T00:00:01Z';
    v_sent text := '{"s":"a\u0000b","n":1.50,"z":1,"a":[true,null]}';
    v_batch jsonb;
    v_one jsonb;
    v_again jsonb;
    v_item jsonb := '[{"queue":"a","partition":"p","transactionId":"one","traceId":"t-1",
                       "producerSub":"alice","messageId":"0196a000-0000-7000-8000-0000000000c3"}]';
begin
    -- Two items (the batch path) create the queue and partitions p and q.
    select result into v_batch from regina.push(
        '[{"queue":"a","partition":"p","transactionId":"b1","traceId":"t-0","producerSub":"alice",
           "messageId":"0196a000-0000-7000-8000-0000000000c1"},
          {"queue":"a","partition":"q","transactionId":"b2",
           "messageId":"0196a000-0000-7000-8000-0000000000c2"}]',
        '[1, 2]', i_now => t0) where idx = 0;
    perform regina.pop('[{"queue":"a","consumerGroup":"g","batch":10,"partitions":10,"autoAck":true}]', t0);
    assert not exists (select 1 from regina.ready where consumer_group = 'g'), 'g drained both';

    assert regina._push_one(v_item, json_build_array(v_sent::json), false, t1) is not null,
           'an item to an existing partition takes the one-item path';
    -- (That call stored it: the same item through regina.push is now a duplicate.)
    select result into v_one from regina.push(v_item, json_build_array(v_sent::json), i_now => t1);
    assert v_one ->> 'status' = 'duplicate', format('stored once: %s', v_one);
    assert v_one ->> 'message_id' = '0196a000-0000-7000-8000-0000000000c3', format('its id: %s', v_one);

    assert (select m.seq = 1 and m.created_at = t1 and m.payload::text = v_sent
                   and m.trace_id = 't-1' and m.producer_sub = 'alice'
            from regina.messages m where m.transaction_id = 'one'),
           'stored at the next offset, at t1, payload verbatim, trace and producer kept';
    assert (select p.next_seq = 2 and p.last_created_at = t1 and p.last_push_at = t1
            from regina.partitions p where p.name = 'p'), 'the partition row moved as a batch moves it';
    assert exists (select 1 from regina.ready r join regina.partitions p on p.id = r.partition_id
                   where p.name = 'p' and r.consumer_group = 'g' and r.eligible_at = t1),
           'the subscribed group has work again';

    -- The same answer members as the batch path's, for a new message and for a duplicate.
    select result into v_one from regina.push(
        '[{"queue":"a","partition":"q","transactionId":"two","traceId":"t-2",
           "messageId":"0196a000-0000-7000-8000-0000000000c4"}]', '[3]', i_now => t1);
    assert v_one ->> 'status' = 'queued' and v_one ->> 'trace_id' = 't-2'
           and v_one ->> 'partition_id' = (select p.uuid::text from regina.partitions p where p.name = 'q')
           and v_one ->> 'queueName' = 'a', format('queued: %s', v_one);
    assert (select array_agg(k order by k) from jsonb_object_keys(v_one) k)
           = (select array_agg(k order by k) from jsonb_object_keys(v_batch) k),
           format('members %s and %s', v_one, v_batch);
    select result into v_again from regina.push(
        '[{"queue":"a","partition":"p","transactionId":"b1","messageId":"0196a000-0000-7000-8000-0000000000c5"},
          {"queue":"a","partition":"q","transactionId":"x","messageId":"0196a000-0000-7000-8000-0000000000c6"}]',
        '[0, 0]', i_now => t1) where idx = 0;
    select result into v_one from regina.push(
        '[{"queue":"a","partition":"p","transactionId":"b1","messageId":"0196a000-0000-7000-8000-0000000000c7"}]',
        '[0]', i_now => t1);
    assert v_one = v_again, format('a duplicate answers alike: %s and %s', v_one, v_again);
    assert v_one ->> 'message_id' = '0196a000-0000-7000-8000-0000000000c1', format('the stored id: %s', v_one);

    -- The batch path's cases.
    assert regina._push_one('[{"queue":"a","partition":"new","transactionId":"n1",
                               "messageId":"0196a000-0000-7000-8000-0000000000d1"}]', '[0]', false, t1) is null,
           'a partition to create';
    assert regina._push_one('[{"queue":"nope","partition":"p","transactionId":"n2",
                               "messageId":"0196a000-0000-7000-8000-0000000000d2"}]', '[0]', false, t1) is null,
           'a queue to create';
    perform regina.configure('{"queue":"a","options":{"maxSize":100}}');
    assert regina._push_one('[{"queue":"a","partition":"p","transactionId":"n3",
                               "messageId":"0196a000-0000-7000-8000-0000000000d3"}]', '[0]', false, t1) is null,
           'a capped queue';
    perform regina.configure('{"queue":"a","options":{"maxSize":0,"encryptionEnabled":true}}');
    assert regina._push_one('[{"queue":"a","partition":"p","transactionId":"n4",
                               "messageId":"0196a000-0000-7000-8000-0000000000d4"}]', '[0]', false, t1) is null,
           'plaintext to a queue that encrypts';
    assert regina._push_one('[{"queue":"a","partition":"p","transactionId":"n5","payloadKeyId":"k1",
                               "messageId":"0196a000-0000-7000-8000-0000000000d5"}]', '[0]', false, t1) is not null,
           'a sealed payload to a queue that encrypts';
    assert not exists (select 1 from regina.messages m where m.transaction_id in ('n1', 'n2', 'n3', 'n4')),
           'nothing stored by the refused calls';
end $$;

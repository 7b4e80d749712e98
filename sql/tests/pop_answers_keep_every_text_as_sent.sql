-- Pop answers are written as JSON text (regina._message_text, regina._pop_answer): every text a
-- client chose (queue, partition, group, transactionId, traceId, producerSub, payloadKeyId) comes
-- back as sent, whatever quotes, backslashes, control characters or letters outside ASCII it
-- holds, through a single request and through a run of alike ones; and regina.pop_text's answer
-- is JSON (it is parsed here, as the broker parses it).
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v_queue text := 'q "quoted" \ back' || chr(9) || 'tab ü 雪';
    v_partitions text[] := array['p "1" \n' || chr(10), 'p/2 ' || chr(1) || ' é'];
    v_group text := 'g "\" ' || chr(13) || ' ß';
    v_key text := 'k "0" \';
    v_lease text := '0196a000-0000-7000-8000-0000000000e1';
    v_items jsonb;
    v_text text;
    v json;
    m json;
    i integer;
begin
    perform regina.configure(jsonb_build_object('queue', v_queue));
    v_items := (select jsonb_agg(jsonb_build_object(
                    'queue', v_queue, 'partition', v_partitions[1 + k % 2],
                    'transactionId', 'tx "' || k || '" \ ' || chr(8) || ' ñ',
                    'traceId', case when k % 2 = 0 then 'tr "' || k || '" \' end,
                    'producerSub', case when k % 2 = 1 then 'sub "' || k || '" ' || chr(12) end,
                    'payloadKeyId', case when k = 3 then v_key end,
                    'messageId', ('0196a000-0000-7000-8000-0000000000' || lpad(k::text, 2, '0'))::uuid,
                    'payload', jsonb_build_object('n', k, 's', '"' || k || '"')))
                from generate_series(0, 3) k);
    perform regina.push(v_items, null, i_now => t0);

    -- One request over both partitions (_pop_one), with a lease.
    select p.result into v_text
    from regina.pop_text(jsonb_build_array(jsonb_build_object(
             'queue', v_queue, 'consumerGroup', v_group, 'batch', 10, 'partitions', 2,
             'leaseId', v_lease)), t0) p;
    v := v_text::json;
    assert v ->> 'success' = 'true', format('delivered: %s', v_text);
    assert v ->> 'queue' = v_queue, format('queue: %s', v ->> 'queue');
    assert v ->> 'partition' = any (v_partitions), format('partition: %s', v ->> 'partition');
    assert v ->> 'consumerGroup' = v_group, format('group: %s', v ->> 'consumerGroup');
    assert v ->> 'leaseId' = v_lease, format('lease: %s', v ->> 'leaseId');
    assert json_array_length(v -> 'messages') = 4, format('four messages: %s', v_text);
    for m in select * from json_array_elements(v -> 'messages') loop
        i := (m -> 'data' ->> 'n')::integer;
        assert m ->> 'transactionId' = 'tx "' || i || '" \ ' || chr(8) || ' ñ',
            format('transactionId: %s', m ->> 'transactionId');
        assert m ->> 'traceId' is not distinct from
                   case when i % 2 = 0 then 'tr "' || i || '" \' end,
            format('traceId: %s', m ->> 'traceId');
        assert (m -> 'traceId')::text = 'null' or i % 2 = 0, format('null traceId: %s', m);
        assert m ->> 'producerSub' is not distinct from
                   case when i % 2 = 1 then 'sub "' || i || '" ' || chr(12) end,
            format('producerSub: %s', m ->> 'producerSub');
        assert m ->> 'payloadKeyId' is not distinct from case when i = 3 then v_key end,
            format('payloadKeyId: %s', m);
        assert m -> 'data' ->> 's' = '"' || i || '"', format('payload: %s', m -> 'data');
        assert m ->> 'partition' = v_partitions[1 + i % 2], format('partition: %s', m);
        assert m ->> 'queue' = v_queue and m ->> 'consumerGroup' = v_group
               and m ->> 'leaseId' = v_lease, format('names: %s', m);
        assert m ->> 'partitionId' = (select p.uuid::text from regina.partitions p
                                      where p.name = m ->> 'partition'),
            format('partitionId: %s', m);
        assert (m ->> 'retryCount')::integer = 0 and m ->> 'createdAt' = '2026-01-01T00:00:00.000000Z',
            format('retryCount and createdAt: %s', m);
    end loop;

    -- Two alike requests of one partition each, autoAck (_pop_run), for another group: each
    -- answer is JSON and names its own partition.
    for v_text in
        select p.result from regina.pop_text(jsonb_build_array(
            jsonb_build_object('queue', v_queue, 'consumerGroup', v_group || ' 2', 'batch', 10,
                               'autoAck', true),
            jsonb_build_object('queue', v_queue, 'consumerGroup', v_group || ' 2', 'batch', 10,
                               'autoAck', true)), t0) p
    loop
        v := v_text::json;
        assert v ->> 'consumerGroup' = v_group || ' 2' and v ->> 'leaseId' = ''
               and json_array_length(v -> 'messages') = 2, format('run answer: %s', v_text);
        for m in select * from json_array_elements(v -> 'messages') loop
            assert m ->> 'partition' = v ->> 'partition'
                   and m ->> 'transactionId' like 'tx "%',
                format('run message: %s', m);
        end loop;
    end loop;
end $$;

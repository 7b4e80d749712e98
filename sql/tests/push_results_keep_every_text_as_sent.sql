-- Push results are written as JSON text (regina._push_queued_text, regina._push_duplicate_text):
-- the transactionId, traceId and queue a client chose come back as sent, whatever quotes,
-- backslashes, control characters or letters outside ASCII they hold, from the one-item path
-- and from the batch path, queued and duplicate; and regina.push_text's results are JSON (parsed
-- here, as the broker parses them).
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v_queue text := 'q "r" \ ' || chr(9) || 'ü 雪';
    v_items jsonb;
    v json;
    r record;
    n integer := 0;
begin
    perform regina.configure(jsonb_build_object('queue', v_queue));
    -- k = 0: one item (the one-item path); then a batch of two new keys and that key again.
    for r in
        select 0 as pass, x.idx, x.result
        from regina.push_text(jsonb_build_array(jsonb_build_object(
                 'queue', v_queue, 'partition', 'p0', 'transactionId', 'tx "0" \ ' || chr(8),
                 'traceId', 'tr "0" \ ' || chr(1), 'payload', 1,
                 'messageId', '0196a000-0000-7000-8000-0000000000d0')), null, i_now => t0) x
        union all
        select 1, x.idx, x.result
        from regina.push_text((select jsonb_agg(jsonb_build_object(
                 'queue', v_queue, 'partition', 'p' || k % 2, 'transactionId', 'tx "' || k || '" \ ' || chr(8),
                 'traceId', 'tr "' || k || '" \ ' || chr(1), 'payload', k,
                 'messageId', ('0196a000-0000-7000-8000-0000000000d' || k)::uuid) order by o)
               from unnest(array[1, 2, 0]) with ordinality u(k, o)), null, i_now => t0) x
        order by 1, 2
    loop
        v := r.result::json;
        n := n + 1;
        assert v ->> 'queueName' = v_queue, format('queue: %s', r.result);
        if r.pass = 1 and r.idx = 2 then
            assert v ->> 'status' = 'duplicate'
                   and v ->> 'transactionId' is null
                   and v ->> 'transaction_id' = 'tx "0" \ ' || chr(8)
                   and v ->> 'message_id' = '0196a000-0000-7000-8000-0000000000d0',
                format('duplicate: %s', r.result);
        else
            assert v ->> 'status' = 'queued', format('queued: %s', r.result);
            assert v ->> 'transaction_id' = 'tx "' || substr(v ->> 'transaction_id', 5, 1) || '" \ ' || chr(8)
                   and v ->> 'trace_id' = 'tr "' || substr(v ->> 'transaction_id', 5, 1) || '" \ ' || chr(1),
                format('texts: %s', r.result);
            assert v ->> 'partition_id' = (select p.uuid::text from regina.partitions p
                                           join regina.messages m on m.partition_id = p.id
                                           where m.id = (v ->> 'message_id')::uuid),
                format('partition_id: %s', r.result);
        end if;
    end loop;
    assert n = 4, format('four results, not %s', n);
end $$;

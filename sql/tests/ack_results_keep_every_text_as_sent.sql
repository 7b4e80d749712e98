-- Ack results are written as JSON text (regina._ack_result_text): the transactionId, queue and
-- partition names come back as sent, whatever quotes, backslashes, control characters or letters
-- outside ASCII they hold, from the one-item path and from the batch path, with every error code
-- and its message; and regina.ack_text's results are JSON (parsed here, as clients parse them)
-- with the members and values the `jsonb` built from the same facts has.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v_queue text := 'q "r" \ ' || chr(9) || 'ü 雪';
    v_part text := 'p "1" \ ' || chr(1) || 'é';
    v_lease uuid := '0196a000-0000-7000-8000-00000000a0c1';
    v_uuid text;
    v_tx text[] := array(select 'tx "' || k || '" \ ' || chr(8) || 'ß' from generate_series(1, 4) k);
    v_messages jsonb := jsonb_build_object(
        'message_not_found', 'Message not found',
        'lease_expired', 'Invalid or expired lease',
        'not_leased', 'Message is not inside an active lease',
        'already_settled', 'Message already settled for this consumer group',
        'group_mismatch', 'consumerGroup does not match the lease''s group');
    v_codes text[] := '{}';
    v jsonb;
    r record;
    n integer := 0;
begin
    perform regina.configure(jsonb_build_object('queue', v_queue));
    perform regina.push((select jsonb_agg(jsonb_build_object(
                             'queue', v_queue, 'partition', v_part, 'transactionId', v_tx[k],
                             'payload', k, 'messageId', gen_random_uuid()) order by k)
                         from generate_series(1, 4) k), i_now => t0);
    perform regina.pop(jsonb_build_array(jsonb_build_object(
                'queue', v_queue, 'partition', v_part, 'consumerGroup', 'g', 'batch', 3,
                'leaseId', v_lease)), t0);
    v_uuid := (select p.uuid::text from regina.partitions p where p.name = v_part);

    for r in
        -- The batch path: settled, dead-lettered, unknown.
        select 1 as call, a.idx, a.result, u.tx
        from regina.ack_text(jsonb_build_array(
                 jsonb_build_object('transactionId', v_tx[1], 'partitionId', v_uuid,
                                    'leaseId', v_lease, 'consumerGroup', 'g'),
                 jsonb_build_object('transactionId', v_tx[2], 'partitionId', v_uuid,
                                    'leaseId', v_lease, 'consumerGroup', 'g', 'status', 'dlq',
                                    'error', 'e "1"'),
                 jsonb_build_object('transactionId', 'nope "x"', 'partitionId', v_uuid,
                                    'leaseId', v_lease, 'consumerGroup', 'g')),
                 t0 + interval '1 second') a
        join unnest(array[v_tx[1], v_tx[2], 'nope "x"']) with ordinality u(tx, o)
          on u.o = a.idx + 1
        union all
        -- The one-item path: the lease's last message, which ends it.
        select 2, a.idx, a.result, v_tx[3]
        from regina.ack_text(jsonb_build_array(jsonb_build_object(
                 'transactionId', v_tx[3], 'partitionId', v_uuid, 'leaseId', v_lease,
                 'consumerGroup', 'g')), t0 + interval '2 seconds') a
        union all
        -- Settled already, outside any lease, an unknown lease, another group's lease.
        select 3, a.idx, a.result, v_tx[1]
        from regina.ack_text(jsonb_build_array(jsonb_build_object(
                 'transactionId', v_tx[1], 'partitionId', v_uuid, 'leaseId', v_lease,
                 'consumerGroup', 'g', 'status', 'failed')), t0 + interval '3 seconds') a
        union all
        select 4, a.idx, a.result, v_tx[4]
        from regina.ack_text(jsonb_build_array(jsonb_build_object(
                 'transactionId', v_tx[4], 'partitionId', v_uuid, 'consumerGroup', 'g')),
                 t0 + interval '4 seconds') a
        union all
        select 5, a.idx, a.result, v_tx[4]
        from regina.ack_text(jsonb_build_array(jsonb_build_object(
                 'transactionId', v_tx[4], 'partitionId', v_uuid,
                 'leaseId', gen_random_uuid(), 'consumerGroup', 'g')),
                 t0 + interval '5 seconds') a
        union all
        select 6, a.idx, a.result, v_tx[4]
        from regina.ack_text(jsonb_build_array(jsonb_build_object(
                 'transactionId', v_tx[4], 'partitionId', v_uuid, 'leaseId', v_lease,
                 'consumerGroup', 'other')), t0 + interval '6 seconds') a
        order by 1, 2
    loop
        n := n + 1;
        v := r.result::json::jsonb;
        assert jsonb_typeof(v -> 'leaseReleased') = 'boolean'
               and jsonb_typeof(v -> 'dlq') = 'boolean', format('booleans: %s', r.result);
        assert v = jsonb_build_object(
                       'transactionId', r.tx,
                       'success', v ->> 'code' is null,
                       'error', v_messages ->> (v ->> 'code'),
                       'code', v ->> 'code',
                       'queueName', v_queue,
                       'partitionName', v_part,
                       'leaseReleased', v -> 'leaseReleased',
                       'dlq', v -> 'dlq'),
            format('call %s, item %s: %s', r.call, r.idx, r.result);
        v_codes := v_codes || coalesce(v ->> 'code', 'none');
    end loop;
    assert n = 8, format('eight results, not %s', n);
    assert v_codes = array['none', 'none', 'message_not_found', 'none', 'already_settled',
                           'not_leased', 'lease_expired', 'group_mismatch'],
        format('the codes: %s', v_codes);
end $$;

-- A requeued message is a new delivery at the tail of its partition for one group only: it keeps
-- the original id, transactionId, payload and createdAt, starts at retryCount 0, ignores ttl and
-- delayedProcessing, is acked by the same partitionId and transactionId, and other groups never
-- see it. Failing again dead-letters it again; requeueing again replaces it.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v jsonb;
    m jsonb;
    pid text;
    created text;
    orig_id text;
begin
    perform regina.configure('{"queue":"rq","options":{"retryLimit":0}}');
    perform regina.push('[{"queue":"rq","partition":"p","payload":{"n":1},"transactionId":"m1","traceId":"tr1","messageId":"0196a000-0000-7000-8000-000000000a01"},
                          {"queue":"rq","partition":"p","payload":{"n":2},"transactionId":"m2","messageId":"0196a000-0000-7000-8000-000000000a02"}]',
                        i_now => t0);
    -- g1 fails m1 (dead-lettered at once), then takes m2; g2 takes both.
    select result into v from regina.pop('[{"queue":"rq","consumerGroup":"g1","batch":1,"leaseId":"0196a000-0000-7000-8000-000000000b01"}]', t0);
    m := v -> 'messages' -> 0;
    pid := m ->> 'partitionId';
    created := m ->> 'createdAt';
    orig_id := m ->> 'id';
    perform regina.ack(jsonb_build_array(jsonb_build_object('transactionId', 'm1', 'partitionId', pid,
        'status', 'failed', 'leaseId', '0196a000-0000-7000-8000-000000000b01', 'error', 'boom')), t0);
    assert (select count(*) from regina.dead_letters) = 1, 'm1 dead-lettered for g1';
    perform regina.pop('[{"queue":"rq","consumerGroup":"g1","batch":5,"autoAck":true}]', t0);
    perform regina.pop('[{"queue":"rq","consumerGroup":"g2","batch":5,"autoAck":true}]', t0);
    assert not exists (select 1 from regina.ready), 'both groups drained';

    -- The queue now expires and delays everything; a requeued delivery is exempt from both.
    perform regina.configure('{"queue":"rq","options":{"ttl":1,"delayedProcessing":600}}');
    v := (select r.result from regina.message_requeue(pid, 'm1', 'g1', t0 + interval '1 hour') r)::jsonb;
    assert v ->> 'success' = 'true' and v -> 'consumerGroups' = '["g1"]', format('requeued: %s', v);
    assert not exists (select 1 from regina.dead_letters), 'the dead letter became the delivery';
    assert (select count(*) from regina.ready where consumer_group = 'g1') = 1
       and not exists (select 1 from regina.ready where consumer_group = 'g2'), 'work for g1 only';
    assert (select next_seq from regina.partitions where name = 'p') = 3, 'the delivery took the next offset';

    select result into v from regina.pop('[{"queue":"rq","consumerGroup":"g2","batch":5,"autoAck":true}]',
                                         t0 + interval '1 hour');
    assert v ->> 'empty' = 'empty', format('g2 never sees it: %s', v);
    select result into v from regina.pop('[{"queue":"rq","consumerGroup":"g1","batch":5,"leaseId":"0196a000-0000-7000-8000-000000000b02"}]',
                                         t0 + interval '1 hour');
    m := v -> 'messages' -> 0;
    assert jsonb_array_length(v -> 'messages') = 1, format('one delivery: %s', v);
    assert m ->> 'id' = orig_id and m ->> 'transactionId' = 'm1' and m -> 'data' = '{"n":1}'
       and m ->> 'createdAt' = created and m ->> 'traceId' = 'tr1' and (m ->> 'retryCount')::int = 0,
        format('the original message again: %s', m);

    -- It fails again: dead-lettered again (retryLimit 0), with the same identity.
    v := (select r.result from regina.ack(jsonb_build_array(jsonb_build_object('transactionId', 'm1',
              'partitionId', pid, 'status', 'failed', 'error', 'again',
              'leaseId', '0196a000-0000-7000-8000-000000000b02')), t0 + interval '1 hour') r);
    assert v ->> 'success' = 'true' and v ->> 'dlq' = 'true', format('dead-lettered again: %s', v);
    assert (select d.message_id::text || d.error_message || d.consumer_group from regina.dead_letters d)
           = orig_id || 'againg1', 'one live entry';
    assert not exists (select 1 from regina.ready where consumer_group = 'g1'), 'g1 drained again';

    -- Requeued again (every group holding a dead letter): the settled delivery is replaced.
    v := (select r.result from regina.message_requeue(pid, 'm1', null, t0 + interval '2 hours') r)::jsonb;
    assert v -> 'consumerGroups' = '["g1"]', format('requeued again: %s', v);
    assert (select count(*) from regina.messages where for_group = 'g1') = 1, 'one requeued delivery';
    select result into v from regina.pop('[{"queue":"rq","consumerGroup":"g1","batch":5,"leaseId":"0196a000-0000-7000-8000-000000000b03"}]',
                                         t0 + interval '2 hours');
    v := (select r.result from regina.ack(jsonb_build_array(jsonb_build_object('transactionId', 'm1',
              'partitionId', pid, 'leaseId', '0196a000-0000-7000-8000-000000000b03')), t0 + interval '2 hours') r);
    assert v ->> 'success' = 'true' and v ->> 'leaseReleased' = 'true', format('completed: %s', v);
    assert not exists (select 1 from regina.ready), 'nothing left to claim';

    -- Requeueing what is not in the DLQ, or an unknown message, fails.
    v := (select r.result from regina.message_requeue(pid, 'm2', null, t0) r)::jsonb;
    assert v ->> 'code' = 'not_in_dlq', format('not in the DLQ: %s', v);
    v := (select r.result from regina.message_requeue(pid, 'nope', null, t0) r)::jsonb;
    assert v ->> 'code' = 'message_not_found', format('unknown: %s', v);
end $$;

-- A requeued delivery waits behind a message pushed before it that is not visible yet.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v jsonb;
    pid text;
begin
    perform regina.configure('{"queue":"rd","options":{"retryLimit":0}}');
    perform regina.push('[{"queue":"rd","partition":"p","payload":1,"transactionId":"a","messageId":"0196a000-0000-7000-8000-000000000c01"}]', i_now => t0);
    select result into v from regina.pop('[{"queue":"rd","batch":1,"leaseId":"0196a000-0000-7000-8000-000000000d01"}]', t0);
    pid := v -> 'messages' -> 0 ->> 'partitionId';
    perform regina.ack(jsonb_build_array(jsonb_build_object('transactionId', 'a', 'partitionId', pid,
        'status', 'failed', 'leaseId', '0196a000-0000-7000-8000-000000000d01')), t0);
    perform regina.configure('{"queue":"rd","options":{"delayedProcessing":60}}');
    perform regina.push('[{"queue":"rd","partition":"p","payload":2,"transactionId":"b","messageId":"0196a000-0000-7000-8000-000000000c02"}]',
                        i_now => t0 + interval '10 seconds');
    perform regina.message_requeue(pid, 'a', null, t0 + interval '11 seconds');
    select result into v from regina.pop('[{"queue":"rd","batch":5,"leaseId":"0196a000-0000-7000-8000-000000000d02"}]',
                                         t0 + interval '12 seconds');
    assert v ->> 'empty' = 'empty', format('behind the invisible b: %s', v);
    select result into v from regina.pop('[{"queue":"rd","batch":5,"leaseId":"0196a000-0000-7000-8000-000000000d03"}]',
                                         t0 + interval '71 seconds');
    assert v -> 'messages' -> 0 ->> 'transactionId' = 'b' and v -> 'messages' -> 1 ->> 'transactionId' = 'a',
        format('b, then the requeued a: %s', v);
end $$;

-- Trace events belong to their message (partition, transactionId), its requeued deliveries
-- included: they stay while any stored row of the message does and go with the last one, and
-- the names summary (trace_name_stats) always equals what the events add up to.
create function pg_temp.record(i_partition text, i_transaction text, i_names text[],
                               i_now timestamptz) returns json
language sql as $$
    select regina.trace_record(jsonb_build_object('id', gen_random_uuid(), 'partitionId', i_partition,
                                                  'transactionId', i_transaction, 'eventType', 'info',
                                                  'consumerGroup', '__QUEUE_MODE__',
                                                  'traceNames', to_jsonb(i_names)),
                               '{"at":1}', i_now)
$$;

-- Summary rows that differ from the events they sum up.
create function pg_temp.drift() returns bigint
language sql as $$
    with truth as (
        select n.name, n.queue_id, count(*) as traces,
               count(distinct (n.partition_id, n.transaction_id)) as messages
        from regina.trace_names n group by n.name, n.queue_id)
    select count(*) from truth t
    full join regina.trace_name_stats s on s.name = t.name and s.queue_id = t.queue_id
    where t.traces is distinct from s.trace_count or t.messages is distinct from s.message_count
$$;

do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v json;
    pid text;
    lease text := '0196a000-0000-7000-8000-0000000008a1';
begin
    perform regina.configure('{"queue":"t","options":{"retentionSeconds":60,"retryLimit":0}}');
    perform regina.push('[{"queue":"t","partition":"p","payload":{"n":1},"transactionId":"m1","messageId":"0196a000-0000-7000-8000-0000000008b1"},
                          {"queue":"t","partition":"p","payload":{"n":2},"transactionId":"m2","messageId":"0196a000-0000-7000-8000-0000000008b2"}]',
                        i_now => t0);
    pid := (select p.uuid::text from regina.partitions p where p.name = 'p');

    v := pg_temp.record(pid, 'm1', array['a', 'b', 'a'], t0 + interval '1 second');
    assert v ->> 'success' = 'true', format('recorded: %s', v);
    assert (select trace_names from regina.traces) = array['a', 'b'], 'repeats merged, order kept';
    perform pg_temp.record(pid, 'm1', array['a'], t0 + interval '2 seconds');
    perform pg_temp.record(pid, 'm2', array['a'], t0 + interval '3 seconds');
    assert (select (trace_count, message_count, last_seen) from regina.trace_name_stats where name = 'a')
           = (3::bigint, 2::bigint, t0 + interval '3 seconds'), 'a: three events on two messages';
    assert pg_temp.drift() = 0, 'summary exact after recording';
    v := pg_temp.record(pid, 'gone', array['a'], t0);
    assert v ->> 'code' = 'message_not_found', format('unknown message: %s', v);
    v := pg_temp.record('not a uuid', 'm1', array['a'], t0);
    assert v ->> 'code' = 'message_not_found', format('unknown partition: %s', v);

    -- m1 is dead-lettered, requeued, and its requeued delivery leased: retention then deletes
    -- the original row and spares the leased delivery, so m1 and its events stay.
    select result into v from regina.pop(format('[{"queue":"t","batch":1,"leaseId":"%s"}]', lease)::jsonb,
                                         t0 + interval '10 seconds');
    perform regina.ack(format('[{"transactionId":"m1","partitionId":"%s","status":"failed","leaseId":"%s"}]',
                              pid, lease)::jsonb, t0 + interval '11 seconds');
    assert (select count(*) from regina.dead_letters) = 1, 'm1 dead-lettered';
    perform regina.message_requeue(pid, 'm1', null, t0 + interval '12 seconds');
    lease := '0196a000-0000-7000-8000-0000000008a2';
    perform regina.pop('[{"queue":"t","batch":1,"autoAck":true}]', t0 + interval '13 seconds');  -- m2
    select result into v from regina.pop(format('[{"queue":"t","batch":1,"leaseId":"%s"}]', lease)::jsonb,
                                         t0 + interval '13 seconds');
    assert v -> 'messages' -> 0 ->> 'transactionId' = 'm1', format('the requeued delivery: %s', v);
    perform pg_temp.record(pid, 'm1', array['c'], t0 + interval '14 seconds');

    perform regina.retention_run(1000, t0 + interval '1 hour');
    assert not exists (select 1 from regina.messages m where m.for_group is null), 'ordinary rows gone';
    assert (select count(*) from regina.traces where transaction_id = 'm1') = 3,
           'the requeued delivery keeps the events of m1';
    assert not exists (select 1 from regina.traces where transaction_id = 'm2'), 'm2 events gone';
    assert (select (trace_count, message_count) from regina.trace_name_stats where name = 'a')
           = (2::bigint, 1::bigint), 'a lost m2';
    assert pg_temp.drift() = 0, 'summary exact after the first pass';
    assert (regina.traces_by_name('{"name":"c","limit":10,"offset":0}') -> 'traces' -> 0
            -> 'message_payload')::jsonb = '{"n":1}', 'the payload read from the requeued delivery';

    -- Once the delivery is acked, a later pass deletes it (a later message puts it inside the
    -- range), and the message goes with its events.
    perform regina.ack(format('[{"transactionId":"m1","partitionId":"%s","status":"completed","leaseId":"%s"}]',
                              pid, lease)::jsonb, t0 + interval '20 seconds');
    perform regina.push('[{"queue":"t","partition":"p","payload":3,"transactionId":"m3","messageId":"0196a000-0000-7000-8000-0000000008b3"}]',
                        i_now => t0 + interval '20 seconds');
    perform regina.retention_run(1000, t0 + interval '2 hours');
    assert not exists (select 1 from regina.messages), 'every row gone';
    assert not exists (select 1 from regina.traces) and not exists (select 1 from regina.trace_names),
           'every event gone';
    assert not exists (select 1 from regina.trace_name_stats), 'summary rows at zero are deleted';
    assert not exists (select 1 from regina.trace_name_debits), 'debits applied';
    assert (regina.trace_names_list('{"limit":50,"offset":0}') ->> 'total')::int = 0, 'no names left';
end
$$;

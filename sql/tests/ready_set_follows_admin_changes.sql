-- Admin changes keep the ready set exact (invariant 6, ADR 0005): after deleting a message,
-- moving one to the DLQ, requeueing, clearing or deleting a queue, every (partition, subscribed
-- group) with an unsettled message of its own has a ready row, and pops find exactly that work.
create function pg_temp.work_without_ready_row() returns bigint
language sql as $$
    select count(*) from regina.subscriptions s
    join regina.partitions p on p.queue_id = s.queue_id
    left join regina.cursors c on c.partition_id = p.id and c.consumer_group = s.consumer_group
    where exists (select 1 from regina.messages m
                  where m.partition_id = p.id and m.seq >= coalesce(c.next_seq, 0)
                    and m.seq <> all (coalesce(c.marks, '{}'))
                    and (m.for_group is null or m.for_group = s.consumer_group)
                    and (c.partition_id is not null or s.start_at is null
                         or m.created_at >= s.start_at))
      and not exists (select 1 from regina.ready r
                      where r.partition_id = p.id and r.consumer_group = s.consumer_group)
$$;

create function pg_temp.pid(i_partition text) returns text
language sql as $$ select uuid::text from regina.partitions where name = i_partition $$;

do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v jsonb;
begin
    perform regina.configure('{"queue":"ra","options":{"retryLimit":0}}');
    perform regina.push(jsonb_build_array(
        jsonb_build_object('queue', 'ra', 'partition', 'one', 'payload', 1, 'transactionId', 'a1', 'messageId', gen_random_uuid()),
        jsonb_build_object('queue', 'ra', 'partition', 'two', 'payload', 1, 'transactionId', 'b1', 'messageId', gen_random_uuid()),
        jsonb_build_object('queue', 'ra', 'partition', 'two', 'payload', 2, 'transactionId', 'b2', 'messageId', gen_random_uuid()),
        jsonb_build_object('queue', 'ra', 'partition', 'two', 'payload', 3, 'transactionId', 'b3', 'messageId', gen_random_uuid())),
        i_now => t0);
    -- Subscribe queue mode and g (a pop for a partition of another queue does nothing else).
    perform regina.pop('[{"queue":"ra","partition":"nothing","batch":1,"leaseId":"0196a000-0000-7000-8000-000000000e01"}]', t0);
    perform regina.pop('[{"queue":"ra","partition":"nothing","consumerGroup":"g","batch":1,"leaseId":"0196a000-0000-7000-8000-000000000e02"}]', t0);
    assert (select count(*) from regina.ready) = 4, 'two partitions with work for two groups';

    -- Deleting the only message of partition one: the rows may stay (a claim tidies them), and
    -- the claim finds nothing there.
    v := regina.message_delete(pg_temp.pid('one'), 'a1', t0)::jsonb;
    assert v ->> 'success' = 'true', format('deleted: %s', v);
    assert pg_temp.work_without_ready_row() = 0, 'no work without a row after a delete';
    select result into v from regina.pop('[{"queue":"ra","partition":"one","batch":5,"leaseId":"0196a000-0000-7000-8000-000000000e03"}]', t0);
    assert v ->> 'empty' = 'empty', format('nothing in one: %s', v);
    assert not exists (select 1 from regina.ready r join regina.partitions p on p.id = r.partition_id
                       where p.name = 'one' and r.consumer_group = '__QUEUE_MODE__'), 'tidied by the claim';

    -- Deleting the head of two: queue mode's next delivery is b2.
    perform regina.message_delete(pg_temp.pid('two'), 'b1', t0);
    assert pg_temp.work_without_ready_row() = 0, 'still no work without a row';
    -- Manual DLQ of b3 for queue mode (not its head: it becomes a mark), then of b2 (the head:
    -- the head jumps over both to the end, and the row goes).
    v := regina.message_dead_letter(pg_temp.pid('two'), 'b3', '__QUEUE_MODE__', 'manual', t0)::jsonb;
    assert v ->> 'success' = 'true', format('b3 moved: %s', v);
    assert exists (select 1 from regina.ready where consumer_group = '__QUEUE_MODE__'), 'b2 is still work';
    perform regina.message_dead_letter(pg_temp.pid('two'), 'b2', '__QUEUE_MODE__', 'manual', t0);
    assert not exists (select 1 from regina.ready where consumer_group = '__QUEUE_MODE__'),
        format('queue mode has nothing left: %s', (select array_agg(r) from regina.ready r));
    assert exists (select 1 from regina.ready r join regina.partitions p on p.id = r.partition_id
                   where p.name = 'two' and r.consumer_group = 'g'), 'g still has b2 and b3';
    assert pg_temp.work_without_ready_row() = 0, 'no work without a row after manual moves';
    v := regina.message_dead_letter(pg_temp.pid('two'), 'b2', '__QUEUE_MODE__', null, t0)::jsonb;
    assert v ->> 'code' = 'already_settled', format('moved once only: %s', v);

    -- Requeueing b2 for queue mode gives it work again, and only it.
    perform regina.message_requeue(pg_temp.pid('two'), 'b2', '__QUEUE_MODE__', t0);
    assert exists (select 1 from regina.ready where consumer_group = '__QUEUE_MODE__'), 'requeued: work';
    assert pg_temp.work_without_ready_row() = 0, 'no work without a row after a requeue';

    -- Clearing the queue: no message, no row; cursors at the end; pops are empty; a new push is
    -- work again for both groups.
    perform regina.pop('[{"queue":"ra","consumerGroup":"g","batch":1,"leaseId":"0196a000-0000-7000-8000-000000000e04"}]', t0);
    v := (select r.result from regina.queue_clear('ra') r)::jsonb;
    assert v ->> 'deletedMessages' = '3' and v ->> 'deletedDlq' = '1', format('cleared: %s', v);
    assert not exists (select 1 from regina.ready) and not exists (select 1 from regina.messages), 'empty';
    assert not exists (select 1 from regina.cursors c join regina.partitions p on p.id = c.partition_id
                       where c.next_seq <> p.next_seq or c.lease_active), 'cursors at the end, no lease';
    select result into v from regina.pop('[{"queue":"ra","consumerGroup":"g","batch":5,"leaseId":"0196a000-0000-7000-8000-000000000e05"}]', t0);
    assert v ->> 'empty' = 'empty', format('nothing after a clear: %s', v);
    perform regina.push('[{"queue":"ra","partition":"two","payload":4,"transactionId":"b4","messageId":"0196a000-0000-7000-8000-000000000f04"}]',
                        i_now => t0 + interval '1 second');
    assert (select count(*) from regina.ready) = 2, 'a new push is work for both groups';
    select result into v from regina.pop('[{"queue":"ra","consumerGroup":"g","batch":5,"autoAck":true}]', t0 + interval '2 seconds');
    assert v -> 'messages' -> 0 ->> 'transactionId' = 'b4' and jsonb_array_length(v -> 'messages') = 1,
        format('only the new message: %s', v);

    -- Deleting the queue takes its rows with it.
    v := regina.queue_delete('ra')::jsonb;
    assert v ->> 'existed' = 'true', format('deleted: %s', v);
    assert not exists (select 1 from regina.ready) and not exists (select 1 from regina.cursors)
       and not exists (select 1 from regina.subscriptions) and not exists (select 1 from regina.partitions),
        'nothing of the queue is left';
    assert regina.queue_delete('ra')::jsonb ->> 'existed' = 'false', 'idempotent';
end $$;

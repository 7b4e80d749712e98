-- The counts and statuses of http-api.md §4.16: completed means settled by every known group (below
-- every head, or a settled mark), processing means inside a live lease and not settled by its
-- group, pending is the rest; failed counts heads with attempts, deadLetter live DLQ entries.
create function pg_temp.counts() returns jsonb
language sql as $$
    select jsonb_build_object('total', c.total, 'pending', c.pending, 'processing', c.processing,
                              'completed', c.completed, 'failed', c.failed, 'deadLetter', c.dead_letter)
    from regina._partition_counts(array(select id from regina.partitions where name = 'p'),
                                  '2026-01-01T00:01:00Z') c
$$;

create function pg_temp.status(i_txn text, i_group text default null) returns text
language sql as $$
    select regina._message_summary(m, i_group, '2026-01-01T00:01:00Z') ->> 'status'
    from regina.messages m where m.transaction_id = i_txn and m.for_group is null
$$;

do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v jsonb;
    pid text;
begin
    perform regina.configure('{"queue":"cq","options":{"retryLimit":5}}');
    perform regina.push((select jsonb_agg(jsonb_build_object('queue', 'cq', 'partition', 'p', 'payload', i,
                                                             'transactionId', 'm' || i, 'messageId', gen_random_uuid()))
                         from generate_series(1, 6) i), i_now => t0);
    assert pg_temp.counts() = '{"total":6,"pending":6,"processing":0,"completed":0,"failed":0,"deadLetter":0}',
        format('no group known: all pending %s', pg_temp.counts());
    assert pg_temp.status('m1') = 'pending', 'no group: pending';

    -- g takes m1..m3 for good; queue mode leases m1, m2 and completes m2 out of order.
    perform regina.pop('[{"queue":"cq","consumerGroup":"g","batch":3,"autoAck":true}]', t0);
    select result into v from regina.pop('[{"queue":"cq","batch":2,"leaseId":"0196a000-0000-7000-8000-000000001001"}]', t0);
    pid := v ->> 'partitionId';
    perform regina.ack(jsonb_build_array(jsonb_build_object('transactionId', 'm2', 'partitionId', pid,
        'leaseId', '0196a000-0000-7000-8000-000000001001')), t0);
    assert pg_temp.counts() = '{"total":6,"pending":4,"processing":1,"completed":1,"failed":0,"deadLetter":0}',
        format('m2 completed by both, m1 inside the lease: %s', pg_temp.counts());
    assert pg_temp.status('m1') = 'processing' and pg_temp.status('m2') = 'completed'
       and pg_temp.status('m3') = 'pending', 'queue mode decides the default status';
    assert pg_temp.status('m1', 'g') = 'completed' and pg_temp.status('m4', 'g') = 'pending',
        'relative to g';
    assert regina._message_summary((select m from regina.messages m where m.transaction_id = 'm3'), null,
                                   '2026-01-01T00:01:00Z') -> 'busStatus' = '{"consumedBy":1,"totalGroups":1}',
        'g passed m3';

    -- A group subscribed after every message counts them settled without having a cursor.
    perform regina.pop('[{"queue":"cq","consumerGroup":"late","subscriptionMode":"new","batch":1}]',
                       t0 + interval '1 second');
    assert not exists (select 1 from regina.cursors where consumer_group = 'late'), 'late has no cursor';
    assert pg_temp.counts() ->> 'completed' = '1', format('late changes nothing: %s', pg_temp.counts());

    -- g moves m5 to its DLQ: a dead letter, and the default status says so.
    perform regina.message_dead_letter(pid, 'm5', 'g', 'manual', t0);
    assert pg_temp.counts() ->> 'deadLetter' = '1' and pg_temp.status('m5') = 'dead_letter',
        format('dead letter counted: %s', pg_temp.counts());

    -- Queue mode's lease fails: an attempt on its head, the out-of-order completion dies.
    perform regina.ack(jsonb_build_array(jsonb_build_object('transactionId', 'm1', 'partitionId', pid,
        'status', 'failed', 'leaseId', '0196a000-0000-7000-8000-000000001001')), t0);
    assert pg_temp.counts() = '{"total":6,"pending":6,"processing":0,"completed":0,"failed":1,"deadLetter":1}',
        format('after the failure: %s', pg_temp.counts());

    -- Queue mode completes m1..m4: m1..m3 are settled by every group, m4 is not (g's head is m4).
    select result into v from regina.pop('[{"queue":"cq","batch":4,"leaseId":"0196a000-0000-7000-8000-000000001002"}]', t0);
    perform regina.ack((select jsonb_agg(jsonb_build_object('transactionId', 'm' || i, 'partitionId', pid,
                            'leaseId', '0196a000-0000-7000-8000-000000001002')) from generate_series(1, 4) i), t0);
    assert pg_temp.counts() = '{"total":6,"pending":3,"processing":0,"completed":3,"failed":0,"deadLetter":1}',
        format('three completed: %s', pg_temp.counts());

    -- Both groups drain the partition; a requeue for g reopens m5 for g only, counted once.
    perform regina.pop('[{"queue":"cq","consumerGroup":"g","batch":10,"autoAck":true}]', t0);
    perform regina.pop('[{"queue":"cq","batch":10,"autoAck":true}]', t0);
    assert pg_temp.counts() = '{"total":6,"pending":0,"processing":0,"completed":6,"failed":0,"deadLetter":1}',
        format('drained: %s', pg_temp.counts());
    perform regina.message_requeue(pid, 'm5', 'g', t0);
    assert pg_temp.counts() = '{"total":6,"pending":1,"processing":0,"completed":5,"failed":0,"deadLetter":0}',
        format('m5 pending for g again: %s', pg_temp.counts());
    assert pg_temp.status('m5') = 'completed' and pg_temp.status('m5', 'g') = 'pending',
        'queue mode is done with m5, g is not';
    select result into v from regina.pop('[{"queue":"cq","consumerGroup":"g","batch":10,"leaseId":"0196a000-0000-7000-8000-000000001003"}]', t0);
    assert pg_temp.counts() = '{"total":6,"pending":0,"processing":1,"completed":5,"failed":0,"deadLetter":0}',
        format('the requeued delivery is processing: %s', pg_temp.counts());
    assert pg_temp.status('m5', 'g') = 'processing', 'processing for g';
end $$;

-- A call of one ack item (what a consumer that takes a message at a time sends) is resolved by
-- regina._ack_item_one and, when it settles a message of its own lease, settled without the
-- per-run loop (or, when it completes the head of its lease, by one update of the cursor: see
-- ack_lone_settles_as_the_general_path.sql). Both must be invisible: the item resolves to what
-- regina._ack_items gives it, and every answer and cursor is the one the loop gives the same item.

-- Function calls are counted from the start (a PL/pgSQL expression counts calls only when it
-- was first evaluated in the transaction with counting on).
set track_functions = 'pl';

-- Resolution: _ack_item_one agrees with _ack_items on every combination of transaction id,
-- partition, lease and group below (with statuses and errors of every kind), and the
-- combinations reach every way an item resolves.
do $$
declare
    t0 timestamptz := '2026-04-01T00:00:00Z';
    l1 uuid := '0196b000-0000-7000-8000-000000000001';
    l2 uuid := '0196b000-0000-7000-8000-000000000002';
    l3 uuid := '0196b000-0000-7000-8000-000000000003';
    l4 uuid := '0196b000-0000-7000-8000-000000000004';
    l5 uuid := '0196b000-0000-7000-8000-000000000005';
    p_uuid text;
    q_uuid text;
    requeued bigint;
    item jsonb;
    one regina.ack_item;
    batch regina.ack_item;
    n integer := 0;
    mismatched integer := 0;
    first_mismatch text;
    seen_requeued boolean := false;
    seen_in_lease boolean := false;
    seen_outside boolean := false;
    seen_mismatch boolean := false;
    seen_unknown_message boolean := false;
    seen_unknown_partition boolean := false;
begin
    perform regina.configure('{"queue":"oa","options":{"leaseTime":60,"retryLimit":0}}');
    perform pg_temp.push_numbered('oa', 'p', 'm', 1, 4, t0);
    perform pg_temp.push_numbered('oa', 'q', 'n', 1, 1, t0);
    p_uuid := (select uuid::text from regina.partitions where name = 'p');
    q_uuid := (select uuid::text from regina.partitions where name = 'q');
    -- g3 fails m1 (dead-lettered at once: retryLimit 0) and gets it requeued: a delivery of m1
    -- for g3 alone, at the tail.
    perform regina.pop(jsonb_build_array(jsonb_build_object(
                'queue', 'oa', 'partition', 'p', 'consumerGroup', 'g3', 'batch', 1,
                'leaseId', l4)), t0);
    perform regina.ack(jsonb_build_array(jsonb_build_object(
                'transactionId', 'm1', 'partitionId', p_uuid, 'leaseId', l4,
                'status', 'failed', 'consumerGroup', 'g3')), t0);
    perform regina.message_requeue(p_uuid, 'm1', 'g3', t0 + interval '1 second');
    requeued := (select seq from regina.messages where for_group = 'g3');
    assert requeued is not null, 'm1 requeued for g3';
    -- Leases: g1 holds m1 and m2, g2 holds m1, the queue mode m1, g3 m2.
    perform regina.pop(jsonb_build_array(
                jsonb_build_object('queue', 'oa', 'partition', 'p', 'consumerGroup', 'g1',
                                   'batch', 2, 'leaseId', l1),
                jsonb_build_object('queue', 'oa', 'partition', 'p', 'consumerGroup', 'g2',
                                   'batch', 1, 'leaseId', l2),
                jsonb_build_object('queue', 'oa', 'partition', 'p', 'batch', 1, 'leaseId', l3),
                jsonb_build_object('queue', 'oa', 'partition', 'p', 'consumerGroup', 'g3',
                                   'batch', 1, 'leaseId', l5)),
            t0 + interval '2 seconds');
    assert (select count(*) from regina.cursors where lease_active) = 4, 'four leases';

    for item in
        select jsonb_strip_nulls(jsonb_build_object(
                   'transactionId', t, 'partitionId', p, 'leaseId', l, 'consumerGroup', g,
                   'status', (array['completed', 'success', '', 'failed', 'dlq', 'retry',
                                    'bogus'])[1 + (ord % 7)],
                   'error', (array['boom', '', repeat('e', 5000)])[1 + (ord % 3)])) ||
               case when ord % 11 = 0 then '{"status":null}'::jsonb else '{}'::jsonb end
        from (select t, p, l, g, row_number() over () as ord
              from unnest(array['m1', 'm2', 'm3', 'm4', 'n1', 'nope', null]) t,
                   unnest(array[p_uuid, q_uuid, gen_random_uuid()::text, 'not-a-uuid', '',
                                null]) p,
                   unnest(array[l1::text, l2::text, l3::text, l5::text,
                                gen_random_uuid()::text, 'bad', '', null]) l,
                   unnest(array[null, '', 'g1', 'g2', 'g3', 'other']) g) c
    loop
        n := n + 1;
        one := regina._ack_item_one(item);
        batch := (select a from regina._ack_items(jsonb_build_array(item)) a);
        if one is distinct from batch then
            mismatched := mismatched + 1;
            first_mismatch := coalesce(first_mismatch,
                                       format('%s: one %s, batch %s', item, one, batch));
        end if;
        seen_requeued := seen_requeued or batch.seq = requeued;
        seen_in_lease := seen_in_lease or (batch.seq is not null and item ->> 'leaseId' = l1::text
                                           and batch.consumer_group = 'g1');
        seen_outside := seen_outside or (batch.seq is not null and item ->> 'leaseId' is null);
        seen_mismatch := seen_mismatch or batch.group_mismatch;
        seen_unknown_message := seen_unknown_message
                                or (batch.partition_id is not null and batch.seq is null);
        seen_unknown_partition := seen_unknown_partition or batch.partition_id is null;
    end loop;
    assert n = 7 * 6 * 8 * 6, format('every combination tried: %s', n);
    assert mismatched = 0, format('%s of %s items resolve differently, first %s', mismatched, n,
                                  first_mismatch);
    assert seen_requeued and seen_in_lease and seen_outside and seen_mismatch
           and seen_unknown_message and seen_unknown_partition,
        format('every way of resolving reached: requeued %s, in lease %s, outside a lease %s, '
               'group mismatch %s, unknown message %s, unknown partition %s', seen_requeued,
               seen_in_lease, seen_outside, seen_mismatch, seen_unknown_message,
               seen_unknown_partition);
end
$$;

-- Settling: group g acks one item per call, group h the same items each beside an item of an
-- unknown partition (so its calls take the loop). Answers and cursors agree step by step: an
-- out-of-order ack inside a lease, the head's ack that ends it, a batch-1 lease, an ack again,
-- an expired lease, a failure.
do $$
declare
    t0 timestamptz := '2026-04-02T00:00:00Z';
    junk jsonb := jsonb_build_object('transactionId', 'x', 'partitionId', gen_random_uuid(),
                                     'leaseId', gen_random_uuid());
    p_uuid text;
    leases jsonb := '{}';
    step record;
    one record;
    loop_row record;
    n_one integer;
    calls_before bigint;
    one_calls_before bigint;
    cur_g record;
    cur_h record;
    ready_g timestamptz;
    ready_h timestamptz;
begin
    perform regina.configure('{"queue":"ob","options":{"leaseTime":60,"retryLimit":3}}');
    perform pg_temp.push_numbered('ob', 'p', 'm', 1, 6, t0);
    p_uuid := (select p.uuid::text from regina.partitions p join regina.queues q on q.id = p.queue_id
               where q.name = 'ob' and p.name = 'p');

    for step in
        select * from (values
            -- (step, pop batch or null, popped at, transactionId, status, acked at, code)
            (1, 2, 0, 'm2', 'completed', 1, null),      -- out of order inside the lease
            (2, null, null, 'm1', 'completed', 2, null),  -- the head: the lease ends
            (3, 1, 2, 'm3', 'success', 3, null),        -- a batch-1 lease, ended by its ack
            (4, null, null, 'm3', 'completed', 4, null),  -- again: already settled, a success
            (5, 1, 30, 'm4', 'completed', 100, 'lease_expired'),  -- after the lease's end
            (6, 1, 100, 'm4', 'failed', 101, null),     -- a failure: retried later
            (7, null, null, 'm4', 'retry', 102, 'lease_expired')  -- the lease the failure ended
        ) v(n, pop_batch, pop_at, tid, status, secs, code)
        order by n
    loop
        if step.pop_batch is not null then
            leases := jsonb_build_object('g', gen_random_uuid(), 'h', gen_random_uuid());
            perform regina.pop(jsonb_build_array(
                        jsonb_build_object('queue', 'ob', 'partition', 'p', 'consumerGroup', 'g',
                                           'batch', step.pop_batch, 'leaseId', leases ->> 'g'),
                        jsonb_build_object('queue', 'ob', 'partition', 'p', 'consumerGroup', 'h',
                                           'batch', step.pop_batch, 'leaseId', leases ->> 'h')),
                    t0 + step.pop_at * interval '1 second');
        end if;
        calls_before := coalesce((select calls from pg_stat_xact_user_functions
                                  where schemaname = 'regina' and funcname = '_ack_items'), 0);
        one_calls_before := coalesce((select calls from pg_stat_xact_user_functions
                                      where schemaname = 'regina'
                                        and funcname = '_ack_item_one'), 0);
        select count(*) as n, min(a.result::text) as result, min(a.wake_queue) as wake_queue,
               min(a.wake_group) as wake_group, min(a.queue_name) as queue_name,
               min(a.acked) as acked, sum(a.dead_lettered) as dead_lettered,
               sum(a.leases_expired) as leases_expired
        into one
        from regina.ack(jsonb_build_array(jsonb_build_object(
                 'transactionId', step.tid, 'partitionId', p_uuid, 'leaseId', leases ->> 'g',
                 'status', step.status, 'consumerGroup', 'g')),
             t0 + step.secs * interval '1 second') a;
        n_one := one.n;
        assert n_one = 1, format('step %s: one answer', step.n);
        -- Resolved on its own: by _ack_item_one, or (the head of its lease completed) by the
        -- one-item update of regina.ack_text, which calls neither.
        assert coalesce((select calls from pg_stat_xact_user_functions
                         where schemaname = 'regina' and funcname = '_ack_items'), 0)
               = calls_before
           and coalesce((select calls from pg_stat_xact_user_functions
                         where schemaname = 'regina' and funcname = '_ack_item_one'), 0)
               <= one_calls_before + 1,
            format('step %s: the one item is resolved on its own', step.n);
        select a.result::text, a.wake_queue, a.wake_group, a.queue_name, a.acked, a.dead_lettered,
               a.leases_expired
        into loop_row
        from regina.ack(jsonb_build_array(
                 jsonb_build_object('transactionId', step.tid, 'partitionId', p_uuid,
                                    'leaseId', leases ->> 'h', 'status', step.status,
                                    'consumerGroup', 'h'),
                 junk),
             t0 + step.secs * interval '1 second') a
        where a.idx = 0;
        assert (one.result::jsonb ->> 'code') is not distinct from step.code,
            format('step %s: %s', step.n, one.result);
        assert one.result = loop_row.result
           and one.wake_queue is not distinct from loop_row.wake_queue
           and replace(one.wake_group, 'g', 'h') is not distinct from loop_row.wake_group
           and one.queue_name = loop_row.queue_name
           and one.acked is not distinct from loop_row.acked
           and one.dead_lettered = loop_row.dead_lettered
           and one.leases_expired = loop_row.leases_expired,
            format('step %s: one item %s, in the loop %s', step.n, one, loop_row);
        select c.next_seq, marks, lease_marks, head_attempts, head_error, retry_after, lease_active,
               lease_expires_at, lease_end_seq, last_claim_at, total_consumed, batches_consumed,
               last_consumed_at, last_lease_id = (leases ->> 'g')::uuid as last_is_own
        into cur_g from regina.cursors c join regina.partitions p on p.id = c.partition_id
        where p.uuid::text = p_uuid and c.consumer_group = 'g';
        select c.next_seq, marks, lease_marks, head_attempts, head_error, retry_after, lease_active,
               lease_expires_at, lease_end_seq, last_claim_at, total_consumed, batches_consumed,
               last_consumed_at, last_lease_id = (leases ->> 'h')::uuid as last_is_own
        into cur_h from regina.cursors c join regina.partitions p on p.id = c.partition_id
        where p.uuid::text = p_uuid and c.consumer_group = 'h';
        assert cur_g is not distinct from cur_h,
            format('step %s: cursors agree: %s against %s', step.n, cur_g, cur_h);
        ready_g := (select eligible_at from regina.ready where consumer_group = 'g');
        ready_h := (select eligible_at from regina.ready where consumer_group = 'h');
        assert ready_g is not distinct from ready_h,
            format('step %s: ready rows agree: %s against %s', step.n, ready_g, ready_h);
    end loop;
    assert (select total_consumed from regina.cursors where consumer_group = 'g') = 3,
        'three messages settled';
end
$$;

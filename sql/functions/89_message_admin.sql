-- Message administration (http-api.md §3.9, §4.7): delete, requeue from the DLQ, manual move to the
-- DLQ. Each returns its response body: `success: true`, or `success: false` with the error and
-- its code (message_not_found, message_leased, not_in_dlq, already_settled).

create or replace function regina._admin_failure(i_code text) returns json
language sql stable as $$
    select json_build_object(
        'success', false,
        'error', case i_code
                     when 'message_not_found' then 'Message not found'
                     when 'message_leased' then 'Message is inside an active lease'
                     when 'not_in_dlq' then 'Message is not in the dead letter queue'
                     when 'already_settled' then 'Message already settled for this consumer group'
                 end,
        'code', i_code)
$$;

-- Locks the cursors of a partition for an admin change of its messages, in group order (as acks
-- do), after accounting leases whose expiry passed (a failed attempt each, as the sweep would).
-- A subscribed group without a cursor there may be creating one right now (its first claim): the
-- try-lock that claim holds (regina._cursor_lock) is taken here too, and false is returned when
-- it is busy. The partitions table is held in `row exclusive` mode first, so no new
-- subscription appears meanwhile.
create or replace function regina._partition_cursors_lock(i_p regina.partitions, i_now timestamptz)
returns boolean
language plpgsql as $$
declare
    v_c regina.cursors;
    v_q regina.queues;
    v_group text;
begin
    lock table regina.partitions in row exclusive mode;
    for v_group in select s.consumer_group from regina.subscriptions s
                   where s.queue_id = i_p.queue_id
                     and not exists (select 1 from regina.cursors c where c.partition_id = i_p.id
                                                                     and c.consumer_group = s.consumer_group)
                   order by s.consumer_group
    loop
        if not pg_try_advisory_xact_lock(hashtextextended(i_p.id::text || '/' || v_group, 0)) then
            return false;
        end if;
    end loop;
    select * into v_q from regina.queues q where q.id = i_p.queue_id;
    for v_c in select * from regina.cursors c where c.partition_id = i_p.id
               order by c.consumer_group for update
    loop
        if v_c.lease_active and v_c.lease_expires_at <= i_now then
            v_c := (regina._lease_expire(v_c, v_q, i_now)).c;
            perform regina._cursor_save(v_c, i_now);
        end if;
    end loop;
    return true;
end
$$;

-- DELETE /api/v1/messages/:partitionId/:transactionId: deletes the message, its requeued
-- deliveries, its trace events and its dead letters; every group passes over the gap. Refused
-- while any of its deliveries is inside an active lease. A group whose head it was moves on, and
-- the attempts and retry delay charged to it are dropped with it.
create or replace function regina.message_delete(i_partition_id text, i_transaction_id text,
                                                 i_now timestamptz default null)
returns json
-- Keyed lookups only: a plan made from statistics that call a table tiny must not scan it whole
-- once it has grown.
language plpgsql set enable_seqscan = off set jit = off as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_p regina.partitions;
    v_seqs bigint[];
    v_seq bigint;
    v_for text;
    v_c regina.cursors;
    v_head bigint;
begin
    select * into v_p from regina.partitions p where p.uuid = regina._uuid_or_null(i_partition_id);
    v_seqs := array(select s.o_seq from regina._stored_key(v_p.id, i_transaction_id) s
                    where s.o_seq is not null
                    union all
                    select r.seq from regina.messages r
                    where r.partition_id = v_p.id and r.for_group is not null
                      and r.transaction_id = i_transaction_id);
    if cardinality(v_seqs) = 0 and not exists (
            select 1 from regina.dead_letters d
            where d.partition_id = v_p.id and d.transaction_id = i_transaction_id) then
        return regina._admin_failure('message_not_found');
    end if;
    if not regina._partition_cursors_lock(v_p, v_now) then
        return regina._admin_failure('message_leased');
    end if;
    -- Delivery by delivery, each looked up by its key: a join of the deliveries with the
    -- partition's messages is planned, from statistics that call the table tiny, as a read of the
    -- partition's whole range.
    foreach v_seq in array v_seqs loop
        select m.for_group into v_for from regina.messages m
        where m.partition_id = v_p.id and m.seq = v_seq;
        continue when not found;
        if exists (select 1 from regina.cursors c
                   where c.partition_id = v_p.id and c.lease_active
                     and v_seq >= c.next_seq and v_seq <= c.lease_end_seq
                     and (v_for is null or v_for = c.consumer_group)) then
            return regina._admin_failure('message_leased');
        end if;
    end loop;
    for v_c in select * from regina.cursors c where c.partition_id = v_p.id order by c.consumer_group
    loop
        v_head := regina._head_seq(v_p.id, v_c.next_seq, v_c.marks, v_c.consumer_group);
        if v_head = any (v_seqs) then
            v_c.next_seq := regina._advance(v_p.id, v_head + 1, v_c.marks || v_seqs, v_c.consumer_group);
            v_c.marks := regina._marks_from(v_c.marks, v_c.next_seq);
            v_c.head_attempts := 0;
            v_c.head_error := null;
            v_c.retry_after := null;
            perform regina._cursor_save(v_c, v_now);
        end if;
    end loop;
    -- One keyed delete per delivery (the message and its requeued copies): with `seq = any`, a
    -- plan made from statistics that call the table tiny reads the partition's whole range.
    foreach v_seq in array v_seqs loop
        delete from regina.messages m where m.partition_id = v_p.id and m.seq = v_seq;
    end loop;
    perform regina._traces_forget(v_p.id, array[i_transaction_id]);
    delete from regina.dead_letters d
    where d.partition_id = v_p.id and d.transaction_id = i_transaction_id;
    perform regina._trace_names_settle();
    return json_build_object('success', true, 'partitionId', v_p.uuid,
                             'transactionId', i_transaction_id, 'message', 'Message deleted');
end
$$;

-- POST /api/v1/messages/:partitionId/:transactionId/retry: requeues the message for i_group, or
-- for every group holding a dead letter of it (§4.7). Each group's dead letter becomes a
-- requeued delivery at the tail of the partition, built from the dead letter's copy (original
-- id, transactionId, payload, createdAt), meant for that group only (messages.for_group; see
-- docs/adr/0006-requeued-deliveries.md). The partition row is locked as a push locks it, so the
-- delivery's offset comes after every message committed before, and the group gets its ready row
-- (invariant of migrations/0002_ready.sql). Other instances hear of it as of a push. Returns the
-- body and the queue whose waiters of those groups should retry.
create or replace function regina.message_requeue(i_partition_id text, i_transaction_id text,
                                                  i_group text default null,
                                                  i_now timestamptz default null)
returns table (result json, wake_queue text)
-- Keyed lookups only: a plan made from statistics that call a table tiny must not scan it whole
-- once it has grown.
language plpgsql set enable_seqscan = off set jit = off as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_p regina.partitions;
    v_d regina.dead_letters;
    v_groups text[] := '{}';
begin
    select * into v_p from regina.partitions p where p.uuid = regina._uuid_or_null(i_partition_id);
    if (regina._message_locate(v_p.id, i_transaction_id)).partition_id is null then
        result := regina._admin_failure('message_not_found');
        return next;
        return;
    end if;
    select * into v_p from regina.partitions p where p.id = v_p.id for update;
    for v_d in select * from regina.dead_letters d
               where d.partition_id = v_p.id and d.transaction_id = i_transaction_id
                 and (i_group is null or d.consumer_group = i_group)
               order by d.consumer_group
               for update
    loop
        delete from regina.dead_letters d where d.id = v_d.id;
        -- An earlier requeued delivery for the group is settled (its dead letter is how we got
        -- here): the new one replaces it.
        delete from regina.messages r
        where r.partition_id = v_p.id and r.for_group = v_d.consumer_group
          and r.transaction_id = i_transaction_id;
        -- The copy keeps its encryption: the requeued payload is the DLQ's, sealed or not.
        insert into regina.messages (partition_id, seq, id, transaction_id, trace_id, producer_sub,
                                     created_at, payload, payload_key_id, for_group)
        values (v_p.id, v_p.next_seq, v_d.message_id, v_d.transaction_id, v_d.trace_id,
                v_d.producer_sub, v_d.created_at, v_d.payload, v_d.payload_key_id,
                v_d.consumer_group);
        v_p.next_seq := v_p.next_seq + 1;
        insert into regina.ready (partition_id, consumer_group, queue_id, eligible_at)
        values (v_p.id, v_d.consumer_group, v_p.queue_id, v_now)
        on conflict do nothing;
        v_groups := v_groups || v_d.consumer_group;
    end loop;
    if cardinality(v_groups) = 0 then
        result := regina._admin_failure('not_in_dlq');
        return next;
        return;
    end if;
    update regina.partitions p set next_seq = v_p.next_seq where p.id = v_p.id;
    wake_queue := (select q.name from regina.queues q where q.id = v_p.queue_id);
    perform pg_notify('regina_push', json_build_object('queue', wake_queue,
                                                       'partitions', json_build_array(v_p.name))::text);
    result := json_build_object('success', true, 'partitionId', v_p.uuid,
                                'transactionId', i_transaction_id,
                                'consumerGroups', (select array_to_json(array_agg(g order by g))
                                                   from unnest(v_groups) g),
                                'message', 'Message requeued');
    return next;
end
$$;

-- The cursor of (partition, group) locked for an admin change, created where the group's first
-- claim would create it when missing (at its subscription start; from the oldest message for a
-- group without one), under the same advisory lock as a claim creating it.
create or replace function regina._cursor_hold(i_p regina.partitions, i_group text)
returns regina.cursors
language plpgsql as $$
declare
    v_c regina.cursors;
begin
    select * into v_c from regina.cursors c
    where c.partition_id = i_p.id and c.consumer_group = i_group for update;
    if found then
        return v_c;
    end if;
    perform pg_advisory_xact_lock(hashtextextended(i_p.id::text || '/' || i_group, 0));
    insert into regina.cursors (partition_id, consumer_group, queue_id, next_seq)
    values (i_p.id, i_group, i_p.queue_id,
            regina._start_seq(i_p.id, (select s.start_at from regina.subscriptions s
                                       where s.queue_id = i_p.queue_id and s.consumer_group = i_group)))
    on conflict do nothing;
    select * into v_c from regina.cursors c
    where c.partition_id = i_p.id and c.consumer_group = i_group for update;
    return v_c;
end
$$;

-- POST /api/v1/messages/:partitionId/:transactionId/dlq: moves the message (the group's requeued
-- delivery of it, if any) to the DLQ of i_group, even when the queue discards dead letters, and
-- settles it for that group only: its head moves past it, or it becomes a settled mark the head
-- jumps over later (§4.7). Refused when the group already settled it or holds it in a live lease.
create or replace function regina.message_dead_letter(i_partition_id text, i_transaction_id text,
                                                      i_group text, i_error text,
                                                      i_now timestamptz default null)
returns json
-- Keyed lookups only: a plan made from statistics that call a table tiny must not scan it whole
-- once it has grown.
language plpgsql set enable_seqscan = off set jit = off as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_p regina.partitions;
    v_q regina.queues;
    v_seq bigint;
    v_c regina.cursors;
    v_head boolean;
begin
    select * into v_p from regina.partitions p where p.uuid = regina._uuid_or_null(i_partition_id);
    v_seq := coalesce((select r.seq from regina.messages r
                       where r.partition_id = v_p.id and r.for_group = i_group
                         and r.transaction_id = i_transaction_id
                       order by r.seq desc limit 1),
                      (regina._stored_key(v_p.id, i_transaction_id)).o_seq);
    if v_seq is null then
        return regina._admin_failure('message_not_found');
    end if;
    select * into v_q from regina.queues q where q.id = v_p.queue_id;
    v_c := regina._cursor_hold(v_p, i_group);
    if v_c.lease_active and v_c.lease_expires_at <= v_now then
        v_c := (regina._lease_expire(v_c, v_q, v_now)).c;
    end if;
    if v_seq < v_c.next_seq or v_seq = any (v_c.marks) or v_seq = any (v_c.lease_marks) then
        perform regina._cursor_save(v_c, v_now);
        return regina._admin_failure('already_settled');
    elsif v_c.lease_active and v_seq <= v_c.lease_end_seq then
        perform regina._cursor_save(v_c, v_now);
        return regina._admin_failure('message_leased');
    end if;
    v_head := v_seq = regina._head_seq(v_p.id, v_c.next_seq, v_c.marks, i_group);
    v_q.dead_letter_queue := true;   -- a manual move always writes its entry
    perform regina._dead_letter(v_c, v_q, v_seq, case when v_head then v_c.head_attempts else 0 end,
                                i_error, v_now);
    if v_head then
        v_c.next_seq := regina._advance(v_p.id, v_seq + 1, v_c.marks, i_group);
        v_c.marks := regina._marks_from(v_c.marks, v_c.next_seq);
        v_c.head_attempts := 0;
        v_c.head_error := null;
        v_c.retry_after := null;
    else
        v_c.marks := v_c.marks || v_seq;
    end if;
    perform regina._cursor_save(v_c, v_now);
    return json_build_object('success', true, 'partitionId', v_p.uuid,
                             'transactionId', i_transaction_id, 'consumerGroup', i_group,
                             'message', 'Message moved to DLQ');
end
$$;

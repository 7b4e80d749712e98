-- Leases: failed attempts, dead-lettering, extension, release and the expiry sweep.

-- Writes the dead letter of message i_seq for the cursor's group, when the queue keeps them.
-- Returns whether an entry was written (false: the queue discards dead messages).
create or replace function regina._dead_letter(i_c regina.cursors, i_q regina.queues, i_seq bigint,
                                               i_retry_count integer, i_error text,
                                               i_now timestamptz)
returns boolean
language plpgsql as $$
begin
    if not i_q.dead_letter_queue then
        return false;
    end if;
    insert into regina.dead_letters (queue_id, partition_id, consumer_group, message_id, seq,
                                     transaction_id, trace_id, producer_sub, payload,
                                     payload_key_id, created_at, error_message, retry_count,
                                     failed_at)
    select i_q.id, m.partition_id, i_c.consumer_group, m.id, m.seq, m.transaction_id, m.trace_id,
           m.producer_sub, m.payload, m.payload_key_id, m.created_at, i_error, i_retry_count, i_now
    from regina.messages m
    where m.partition_id = i_c.partition_id and m.seq = i_seq
    on conflict (message_id, consumer_group) do update
        set error_message = excluded.error_message, retry_count = excluded.retry_count,
            failed_at = excluded.failed_at, payload = excluded.payload,
            payload_key_id = excluded.payload_key_id;
    return found;
end
$$;

-- Ends the cursor's lease as failed (a `failed` ack, or expiry at i_at) and charges one attempt
-- to the head. Past retryLimit the head is dead-lettered and the cursor moves past it; otherwise
-- the partition rests until i_at + retryDelay. Completions made inside the lease beyond a gap are
-- forgotten: those messages are delivered again.
create or replace function regina._lease_fail(i_c regina.cursors, i_q regina.queues, i_error text,
                                              i_at timestamptz, i_now timestamptz)
returns regina.cursor_outcome
language plpgsql as $$
declare
    v_c regina.cursors := i_c;
    v_head bigint;
    v_dlq boolean := false;
begin
    v_c.lease_active := false;
    v_c.lease_marks := '{}';
    v_head := regina._head_seq(v_c.partition_id, v_c.next_seq, v_c.marks, v_c.consumer_group);
    if v_head is null then
        return row(v_c, false)::regina.cursor_outcome;
    end if;
    v_c.head_attempts := v_c.head_attempts + 1;
    v_c.head_error := i_error;
    if v_c.head_attempts > i_q.retry_limit then
        v_dlq := regina._dead_letter(v_c, i_q, v_head, v_c.head_attempts - 1, i_error, i_now);
        v_c.next_seq := regina._advance(v_c.partition_id, v_head + 1, v_c.marks, v_c.consumer_group);
        v_c.marks := regina._marks_from(v_c.marks, v_c.next_seq);
        v_c.head_attempts := 0;
        v_c.head_error := null;
        v_c.retry_after := null;
    else
        v_c.retry_after := i_at + i_q.retry_delay_ms * interval '1 millisecond';
    end if;
    return row(v_c, v_dlq)::regina.cursor_outcome;
end
$$;

-- Accounts the expiry of the cursor's active lease (http-api.md §4.8): one failed attempt charged
-- to the head, as regina._lease_fail. Exception (streams-api.md §3.3): a lease that a streams
-- cycle parked with a partial `completed` ack and `release_lease: false` ends without charging
-- anything, as an ack `retry` ends it; the consumer showed progress and deliberately left the tail.
-- Every place that accounts an expiry calls this.
create or replace function regina._lease_expire(i_c regina.cursors, i_q regina.queues,
                                                i_now timestamptz)
returns regina.cursor_outcome
language plpgsql as $$
declare
    v_c regina.cursors := i_c;
begin
    if v_c.parked_lease_id is not distinct from v_c.lease_id and v_c.lease_id is not null then
        v_c.lease_active := false;
        v_c.lease_marks := '{}';
        return row(v_c, false)::regina.cursor_outcome;
    end if;
    return regina._lease_fail(v_c, i_q, 'Lease expired', v_c.lease_expires_at, i_now);
end
$$;

-- Extends leases: every partition held by the lease gets max(expiry, now + seconds), seconds
-- defaulting to that partition's queue leaseTime. Expired leases are not revived.
create or replace function regina.lease_extend(i_reqs jsonb, i_now timestamptz default null)
returns table (idx integer, result jsonb)
language plpgsql as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_req jsonb;
    v_ord bigint;
    v_lease uuid;
    v_known boolean;
    v_expires timestamptz;
begin
    for v_req, v_ord in select e, o from jsonb_array_elements(i_reqs) with ordinality t(e, o) loop
        idx := v_ord - 1;
        v_lease := regina._uuid_or_null(v_req ->> 'leaseId');
        perform 1 from regina.cursors c where c.lease_id = v_lease
        order by c.partition_id, c.consumer_group for update;
        v_known := found;
        update regina.cursors c
        set lease_expires_at = greatest(c.lease_expires_at,
                v_now + coalesce((v_req ->> 'seconds')::integer, q.lease_time) * interval '1 second')
        from regina.queues q
        where c.lease_id = v_lease and c.lease_active and c.lease_expires_at > v_now
          and q.id = c.queue_id;
        select min(c.lease_expires_at) into v_expires from regina.cursors c
        where c.lease_id = v_lease and c.lease_active and c.lease_expires_at > v_now;
        result := jsonb_build_object(
            'leaseId', v_req ->> 'leaseId',
            'success', v_expires is not null,
            'error', case when v_expires is not null then null
                          when v_known then 'Invalid or expired lease' else 'Lease not found' end,
            'code', case when v_expires is not null then null
                         when v_known then 'lease_expired' else 'lease_not_found' end,
            'expiresAt', regina._ts(v_expires),
            'newExpiresAt', regina._ts(v_expires));
        return next;
    end loop;
end
$$;

-- Ends active leases without charging anything (as if acked `retry`): used when a claiming pop's
-- response could not be delivered. Returns the (queue, group) pairs whose waiters should retry.
create or replace function regina.lease_release(i_lease_ids uuid[], i_now timestamptz default null)
returns table (queue_name text, consumer_group text)
language plpgsql as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_c regina.cursors;
begin
    for v_c in select * from regina.cursors c
               where c.lease_id = any (i_lease_ids) and c.lease_active and c.lease_expires_at > v_now
               order by c.partition_id, c.consumer_group
               for update
    loop
        v_c.lease_active := false;
        v_c.lease_marks := '{}';
        perform regina._cursor_save(v_c, v_now);
        queue_name := (select q.name from regina.queues q where q.id = v_c.queue_id);
        consumer_group := v_c.consumer_group;
        return next;
    end loop;
end
$$;

-- Accounts leases whose expiry passed: one failed attempt each ("Lease expired"), dead letters
-- when exhausted. Run by the leader; rows locked by a concurrent claim are left to that claim.
-- One row per lease ended; `dead_lettered` when its expiry dead-lettered the head (an entry
-- written, or the message discarded when the queue keeps no dead letters).
select regina._drop_outdated('regina.lease_sweep(integer, timestamptz)', 'dead_lettered');
create or replace function regina.lease_sweep(i_limit integer default 1000,
                                              i_now timestamptz default null)
returns table (queue_name text, consumer_group text, dead_lettered boolean)
language plpgsql as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_c regina.cursors;
    v_q regina.queues;
    v_head bigint;
begin
    for v_c in select * from regina.cursors c
               where c.lease_active and c.lease_expires_at <= v_now
               order by c.partition_id, c.consumer_group
               limit i_limit
               for update skip locked
    loop
        select * into v_q from regina.queues q where q.id = v_c.queue_id;
        v_head := v_c.next_seq;
        v_c := (regina._lease_expire(v_c, v_q, v_now)).c;
        perform regina._cursor_save(v_c, v_now);
        queue_name := v_q.name;
        consumer_group := v_c.consumer_group;
        -- Only a dead letter moves the head of a failed lease.
        dead_lettered := v_c.next_seq > v_head;
        return next;
    end loop;
end
$$;

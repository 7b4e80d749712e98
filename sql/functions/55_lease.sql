-- Leases: extension, release on a departed client, and the expiry sweep (the transitions they
-- take are in 30_cursor.sql).

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
-- Keyed lookups only: a plan made from statistics that call a table tiny must not scan it whole
-- once it has grown.
language plpgsql set enable_seqscan = off set jit = off as $$
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

-- Queue depth and push admission: maxSize (http-api.md §4.13) and the refusal of plaintext for
-- queues that encrypt (ADR 0006). regina.push calls these only for items of capped or encrypting
-- queues.

-- The groups known to a queue: its subscriptions and the groups holding a cursor on one of its
-- partitions. The cursor groups are read by skipping through the (queue, group) index, one probe
-- per group, however many partitions the queue has.
create or replace function regina._queue_groups(i_queue_id bigint) returns text[]
language plpgsql stable as $$
declare
    v_groups text[] := array(select s.consumer_group from regina.subscriptions s
                             where s.queue_id = i_queue_id);
    v_group text;
begin
    loop
        select c.consumer_group into v_group from regina.cursors c
        where c.queue_id = i_queue_id and (v_group is null or c.consumer_group > v_group)
        order by c.consumer_group limit 1;
        exit when not found;
        if not v_group = any (v_groups) then
            v_groups := v_groups || v_group;
        end if;
    end loop;
    return v_groups;
end
$$;

-- The lowest head of the groups i_groups on a partition: every message below it is settled by
-- every one of them. A group without a cursor there starts at its subscription start. Null when
-- i_groups is empty.
create or replace function regina._partition_floor(i_partition_id bigint, i_queue_id bigint,
                                                   i_groups text[])
returns bigint
language plpgsql stable as $$
begin
    return (select min(coalesce(c.next_seq, regina._start_seq(i_partition_id, s.start_at)))
            from unnest(i_groups) g(name)
            left join regina.cursors c
                   on c.partition_id = i_partition_id and c.consumer_group = g.name
            left join regina.subscriptions s
                   on s.queue_id = i_queue_id and s.consumer_group = g.name);
end
$$;

-- Stored, unexpired messages of one partition that some group of i_groups has not settled.
-- Settled sets are prefixes (below a head, or before a subscription start) except for marks
-- ahead of a head; only when a cursor of the partition holds marks is each message checked.
create or replace function regina._partition_depth(i_partition_id bigint, i_q regina.queues,
                                                   i_groups text[], i_now timestamptz)
returns bigint
language plpgsql stable as $$
declare
    v_floor bigint := regina._partition_floor(i_partition_id, i_q.id, i_groups);
    v_expired_before timestamptz := case when i_q.ttl_seconds > 0
                                         then i_now - i_q.ttl_seconds * interval '1 second' end;
begin
    if not exists (select 1 from regina.cursors c
                   where c.partition_id = i_partition_id and c.consumer_group = any (i_groups)
                     and (cardinality(c.marks) > 0 or cardinality(c.lease_marks) > 0)) then
        return (select count(*) from regina.messages m
                where m.partition_id = i_partition_id and m.seq >= v_floor
                  and (v_expired_before is null or m.created_at > v_expired_before));
    end if;
    return (select count(*) from regina.messages m
            where m.partition_id = i_partition_id and m.seq >= v_floor
              and (v_expired_before is null or m.created_at > v_expired_before)
              and exists (
                  select 1 from unnest(i_groups) g(name)
                  left join regina.cursors c
                         on c.partition_id = i_partition_id and c.consumer_group = g.name
                  left join regina.subscriptions s
                         on s.queue_id = i_q.id and s.consumer_group = g.name
                  where case when c.partition_id is not null
                             then m.seq >= c.next_seq and m.seq <> all (c.marks)
                                  and m.seq <> all (c.lease_marks)
                             else s.start_at is null or m.created_at >= s.start_at end));
end
$$;

-- The depth of a queue (http-api.md §4.13): stored, unexpired messages that some known group has
-- not settled; with no known group, every stored unexpired message. Partitions holding such
-- messages for a subscribed group are exactly those with a ready row (migrations/0002_ready.sql),
-- so only those are visited.
create or replace function regina.queue_depth(i_queue_id bigint, i_now timestamptz default null)
returns bigint
language plpgsql stable as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_q regina.queues;
    v_groups text[] := regina._queue_groups(i_queue_id);
begin
    select * into v_q from regina.queues q where q.id = i_queue_id;
    if cardinality(v_groups) = 0 then
        return (select count(*) from regina.partitions p
                join regina.messages m on m.partition_id = p.id
                where p.queue_id = i_queue_id
                  and (v_q.ttl_seconds = 0
                       or m.created_at > v_now - v_q.ttl_seconds * interval '1 second'));
    end if;
    return coalesce((select sum(regina._partition_depth(r.partition_id, v_q, v_groups, v_now))
                     from (select distinct rr.partition_id from regina.ready rr
                           where rr.queue_id = i_queue_id) r), 0);
end
$$;

-- Serialises pushes to the capped queues among i_items (maxSize > 0), so that the depth one
-- push reads cannot be overtaken by another push: a transaction-scoped lock per queue, taken in
-- id order before any partition is created or locked. Returns the queues locked; capacity is
-- enforced for those (a queue capped by a configure racing with this push is not, this once).
create or replace function regina._capacity_lock(i_items regina.push_item[]) returns bigint[]
language plpgsql as $$
declare
    v_capped bigint[] := array(select distinct x.queue_id from unnest(i_items) x
                               where x.max_size > 0 order by x.queue_id);
    v_queue_id bigint;
begin
    foreach v_queue_id in array v_capped loop
        perform pg_advisory_xact_lock(hashtextextended('regina.capacity/' || v_queue_id, 0));
    end loop;
    return v_capped;
end
$$;

-- The items of one push call that must not be stored, as a code per item position (index idx + 1,
-- 0: stored as usual): 2 (`encryption_required`) for a new message in plaintext to a queue that
-- encrypts (the broker encrypts and pushes it again), 1 (`queue_full`) past maxSize for the
-- queues in i_capped. New messages of a capped queue are admitted in item order while the depth
-- stays below maxSize, so the admitted ones form a prefix. Only the first item of a key gets a
-- code: duplicates (of stored messages or of admitted items) are never refused, and regina.push
-- refuses a later item with the key of a refused one with it. i_stored: the stored message of
-- each item's key, by item position (regina._stored_keys). Linear in the items: one sort, and a
-- lookup of the room left per item among the few capped queues.
select regina._drop_outdated('regina._push_refusals(regina.push_item[], bigint[], timestamptz)',
                             'smallint');
select regina._drop_outdated('regina._push_refusals(regina.push_item[], bigint[], timestamptz)',
                             'i_stored');
create or replace function regina._push_refusals(i_items regina.push_item[], i_capped bigint[],
                                                 i_now timestamptz, i_stored uuid[])
returns smallint[]
language plpgsql as $$
declare
    v_codes smallint[] := array_fill(0::smallint, array[cardinality(i_items)]);
    v_rooms bigint[] := array(select q.max_size - regina.queue_depth(q.id, i_now)
                              from unnest(i_capped) with ordinality c(id, ord)
                              join regina.queues q on q.id = c.id
                              order by c.ord);
    v_idx integer;
    v_code smallint;
begin
    for v_idx, v_code in
        select r.idx, r.code
        from (select f.idx,
                     case when f.encrypting and f.payload_key_id is null then 2::smallint
                          when f.queue_id = any (i_capped)
                               and row_number() over (partition by f.queue_id,
                                                      f.encrypting and f.payload_key_id is null
                                                      order by f.idx)
                                   > v_rooms[array_position(i_capped, f.queue_id)]
                              then 1::smallint
                     end as code
              from (select distinct on (i.partition_id, i.transaction_id) i.*
                    from unnest(i_items) i
                    order by i.partition_id, i.transaction_id, i.idx) f
              where i_stored[f.idx + 1] is null) r
        where r.code is not null
    loop
        v_codes[v_idx + 1] := v_code;
    end loop;
    return v_codes;
end
$$;

-- Acks: settle, fail, retry or dead-letter delivered messages. Items are grouped by (partition,
-- group); each group's cursor is locked in canonical order (so concurrent ack batches cannot
-- deadlock) and its items are applied in offset order against the state the previous one left.
-- The lease check and the change happen under that lock: no check-then-act window.

-- Resolves the items of one ack call: message, partition, queue and consumer group (§4.5). The
-- message is the group's requeued delivery of the transactionId when there is one (§4.6), else
-- the ordinary message: one entry of the key's unique index (`messages_dedup`), asked for as
-- regina._stored_key asks, with sorts off so that this index is the only plan without one
-- whatever the statistics say. (It was read inside the item's lease first, by offsets: with
-- statistics that rate a partition as nearly empty, that read scanned the lease's range for
-- every item, so an ack/batch of a whole lease handled its size squared.) PL/pgSQL, so that its
-- settings hold and its plan is kept.
create or replace function regina._ack_items(i_acks jsonb)
returns setof regina.ack_item
language plpgsql stable set enable_sort = off set jit = off as $$
begin
    return query
    with items as (
        -- The items read once into their declared shape (migrations/0014_request_types.sql),
        -- each marked when it is the first of its key: the partition, lease and group it names.
        select t.*, nullif(t."consumerGroup", '') as explicit,
               t.ordinality = min(t.ordinality) over (partition by t."partitionId", t."leaseId",
                                                                   t."consumerGroup") as first
        from rows from (jsonb_populate_recordset(null::regina.ack_request, i_acks))
             with ordinality t),
    firsts as (
        -- What depends on the key alone, looked up for the first item of each key only (the
        -- items of an ack/batch share a few keys). Keyed lookups (the limit keeps the planner
        -- from flattening them into a join that could scan every partition when it guesses the
        -- item count wrong). So are the lease's id (checking its text is a regular expression,
        -- about 3 µs each time) and the partition's queue.
        select i.*, p.id as p_id, p.name as p_name, p.queue_id as p_queue_id,
               q.name as q_name, l.consumer_group as l_group, lease.id::text as l_lease
        from items i
        left join lateral (select regina._uuid_or_null(i."leaseId") as id
                           where i.first offset 0) lease on true
        left join lateral (select pp.id, pp.name, pp.queue_id from regina.partitions pp
                           where i.first and pp.uuid = regina._uuid_or_null(i."partitionId")
                           limit 1) p on true
        left join lateral (select qq.name from regina.queues qq where i.first and qq.id = p.queue_id
                           limit 1) q on true
        -- The cursor of the lease the item names, if any: its group.
        left join lateral (select c.consumer_group
                           from regina.cursors c
                           where i.first and c.partition_id = p.id
                             and (c.lease_id = lease.id or c.last_lease_id = lease.id)
                           order by c.lease_active desc
                           limit 1) l on true),
    keyed as (
        -- Every item with its key's lookups (only its first item has them, so max is theirs).
        select f.ordinality, f."transactionId", f.status, f."leaseId", f.error, f.explicit,
               (max(f.l_lease) over k)::uuid as lease,
               max(f.p_id) over k as partition_id, max(f.p_name) over k as partition_name,
               max(f.p_queue_id) over k as queue_id, max(f.q_name) over k as queue_name,
               max(f.l_group) over k as of_lease
        from firsts f
        window k as (partition by f."partitionId", f."leaseId", f."consumerGroup"))
    select (i.ordinality - 1)::integer,
           i."transactionId",
           case coalesce(nullif(i.status, ''), 'completed')
               when 'success' then 'completed' else coalesce(nullif(i.status, ''), 'completed') end,
           nullif(i."leaseId", ''),
           i.lease,
           left(nullif(i.error, ''), 4096),
           i.partition_id, i.partition_name, i.queue_id, i.queue_name,
           coalesce((select r.seq from regina.messages r
                     where r.partition_id = i.partition_id
                       and r.for_group = coalesce(i.explicit, i.of_lease, '__QUEUE_MODE__')
                       and r.transaction_id = i."transactionId"
                     order by r.seq desc limit 1),
                    (select m.seq from regina.messages m
                     where m.partition_id = i.partition_id
                       and m.transaction_id >= i."transactionId"
                       and m.transaction_id <= i."transactionId"
                       and m.for_group is null
                     order by m.transaction_id
                     limit 1)),
           coalesce(i.explicit, i.of_lease, '__QUEUE_MODE__'),
           i.explicit is not null and i.of_lease is not null and i.explicit <> i.of_lease
               and not exists (select 1 from regina.cursors c
                               where c.partition_id = i.partition_id
                                 and c.consumer_group = i.explicit
                                 and (c.lease_id = i.lease or c.last_lease_id = i.lease))
    from keyed i
    order by i.ordinality;
end
$$;

-- _ack_items of a call of one item (the item alone, not in an array): the same resolution by a
-- few keyed statements, each run only when the one before leaves the answer open. A one-item call
-- is what a consumer taking a message at a time sends; the set statement above costs more to set
-- up than such an item costs to resolve.
create or replace function regina._ack_item_one(i_ack jsonb)
returns regina.ack_item
language plpgsql stable as $$
declare
    v_req regina.ack_request := jsonb_populate_record(null::regina.ack_request, i_ack);
    v_explicit text := nullif(v_req."consumerGroup", '');
    v_lease uuid := regina._uuid_or_null(v_req."leaseId");
    v_partition uuid := regina._uuid_or_null(v_req."partitionId");
    v_of_lease text;
    v_from bigint;
    v_to bigint;
    v_item regina.ack_item;
begin
    v_item.idx := 0;
    v_item.transaction_id := v_req."transactionId";
    v_item.status := case coalesce(nullif(v_req.status, ''), 'completed')
                         when 'success' then 'completed'
                         else coalesce(nullif(v_req.status, ''), 'completed') end;
    v_item.lease_text := nullif(v_req."leaseId", '');
    v_item.lease_id := v_lease;
    v_item.error := left(nullif(v_req.error, ''), 4096);
    v_item.group_mismatch := false;
    if v_partition is not null then
        select p.id, p.name, q.id, q.name
        into v_item.partition_id, v_item.partition_name, v_item.queue_id, v_item.queue_name
        from regina.partitions p join regina.queues q on q.id = p.queue_id
        where p.uuid = v_partition;
    end if;
    if v_item.partition_id is not null and v_lease is not null then
        select c.consumer_group, c.next_seq, c.lease_end_seq into v_of_lease, v_from, v_to
        from regina.cursors c
        where c.partition_id = v_item.partition_id
          and (c.lease_id = v_lease or c.last_lease_id = v_lease)
        order by c.lease_active desc
        limit 1;
    end if;
    v_item.consumer_group := coalesce(v_explicit, v_of_lease, '__QUEUE_MODE__');
    if v_item.partition_id is null then
        return v_item;
    end if;
    select r.seq into v_item.seq from regina.messages r
    where r.partition_id = v_item.partition_id and r.for_group = v_item.consumer_group
      and r.transaction_id = v_item.transaction_id
    order by r.seq desc
    limit 1;
    if v_item.seq is null and v_of_lease = v_item.consumer_group then
        select m.seq into v_item.seq from regina.messages m
        where m.partition_id = v_item.partition_id and m.transaction_id = v_item.transaction_id
          and m.for_group is null and m.seq >= v_from and m.seq <= v_to;
    end if;
    if v_item.seq is null then
        v_item.seq := (regina._stored_key(v_item.partition_id, v_item.transaction_id)).o_seq;
    end if;
    if v_explicit is not null and v_of_lease is not null and v_explicit <> v_of_lease then
        v_item.group_mismatch := not exists (
            select 1 from regina.cursors c
            where c.partition_id = v_item.partition_id and c.consumer_group = v_explicit
              and (c.lease_id = v_lease or c.last_lease_id = v_lease));
    end if;
    return v_item;
end
$$;

-- The wire result of one ack item, written as JSON text (members in the order `jsonb` keeps
-- them): about 0.8 µs, where `jsonb_build_object` of its eight members and its text cost
-- 2.6-3.7 µs.
create or replace function regina._ack_result_text(i_item regina.ack_item, i_code text,
                                                   i_released boolean, i_dlq boolean)
returns text
language sql stable parallel safe as $$
    select '{"dlq":' || coalesce(i_dlq::text, 'null')
           || ',"code":' || regina._json_text(i_code)
           || ',"error":' || case i_code
                  when 'message_not_found' then '"Message not found"'
                  when 'lease_expired' then '"Invalid or expired lease"'
                  when 'not_leased' then '"Message is not inside an active lease"'
                  when 'already_settled' then '"Message already settled for this consumer group"'
                  when 'group_mismatch' then '"consumerGroup does not match the lease''s group"'
                  else 'null' end
           || ',"success":' || (i_code is null)::text
           || ',"queueName":' || regina._json_text(i_item.queue_name)
           || ',"leaseReleased":' || coalesce(i_released::text, 'null')
           || ',"partitionName":' || regina._json_text(i_item.partition_name)
           || ',"transactionId":' || regina._json_text(i_item.transaction_id) || '}'
$$;

-- The same as `jsonb`, for callers in SQL.
create or replace function regina._ack_result(i_item regina.ack_item, i_code text, i_released boolean,
                                              i_dlq boolean)
returns jsonb
language sql stable as $$
    select regina._ack_result_text(i_item, i_code, i_released, i_dlq)::jsonb
$$;

-- Decides one item against the locked cursor (the lease-check table of §4.6) and applies it.
-- Returns the cursor outcome and the item's error code (null: success).
create or replace function regina._ack_apply(inout io_c regina.cursors, i_item regina.ack_item,
                                             i_q regina.queues, i_now timestamptz,
                                             out o_code text, out o_dlq boolean,
                                             out o_released boolean)
language plpgsql as $$
declare
    v_settled boolean := i_item.seq < io_c.next_seq or i_item.seq = any (io_c.marks)
                         or i_item.seq = any (io_c.lease_marks);
    v_holder boolean := io_c.lease_active
                        and (i_item.lease_text is null or io_c.lease_id = i_item.lease_id);
    v_outcome regina.cursor_outcome;
begin
    o_dlq := false;
    o_released := false;
    if v_settled and (i_item.lease_text is null or io_c.last_lease_id = i_item.lease_id
                      or (io_c.lease_active and io_c.lease_id = i_item.lease_id)) then
        o_code := case when i_item.status = 'completed' then null else 'already_settled' end;
        return;
    elsif not v_holder or i_item.seq > io_c.lease_end_seq or v_settled then
        o_code := case when i_item.lease_text is null then 'not_leased' else 'lease_expired' end;
        return;
    end if;
    if i_item.status = 'completed' then
        io_c := regina._ack_settle(io_c, i_item.seq, false, i_now);
    elsif i_item.status = 'dlq' then
        o_dlq := regina._dead_letter(io_c, i_q, i_item.seq,
                     case when regina._head_seq(io_c.partition_id, io_c.next_seq,
                                                io_c.marks || io_c.lease_marks,
                                                io_c.consumer_group) = i_item.seq
                          then io_c.head_attempts else 0 end,
                     i_item.error, i_now);
        io_c := regina._ack_settle(io_c, i_item.seq, true, i_now);
    elsif i_item.status = 'failed' then
        v_outcome := regina._lease_fail(io_c, i_q, coalesce(i_item.error, 'Retries exhausted'),
                                        i_now, i_now);
        io_c := v_outcome.c;
        o_dlq := v_outcome.dlq;
    else  -- retry: end the lease, charge nothing
        io_c.lease_active := false;
        io_c.lease_marks := '{}';
    end if;
    o_released := not io_c.lease_active;
end
$$;

-- The items of ack call i_acks that the short paths may take, resolved as regina._ack_items
-- resolves them (the partition by its id, the group of the one cursor that names the lease, the
-- ordinary message of the transaction id): each `completed` (or `success`) item of that group with
-- no requeued delivery of its transaction id for the group. Others are left out. An SQL function
-- of one query, inlined into the statements that read it.
create or replace function regina._ack_head_items(i_acks jsonb)
returns table (idx integer, tid text, lease_text text, lease uuid, error text, pid bigint,
               pname text, qid bigint, qname text, seq bigint, grp text)
language sql stable as $$
    select (t.ordinality - 1)::integer, t."transactionId", nullif(t."leaseId", ''), l.lease,
           left(nullif(t.error, ''), 4096), p.id, p.name, p.queue_id, q.name, m.seq, c.grp
    from rows from (jsonb_populate_recordset(null::regina.ack_request, i_acks)) with ordinality t
    cross join lateral (select regina._uuid_or_null(t."leaseId") as lease) l
    cross join lateral (select pp.id, pp.name, pp.queue_id from regina.partitions pp
                        where pp.uuid = regina._uuid_or_null(t."partitionId")
                        limit 1) p
    cross join lateral (select qq.name from regina.queues qq where qq.id = p.queue_id
                        limit 1) q
    cross join lateral (select min(cc.consumer_group) as grp, count(*) as n
                        from regina.cursors cc
                        where cc.partition_id = p.id
                          and (cc.lease_id = l.lease or cc.last_lease_id = l.lease)) c
    cross join lateral (select mm.seq from regina.messages mm
                        where mm.partition_id = p.id and mm.transaction_id = t."transactionId"
                          and mm.for_group is null
                        limit 1) m
    where coalesce(nullif(t.status, ''), 'completed') in ('completed', 'success')
      and c.n = 1
      and (nullif(t."consumerGroup", '') is null or t."consumerGroup" = c.grp)
      and not exists (select 1 from regina.messages rq
                      where rq.partition_id = p.id and rq.for_group is not null
                        and rq.for_group = c.grp and rq.transaction_id = t."transactionId")
$$;

-- Where the head of a group's cursor lands once message i_seq, its head with nothing settled
-- ahead, is settled: the group's next stored message, or just past i_seq (regina._advance's answer
-- for that case). An SQL function of one query, inlined into the statements that read it.
create or replace function regina._head_after(i_partition_id bigint, i_seq bigint, i_group text)
returns table (next_seq bigint)
language sql stable as $$
    select coalesce((select m.seq from regina.messages m
                     where m.partition_id = i_partition_id and m.seq > i_seq
                       and (m.for_group is null or m.for_group = i_group)
                     order by m.seq
                     limit 1),
                    i_seq + 1)
$$;

-- An ack call of several items in which every item completes the head message of its own active
-- lease, one item per (partition, group): what consumers that take a message at a time send when
-- the broker fuses their acks. The items are resolved without a lock, their cursors locked in
-- partition order and decided, then written, where the general path below runs about ten
-- functions and statements per item (a call of three such items: 690-780 µs there, 370-480 µs
-- here). The answers and the writes are the general path's to the byte
-- (sql/tests/ack_lone_settles_as_the_general_path.sql). Any other call is declined: no rows,
-- nothing written, and no cursor locked unless every item resolved to the cursor the general path
-- then locks for it (so the locks it leaves are taken in the general path's order).
-- Locks: cursors (for update, in partition order); partitions (for share skip locked, as
--   _ready_sync). Writes: cursors, ready.
create or replace function regina._ack_lone(i_acks jsonb, i_now timestamptz)
returns table (idx integer, result text, wake_queue text, wake_group text, queue_name text,
               acked text, dead_lettered integer, leases_expired integer)
language plpgsql set plan_cache_mode = force_generic_plan set enable_seqscan = off
    set jit = off as $$
declare
    v_n integer := jsonb_array_length(i_acks);
    v_items regina.ack_item[];
    v_cursors regina.cursors[];
    v_apart boolean;
    v_gone integer;
begin
    -- The items the path may take (regina._ack_head_items), in partition order; every item must
    -- be one, on a (partition, group) of its own.
    select array_agg(row(r.idx, r.tid, 'completed', r.lease_text, r.lease, r.error, r.pid,
                          r.pname, r.qid, r.qname, r.seq, r.grp, false)::regina.ack_item
                     order by r.pid),
           count(distinct (r.pid, r.grp)) = count(*)
    into v_items, v_apart
    from regina._ack_head_items(i_acks) r;
    if coalesce(cardinality(v_items), 0) <> v_n or not v_apart then
        return;
    end if;
    -- The cursors locked in partition order, each kept when its lease is the item's, active and
    -- unexpired, with nothing settled ahead of a head that is the item's message: settled as
    -- regina._ack_settle_run settles a run of that one item.
    select array_agg(row(c.partition_id, c.consumer_group, c.queue_id, h.next_seq, '{}', '{}', 0,
                         null, c.retry_after, c.lease_id, not h.ends, c.lease_expires_at,
                         c.lease_end_seq, case when h.ends then c.lease_id else c.last_lease_id end,
                         c.last_claim_at, c.total_consumed + 1,
                         c.batches_consumed + h.ends::integer, i_now, c.created_at,
                         c.parked_lease_id)::regina.cursors
                     order by c.partition_id)
    into v_cursors
    from unnest(v_items) i
    cross join lateral (select cc.* from regina.cursors cc
                        where cc.partition_id = i.partition_id
                          and cc.consumer_group = i.consumer_group
                        for update) c
    cross join lateral (select s.next_seq, s.next_seq > c.lease_end_seq as ends
                        from regina._head_after(c.partition_id, i.seq, c.consumer_group) s) h
    where c.lease_active and c.lease_id = i.lease_id and c.lease_expires_at > i_now
      and c.next_seq = i.seq and i.seq <= c.lease_end_seq
      and cardinality(c.marks) = 0 and cardinality(c.lease_marks) = 0;
    if coalesce(cardinality(v_cursors), 0) <> v_n then
        return;
    end if;
    -- The cursors saved.
    update regina.cursors c
    set next_seq = x.next_seq, marks = x.marks, lease_marks = x.lease_marks,
        head_attempts = x.head_attempts, head_error = x.head_error,
        lease_active = x.lease_active, last_lease_id = x.last_lease_id,
        total_consumed = x.total_consumed, batches_consumed = x.batches_consumed,
        last_consumed_at = x.last_consumed_at
    from unnest(v_cursors) x
    where c.partition_id = x.partition_id and c.consumer_group = x.consumer_group;
    -- Their ready rows, as regina._ready_sync does: deleted when the head reached the end of a
    -- partition no push holds, else due at the lease's end, the retry instant or now.
    delete from regina.ready r
    using unnest(v_cursors) x
    where r.partition_id = x.partition_id and r.consumer_group = x.consumer_group
      and not x.lease_active and not coalesce(x.retry_after > i_now, false)
      and exists (select 1 from regina.partitions p
                  where p.id = x.partition_id and p.next_seq <= x.next_seq
                  for share skip locked);
    get diagnostics v_gone = row_count;
    if v_gone < v_n then
        -- (This statement does not see the rows just deleted.)
        update regina.ready r
        set eligible_at = a.at
        from (select x.partition_id, x.consumer_group,
                     case when x.lease_active then x.lease_expires_at
                          when x.retry_after > i_now then x.retry_after
                          else i_now end as at
              from unnest(v_cursors) x) a
        where r.partition_id = a.partition_id and r.consumer_group = a.consumer_group
          and r.eligible_at is distinct from a.at;
    end if;
    return query
    select (v_items[s.k]).idx,
           regina._ack_result_text(v_items[s.k], null, not (v_cursors[s.k]).lease_active, false),
           case when w.wake then (v_items[s.k]).queue_name end,
           case when w.wake then (v_cursors[s.k]).consumer_group end,
           (v_items[s.k]).queue_name, 'completed'::text, 0, 0
    from generate_subscripts(v_items, 1) s(k)
    cross join lateral (select not (v_cursors[s.k]).lease_active and h.held as wake
                        from regina._ready_held((v_cursors[s.k]).partition_id,
                                                (v_cursors[s.k]).consumer_group) h
                        offset 0) w  -- (kept a subquery: one lookup for both columns)
    order by 1;
end
$$;

-- One row per item: its wire result, the waiters to wake, and for the broker's metrics the
-- item's queue, the status it applied (null when it failed), the dead letters it caused (an
-- expired lease accounted here, a `failed` past retryLimit, a `dlq`; whether or not the queue
-- keeps an entry) and whether it accounted an expired lease.
--
-- Waiters to wake: the queue and group of a lease the item ended (or an expired one it
-- accounted) on a partition that still holds work for the group (regina._ready_held). A lease
-- ended at the partition's end makes nothing due, so the group's long-polls are left parked and
-- what the broker knows of the group's quiet stands.
--
-- With i_commit_async, the commit does not wait for the WAL flush (ACK_COMMIT_ASYNC).
--
-- A call of one item completing the head message of its own lease, or of several such items on
-- different partitions (regina._ack_lone), is settled in a few statements with the outcome of the
-- general path (sql/tests/ack_lone_settles_as_the_general_path.sql). In the general path, items
-- run per (partition, group), cursors locked in that order; a run shaped like an ack/batch after a
-- pop is settled in one step (_ack_settle_run), any other item on its own. Outcomes are kept in
-- arrays indexed by item and turned into rows once at the end.
-- Results are JSON text (regina._ack_result_text): what the broker calls and sends on (regina.ack
-- is the same call with results as jsonb).
select regina._drop_outdated('regina.ack(jsonb, timestamptz)', 'i_commit_async');
create or replace function regina.ack_text(i_acks jsonb, i_now timestamptz default null,
                                           i_commit_async boolean default false)
returns table (idx integer, result text, wake_queue text, wake_group text, queue_name text,
               acked text, dead_lettered integer, leases_expired integer)
-- Generic plans without sequential scans, as for regina.push.
language plpgsql set plan_cache_mode = force_generic_plan set enable_seqscan = off
    set jit = off as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_items regina.ack_item[];
    v_item regina.ack_item;
    v_run record;
    v_c regina.cursors;
    v_settled regina.cursors;
    v_q regina.queues;
    v_applied record;
    v_active boolean;
    v_head bigint;
    v_last integer;
    v_codes text[] := '{}';      -- per item: the error code (null: success)
    v_released boolean[] := '{}';
    v_dlq boolean[] := '{}';
    v_woken text[] := '{}';      -- per item: the group whose waiters should retry, if any
    v_acked text[] := '{}';      -- per item: the status applied
    v_dead integer[] := '{}';    -- per item: dead letters caused
    v_expired integer[] := '{}'; -- per item: expired leases accounted
begin
    -- ACK_COMMIT_ASYNC (opt-in): an ack lost in a crash delivers its messages again.
    if i_commit_async then
        perform set_config('synchronous_commit', 'off', true);
    end if;
    -- A call of items on different partitions (the first two tell: the items of an ack/batch of
    -- one lease share theirs) first tries the path of few statements.
    if jsonb_array_length(i_acks) > 1
       and (i_acks -> 0 ->> 'partitionId') is distinct from (i_acks -> 1 ->> 'partitionId') then
        return query select * from regina._ack_lone(i_acks, v_now);
        if found then
            return;
        end if;
    end if;
    if jsonb_array_length(i_acks) = 1 then
        -- The item a consumer sends for the head message of its lease: resolved as
        -- regina._ack_lone resolves an item, and checked and settled by one update of its cursor
        -- (nothing is written or locked when a check fails), then its ready row.
        update regina.cursors c
        set next_seq = h.next_seq, marks = '{}', lease_marks = '{}', head_attempts = 0,
            head_error = null, lease_active = h.next_seq <= c.lease_end_seq,
            last_lease_id = case when h.next_seq > c.lease_end_seq then c.lease_id
                                 else c.last_lease_id end,
            total_consumed = c.total_consumed + 1,
            batches_consumed = c.batches_consumed + (h.next_seq > c.lease_end_seq)::integer,
            last_consumed_at = v_now
        from regina._ack_head_items(i_acks) r
        cross join lateral regina._head_after(r.pid, r.seq, r.grp) h
        where c.partition_id = r.pid and c.consumer_group = r.grp and c.lease_active
          and c.lease_id = r.lease and c.lease_expires_at > v_now and c.next_seq = r.seq
          and r.seq <= c.lease_end_seq and cardinality(c.marks) = 0
          and cardinality(c.lease_marks) = 0
        returning c.partition_id, c.consumer_group, c.next_seq, c.lease_active,
                  c.lease_expires_at, c.retry_after, r.pname, r.qname, r.tid
        into v_settled.partition_id, v_settled.consumer_group, v_settled.next_seq,
             v_settled.lease_active, v_settled.lease_expires_at, v_settled.retry_after,
             v_item.partition_name, v_item.queue_name, v_item.transaction_id;
        if found then
            perform regina._ready_sync(v_settled, v_now);
        else
            v_item := regina._ack_item_one(i_acks -> 0);
            -- The item a consumer sends for another message of its lease: settled as the loop
            -- below would settle a run of it (same lock, same step, same save), without the run's
            -- query and arrays. Any other outcome (an expired lease to account, a retry, a
            -- failure, an item outside the lease) takes the loop.
            if v_item.seq is not null and not v_item.group_mismatch then
                select * into v_c from regina.cursors c
                where c.partition_id = v_item.partition_id
                  and c.consumer_group = v_item.consumer_group
                for update;
                if found then
                    v_settled := regina._ack_settle_run(v_c, array[v_item], v_now);
                end if;
                if v_settled.partition_id is not null then
                    perform regina._cursor_save(v_settled, v_now);
                end if;
            end if;
        end if;
        if v_settled.partition_id is not null then
            idx := 0;
            result := regina._ack_result_text(v_item, null, not v_settled.lease_active, false);
            wake_group := null;
            if not v_settled.lease_active then
                select case when h.held then v_settled.consumer_group end into wake_group
                from regina._ready_held(v_settled.partition_id, v_settled.consumer_group) h;
            end if;
            wake_queue := case when wake_group is not null then v_item.queue_name end;
            queue_name := v_item.queue_name;
            acked := 'completed';
            dead_lettered := 0;
            leases_expired := 0;
            return next;
            return;
        end if;
        v_items := array[v_item];
    else
        v_items := array(select a from regina._ack_items(i_acks) a);
    end if;
    foreach v_item in array v_items loop
        if v_item.seq is null then
            -- A lease that is not active fails the ack whatever it names: a queue clear or delete
            -- removes the messages of the leases it ends, and their acks answer lease_expired.
            v_codes[v_item.idx + 1] :=
                case when v_item.lease_text is not null and not exists (
                         select 1 from regina.cursors c
                         where c.lease_id = v_item.lease_id and c.lease_active
                           and c.lease_expires_at > v_now)
                     then 'lease_expired' else 'message_not_found' end;
        elsif v_item.group_mismatch then
            v_codes[v_item.idx + 1] := 'group_mismatch';
        end if;
    end loop;

    for v_run in
        select a.partition_id, a.consumer_group, a.queue_id,
               array_agg(a order by a.seq, a.idx) as items
        from unnest(v_items) a
        where a.seq is not null and not a.group_mismatch
        group by a.partition_id, a.consumer_group, a.queue_id
        order by a.partition_id, a.consumer_group
    loop
        v_last := (v_run.items[cardinality(v_run.items)]).idx + 1;
        select * into v_q from regina.queues q where q.id = v_run.queue_id;
        select * into v_c from regina.cursors c
        where c.partition_id = v_run.partition_id and c.consumer_group = v_run.consumer_group
        for update;
        if not found then
            foreach v_item in array v_run.items loop
                v_codes[v_item.idx + 1] :=
                    case when v_item.lease_text is null then 'not_leased' else 'lease_expired' end;
            end loop;
            continue;
        end if;
        if v_c.lease_active and v_c.lease_expires_at <= v_now then
            v_head := v_c.next_seq;
            v_c := (regina._lease_expire(v_c, v_q, v_now)).c;
            v_woken[(v_run.items[1]).idx + 1] := v_c.consumer_group;
            v_expired[(v_run.items[1]).idx + 1] := 1;
            v_dead[(v_run.items[1]).idx + 1] := (v_c.next_seq > v_head)::integer;
        end if;
        v_settled := regina._ack_settle_run(v_c, v_run.items, v_now);
        if v_settled.partition_id is not null then
            v_c := v_settled;
            foreach v_item in array v_run.items loop
                v_acked[v_item.idx + 1] := 'completed';
            end loop;
            if not v_c.lease_active then
                v_released[v_last] := true;
                v_woken[v_last] := v_c.consumer_group;
            end if;
        else
            foreach v_item in array v_run.items loop
                v_active := v_c.lease_active;
                v_head := v_c.next_seq;
                v_applied := regina._ack_apply(v_c, v_item, v_q, v_now);
                v_c := v_applied.io_c;
                v_codes[v_item.idx + 1] := v_applied.o_code;
                v_released[v_item.idx + 1] := v_applied.o_released;
                v_dlq[v_item.idx + 1] := v_applied.o_dlq;
                if v_active and not v_c.lease_active then
                    v_woken[v_item.idx + 1] := v_c.consumer_group;
                end if;
                if v_applied.o_code is null then
                    v_acked[v_item.idx + 1] := v_item.status;
                    -- A `dlq` always dead-letters; a `failed` does when it moved the head past it.
                    if v_item.status = 'dlq' or (v_item.status = 'failed' and v_c.next_seq > v_head) then
                        v_dead[v_item.idx + 1] := coalesce(v_dead[v_item.idx + 1], 0) + 1;
                    end if;
                end if;
            end loop;
        end if;
        perform regina._cursor_save(v_c, v_now);
    end loop;

    return query
    select a.idx, regina._ack_result_text(a, v_codes[a.idx + 1],
                                          coalesce(v_released[a.idx + 1], false),
                                          coalesce(v_dlq[a.idx + 1], false)),
           case when w.wake then a.queue_name end, case when w.wake then v_woken[a.idx + 1] end,
           a.queue_name, v_acked[a.idx + 1], coalesce(v_dead[a.idx + 1], 0),
           coalesce(v_expired[a.idx + 1], 0)
    from unnest(v_items) a
    cross join lateral (select v_woken[a.idx + 1] is not null and h.held as wake
                        from regina._ready_held(a.partition_id, v_woken[a.idx + 1]) h
                        offset 0) w  -- (kept a subquery: one lookup for both columns)
    order by a.idx;
end
$$;

-- regina.ack_text with each result as `jsonb` (parsed, so checked): for callers in SQL (the
-- transactions, the streams' cycles, the tests).
create or replace function regina.ack(i_acks jsonb, i_now timestamptz default null,
                                      i_commit_async boolean default false)
returns table (idx integer, result jsonb, wake_queue text, wake_group text, queue_name text,
               acked text, dead_lettered integer, leases_expired integer)
language sql as $$
    select a.idx, a.result::jsonb, a.wake_queue, a.wake_group, a.queue_name, a.acked,
           a.dead_lettered, a.leases_expired
    from regina.ack_text(i_acks, i_now, i_commit_async) a
$$;

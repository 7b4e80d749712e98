-- The cursor state machine of one (partition, consumer group): the rows of `regina.cursors` and
-- `regina.ready`, and every function that moves them. ARCHITECTURE.md draws the machine ("State of
-- one (partition, group)"): idle --claim--> leased --settled--> idle, with the failure, retry and
-- expiry edges; each function below names the edge it implements.
--
-- The cursor row is the lock of its (partition, group): pops take it without waiting (`skip
-- locked`), acks and admin calls wait for it in (partition, group) order, so every transition is
-- decided and applied under it, atomically with the lease check (invariant 3). A transition
-- changes a `regina.cursors` value in memory and ends with _cursor_save, which writes the row and
-- brings the ready row in line (invariant 6). The pop, ack, lease, transaction and streams files
-- call these functions; nothing else writes cursors.
--
-- Header of each function: what it does; Locks: what it locks (or that its caller must hold the
-- cursor); Writes: the tables it writes; Edge: where it sits in the machine.

-- ==============================================================================================
-- Heads and marks
-- ==============================================================================================

-- First unsettled message of group i_group at or after i_from: the smallest existing offset not
-- in i_skip, passing over requeued deliveries meant for other groups (settled for this one).
-- PL/pgSQL rather than SQL here and below: these run once or more per claim and ack, and
-- PostgreSQL re-plans a non-inlined SQL function's body at every call, while PL/pgSQL keeps its
-- plans for the session.
-- Locks: none (reads messages). Writes: nothing. Edge: finds the head for every transition below.
create or replace function regina._head_seq(i_partition_id bigint, i_from bigint, i_skip bigint[],
                                            i_group text)
returns bigint
language plpgsql stable as $$
begin
    return (select m.seq from regina.messages m
            where m.partition_id = i_partition_id and m.seq >= i_from and m.seq <> all (i_skip)
              and (m.for_group is null or m.for_group = i_group)
            order by m.seq
            limit 1);
end
$$;

-- Where a head lands after the messages in i_marks (all at or after i_from) were settled: the
-- first existing unsettled message, or just past the highest mark when none exists. Never past a
-- message that is not yet visible: offsets commit in order, so every message below a settled
-- (hence visible) mark is visible too.
-- Locks: none (reads messages). Writes: nothing. Edge: settle, fail past retryLimit, autoAck claim.
create or replace function regina._advance(i_partition_id bigint, i_from bigint, i_marks bigint[],
                                           i_group text)
returns bigint
language plpgsql stable as $$
begin
    return coalesce(regina._head_seq(i_partition_id, i_from, i_marks, i_group),
                    greatest(i_from, (select max(x) + 1 from unnest(i_marks) x)));
end
$$;

-- Marks that still lie ahead of a head.
-- Locks: none. Writes: nothing. Edge: every move of the head.
create or replace function regina._marks_from(i_marks bigint[], i_head bigint) returns bigint[]
language plpgsql immutable as $$
begin
    if cardinality(i_marks) = 0 then
        return i_marks;
    end if;
    return (select coalesce(array_agg(x order by x), '{}') from unnest(i_marks) x where x >= i_head);
end
$$;

-- ==============================================================================================
-- Locking and creating cursors
-- ==============================================================================================

-- The offset a new cursor starts at: the first message with createdAt >= i_start_at, or the
-- oldest retained message when i_start_at is null. The partition's next offset is read first:
-- every message below it is already committed, so the search can't skip a late commit.
-- Locks: none (reads partitions, messages). Writes: nothing. Edge: creation of a cursor (idle,
--   first contact).
create or replace function regina._start_seq(i_partition_id bigint, i_start_at timestamptz)
returns bigint
language plpgsql as $$
declare
    v_end bigint;
    v_lo bigint := 0;
    v_hi bigint;
    v_mid bigint;
    v_at timestamptz;
begin
    select p.next_seq into v_end from regina.partitions p where p.id = i_partition_id;
    if i_start_at is null then
        return coalesce((select min(m.seq) from regina.messages m
                         where m.partition_id = i_partition_id and m.seq < v_end), v_end);
    end if;
    -- createdAt never decreases along the offsets of ordinary messages: binary search for the
    -- first one >= i_start_at (requeued deliveries keep an older createdAt: not probed).
    v_hi := v_end;
    while v_lo < v_hi loop
        v_mid := (v_lo + v_hi) / 2;
        select m.created_at into v_at from regina.messages m
        where m.partition_id = i_partition_id and m.seq >= v_mid and m.seq < v_end
          and m.for_group is null
        order by m.seq limit 1;
        if not found or v_at >= i_start_at then
            v_hi := v_mid;
        else
            v_lo := v_mid + 1;
        end if;
    end loop;
    return v_lo;
end
$$;

-- The cursors of a group on partitions i_partition_ids that nobody else holds, locked, in the
-- order of i_partition_ids (partitions without a cursor are left out too).
-- Locks: cursors rows `for update skip locked`. Writes: nothing. Edge: idle -> claim (the claim
--   lock).
create or replace function regina._cursors_lock(i_partition_ids bigint[], i_group text)
returns regina.cursors[]
language plpgsql as $$
begin
    return (select coalesce(array_agg(c.cursor order by k.ord), '{}')
            from unnest(i_partition_ids) with ordinality k(partition_id, ord)
            cross join lateral (select cc as cursor from regina.cursors cc
                                where cc.partition_id = k.partition_id
                                  and cc.consumer_group = i_group
                                for update skip locked) c);
end
$$;

-- Creates the missing cursors of a group on partitions of a queue, at the subscription start, in
-- one statement. A key is created only under a try-lock on it, so two pops creating cursors never
-- wait for each other's insert (nor deadlock); the loser of a race finds the cursor locked or
-- created. The key-share lock the insert takes anyway is taken first: it waits for a deletion job
-- that holds the partition, and skips a partition that partition cleanup deleted.
-- Locks: a transaction advisory lock per key (try), partitions `for key share`. Writes: cursors
--   (insert). Edge: first contact: a cursor appears in state idle.
create or replace function regina._cursors_create(i_queue_id bigint, i_group text,
                                                  i_partition_ids bigint[],
                                                  i_start_at timestamptz)
returns void
language plpgsql as $$
begin
    insert into regina.cursors (partition_id, consumer_group, queue_id, next_seq)
    select p.id, i_group, i_queue_id,
           case when i_start_at is null then
               -- _start_seq's answer for a start at the oldest message, without a call per row:
               -- the next offset as this statement's snapshot has it (the locked row may be a
               -- newer version), so the messages read below are all those under it.
               (select coalesce((select min(m.seq) from regina.messages m
                                 where m.partition_id = e.id and m.seq < e.next_seq), e.next_seq)
                from regina.partitions e where e.id = p.id)
           else regina._start_seq(p.id, i_start_at) end
    from unnest(i_partition_ids) k(partition_id)
    cross join lateral (select pp.id from regina.partitions pp
                        where pp.id = k.partition_id for key share) p
    where (select 1 from regina.cursors c
           where c.partition_id = k.partition_id and c.consumer_group = i_group) is null
      and pg_try_advisory_xact_lock(hashtextextended(k.partition_id::text || '/' || i_group, 0))
    order by p.id
    on conflict do nothing;
end
$$;

-- Locks the cursor of (partition, group), creating it at the subscription start if missing.
-- Null when another transaction holds it: that partition is busy for this group right now.
-- Locks: cursors row `for update skip locked`; creating: advisory try-lock, partitions `for key
--   share`. Writes: cursors (insert). Edge: idle -> claim, for one partition.
create or replace function regina._cursor_lock(i_queue_id bigint, i_partition_id bigint,
                                               i_group text, i_start_at timestamptz)
returns regina.cursors
language plpgsql as $$
declare
    v_c regina.cursors;
begin
    select * into v_c from regina.cursors c
    where c.partition_id = i_partition_id and c.consumer_group = i_group
    for update skip locked;
    if found then
        return v_c;
    end if;
    -- Creating: a try-lock on the key instead of waiting on a concurrent insert of the same row,
    -- so two pop batches creating cursors in different orders cannot deadlock.
    if not pg_try_advisory_xact_lock(hashtextextended(i_partition_id::text || '/' || i_group, 0)) then
        return null;
    end if;
    select * into v_c from regina.cursors c
    where c.partition_id = i_partition_id and c.consumer_group = i_group
    for update skip locked;
    if found then
        return v_c;
    end if;
    if exists (select 1 from regina.cursors c
               where c.partition_id = i_partition_id and c.consumer_group = i_group) then
        return null;
    end if;
    -- The key-share lock the insert takes anyway, taken first: it waits for a deletion job that
    -- holds the partition, and finds nothing when partition cleanup deleted it meanwhile.
    perform 1 from regina.partitions p where p.id = i_partition_id for key share;
    if not found then
        return null;
    end if;
    insert into regina.cursors (partition_id, consumer_group, queue_id, next_seq)
    values (i_partition_id, i_group, i_queue_id, regina._start_seq(i_partition_id, i_start_at))
    on conflict do nothing
    returning * into v_c;
    return v_c;
end
$$;

-- ==============================================================================================
-- Saving a cursor and its ready row
-- ==============================================================================================

-- Brings the ready row of a cursor's (partition, group) in line with the cursor (see
-- migrations/0002_ready.sql): claimable at lease expiry, at the retry instant, or now (no earlier
-- than i_wake, when the caller knows the head is invisible until then); deleted when the head has
-- reached the partition's end. The end is read under the partition row's share lock, taken with
-- `skip locked`: a push in flight holds that row and will want the ready row, so it stays.
-- Locks: partitions row `for share skip locked` (to delete). Writes: ready (update or delete).
--   Edge: after every transition (invariant 6).
create or replace function regina._ready_sync(i_c regina.cursors, i_now timestamptz,
                                              i_wake timestamptz default null)
returns void
language plpgsql as $$
declare
    v_at timestamptz;
begin
    if i_c.lease_active then
        v_at := i_c.lease_expires_at;
    elsif i_c.retry_after > i_now then
        v_at := i_c.retry_after;
    elsif exists (select 1 from regina.partitions p
                  where p.id = i_c.partition_id and p.next_seq <= i_c.next_seq
                  for share skip locked) then
        delete from regina.ready r
        where r.partition_id = i_c.partition_id and r.consumer_group = i_c.consumer_group;
        return;
    else
        v_at := i_now;
    end if;
    v_at := greatest(v_at, i_wake);
    update regina.ready r set eligible_at = v_at
    where r.partition_id = i_c.partition_id and r.consumer_group = i_c.consumer_group
      and r.eligible_at is distinct from v_at;
end
$$;

-- Whether (partition, group) keeps a ready row: whether a lease that ended there may have made
-- work due for the group. Without one the partition holds nothing unsettled for the group (the
-- ready set's invariant), and a push that adds some wakes the group's waiters at its own commit.
-- A table function of one query, so that PostgreSQL inlines it into the statements that read it
-- (a scalar SQL function holding a subquery is not inlined, and costs a plan at each call).
-- Locks: none. Writes: none.
create or replace function regina._ready_held(i_partition_id bigint, i_group text)
returns table (held boolean)
language sql stable as $$
    -- A scalar subquery, not `exists`: the planner may turn an `exists` into a hash of the whole
    -- ready set when it expects many outer rows.
    select coalesce((select true from regina.ready r
                     where r.partition_id = i_partition_id and r.consumer_group = i_group),
                    false)
$$;

-- Saves a cursor row changed in memory by the pop, ack and lease functions, and its ready row.
-- Locks: the caller holds the cursor. Writes: cursors (update), ready. Edge: ends every transition.
create or replace function regina._cursor_save(i_c regina.cursors, i_now timestamptz,
                                               i_wake timestamptz default null)
returns void
language plpgsql as $$
begin
    update regina.cursors set
        next_seq = i_c.next_seq,
        marks = i_c.marks,
        lease_marks = i_c.lease_marks,
        head_attempts = i_c.head_attempts,
        head_error = i_c.head_error,
        retry_after = i_c.retry_after,
        lease_id = i_c.lease_id,
        lease_active = i_c.lease_active,
        lease_expires_at = i_c.lease_expires_at,
        lease_end_seq = i_c.lease_end_seq,
        last_lease_id = i_c.last_lease_id,
        last_claim_at = i_c.last_claim_at,
        total_consumed = i_c.total_consumed,
        batches_consumed = i_c.batches_consumed,
        last_consumed_at = i_c.last_consumed_at
    where partition_id = i_c.partition_id and consumer_group = i_c.consumer_group;
    perform regina._ready_sync(i_c, i_now, i_wake);
end
$$;

-- ==============================================================================================
-- Transitions
-- ==============================================================================================

-- Settles the messages at the head whose ttl has passed (they form a prefix: createdAt never
-- decreases along a partition). Requeued deliveries never expire; those of other groups are not
-- this group's messages. Returns the cursor moved past them.
-- Locks: the caller holds the cursor. Writes: nothing (in memory). Edge: idle -> idle, head past
--   expired messages.
create or replace function regina._expire_head(i_c regina.cursors, i_q regina.queues,
                                               i_now timestamptz)
returns regina.cursors
language plpgsql as $$
declare
    v_c regina.cursors := i_c;
    v_keep bigint;
begin
    if i_q.ttl_seconds = 0 then
        return v_c;
    end if;
    select coalesce(
               min(m.seq) filter (where m.created_at > i_now - i_q.ttl_seconds * interval '1 second'
                                        or m.for_group is not null),
               max(m.seq) + 1)
    into v_keep
    from regina.messages m
    where m.partition_id = v_c.partition_id and m.seq >= v_c.next_seq
      and (m.for_group is null or m.for_group = v_c.consumer_group);
    if v_keep > v_c.next_seq then
        v_c.next_seq := v_keep;
        v_c.marks := regina._marks_from(v_c.marks, v_keep);
        v_c.head_attempts := 0;
        v_c.head_error := null;
    end if;
    return v_c;
end
$$;

-- Messages a ttl settled at the head between two states of one cursor: the group's ordinary
-- messages passed over that were not settled already.
-- Locks: none. Writes: nothing. Edge: metrics of _expire_head.
create or replace function regina._expired_count(i_before regina.cursors, i_after regina.cursors)
returns bigint
language plpgsql stable as $$
begin
    if i_after.next_seq <= i_before.next_seq then
        return 0;
    end if;
    return (select count(*) from regina.messages m
            where m.partition_id = i_before.partition_id
              and m.seq >= i_before.next_seq and m.seq < i_after.next_seq
              and m.seq <> all (i_before.marks) and m.for_group is null);
end
$$;

-- Writes the dead letter of message i_seq for the cursor's group, when the queue keeps them.
-- Returns whether an entry was written (false: the queue discards dead messages).
-- Locks: the caller holds the cursor. Writes: dead_letters (upsert). Edge: fail past retryLimit,
--   ack dlq.
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
-- Locks: the caller holds the cursor. Writes: dead_letters (past retryLimit). Edge: leased -> idle
--   (attempt charged; head dead-lettered past retryLimit).
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
-- Locks: the caller holds the cursor. Writes: dead_letters (past retryLimit). Edge: leased -> idle
--   (expiry).
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

-- Settles message i_seq inside the active lease (completed, or dlq once its entry is written):
-- the head moves over the settled prefix; the lease ends when its whole range is settled.
-- Locks: the caller holds the cursor. Writes: nothing (in memory). Edge: leased -> leased, or ->
--   idle when the range is settled.
create or replace function regina._ack_settle(i_c regina.cursors, i_seq bigint, i_keep boolean,
                                              i_now timestamptz)
returns regina.cursors
language plpgsql as $$
declare
    v_c regina.cursors := i_c;
begin
    if i_keep then
        v_c.marks := v_c.marks || i_seq;
    else
        v_c.lease_marks := v_c.lease_marks || i_seq;
    end if;
    v_c.next_seq := regina._advance(v_c.partition_id, v_c.next_seq, v_c.marks || v_c.lease_marks,
                                   v_c.consumer_group);
    if v_c.next_seq > i_seq then    -- i_seq was the head: its failed attempts are history
        v_c.head_attempts := 0;
        v_c.head_error := null;
    end if;
    v_c.marks := regina._marks_from(v_c.marks, v_c.next_seq);
    v_c.lease_marks := regina._marks_from(v_c.lease_marks, v_c.next_seq);
    v_c.total_consumed := v_c.total_consumed + 1;
    v_c.last_consumed_at := i_now;
    if v_c.next_seq > v_c.lease_end_seq then
        v_c.lease_active := false;
        v_c.last_lease_id := v_c.lease_id;
        v_c.lease_marks := '{}';
        v_c.batches_consumed := v_c.batches_consumed + 1;
    end if;
    return v_c;
end
$$;

-- Settles, in one step, a run of `completed` items of one (partition, group) against its locked
-- cursor when every item names a distinct message of the active lease's delivered range that is
-- still unsettled (the shape of an ack/batch after a pop): the head moves once over everything
-- settled, instead of once per item. Null when the run has another shape: then each item is
-- decided on its own (_ack_apply), with the same outcome.
-- Locks: the caller holds the cursor. Writes: nothing (in memory). Edge: leased -> leased, or ->
--   idle when the range is settled.
create or replace function regina._ack_settle_run(i_c regina.cursors, i_items regina.ack_item[],
                                                  i_now timestamptz)
returns regina.cursors
language plpgsql as $$
declare
    v_c regina.cursors := i_c;
    v_seqs bigint[];
begin
    if not i_c.lease_active or i_c.lease_expires_at <= i_now then
        return null;
    end if;
    select array_agg(x.seq order by x.seq) into v_seqs from unnest(i_items) x
    having bool_and(x.status = 'completed' and x.seq >= i_c.next_seq and x.seq <= i_c.lease_end_seq
                    and (x.lease_text is null or x.lease_id = i_c.lease_id)
                    and not x.group_mismatch)
       and count(distinct x.seq) = count(*)
       and not bool_or(x.seq = any (i_c.marks) or x.seq = any (i_c.lease_marks));
    if v_seqs is null then
        return null;
    end if;
    v_c.lease_marks := v_c.lease_marks || v_seqs;
    v_c.next_seq := regina._advance(v_c.partition_id, v_c.next_seq, v_c.marks || v_c.lease_marks,
                                   v_c.consumer_group);
    if v_c.next_seq > i_c.next_seq then   -- the head was settled: its failed attempts are history
        v_c.head_attempts := 0;
        v_c.head_error := null;
    end if;
    v_c.marks := regina._marks_from(v_c.marks, v_c.next_seq);
    v_c.lease_marks := regina._marks_from(v_c.lease_marks, v_c.next_seq);
    v_c.total_consumed := v_c.total_consumed + cardinality(v_seqs);
    v_c.last_consumed_at := i_now;
    if v_c.next_seq > v_c.lease_end_seq then
        v_c.lease_active := false;
        v_c.last_lease_id := v_c.lease_id;
        v_c.lease_marks := '{}';
        v_c.batches_consumed := v_c.batches_consumed + 1;
    end if;
    return v_c;
end
$$;

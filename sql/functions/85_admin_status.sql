-- Derived statuses and counts (http-api.md §4.16), computed from the base tables: where each known
-- group stands on a partition, the status of one message per group, and the six counts of
-- partitions.
--
-- A group is known to a partition when it is subscribed to the partition's queue or holds a
-- cursor on the partition. A message is settled for a group when it lies below the group's head
-- or among its settled marks (kept marks and the completions of a live lease). A known group
-- without a cursor stands where its cursor would start (§4.10): messages older than its
-- subscription start are settled for it. A requeued delivery stands in for its message in the
-- group it is meant for.

-- Where each known group stands on partition i_id of queue i_queue_id, whose next offset is
-- i_next_seq and newest message was created at i_last_created_at: the partition's cursors, read
-- together, then the queue's subscriptions without one (a probe each).
create or replace function regina._groups_of(i_id bigint, i_queue_id bigint, i_next_seq bigint,
                                             i_last_created_at timestamptz, i_now timestamptz)
returns table (partition_id bigint, consumer_group text, has_cursor boolean, head bigint,
               marks bigint[], lease_live boolean, lease_expires_at timestamptz,
               lease_end_seq bigint, head_attempts integer, head_error text)
language sql stable as $$
    select i_id, c.consumer_group, true, c.next_seq, c.marks || c.lease_marks,
           coalesce(c.lease_active and c.lease_expires_at > i_now, false),
           c.lease_expires_at, c.lease_end_seq, c.head_attempts, c.head_error
    from regina.cursors c
    where c.partition_id = i_id
    union all
    select i_id, s.consumer_group, false,
           case when s.start_at is null then 0
                when i_last_created_at is null or s.start_at > i_last_created_at then i_next_seq
                else regina._start_seq(i_id, s.start_at) end,
           '{}', false, null, null, 0, null
    from regina.subscriptions s
    where s.queue_id = i_queue_id
      and not exists (select 1 from regina.cursors c
                      where c.partition_id = i_id and c.consumer_group = s.consumer_group)
$$;

-- Where each known group stands on each partition of i_partition_ids.
create or replace function regina._partition_groups(i_partition_ids bigint[], i_now timestamptz)
returns table (partition_id bigint, consumer_group text, has_cursor boolean, head bigint,
               marks bigint[], lease_live boolean, lease_expires_at timestamptz,
               lease_end_seq bigint, head_attempts integer, head_error text)
language sql stable as $$
    select g.*
    -- One primary-key probe per id: `p.id = any (ids)` compared every partition with every id.
    from unnest(i_partition_ids) x(id)
    join regina.partitions p on p.id = x.id
    cross join lateral regina._groups_of(p.id, p.queue_id, p.next_seq, p.last_created_at, i_now) g
$$;

-- The status of message i_m for every known group of its partition and every group holding a
-- dead letter of it: dead_letter, completed, processing or pending (§4.16), with the attempts
-- charged to it while it is a group's head, the lease it is inside and the dead letter.
create or replace function regina._message_groups(i_m regina.messages, i_now timestamptz)
returns table (consumer_group text, known boolean, status text, retry_count integer,
               lease_expires_at timestamptz, error_message text, failed_at timestamptz)
language sql stable as $$
    select k.consumer_group, k.head is not null,
           case when d.id is not null then 'dead_letter'
                when k.head is null then 'pending'
                when x.seq < k.head or x.seq = any (k.marks) then 'completed'
                when k.lease_live and x.seq <= k.lease_end_seq then 'processing'
                else 'pending' end,
           case when d.id is not null then d.retry_count
                when k.head_attempts > 0 and x.seq >= k.head and x.seq = regina._head_seq(
                         i_m.partition_id, k.head, k.marks, k.consumer_group) then k.head_attempts
                else 0 end,
           case when d.id is null and k.lease_live and x.seq >= k.head and x.seq <= k.lease_end_seq
                     and x.seq <> all (k.marks) then k.lease_expires_at end,
           coalesce(d.error_message, case when k.head_attempts > 0 and x.seq >= k.head
                                               and x.seq = regina._head_seq(i_m.partition_id, k.head,
                                                              k.marks, k.consumer_group)
                                          then k.head_error end),
           d.failed_at
    from (select g.consumer_group, g.head, g.marks, g.lease_live, g.lease_expires_at,
                 g.lease_end_seq, g.head_attempts, g.head_error
          from regina._partition_groups(array[i_m.partition_id], i_now) g
          union all
          select l.consumer_group, null, null, false, null, null, 0, null
          from regina.dead_letters l
          where l.message_id = i_m.id
            and not exists (select 1 from regina._partition_groups(array[i_m.partition_id], i_now) g
                            where g.consumer_group = l.consumer_group)) k
    -- The group's delivery: its requeued one, if any, else the message. (`offset 0` keeps the
    -- lookup one: pulled up, it was planned again for each of the 21 mentions of x.seq, and a
    -- listing planned it for every message, 2 ms each.)
    cross join lateral (
        select coalesce((select r.seq from regina.messages r
                         where r.partition_id = i_m.partition_id and r.for_group = k.consumer_group
                           and r.transaction_id = i_m.transaction_id
                         order by r.seq desc limit 1), i_m.seq) as seq
        offset 0) x
    left join regina.dead_letters d on d.message_id = i_m.id and d.consumer_group = k.consumer_group
$$;

-- One message's statuses for lists: `status` for group i_group (or, without one, derived over
-- every group: dead_letter if any group dead-lettered it, else queue mode's status when queue
-- mode is known, else completed when every known group settled it, processing when it is inside
-- some lease, otherwise pending), `queueStatus`, `busStatus` and the lease it is inside.
-- Without sequential scans: its plan lasts the session, and one made from statistics taken
-- while the messages table was small reads that table whole for each listed message (the
-- lookup of a group's requeued delivery; `plans::`, "message listing").
create or replace function regina._message_summary(i_m regina.messages, i_group text,
                                                   i_now timestamptz)
returns jsonb
language plpgsql stable set enable_seqscan = off set jit = off as $$
declare
    v jsonb;
begin
    select jsonb_build_object(
               'status', case
                   when i_group is not null then
                       coalesce(max(g.status) filter (where g.consumer_group = i_group), 'pending')
                   when bool_or(g.status = 'dead_letter') then 'dead_letter'
                   when bool_or(g.consumer_group = '__QUEUE_MODE__' and g.known) then
                       max(g.status) filter (where g.consumer_group = '__QUEUE_MODE__')
                   when count(*) filter (where g.known) = 0 then 'pending'
                   when bool_and(g.status = 'completed') filter (where g.known) then 'completed'
                   when bool_or(g.status = 'processing') then 'processing'
                   else 'pending' end,
               'queueStatus', max(g.status) filter (where g.consumer_group = '__QUEUE_MODE__' and g.known),
               'busStatus', jsonb_build_object(
                   'consumedBy', count(*) filter (where g.known and g.consumer_group <> '__QUEUE_MODE__'
                                                  and g.status in ('completed', 'dead_letter')),
                   'totalGroups', count(*) filter (where g.known and g.consumer_group <> '__QUEUE_MODE__')),
               'leaseExpiresAt', regina._ts(case
                   when i_group is not null then max(g.lease_expires_at) filter (where g.consumer_group = i_group)
                   else min(g.lease_expires_at) end))
    into v
    from regina._message_groups(i_m, i_now) g;
    return v;
end
$$;

-- The counts of §4.16 for each partition of i_partition_ids: `total` stored messages,
-- `completed` those settled by every known group, `processing` those inside some live lease,
-- `pending` the rest, `failed` heads carrying failed attempts, `dead_letter` live DLQ entries.
-- Everything below the lowest head of a partition is settled by all its groups; the total and that
-- prefix are counted from offsets (offsets come without gaps, and deleted ones are recorded as
-- holes), so a partition costs the same whatever it stores, and so are its dead letters (from
-- their tallies). Only settled marks above the prefix are looked at one by one, and only lease
-- ranges are read for `processing`. With each partition, its queue and next offset as read
-- there (a partition that no longer exists has no row).
select regina._drop_outdated('regina._partition_counts(bigint[], timestamptz)', 'next_seq bigint');
create or replace function regina._partition_counts(i_partition_ids bigint[], i_now timestamptz)
returns table (partition_id bigint, queue_id bigint, next_seq bigint, total bigint, pending bigint,
               processing bigint, completed bigint, failed bigint, dead_letter bigint)
language sql stable as $$
    -- Each partition's row read once (one primary-key probe per id), for its groups and its
    -- offsets.
    with parts as (select p.id, p.queue_id, p.next_seq, p.last_created_at
                   from unnest(i_partition_ids) x(id) join regina.partitions p on p.id = x.id),
    g as (select g.* from parts p
          cross join lateral regina._groups_of(p.id, p.queue_id, p.next_seq, p.last_created_at,
                                               i_now) g),
    low as (select g.partition_id, min(g.head) as seq, count(*) filter (where g.head_attempts > 0
                                                                        and g.has_cursor) as failed
            from g group by g.partition_id),
    requeued as (select r.partition_id, r.seq, r.transaction_id, r.for_group from regina.messages r
                 where r.partition_id = any (i_partition_ids) and r.for_group is not null),
    marked as (   -- ordinary messages above the lowest head settled by every group
        select x.partition_id, x.seq
        from (select distinct g.partition_id, y.seq
              from g join low on low.partition_id = g.partition_id
              cross join unnest(g.marks) y(seq)
              where y.seq >= low.seq) x
        join g o on o.partition_id = x.partition_id
        group by x.partition_id, x.seq
        having bool_and(x.seq < o.head or x.seq = any (o.marks))
           and exists (select 1 from regina.messages m where m.partition_id = x.partition_id
                                                         and m.seq = x.seq and m.for_group is null)),
    reopened as ( -- settled messages whose requeued delivery a group has not settled yet
        select distinct r.partition_id, o.seq
        from requeued r
        join g on g.partition_id = r.partition_id and g.consumer_group = r.for_group
        join low on low.partition_id = r.partition_id
        cross join lateral (select (regina._stored_key(r.partition_id, r.transaction_id)).o_seq
                                   as seq) o
        where o.seq is not null and not (r.seq < g.head or r.seq = any (g.marks))
          and (o.seq < low.seq or exists (select 1 from marked k where k.partition_id = r.partition_id
                                                                     and k.seq = o.seq))),
    leased as (   -- messages inside a live lease, by transactionId (a requeued delivery is its message)
        select g.partition_id, count(distinct m.transaction_id) as n
        from g join regina.messages m
          on m.partition_id = g.partition_id and m.seq >= g.head and m.seq <= g.lease_end_seq
         and m.seq <> all (g.marks) and (m.for_group is null or m.for_group = g.consumer_group)
        where g.lease_live
        group by g.partition_id),
    -- Each part is summed per partition once and joined: correlated lookups into these CTEs
    -- scanned them whole for every partition.
    requeued_n as (
        select r.partition_id, count(*) as n, count(*) filter (where r.seq < low.seq) as below
        from requeued r left join low on low.partition_id = r.partition_id
        group by r.partition_id),
    marked_n as (select k.partition_id, count(*) as n from marked k group by k.partition_id),
    reopened_n as (select o.partition_id, count(*) as n from reopened o group by o.partition_id),
    counted as (
        select p.id, p.queue_id, p.next_seq,
               n.all_rows - coalesce(rq.n, 0) as total,
               case when low.seq is null then 0 else
                   n.below - coalesce(rq.below, 0) + coalesce(mk.n, 0) - coalesce(ro.n, 0) end
                   as completed,
               coalesce(l.n, 0) as processing,
               coalesce(low.failed, 0) as failed,
               -- The partition's dead-letter tallies (migrations/0019_dead_letter_tallies.sql):
               -- as many rows as statements changed its dead letters since its last recount.
               (select coalesce(sum(t.n), 0)::bigint from regina.dead_letter_tallies t
                where t.partition_id = p.id) as dead_letter
        from parts p
        left join low on low.partition_id = p.id
        left join requeued_n rq on rq.partition_id = p.id
        left join marked_n mk on mk.partition_id = p.id
        left join reopened_n ro on ro.partition_id = p.id
        left join leased l on l.partition_id = p.id
        -- Stored messages, and those below the lowest head, from the partition's offsets and its
        -- holes (migrations/0018_partition_holes.sql): index probes, however many it stores.
        -- (`offset 0` keeps each probe a single one: pulled up, the subqueries would run again
        -- for every mention of their results.)
        cross join lateral (
            select case when b.lo is null then 0 else b.hi - b.lo - k.holes end as all_rows,
                   case when b.lo is null or low.seq is null or low.seq <= b.lo then 0
                        else least(low.seq, b.hi) - b.lo - k.holes_below end as below
            from (select (select min(m.seq) from regina.messages m
                          where m.partition_id = p.id) as lo,
                         p.next_seq as hi
                  offset 0) b
            cross join lateral (select count(*) as holes,
                                       count(*) filter (where h.seq < low.seq) as holes_below
                                from regina.partition_holes h
                                where h.partition_id = p.id and h.seq > b.lo) k
            offset 0) n)
    select c.id, c.queue_id, c.next_seq, c.total,
           greatest(c.total - c.completed - c.processing, 0), c.processing, c.completed, c.failed,
           c.dead_letter
    from counted c
$$;

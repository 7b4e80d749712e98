-- Consumer groups, read side (GET /api/v1/consumer-groups…): one row per (group, queue) the group
-- is known to, lagging partitions, and one group's partitions. Lag is computed when asked, from
-- the cursors and the ready set: every (partition, group) with an unsettled message has a ready
-- row (migrations/0002_ready.sql), so lag scans rows with work, never idle partitions.

-- Lag of (partition, group) (spec §4.16): the messages the group has not settled and when its
-- head was created. With a cursor: from the head (the first existing unsettled message) to the
-- partition's end, less the settled marks beyond it. Without one (a subscribed group that never
-- claimed the partition): from the subscription start. Offsets make this O(1): messages deleted
-- beyond the head (rare; retention deletes the oldest first) still count until a claim passes them.
create or replace function regina._group_lag(i_p regina.partitions, i_c regina.cursors,
                                             i_start_at timestamptz,
                                             out o_offset_lag bigint, out o_head_at timestamptz)
language plpgsql stable as $$
declare
    v_head bigint;
    v_settled bigint := 0;
begin
    o_offset_lag := 0;
    if i_c.partition_id is not null then
        v_head := regina._head_seq(i_p.id, i_c.next_seq, i_c.marks || i_c.lease_marks,
                                   i_c.consumer_group);
        v_settled := (select count(*) from unnest(i_c.marks || i_c.lease_marks) x where x > v_head);
    else
        -- No cursor, so no requeued delivery for the group: ordinary messages only.
        v_head := regina._head_seq(i_p.id, regina._start_seq(i_p.id, i_start_at), '{}', null);
    end if;
    if v_head is null then
        return;
    end if;
    o_offset_lag := greatest(0, i_p.next_seq - v_head - v_settled);
    select m.created_at into o_head_at from regina.messages m
    where m.partition_id = i_p.id and m.seq = v_head;
end
$$;

-- Whole seconds from i_then to i_now; 0 when i_then is null.
create or replace function regina._seconds_since(i_then timestamptz, i_now timestamptz)
returns bigint
language sql immutable as $$
    select coalesce(greatest(0, floor(extract(epoch from i_now - i_then)))::bigint, 0)
$$;

-- The lag of every partition where (queue, group) has work, with the partition, its cursor
-- (null fields when none) and the group's subscription start.
create or replace function regina._group_work(i_queue_id bigint, i_group text)
returns table (p regina.partitions, c regina.cursors, offset_lag bigint, head_at timestamptz)
language sql stable as $$
    select p, c, l.o_offset_lag, l.o_head_at
    from regina.ready r
    join regina.partitions p on p.id = r.partition_id
    left join regina.cursors c
           on c.partition_id = r.partition_id and c.consumer_group = r.consumer_group
    left join regina.subscriptions s
           on s.queue_id = r.queue_id and s.consumer_group = r.consumer_group
    cross join lateral regina._group_lag(p, c, s.start_at) l
    where r.queue_id = i_queue_id and r.consumer_group = i_group
$$;

-- GET /api/v1/consumer-groups: every (group, queue) pair with a cursor or a subscription, by
-- group then queue name, paged (`{limit, offset, scopes?}`: only queues the scopes allow);
-- `total` counts them all.
create or replace function regina.consumer_groups_list(i_query jsonb,
                                                       i_now timestamptz default null)
returns table (total bigint, body json)
language plpgsql stable as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
begin
    return query
    with pairs as (
        select x.* from (
            select s.queue_id, s.consumer_group from regina.subscriptions s
            union
            select distinct c.queue_id, c.consumer_group from regina.cursors c) x
        where regina._query_scopes(i_query) is null
           or exists (select 1 from regina.queues q where q.id = x.queue_id
                      and regina._queue_in_scopes(q.name, regina._query_scopes(i_query)))),
    page as (
        select x.queue_id, x.consumer_group, q.name as queue_name
        from pairs x join regina.queues q on q.id = x.queue_id
        order by x.consumer_group, q.name
        limit (i_query ->> 'limit')::integer offset (i_query ->> 'offset')::integer),
    rows as (
        select g.consumer_group, g.queue_name, s.mode, s.start_at,
               coalesce(s.created_at, k.first_cursor_at) as created_at,
               k.members, k.consumed, w.with_lag, w.total_lag, w.max_time_lag
        from page g
        left join regina.subscriptions s
               on s.queue_id = g.queue_id and s.consumer_group = g.consumer_group
        cross join lateral (
            select count(*) as members, coalesce(bool_or(c.total_consumed > 0), false) as consumed,
                   min(c.created_at) as first_cursor_at
            from regina.cursors c
            where c.queue_id = g.queue_id and c.consumer_group = g.consumer_group) k
        cross join lateral (
            select count(*) filter (where l.offset_lag > 0) as with_lag,
                   coalesce(sum(l.offset_lag), 0) as total_lag,
                   coalesce(max(regina._seconds_since(l.head_at, v_now)), 0) as max_time_lag
            from regina._group_work(g.queue_id, g.consumer_group) l) w)
    select (select count(*) from pairs),
           coalesce(json_agg(json_build_object(
               'name', r.consumer_group, 'topics', json_build_array(r.queue_name),
               'queueName', r.queue_name, 'members', r.members,
               'partitionsWithLag', r.with_lag, 'totalLag', r.total_lag,
               'maxTimeLag', r.max_time_lag,
               'state', case when r.max_time_lag > 300 then 'Lagging'
                             when r.consumed then 'Stable' else 'Dead' end,
               'subscriptionMode', coalesce(r.mode, 'all'),
               'subscriptionTimestamp', regina._ts(r.start_at),
               'subscriptionCreatedAt', regina._ts(r.created_at))
               order by r.consumer_group, r.queue_name), '[]'::json)
    from rows r;
end
$$;

-- GET /api/v1/consumer-groups/lagging: partitions whose head is older than `minLagSeconds`, for
-- every group and queue the `scopes` allow, largest lag first, paged; `total` counts them all.
create or replace function regina.consumer_groups_lagging(i_query jsonb,
                                                          i_now timestamptz default null)
returns table (total bigint, body json)
language plpgsql stable as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
begin
    return query
    with lagging as (
        select x.* from (
            select r.consumer_group, q.name as queue_name, w.p, w.c, w.offset_lag, w.head_at,
                   regina._seconds_since(w.head_at, v_now) as time_lag
            from (select distinct y.queue_id, y.consumer_group from regina.ready y) r
            join regina.queues q on q.id = r.queue_id
            cross join lateral regina._group_work(r.queue_id, r.consumer_group) w) x
        where x.time_lag > (i_query ->> 'minLagSeconds')::bigint
          and regina._queue_in_scopes(x.queue_name, regina._query_scopes(i_query))),
    page as (
        select * from lagging l
        order by l.time_lag desc, l.consumer_group, l.queue_name, (l.p).name
        limit (i_query ->> 'limit')::integer offset (i_query ->> 'offset')::integer)
    select (select count(*) from lagging),
           coalesce(json_agg(json_build_object(
               'consumer_group', g.consumer_group, 'queue_name', g.queue_name,
               'partition_name', (g.p).name, 'partition_id', (g.p).uuid,
               'worker_id', case when (g.c).lease_active and (g.c).lease_expires_at > v_now
                                 then (g.c).lease_id end,
               'offset_lag', g.offset_lag, 'time_lag_seconds', g.time_lag,
               'lag_hours', round(g.time_lag / 3600.0, 2),
               'oldest_unconsumed_at', regina._ts(g.head_at),
               'last_consumed_at', regina._ts((g.c).last_consumed_at))
               order by g.time_lag desc, g.consumer_group, g.queue_name, (g.p).name), '[]'::json)
    from page g;
end
$$;

-- GET /api/v1/consumer-groups/:group: the group's partitions with a cursor, by queue.
create or replace function regina.consumer_group_detail(i_group text,
                                                        i_now timestamptz default null)
returns json
language plpgsql stable as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
begin
    return (
        select coalesce(json_object_agg(x.queue_name, json_build_object('partitions', x.partitions)
                                        order by x.queue_name), '{}'::json)
        from (select q.name as queue_name,
                     json_agg(json_build_object(
                         'partition', p.name,
                         'workerId', case when c.lease_active and c.lease_expires_at > v_now
                                          then c.lease_id end,
                         'lastConsumedAt', regina._ts(c.last_consumed_at),
                         'totalConsumed', c.total_consumed,
                         'offsetLag', l.o_offset_lag,
                         'timeLagSeconds', regina._seconds_since(l.o_head_at, v_now),
                         'leaseActive', c.lease_active and c.lease_expires_at > v_now)
                         order by p.name) as partitions
              from regina.queues q
              join regina.cursors c on c.queue_id = q.id and c.consumer_group = i_group
              join regina.partitions p on p.id = c.partition_id
              cross join lateral regina._group_lag(p, c, null) l
              group by q.name) x);
end
$$;

-- Consumer groups, read side (GET /api/v1/consumer-groups…): one row per (group, queue) the group
-- is known to, lagging partitions, and one group's partitions. The listings read the lag the
-- stats refresh keeps (91_stats_refresh.sql: every (partition, group) with unsettled messages,
-- found through the ready set); one group's detail computes it from its cursors when asked.

-- Lag of (partition, group) (http-api.md §4.16): the messages the group has not settled and when
-- its head was created. With a cursor: from the head (the first existing unsettled message) to the
-- partition's end, less the settled marks beyond it and the offsets deleted beyond it (the
-- partition's holes, migrations/0018_partition_holes.sql). Without one (a subscribed group that
-- never claimed the partition): from the subscription start. Offsets make this O(1): a head at the
-- partition's end costs no read; otherwise one probe finds the head and its time, and one more
-- the holes beyond it (retention deletes the oldest messages first, so there are seldom any).
--
-- One row, always. A set-returning SQL function of one query, so that the planner inlines it
-- into the caller's `lateral` (no function call per row; a caught-up cursor is a one-time
-- filter). Callers may pass a null cursor (a left join) and a null start.
select regina._drop_outdated('regina._group_lag(regina.partitions, regina.cursors, timestamptz)',
                             'TABLE(');
create or replace function regina._group_lag(i_p regina.partitions, i_c regina.cursors,
                                             i_start_at timestamptz)
returns table (o_offset_lag bigint, o_head_at timestamptz)
language sql stable rows 1 as $$
    select coalesce(h.offset_lag, 0), h.created_at
    from (select 1) one
    left join lateral (
        -- As regina._head_seq finds the head: its createdAt, and the offsets from it to the end
        -- less those beyond it that are settled marks or holes.
        select m.created_at,
               greatest(0, i_p.next_seq - m.seq
                           - (select count(*) from unnest(f.skip) x where x > m.seq)
                           - (select count(*) from regina.partition_holes ph
                              where ph.partition_id = i_p.id and ph.seq > m.seq
                                and ph.seq <> all (f.skip))) as offset_lag
        from (select case when i_c.partition_id is not null then i_c.next_seq
                          else regina._start_seq(i_p.id, i_start_at) end as from_seq,
                     -- No cursor, so no requeued delivery for the group: ordinary messages only.
                     case when i_c.partition_id is not null then i_c.marks || i_c.lease_marks
                          else '{}'::bigint[] end as skip
              where i_c.partition_id is null or i_c.next_seq < i_p.next_seq) f
        cross join lateral (
            select mm.seq, mm.created_at from regina.messages mm
            where mm.partition_id = i_p.id and mm.seq >= f.from_seq and mm.seq <> all (f.skip)
              and (mm.for_group is null or mm.for_group = i_c.consumer_group)
            order by mm.seq
            limit 1) m
    ) h on true
$$;

-- Whole seconds from i_then to i_now; 0 when i_then is null.
create or replace function regina._seconds_since(i_then timestamptz, i_now timestamptz)
returns bigint
language sql immutable as $$
    select coalesce(greatest(0, floor(extract(epoch from i_now - i_then)))::bigint, 0)
$$;

-- GET /api/v1/consumer-groups: every (group, queue) pair with a cursor or a subscription, by
-- group then queue name, paged (`{limit, offset, scopes?}`: only queues the scopes allow);
-- `total` counts them all. Pairs and members are read as they are; lag as of the last stats
-- refresh.
create or replace function regina.consumer_groups_list(i_query jsonb,
                                                       i_now timestamptz default null)
returns table (total bigint, body json)
language plpgsql stable as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
begin
    return query
    with pairs as (   -- one index probe per group of each queue, however many cursors it has
        select q.id as queue_id, q.name as queue_name, g.consumer_group
        from regina.queues q
        cross join lateral unnest(regina._queue_groups(q.id)) g(consumer_group)
        where regina._queue_in_scopes(q.name, regina._query_scopes(i_query))),
    page as (
        select * from pairs x
        order by x.consumer_group, x.queue_name
        limit (i_query ->> 'limit')::integer offset (i_query ->> 'offset')::integer),
    rows as (
        select g.consumer_group, g.queue_name, s.mode, s.start_at,
               coalesce(s.created_at, (select min(c.created_at) from regina.cursors c
                                       where c.queue_id = g.queue_id
                                         and c.consumer_group = g.consumer_group)) as created_at,
               (select count(*) from regina.cursors c
                where c.queue_id = g.queue_id and c.consumer_group = g.consumer_group) as members,
               exists (select 1 from regina.cursors c
                       where c.queue_id = g.queue_id and c.consumer_group = g.consumer_group
                         and c.total_consumed > 0) as consumed,
               coalesce(w.partitions_with_lag, 0) as with_lag,
               coalesce(w.offset_lag, 0) as total_lag,
               regina._seconds_since(w.oldest_head_at, v_now) as max_time_lag
        from page g
        left join regina.subscriptions s
               on s.queue_id = g.queue_id and s.consumer_group = g.consumer_group
        left join regina.group_stats w
               on w.queue_id = g.queue_id and w.consumer_group = g.consumer_group)
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
-- every group and queue the `scopes` allow, largest lag first (oldest head first), paged;
-- `total` counts them all. Lag as of the last stats refresh; the page is read along the index on
-- the heads' createdAt and only its rows are joined to their partitions.
create or replace function regina.consumer_groups_lagging(i_query jsonb,
                                                          i_now timestamptz default null)
returns table (total bigint, body json)
language plpgsql stable as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    -- Whole seconds above minLagSeconds: at least minLagSeconds + 1 seconds old.
    v_before timestamptz := v_now - ((i_query ->> 'minLagSeconds')::bigint + 1) * interval '1 second';
begin
    return query
    with lagging as (
        select l.* from regina.partition_lag l
        where l.head_at <= v_before
          and (regina._query_scopes(i_query) is null
               or exists (select 1 from regina.queues q where q.id = l.queue_id
                          and regina._queue_in_scopes(q.name, regina._query_scopes(i_query))))),
    page as (
        select l.* from lagging l
        order by l.head_at, l.consumer_group, l.partition_id
        limit (i_query ->> 'limit')::integer offset (i_query ->> 'offset')::integer)
    select (select count(*) from lagging),
           coalesce(json_agg(json_build_object(
               'consumer_group', g.consumer_group, 'queue_name', q.name,
               'partition_name', p.name, 'partition_id', p.uuid,
               'worker_id', case when c.lease_active and c.lease_expires_at > v_now
                                 then c.lease_id end,
               'offset_lag', g.offset_lag,
               'time_lag_seconds', regina._seconds_since(g.head_at, v_now),
               'lag_hours', round(regina._seconds_since(g.head_at, v_now) / 3600.0, 2),
               'oldest_unconsumed_at', regina._ts(g.head_at),
               'last_consumed_at', regina._ts(c.last_consumed_at))
               order by g.head_at, g.consumer_group, g.partition_id), '[]'::json)
    from page g
    join regina.partitions p on p.id = g.partition_id
    join regina.queues q on q.id = p.queue_id
    left join regina.cursors c on c.partition_id = g.partition_id and c.consumer_group = g.consumer_group;
end
$$;

-- GET /api/v1/consumer-groups/:group: the group's partitions with a cursor, by queue.
-- `i_query = {queue?, limit?, offset?, sort?}`: only one queue; a page of at most `limit`
-- partitions per queue (default 10 000), by partition name or, with `sort = 'lag'`, most lagging
-- first; `total`, `totalLag`, `maxTimeLag` and `leased` cover every partition of the queue.
create or replace function regina.consumer_group_detail(i_group text, i_query jsonb default '{}',
                                                        i_now timestamptz default null)
returns json
language plpgsql stable as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_queue text := i_query ->> 'queue';
    v_limit integer := coalesce((i_query ->> 'limit')::integer, 10000);
    v_offset integer := coalesce((i_query ->> 'offset')::integer, 0);
    v_by_lag boolean := coalesce(i_query ->> 'sort' = 'lag', false);
begin
    return (
        with cursor_rows as (
            select q.name as queue_name, p.name as partition_name, c.lease_id,
                   c.lease_active and c.lease_expires_at > v_now as leased,
                   c.last_consumed_at, c.total_consumed, l.o_offset_lag as offset_lag,
                   regina._seconds_since(l.o_head_at, v_now) as time_lag
            from regina.queues q
            join regina.cursors c on c.queue_id = q.id and c.consumer_group = i_group
            join regina.partitions p on p.id = c.partition_id
            cross join lateral regina._group_lag(p, c, null) l
            where v_queue is null or q.name = v_queue),
        summary as (
            select r.queue_name, count(*) as total, coalesce(sum(r.offset_lag), 0) as total_lag,
                   coalesce(max(r.time_lag), 0) as max_time_lag,
                   count(*) filter (where r.leased) as leased
            from cursor_rows r
            group by r.queue_name),
        numbered as (
            select r.*, row_number() over (
                       partition by r.queue_name
                       order by case when v_by_lag then r.time_lag end desc,
                                case when v_by_lag then r.offset_lag end desc,
                                r.partition_name) as n
            from cursor_rows r),
        page as (
            select x.queue_name,
                   json_agg(json_build_object(
                       'partition', x.partition_name,
                       'workerId', case when x.leased then x.lease_id end,
                       'lastConsumedAt', regina._ts(x.last_consumed_at),
                       'totalConsumed', x.total_consumed,
                       'offsetLag', x.offset_lag,
                       'timeLagSeconds', x.time_lag,
                       'leaseActive', x.leased)
                       order by x.n) as partitions
            from numbered x
            where x.n > v_offset and x.n <= v_offset::bigint + v_limit
            group by x.queue_name)
        select coalesce(json_object_agg(s.queue_name, json_build_object(
                            'partitions', coalesce(g.partitions, '[]'::json),
                            'total', s.total, 'totalLag', s.total_lag,
                            'maxTimeLag', s.max_time_lag, 'leased', s.leased)
                        order by s.queue_name), '{}'::json)
        from summary s
        left join page g on g.queue_name = s.queue_name);
end
$$;

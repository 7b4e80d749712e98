-- Resource listings (http-api.md §3.8): queues, one queue with its partitions, partitions,
-- namespaces and tasks. Queues and partitions are read as they are; their message counts (§4.16)
-- are those of the last stats refresh (91_stats_refresh.sql): counting them here read every message
-- of every partition a page covered.

-- The six counts as the wire names them.
create or replace function regina._counts_json(i_total bigint, i_pending bigint,
                                               i_processing bigint, i_completed bigint,
                                               i_failed bigint, i_dead_letter bigint)
returns json
language sql stable as $$
    select json_build_object('total', coalesce(i_total, 0), 'pending', coalesce(i_pending, 0),
                             'processing', coalesce(i_processing, 0),
                             'completed', coalesce(i_completed, 0), 'failed', coalesce(i_failed, 0),
                             'deadLetter', coalesce(i_dead_letter, 0))
$$;

-- The last push to a partition or claim or ack on it (its creation when there was none).
create or replace function regina._partition_last_activity(i_p regina.partitions) returns timestamptz
language sql stable as $$
    select coalesce(greatest(i_p.last_push_at,
                             (select max(greatest(c.last_claim_at, c.last_consumed_at))
                              from regina.cursors c where c.partition_id = i_p.id)),
                    i_p.created_at)
$$;

-- GET /api/v1/resources/queues: `i_query = {namespace?, task?, search?, limit, offset,
-- scopes?}`; queues ordered by name, each with its partition count and message counts; only
-- queues the scopes allow.
create or replace function regina.queues_list(i_query jsonb, i_now timestamptz default null)
returns json
language plpgsql stable as $$
declare
    v_limit integer := coalesce((i_query ->> 'limit')::integer, 1000);
    v_offset integer := coalesce((i_query ->> 'offset')::integer, 0);
    v_total bigint;
    v_rows json;
begin
    with matching as (
        select q.* from regina.queues q
        where (i_query ->> 'namespace' is null or q.namespace = i_query ->> 'namespace')
          and (i_query ->> 'task' is null or q.task = i_query ->> 'task')
          and (i_query ->> 'search' is null
               or strpos(lower(q.name), lower(i_query ->> 'search')) > 0)
          and regina._queue_in_scopes(q.name, regina._query_scopes(i_query)))
    select (select count(*) from matching),
           (select coalesce(json_agg(json_build_object(
                        'id', x.uuid, 'name', x.name, 'namespace', x.namespace, 'task', x.task,
                        'priority', x.priority, 'createdAt', regina._ts(x.created_at),
                        'partitions', c.partitions,
                        'messages', json_build_object('total', c.total, 'pending', c.pending,
                                                      'processing', c.processing))
                        order by x.name), '[]'::json)
            from (select * from matching m order by m.name limit v_limit offset v_offset) x
            left join regina.queue_stats k on k.queue_id = x.id
            cross join lateral (
                select (select count(*) from regina.partitions p where p.queue_id = x.id) as partitions,
                       coalesce(k.total, 0) as total, coalesce(k.pending, 0) as pending,
                       coalesce(k.processing, 0) as processing) c)
    into v_total, v_rows;
    return json_build_object(
        'queues', v_rows,
        'pagination', json_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total));
end
$$;

-- GET /api/v1/resources/queues/:queue: `i_query = {queue, limit, offset}` (the partition page).
-- Null when the queue does not exist. `totals` cover every partition of the queue; a partition
-- created since the last stats refresh counts zeros until the next.
create or replace function regina.queue_detail(i_query jsonb, i_now timestamptz default null)
returns json
language plpgsql stable as $$
declare
    v_limit integer := coalesce((i_query ->> 'limit')::integer, 1000);
    v_offset integer := coalesce((i_query ->> 'offset')::integer, 0);
    v_q regina.queues;
    v_result json;
begin
    select * into v_q from regina.queues q where q.name = i_query ->> 'queue';
    if not found then
        return null;
    end if;
    with page as (
        select p, c from regina.partitions p
        left join regina.partition_stats c on c.partition_id = p.id
        where p.queue_id = v_q.id
        order by p.name limit v_limit offset v_offset)
    select json_build_object(
        'id', v_q.uuid, 'name', v_q.name, 'namespace', v_q.namespace, 'task', v_q.task,
        'createdAt', regina._ts(v_q.created_at), 'options', regina._queue_options(v_q),
        'partitionCount', (select count(*) from regina.partitions p where p.queue_id = v_q.id),
        'partitions', (select coalesce(json_agg(json_build_object(
                'id', (x.p).uuid, 'name', (x.p).name, 'createdAt', regina._ts((x.p).created_at),
                'lastActivity', regina._ts(regina._partition_last_activity(x.p)),
                'stats', regina._counts_json((x.c).total, (x.c).pending, (x.c).processing,
                                             (x.c).completed, (x.c).failed, (x.c).dead_letter),
                'oldestMessage', (select regina._ts_us(m.created_at) from regina.messages m
                                  where m.partition_id = (x.p).id and m.for_group is null
                                  order by m.seq limit 1),
                'newestMessage', (select regina._ts_us(m.created_at) from regina.messages m
                                  where m.partition_id = (x.p).id and m.for_group is null
                                  order by m.seq desc limit 1))
                order by (x.p).name), '[]'::json)
            from page x),
        'totals', (select regina._counts_json(k.total, k.pending, k.processing, k.completed,
                                              k.failed, k.dead_letter)
                   from (select 1) one
                   left join regina.queue_stats k on k.queue_id = v_q.id))
    into v_result;
    return v_result;
end
$$;

-- GET /api/v1/resources/partitions: `i_query = {queue?, search?, limit, offset, scopes?}`;
-- partitions of the queues the scopes allow, ordered by queue name, then name.
create or replace function regina.partitions_list(i_query jsonb, i_now timestamptz default null)
returns json
language plpgsql stable as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_limit integer := coalesce((i_query ->> 'limit')::integer, 100);
    v_offset integer := coalesce((i_query ->> 'offset')::integer, 0);
    v_total bigint;
    v_rows json;
begin
    -- Narrow rows to sort and count; whole rows only for the page.
    with matching as (
        select p.id, p.name, q.name as queue_name, q.uuid as queue_uuid from regina.partitions p
        join regina.queues q on q.id = p.queue_id
        where (i_query ->> 'queue' is null or q.name = i_query ->> 'queue')
          and (i_query ->> 'search' is null
               or strpos(lower(p.name), lower(i_query ->> 'search')) > 0)
          and regina._queue_in_scopes(q.name, regina._query_scopes(i_query))),
    page as (
        select m.queue_name, m.queue_uuid, p
        from (select * from matching k order by k.queue_name, k.name
              limit v_limit offset v_offset) m
        join regina.partitions p on p.id = m.id)
    select (select count(*) from matching),
           (select coalesce(json_agg(json_build_object(
                        'id', (x.p).uuid, 'name', (x.p).name, 'queue', x.queue_name,
                        'queueId', x.queue_uuid, 'createdAt', regina._ts((x.p).created_at),
                        'lastActivity', regina._ts(regina._partition_last_activity(x.p)),
                        'messages', json_build_object('total', coalesce(c.total, 0),
                                                      'pending', coalesce(c.pending, 0)),
                        'consumerGroups', (select count(*) from regina.cursors k
                                           where k.partition_id = (x.p).id),
                        'leasedBy', (select count(*) from regina.cursors k
                                     where k.partition_id = (x.p).id and k.lease_active
                                       and k.lease_expires_at > v_now))
                        order by x.queue_name, (x.p).name), '[]'::json)
            from page x left join regina.partition_stats c on c.partition_id = (x.p).id)
    into v_total, v_rows;
    return json_build_object(
        'partitions', v_rows,
        'pagination', json_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total));
end
$$;

-- GET /api/v1/resources/namespaces (i_label 'namespace') and /tasks (i_label 'task'): queues
-- the scopes allow (null: all), grouped by that label (an empty one is ""), with their
-- partitions and message counts.
drop function if exists regina.labels_list(text, timestamptz);
create or replace function regina.labels_list(i_label text, i_now timestamptz default null,
                                              i_scopes text[] default null)
returns json
language sql stable as $$
    with labelled as (
        select case when i_label = 'task' then q.task else q.namespace end as label,
               count(*) as queues,
               sum((select count(*) from regina.partitions p where p.queue_id = q.id)) as partitions,
               coalesce(sum(k.total), 0) as total, coalesce(sum(k.pending), 0) as pending
        from regina.queues q
        left join regina.queue_stats k on k.queue_id = q.id
        where regina._queue_in_scopes(q.name, i_scopes)
        group by 1)
    select json_build_object(
        case when i_label = 'task' then 'tasks' else 'namespaces' end,
        coalesce(json_agg(json_build_object(
                     case when i_label = 'task' then 'task' else 'namespace' end, l.label,
                     'queues', l.queues, 'partitions', l.partitions,
                     'messages', json_build_object('total', l.total, 'pending', l.pending))
                 order by l.label), '[]'::json))
    from labelled l
$$;

-- Message browsing (http-api.md §3.9): the newest-first listing and the detail of one message, with
-- statuses derived per consumer group (85_admin_status.sql).

-- Which kinds of consumers a set of queues has (the `mode` object): queue mode, named groups.
create or replace function regina._mode_json(i_queue_ids bigint[]) returns jsonb
language sql stable as $$
    select jsonb_build_object(
               'hasQueueMode', coalesce(bool_or(g = '__QUEUE_MODE__'), false),
               'busGroupsCount', count(distinct g) filter (where g <> '__QUEUE_MODE__'),
               'type', case when bool_or(g = '__QUEUE_MODE__') and bool_or(g <> '__QUEUE_MODE__') then 'hybrid'
                            when bool_or(g = '__QUEUE_MODE__') then 'queue'
                            when bool_or(g <> '__QUEUE_MODE__') then 'bus'
                            else 'none' end)
    from unnest(i_queue_ids) q(id)
    cross join lateral unnest(regina._queue_groups(q.id)) g
$$;

-- Opens i_cursor on the stored messages of the listing, newest first: ordinary messages (not
-- requeued deliveries) created in [i_from, i_to], of the given partitions or queues (null: any),
-- each with its partition and queue. A cursor, so the caller reads only as far as its page goes.
-- One partition is read backwards along its offsets (createdAt never decreases along them);
-- otherwise the createdAt index gives the order. Without sequential scans: statistics taken
-- while the tables were small make the planner join each message to its partition by a scan of
-- the whole partitions table (a page of ten read 16 002 partition rows in a queue of 8 000
-- messages; `plans::`, "message listing").
create or replace function regina._messages_open(i_cursor refcursor, i_partition_ids bigint[],
                                                 i_queue_ids bigint[], i_from timestamptz,
                                                 i_to timestamptz)
returns refcursor
language plpgsql set plan_cache_mode = force_custom_plan set enable_seqscan = off
    set enable_sort = off as $$
begin
    if cardinality(i_partition_ids) = 1 then
        open i_cursor for
        select m, p, q from regina.messages m
        join regina.partitions p on p.id = m.partition_id
        join regina.queues q on q.id = p.queue_id
        where m.partition_id = i_partition_ids[1] and m.for_group is null
          and m.created_at >= i_from and m.created_at <= i_to
        order by m.seq desc;
    else
        open i_cursor for
        select m, p, q from regina.messages m
        join regina.partitions p on p.id = m.partition_id
        join regina.queues q on q.id = p.queue_id
        where m.for_group is null and m.created_at >= i_from and m.created_at <= i_to
          and (i_partition_ids is null or m.partition_id = any (i_partition_ids))
          and (i_queue_ids is null or p.queue_id = any (i_queue_ids))
        order by m.created_at desc, m.partition_id desc, m.seq desc;
    end if;
    return i_cursor;
end
$$;

-- One row of the listing (no payload).
create or replace function regina._message_list_row(i_m regina.messages, i_p regina.partitions,
                                                    i_q regina.queues, i_summary jsonb)
returns json
language sql stable as $$
    select json_build_object(
        'id', i_m.id, 'transactionId', i_m.transaction_id, 'partitionId', i_p.uuid,
        'queuePath', i_q.name || '/' || i_p.name, 'queue', i_q.name, 'partition', i_p.name,
        'namespace', i_q.namespace, 'task', i_q.task, 'status', i_summary -> 'status',
        'queueStatus', i_summary -> 'queueStatus', 'busStatus', i_summary -> 'busStatus',
        'traceId', i_m.trace_id, 'producerSub', i_m.producer_sub, 'queuePriority', i_q.priority,
        'createdAt', regina._ts_us(i_m.created_at), 'leaseExpiresAt', i_summary -> 'leaseExpiresAt')
$$;

-- GET /api/v1/messages: `i_query = {queue?, partition?, namespace?, task?, consumerGroup?,
-- status?, from?, to?, limit, offset, scopes?}` (only queues the scopes allow); `from`/`to` default
-- to the last hour. Newest first; the status (relative to consumerGroup when given) is derived per
-- message and filtered here, so the page is read only as far as it needs. `hasMore` instead of a
-- total: counting every message of the window would read them all.
-- The cursor's query gets a custom plan (regina._messages_open); the per-message derivation keeps
-- its cached plans (forcing custom plans here re-planned it for every message, ten times its cost).
create or replace function regina.messages_list(i_query jsonb, i_now timestamptz default null)
returns json
language plpgsql as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_limit integer := coalesce((i_query ->> 'limit')::integer, 200);
    v_offset integer := coalesce((i_query ->> 'offset')::integer, 0);
    v_skip integer := v_offset;
    v_status text := i_query ->> 'status';
    v_queue_ids bigint[];
    v_partition_ids bigint[];
    v_cursor refcursor;
    v_row record;
    v_summary jsonb;
    v_rows json[] := '{}';
    v_more boolean := false;
begin
    if coalesce(i_query ->> 'queue', i_query ->> 'namespace', i_query ->> 'task') is not null
       or regina._query_scopes(i_query) is not null then
        v_queue_ids := array(select q.id from regina.queues q
                             where (i_query ->> 'queue' is null or q.name = i_query ->> 'queue')
                               and (i_query ->> 'namespace' is null or q.namespace = i_query ->> 'namespace')
                               and (i_query ->> 'task' is null or q.task = i_query ->> 'task')
                               and regina._queue_in_scopes(q.name, regina._query_scopes(i_query)));
    end if;
    if i_query ->> 'partition' is not null then
        v_partition_ids := array(select p.id from regina.partitions p
                                 where p.name = i_query ->> 'partition'
                                   and (v_queue_ids is null or p.queue_id = any (v_queue_ids)));
    end if;
    v_cursor := regina._messages_open(null, v_partition_ids, v_queue_ids,
                    coalesce((i_query ->> 'from')::timestamptz, v_now - interval '1 hour'),
                    coalesce((i_query ->> 'to')::timestamptz, v_now));
    if v_status is null and v_skip > 0 then
        move forward v_skip from v_cursor;
        v_skip := 0;
    end if;
    loop
        fetch v_cursor into v_row;
        exit when not found;
        v_summary := regina._message_summary(v_row.m, i_query ->> 'consumerGroup', v_now);
        continue when v_summary ->> 'status' <> coalesce(v_status, v_summary ->> 'status');
        if v_skip > 0 then
            v_skip := v_skip - 1;
            continue;
        end if;
        if cardinality(v_rows) = v_limit then
            v_more := true;
            exit;
        end if;
        v_rows := v_rows || regina._message_list_row(v_row.m, v_row.p, v_row.q, v_summary);
    end loop;
    close v_cursor;
    return json_build_object(
        'messages', array_to_json(v_rows),
        'mode', regina._mode_json(coalesce(v_queue_ids, array(select q.id from regina.queues q))),
        'pagination', json_build_object('limit', v_limit, 'offset', v_offset, 'hasMore', v_more));
end
$$;

-- The stored message (partition, transactionId), or, once retention removed it, the copy kept
-- by one of its dead letters (the most recent). Null when neither exists.
create or replace function regina._message_locate(i_partition_id bigint, i_transaction_id text)
returns regina.messages
language plpgsql stable as $$
declare
    v_m regina.messages;
    v_d regina.dead_letters;
begin
    select * into v_m from regina.messages m
    where m.partition_id = i_partition_id and m.transaction_id = i_transaction_id
      and m.for_group is null
      and m.seq = (regina._stored_key(i_partition_id, i_transaction_id)).o_seq;
    if found then
        return v_m;
    end if;
    select * into v_d from regina.dead_letters d
    where d.partition_id = i_partition_id and d.transaction_id = i_transaction_id
    order by d.failed_at desc limit 1;
    if not found then
        return null;
    end if;
    v_m.partition_id := v_d.partition_id;
    v_m.seq := v_d.seq;
    v_m.id := v_d.message_id;
    v_m.transaction_id := v_d.transaction_id;
    v_m.trace_id := v_d.trace_id;
    v_m.producer_sub := v_d.producer_sub;
    v_m.created_at := v_d.created_at;
    v_m.payload := v_d.payload;
    return v_m;
end
$$;

-- GET /api/v1/messages/:partitionId/:transactionId: the message with its payload, its status
-- overall and per consumer group, its queue's settings and consumers. Null when unknown.
create or replace function regina.message_detail(i_partition_id text, i_transaction_id text,
                                                 i_now timestamptz default null)
returns json
-- Keyed lookups only: a plan made from statistics that call a table tiny must not scan it whole
-- once it has grown.
language plpgsql stable set enable_seqscan = off as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_p regina.partitions;
    v_q regina.queues;
    v_m regina.messages;
    v_summary jsonb;
    v_mode jsonb;
    v_result json;
begin
    select * into v_p from regina.partitions p where p.uuid = regina._uuid_or_null(i_partition_id);
    v_m := regina._message_locate(v_p.id, i_transaction_id);
    if v_m.partition_id is null then
        return null;
    end if;
    select * into v_q from regina.queues q where q.id = v_p.queue_id;
    v_summary := regina._message_summary(v_m, null, v_now);
    v_mode := regina._mode_json(array[v_q.id]);
    select json_build_object(
        'id', v_m.id, 'transactionId', v_m.transaction_id, 'partitionId', v_p.uuid,
        'queuePath', v_q.name || '/' || v_p.name, 'queue', v_q.name, 'partition', v_p.name,
        'namespace', v_q.namespace, 'task', v_q.task, 'status', v_summary -> 'status',
        'payload', v_m.payload, 'isEncrypted', v_m.payload_key_id is not null,
        'payloadKeyId', v_m.payload_key_id, 'traceId', v_m.trace_id,
        'producerSub', v_m.producer_sub, 'createdAt', regina._ts_us(v_m.created_at),
        'errorMessage', (select g.error_message from regina._message_groups(v_m, v_now) g
                         where g.error_message is not null
                         order by g.failed_at desc nulls last, g.consumer_group limit 1),
        'retryCount', (select coalesce(max(g.retry_count), 0) from regina._message_groups(v_m, v_now) g),
        'leaseExpiresAt', v_summary -> 'leaseExpiresAt',
        'queueConfig', json_build_object('leaseTime', v_q.lease_time, 'retryLimit', v_q.retry_limit,
                                         'retryDelay', v_q.retry_delay_ms, 'ttl', v_q.ttl_seconds,
                                         'priority', v_q.priority),
        'mode', v_mode || jsonb_build_object('consumedByGroups', v_summary -> 'busStatus' -> 'consumedBy'),
        'consumerGroups', (
            select coalesce(json_agg(json_build_object(
                       'name', g.consumer_group, 'status', g.status,
                       'consumed', g.status in ('completed', 'dead_letter'),
                       'retryCount', g.retry_count, 'leaseExpiresAt', regina._ts(g.lease_expires_at),
                       'dlq', case when g.status = 'dead_letter' then json_build_object(
                                  'errorMessage', g.error_message,
                                  'failedAt', regina._ts(g.failed_at)) end)
                       order by g.consumer_group), '[]'::json)
            from regina._message_groups(v_m, v_now) g))
    into v_result;
    return v_result;
end
$$;

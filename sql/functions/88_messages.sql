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
-- each with its partition and queue (and `kth`, always false: see regina.messages_list). A
-- cursor, so the caller reads only as far as its page goes.
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
    set enable_sort = off set jit = off as $$
declare
    v_lo bigint := 0;
    v_hi bigint;
begin
    if cardinality(i_partition_ids) = 1 then
        -- The window as a range of offsets, found by binary search (regina._start_seq): a window
        -- that leaves out most of a deep partition is not read across what it leaves out.
        if i_from > '-infinity' then
            v_lo := regina._start_seq(i_partition_ids[1], i_from);
        end if;
        if i_to < (select p.last_created_at from regina.partitions p
                   where p.id = i_partition_ids[1]) then
            v_hi := regina._start_seq(i_partition_ids[1], i_to + interval '1 microsecond');
        end if;
        open i_cursor for
        select m, p, q, false as kth from regina.messages m
        join regina.partitions p on p.id = m.partition_id
        join regina.queues q on q.id = p.queue_id
        where m.partition_id = i_partition_ids[1] and m.for_group is null
          and m.seq >= v_lo and (v_hi is null or m.seq < v_hi)
          and m.created_at >= i_from and m.created_at <= i_to
        order by m.seq desc;
    else
        open i_cursor for
        select m, p, q, false as kth from regina.messages m
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

-- Opens i_cursor on the newest i_k ordinary messages created in [i_from, i_to] of each partition
-- of i_partition_ids, merged in the order of regina._messages_open, each with its partition and
-- queue, and `kth`: whether it is the i_k-th of its partition (older ones of it were left out).
-- Along each partition's offsets, never a scan of the table nor of its createdAt index (as
-- regina._messages_open: statistics that call the table tiny make either look cheap; with sorts
-- off, the only sort left is the merge's, which every plan has).
create or replace function regina._messages_merge_open(i_cursor refcursor,
                                                       i_partition_ids bigint[], i_k bigint,
                                                       i_from timestamptz, i_to timestamptz)
returns refcursor
language plpgsql set plan_cache_mode = force_custom_plan set enable_seqscan = off
    set enable_sort = off set jit = off as $$
begin
    open i_cursor for
    select x.m, p, q, x.n = i_k as kth
    from regina.partitions p
    join regina.queues q on q.id = p.queue_id
    cross join lateral (select mm as m, row_number() over (order by mm.seq desc) as n
                        from regina.messages mm
                        where mm.partition_id = p.id and mm.for_group is null
                          and mm.created_at >= i_from and mm.created_at <= i_to
                        order by mm.seq desc
                        limit i_k) x
    where p.id = any (i_partition_ids)
    order by (x.m).created_at desc, p.id desc, (x.m).seq desc;
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
--
-- The messages of given queues are read in one of two ways, in the same order. The createdAt
-- index of every message walks past the newer messages of all other queues: a page of a quiet
-- queue in a busy database read the whole window of every queue (2 000 000 index entries and
-- their partitions for ten messages). So when the queues have few partitions and are small next
-- to the table (_messages_merge_fits), the newest k messages of each partition in the window are
-- merged instead (along its offsets: createdAt never decreases along them), k = offset + limit + 1
-- to start with. The merge is exact up to the k-th message of any partition (the ones it leaves
-- out are older), so a status filter that needs to read past one starts again with 4k, or with
-- the index once partitions x 4k passes the bound.
create or replace function regina.messages_list(i_query jsonb, i_now timestamptz default null)
returns json
language plpgsql as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_limit integer := coalesce((i_query ->> 'limit')::integer, 200);
    v_offset integer := coalesce((i_query ->> 'offset')::integer, 0);
    v_from timestamptz := coalesce((i_query ->> 'from')::timestamptz, v_now - interval '1 hour');
    v_to timestamptz := coalesce((i_query ->> 'to')::timestamptz, v_now);
    v_skip integer;
    v_status text := i_query ->> 'status';
    v_queue_ids bigint[];
    v_partition_ids bigint[];
    v_merge bigint[];      -- the partitions to merge, null: the createdAt index
    v_k bigint := v_offset::bigint + v_limit + 1;
    v_cut boolean;         -- a row read was the k-th of its partition
    v_again boolean;
    v_cursor refcursor;
    v_row record;
    v_summary jsonb;
    v_rows json[];
    v_more boolean;
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
    elsif v_queue_ids is not null then
        v_merge := regina._messages_merge_fits(v_queue_ids, v_k);
    end if;
    loop
        if v_merge is not null then
            v_cursor := regina._messages_merge_open(null, v_merge, v_k, v_from, v_to);
        else
            v_cursor := regina._messages_open(null, v_partition_ids, v_queue_ids, v_from, v_to);
        end if;
        v_skip := v_offset;
        v_rows := '{}';
        v_more := false;
        v_cut := false;
        v_again := false;
        if v_status is null and v_skip > 0 then
            move forward v_skip from v_cursor;
            v_skip := 0;
        end if;
        loop
            fetch v_cursor into v_row;
            -- Past the k-th message of a partition (or at the end after it) the merge may have
            -- left older ones of that partition out.
            v_again := v_cut;
            exit when not found or v_again;
            v_cut := v_row.kth;
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
        exit when not v_again;
        v_k := v_k * 4;
        if cardinality(v_merge) * v_k > 100000 then
            v_merge := null;
        end if;
    end loop;
    return json_build_object(
        'messages', array_to_json(v_rows),
        'mode', regina._mode_json(coalesce(v_queue_ids, array(select q.id from regina.queues q))),
        'pagination', json_build_object('limit', v_limit, 'offset', v_offset, 'hasMore', v_more));
end
$$;

-- The partitions of queues i_queue_ids when a listing that needs i_k messages of each should
-- merge them rather than walk the createdAt index of every message (regina.messages_list); null
-- otherwise. Merging reads up to what the queues store, the walk about i_k x (messages of all
-- queues / messages of these), so the merge is chosen while the queues' count (as of the last
-- stats refresh) stays under the larger of 10 000 and sqrt(i_k x messages of all queues, as the
-- planner's statistics have it); and while partitions x i_k stays under 100 000.
create or replace function regina._messages_merge_fits(i_queue_ids bigint[], i_k bigint)
returns bigint[]
language plpgsql stable as $$
declare
    v_ids bigint[] := array(select p.id from regina.partitions p
                            where p.queue_id = any (i_queue_ids)
                            limit 100000 / greatest(i_k, 1) + 1);
    v_stored bigint := coalesce((select sum(s.total) from regina.queue_stats s
                                 where s.queue_id = any (i_queue_ids)), 0);
    v_all double precision := greatest((select c.reltuples from pg_class c
                                        where c.oid = 'regina.messages'::regclass), 0);
begin
    if cardinality(v_ids) * i_k <= 100000
       and v_stored <= greatest(10000, sqrt(i_k * v_all)) then
        return v_ids;
    end if;
    return null;
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
language plpgsql stable set enable_seqscan = off set jit = off as $$
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

-- Trace events (http-api.md §3.11; tables in migrations/0008_traces.sql, decisions in
-- docs/adr/0011): recording, the three readings, and deletion with their messages.
--
-- Locks, in the order everyone takes them: a recording locks the stored rows of its message
-- (`for key share`), then its names' summary rows in byte-wise name order. A deletion deletes
-- message rows first and takes summary rows last, in the same order, in
-- regina._trace_names_settle at the end of its transaction. So nobody waits for a message row
-- while holding a summary row, and summary rows are always taken in one order: no deadlock
-- between recordings and deletions.

-- The body of a failed recording: `success: false`, the error text, its code.
create or replace function regina._trace_failure(i_code text) returns json
language sql stable as $$
    select json_build_object(
        'success', false,
        'error', case i_code
                     when 'message_not_found' then 'Message not found'
                     when 'forbidden' then 'Insufficient permissions'
                 end,
        'code', i_code)
$$;

-- Ids of the queues scopes allow; null when scopes allow every queue.
create or replace function regina._trace_queue_ids(i_scopes text[]) returns bigint[]
language sql stable as $$
    select case when i_scopes is not null
                then array(select q.id from regina.queues q
                           where regina._queue_in_scopes(q.name, i_scopes)) end
$$;

-- POST /api/v1/traces: records one event on the message (partitionId, transactionId).
-- i_req = {id (uuid), partitionId, transactionId, eventType, consumerGroup, workerId (text|null),
-- traceNames: [text], scopes?}, i_data = the event's data (any JSON but null), kept verbatim.
-- Names repeated in traceNames count once. The message must be stored — its ordinary row or a
-- requeued delivery; a message that lives on only as a dead letter has no stored row, and its
-- events went when its row did. Answers {success: true, traceId}, or a failure body with
-- message_not_found or forbidden (its queue outside the scopes).
create or replace function regina.trace_record(i_req jsonb, i_data json,
                                               i_now timestamptz default null)
returns json
-- Keyed lookups only: a plan made from statistics that call a table tiny must not scan it whole
-- once it has grown.
language plpgsql set enable_seqscan = off set jit = off as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_id uuid := (i_req ->> 'id')::uuid;
    v_transaction_id text := i_req ->> 'transactionId';
    v_names text[] := array(select x.name
                            from jsonb_array_elements_text(coalesce(i_req -> 'traceNames', '[]'))
                                 with ordinality x(name, i)
                            group by x.name order by min(x.i));
    v_p regina.partitions;
    v_stored integer;
    v_requeued integer;
    v_new text[];
begin
    select * into v_p from regina.partitions p
    where p.uuid = regina._uuid_or_null(i_req ->> 'partitionId');
    if not found then
        return regina._trace_failure('message_not_found');
    end if;
    if not regina._queue_in_scopes((select q.name from regina.queues q where q.id = v_p.queue_id),
                                   regina._query_scopes(i_req)) then
        return regina._trace_failure('forbidden');
    end if;
    -- Every stored row of the message, locked: a deletion of the message waits for this event
    -- (and then deletes it too), or this call sees the message gone.
    perform 1 from regina.messages m
    where m.partition_id = v_p.id and m.transaction_id = v_transaction_id and m.for_group is null
      and m.seq = (regina._stored_key(v_p.id, v_transaction_id)).o_seq
    for key share;
    get diagnostics v_stored = row_count;
    perform 1 from regina.messages r
    where r.partition_id = v_p.id and r.for_group is not null
      and r.transaction_id = v_transaction_id
    for key share;
    get diagnostics v_requeued = row_count;
    if v_stored + v_requeued = 0 then
        return regina._trace_failure('message_not_found');
    end if;
    -- The summary rows of the names, locked in name order; then whether each name is new to the
    -- message, read under those locks so concurrent events of one message count it once.
    insert into regina.trace_name_stats (name, queue_id, trace_count, message_count, last_seen)
    select n, v_p.queue_id, 0, 0, v_now from unnest(v_names) n order by n collate "C"
    on conflict (name, queue_id) do update
    set last_seen = greatest(regina.trace_name_stats.last_seen, excluded.last_seen);
    v_new := array(select n from unnest(v_names) n
                   where not exists (select 1 from regina.trace_names t
                                     where t.partition_id = v_p.id
                                       and t.transaction_id = v_transaction_id and t.name = n));
    insert into regina.traces (id, partition_id, transaction_id, event_type, data, consumer_group,
                               worker_id, trace_names, created_at)
    values (v_id, v_p.id, v_transaction_id, i_req ->> 'eventType', i_data,
            i_req ->> 'consumerGroup', i_req ->> 'workerId', v_names, v_now);
    insert into regina.trace_names (name, created_at, trace_id, partition_id, transaction_id,
                                    queue_id, first_of_message)
    select n, v_now, v_id, v_p.id, v_transaction_id, v_p.queue_id, n = any (v_new)
    from unnest(v_names) n;
    update regina.trace_name_stats s
    set trace_count = s.trace_count + 1,
        message_count = s.message_count + case when s.name = any (v_new) then 1 else 0 end
    where s.queue_id = v_p.queue_id and s.name = any (v_names);
    return json_build_object('success', true, 'traceId', v_id);
end
$$;

-- One event as GET /traces/{partitionId}/{transactionId} lists it.
create or replace function regina._trace_row(i_t regina.traces) returns json
language sql stable as $$
    select json_build_object(
        'id', i_t.id, 'event_type', i_t.event_type, 'data', i_t.data,
        'consumer_group', i_t.consumer_group, 'worker_id', i_t.worker_id,
        'created_at', regina._ts(i_t.created_at), 'trace_names', to_json(i_t.trace_names))
$$;

-- GET /api/v1/traces/{partitionId}/{transactionId}: the message's events, oldest first.
-- i_query = {partitionId, transactionId, scopes?}. A message that is unknown, has no events, or
-- lies in a queue outside the scopes has an empty list.
create or replace function regina.traces_by_message(i_query jsonb) returns json
-- Keyed lookups only: a plan made from statistics that call a table tiny must not scan it whole
-- once it has grown.
language plpgsql stable set enable_seqscan = off set jit = off as $$
declare
    v_p regina.partitions;
begin
    select * into v_p from regina.partitions p
    where p.uuid = regina._uuid_or_null(i_query ->> 'partitionId');
    if not found or not regina._queue_in_scopes(
            (select q.name from regina.queues q where q.id = v_p.queue_id),
            regina._query_scopes(i_query)) then
        return json_build_object('traces', json_build_array());
    end if;
    return json_build_object('traces', coalesce(
        (select json_agg(regina._trace_row(t) order by t.created_at, t.id)
         from regina.traces t
         where t.partition_id = v_p.id and t.transaction_id = i_query ->> 'transactionId'),
        json_build_array()));
end
$$;

-- The stored row of message (partition, transactionId) whose payload trace listings show: the
-- ordinary row, else its latest requeued delivery (same payload, copied from the dead letter).
create or replace function regina._trace_message(i_partition_id bigint, i_transaction_id text)
returns regina.messages
language plpgsql stable as $$
declare
    v_m regina.messages;
begin
    select * into v_m from regina.messages m
    where m.partition_id = i_partition_id and m.transaction_id = i_transaction_id
      and m.for_group is null
      and m.seq = (regina._stored_key(i_partition_id, i_transaction_id)).o_seq;
    if not found then
        select * into v_m from regina.messages r
        where r.partition_id = i_partition_id and r.for_group is not null
          and r.transaction_id = i_transaction_id
        order by r.seq desc
        limit 1;
    end if;
    return v_m;
end
$$;

-- One event as GET /traces/by-name lists it. A payload sealed at rest comes with `messageId` and
-- `payloadKeyId`, from which the broker decrypts it, then removes both.
create or replace function regina._trace_named_row(i_t regina.traces, i_p regina.partitions,
                                                   i_queue_name text, i_m regina.messages)
returns json
language sql stable as $$
    select case when i_m.payload_key_id is null then json_build_object(
        'id', i_t.id, 'transaction_id', i_t.transaction_id, 'partition_id', i_p.uuid,
        'event_type', i_t.event_type, 'data', i_t.data, 'consumer_group', i_t.consumer_group,
        'worker_id', i_t.worker_id, 'created_at', regina._ts(i_t.created_at),
        'queue_name', i_queue_name, 'partition_name', i_p.name, 'message_payload', i_m.payload,
        'trace_names', to_json(i_t.trace_names))
    else json_build_object(
        'id', i_t.id, 'transaction_id', i_t.transaction_id, 'partition_id', i_p.uuid,
        'event_type', i_t.event_type, 'data', i_t.data, 'consumer_group', i_t.consumer_group,
        'worker_id', i_t.worker_id, 'created_at', regina._ts(i_t.created_at),
        'queue_name', i_queue_name, 'partition_name', i_p.name, 'message_payload', i_m.payload,
        'trace_names', to_json(i_t.trace_names),
        'messageId', i_m.id, 'payloadKeyId', i_m.payload_key_id) end
$$;

-- GET /api/v1/traces/by-name/{traceName}: the events carrying a name, newest first, one page.
-- i_query = {name, limit, offset, scopes?}; events of queues outside the scopes are left out, of
-- the rows and of `total` (from the summary: no count over the events).
create or replace function regina.traces_by_name(i_query jsonb) returns json
language plpgsql stable as $$
declare
    v_name text := i_query ->> 'name';
    v_limit integer := (i_query ->> 'limit')::integer;
    v_offset integer := (i_query ->> 'offset')::integer;
    v_queue_ids bigint[] := regina._trace_queue_ids(regina._query_scopes(i_query));
    v_total bigint;
    v_rows json;
begin
    select coalesce(sum(s.trace_count), 0) into v_total
    from regina.trace_name_stats s
    where s.name = v_name and (v_queue_ids is null or s.queue_id = any (v_queue_ids));
    select json_agg(regina._trace_named_row(t, p, q.name, regina._trace_message(n.partition_id,
                                                                                n.transaction_id))
                    order by n.created_at desc, n.trace_id desc)
    into v_rows
    from (select * from regina.trace_names n
          where n.name = v_name and (v_queue_ids is null or n.queue_id = any (v_queue_ids))
          order by n.created_at desc, n.trace_id desc
          limit v_limit offset v_offset) n
    join regina.traces t on t.id = n.trace_id
    join regina.partitions p on p.id = n.partition_id
    join regina.queues q on q.id = n.queue_id;
    return json_build_object(
        'traces', coalesce(v_rows, json_build_array()), 'total', v_total,
        'pagination', json_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total));
end
$$;

-- GET /api/v1/traces/names: trace names, most recently seen first, one page. i_query = {limit,
-- offset, scopes?}. A name's counts add up its summary rows of the queues the scopes allow; the
-- page walks the summary's last_seen index, keeping each name at its latest row.
create or replace function regina.trace_names_list(i_query jsonb) returns json
language plpgsql stable as $$
declare
    v_limit integer := (i_query ->> 'limit')::integer;
    v_offset integer := (i_query ->> 'offset')::integer;
    v_queue_ids bigint[] := regina._trace_queue_ids(regina._query_scopes(i_query));
    v_total bigint;
    v_rows json;
begin
    select count(*) into v_total
    from (select s.name from regina.trace_name_stats s
          where v_queue_ids is null or s.queue_id = any (v_queue_ids)
          group by s.name) x;
    select json_agg(json_build_object(
               'trace_name', x.name, 'trace_count', c.traces, 'message_count', c.messages,
               'last_seen', regina._ts(x.last_seen))
           order by x.last_seen desc, x.name)
    into v_rows
    from (select s.name, s.last_seen from regina.trace_name_stats s
          where (v_queue_ids is null or s.queue_id = any (v_queue_ids))
            and not exists (select 1 from regina.trace_name_stats o
                            where o.name = s.name
                              and (v_queue_ids is null or o.queue_id = any (v_queue_ids))
                              and (o.last_seen, o.queue_id) > (s.last_seen, s.queue_id))
          order by s.last_seen desc, s.name
          limit v_limit offset v_offset) x
    cross join lateral (select sum(a.trace_count) as traces, sum(a.message_count) as messages
                        from regina.trace_name_stats a
                        where a.name = x.name
                          and (v_queue_ids is null or a.queue_id = any (v_queue_ids))) c;
    return json_build_object(
        'trace_names', coalesce(v_rows, json_build_array()), 'total', v_total,
        'pagination', json_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total));
end
$$;

-- Whether partition i_partition_id has trace events: one index probe. Most partitions have none,
-- while the statistics see the events spread evenly over the partitions that do; a scalar
-- subquery ordered by the index keeps even a generic plan from scanning the table to find none
-- (an `exists` would drop the ordering).
create or replace function regina._partition_traced(i_partition_id bigint) returns boolean
language sql stable as $$
    select (select t.partition_id from regina.traces t
            where t.partition_id = i_partition_id
            order by t.partition_id, t.transaction_id
            limit 1) is not null
$$;

-- Deletes the events of messages of partition i_partition_id that have no stored row left, and
-- debits their names for this transaction (regina._trace_names_settle applies the debits; every
-- caller calls it before its transaction ends). i_transaction_ids: messages whose ordinary row
-- is gone, or was never stored (a requeued delivery whose original went earlier); null: every
-- message of the partition with events, each checked. A requeued delivery still stored keeps
-- its message's events.
create or replace function regina._traces_forget(i_partition_id bigint,
                                                 i_transaction_ids text[] default null)
returns void
language plpgsql as $$
declare
    v_transaction_ids text[] := i_transaction_ids;
begin
    if not regina._partition_traced(i_partition_id) then
        return;
    end if;
    if v_transaction_ids is null then
        v_transaction_ids := array(
            select distinct t.transaction_id from regina.traces t
            where t.partition_id = i_partition_id
              and not exists (select 1 from regina.messages m
                              where m.partition_id = i_partition_id and m.for_group is null
                                and m.transaction_id = t.transaction_id));
    end if;
    v_transaction_ids := array(select x from unnest(v_transaction_ids) x
                               except
                               select r.transaction_id from regina.messages r
                               where r.partition_id = i_partition_id and r.for_group is not null);
    with gone as (
        delete from regina.traces t
        where t.partition_id = i_partition_id and t.transaction_id = any (v_transaction_ids)),
    named as (
        delete from regina.trace_names n
        where n.partition_id = i_partition_id and n.transaction_id = any (v_transaction_ids)
        returning n.name, n.queue_id, n.first_of_message)
    -- A message's events all go at once, so each of its names loses one message: the row that
    -- counted it.
    insert into regina.trace_name_debits (xact_id, name, queue_id, trace_count, message_count)
    select pg_current_xact_id(), n.name, n.queue_id, count(*),
           count(*) filter (where n.first_of_message)
    from named n
    group by n.name, n.queue_id;
end
$$;

-- Applies this transaction's debits to the names summary, taking its rows in name order after
-- every message row the transaction deleted; a row whose count reaches 0 goes. Called last by
-- every function that deletes messages.
create or replace function regina._trace_names_settle() returns void
language plpgsql as $$
declare
    v_xact xid8 := pg_current_xact_id_if_assigned();
begin
    -- A transaction that wrote nothing has no debits (and gets no transaction id here).
    if v_xact is null
       or not exists (select 1 from regina.trace_name_debits d where d.xact_id = v_xact) then
        return;
    end if;
    perform 1 from regina.trace_name_stats s
    where (s.name, s.queue_id) in (select d.name, d.queue_id from regina.trace_name_debits d
                                   where d.xact_id = v_xact)
    order by s.name, s.queue_id
    for update;
    update regina.trace_name_stats s
    set trace_count = s.trace_count - d.traces, message_count = s.message_count - d.messages
    from (select d.name, d.queue_id, sum(d.trace_count) as traces,
                 sum(d.message_count) as messages
          from regina.trace_name_debits d
          where d.xact_id = v_xact
          group by d.name, d.queue_id) d
    where s.name = d.name and s.queue_id = d.queue_id;
    delete from regina.trace_name_stats s
    where s.trace_count <= 0
      and (s.name, s.queue_id) in (select d.name, d.queue_id from regina.trace_name_debits d
                                   where d.xact_id = v_xact);
    delete from regina.trace_name_debits d where d.xact_id = v_xact;
end
$$;

-- Streams (streams-api.md): query registration, state reads and the cycle — state changes, sink
-- pushes and the source ack in one transaction, all or nothing (ADR 0013).
--
-- Locks, always in this order (so cycles, registrations, transactions and acks cannot deadlock):
--   1. the query: a transaction-level advisory lock on its id, shared by cycles, exclusive for a
--      reset and a query delete. An advisory lock, not a row lock: a shared row lock on the query
--      row would be written into that row by every cycle of every shard (multixacts on one hot
--      tuple), where the lock manager keeps the shared lock in memory;
--   2. the state shard: the stream_shards row of (query, source partition), upserted by the
--      cycle, so the cycles of one shard are serialised and other shards run in parallel;
--   3. then the order of regina.transaction (60_transaction.sql): the acked cursor, the capacity
--      locks and the queues and partitions pushes create, the partitions pushes write.
-- Registrations of one name are serialised by an advisory lock on the name, taken before 1.

-- Advisory lock keys. Distinct prefixes keep them apart from every other advisory lock user.
create or replace function regina._stream_name_key(i_name text) returns bigint
language sql immutable as $$ select hashtextextended('regina.stream.name/' || i_name, 0) $$;

create or replace function regina._stream_query_key(i_query_id uuid) returns bigint
language sql immutable as $$ select hashtextextended('regina.stream.query/' || i_query_id::text, 0) $$;

-- Deleting a query (SQL or admin) deletes its shards and state. It first waits for the cycles in
-- flight and keeps new ones out (lock 1, exclusive): nothing is written for a deleted query.
create or replace function regina._stream_query_deleted() returns trigger
language plpgsql as $$
begin
    perform pg_advisory_xact_lock(regina._stream_query_key(old.query_id));
    delete from regina.stream_state s where s.query_id = old.query_id;
    delete from regina.stream_shards h where h.query_id = old.query_id;
    return old;
end
$$;

create or replace trigger stream_queries_delete before delete on regina.stream_queries
for each row execute function regina._stream_query_deleted();

-- Registers a query (§3.1). i_req: {name, source_queue, sink_queue, config_hash, reset,
-- query_id (the id a new query gets)}. Answers the success body, or `{success: false, code:
-- "config_hash_mismatch", query_id, name}` with nothing changed.
create or replace function regina.stream_register(i_req jsonb, i_now timestamptz default null)
returns jsonb
language plpgsql as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_name text := i_req ->> 'name';
    v_hash text := i_req ->> 'config_hash';
    v_q regina.stream_queries;
    v_reset boolean := false;
begin
    perform pg_advisory_xact_lock(regina._stream_name_key(v_name));
    select * into v_q from regina.stream_queries q where q.name = v_name;
    if not found then
        insert into regina.stream_queries (query_id, name, source_queue, sink_queue, config_hash,
                                           created_at, updated_at)
        values ((i_req ->> 'query_id')::uuid, v_name, i_req ->> 'source_queue',
                i_req ->> 'sink_queue', v_hash, v_now, v_now)
        returning * into v_q;
        return jsonb_build_object('success', true, 'query_id', v_q.query_id, 'name', v_q.name,
                                  'config_hash', v_q.config_hash, 'fresh', true, 'reset', false);
    end if;
    if v_q.config_hash <> v_hash then
        if not coalesce((i_req ->> 'reset')::boolean, false) then
            return jsonb_build_object('success', false, 'code', 'config_hash_mismatch',
                                      'query_id', v_q.query_id, 'name', v_q.name);
        end if;
        -- Waits for the cycles in flight and keeps new ones out until the wipe commits.
        perform pg_advisory_xact_lock(regina._stream_query_key(v_q.query_id));
        delete from regina.stream_state s where s.query_id = v_q.query_id;
        v_reset := true;
    end if;
    update regina.stream_queries q
    set source_queue = i_req ->> 'source_queue', sink_queue = i_req ->> 'sink_queue',
        config_hash = v_hash, updated_at = v_now
    where q.query_id = v_q.query_id;
    return jsonb_build_object('success', true, 'query_id', v_q.query_id, 'name', v_q.name,
                              'config_hash', v_hash, 'fresh', false, 'reset', v_reset);
end
$$;

-- The source queue of a query, null for an unknown one (the edge checks the caller's scopes).
create or replace function regina.stream_source_queue(i_query_id uuid) returns text
language sql stable as $$
    select q.source_queue from regina.stream_queries q where q.query_id = i_query_id
$$;

-- Reads a shard's state (§3.2). i_req: {query_id, partition_id, keys (array, [] = all),
-- key_prefix (literal; null or "" = none), ripe_at_or_before (number or null)}. The filters
-- combine with AND; rows come in key byte order. No locks: read committed.
create or replace function regina.stream_state_get(i_req jsonb) returns json
language sql stable as $$
    select json_build_object('success', true, 'rows', coalesce(json_agg(json_build_object(
               'key', s.key, 'value', s.value, 'updated_at', regina._ts(s.updated_at))
               order by s.key), '[]'))
    from regina.stream_state s
    where s.query_id = (i_req ->> 'query_id')::uuid
      and s.partition_id = (i_req ->> 'partition_id')::uuid
      and (jsonb_array_length(i_req -> 'keys') = 0
           or s.key = any (array(select jsonb_array_elements_text(i_req -> 'keys') collate "C")))
      and (coalesce(i_req ->> 'key_prefix', '') = ''
           or starts_with(s.key, (i_req ->> 'key_prefix') collate "C"))
      and (i_req -> 'ripe_at_or_before' is null or jsonb_typeof(i_req -> 'ripe_at_or_before') = 'null'
           or (jsonb_typeof(s.value) = 'object' and jsonb_typeof(s.value -> 'windowEnd') = 'number'
               and (s.value ->> 'windowEnd')::numeric <= (i_req ->> 'ripe_at_or_before')::numeric))
$$;

-- Ends a cycle with nothing applied: raises SQLSTATE RGTXA whose detail is `{code, error}` plus
-- i_extra (a refused push item's `queueName` and `index`): the refusal regina.transaction raises.
create or replace function regina._stream_abort(i_code text, i_error text,
                                                i_extra jsonb default '{}')
returns void
language plpgsql as $$
begin
    raise exception using
        errcode = 'RGTXA',
        message = i_error,
        detail = (jsonb_build_object('code', i_code, 'error', i_error) || i_extra)::text;
end
$$;

-- Applies a cycle's state ops to its shard (lock 2 held). Ops apply in array order, each seeing
-- the ones before it: so the last op on a key decides it, and one delete plus one upsert
-- statement apply them all. i_ops: [{type: "upsert"|"delete", key, value}] (value present).
create or replace function regina._stream_state_apply(i_query_id uuid, i_partition_id uuid,
                                                      i_ops jsonb, i_now timestamptz)
returns void
language plpgsql as $$
begin
    delete from regina.stream_state s
    using (select distinct on (k) k, t
           from (select (o.e ->> 'key') collate "C" as k, o.e ->> 'type' as t, o.ord
                 from jsonb_array_elements(i_ops) with ordinality o(e, ord)) x
           order by k, ord desc) l
    where l.t = 'delete' and s.query_id = i_query_id and s.partition_id = i_partition_id
      and s.key = l.k;
    insert into regina.stream_state as s (query_id, partition_id, key, value, updated_at)
    select i_query_id, i_partition_id, l.k, l.v, i_now
    from (select distinct on (k) k, t, v
          from (select (o.e ->> 'key') collate "C" as k, o.e ->> 'type' as t,
                       o.e -> 'value' as v, o.ord
                from jsonb_array_elements(i_ops) with ordinality o(e, ord)) x
          order by k, ord desc) l
    where l.t = 'upsert'
    order by l.k
    on conflict (query_id, partition_id, key)
    do update set value = excluded.value, updated_at = excluded.updated_at;
end
$$;

-- The lease check of a cycle's `completed` ack (§3.3, the table of http-api.md §4.6) against the
-- locked cursor, changing nothing in the database: null (apply), 'replay' (a retried cycle that
-- already committed), or the refusal's code. An expired lease is accounted in io_c only (a
-- refusal rolls it back; the next claim, ack or sweep accounts it for good).
create or replace function regina._stream_ack_check(inout io_c regina.cursors,
                                                    i_item regina.ack_item, i_q regina.queues,
                                                    i_now timestamptz, out o_code text)
language plpgsql as $$
begin
    if io_c.partition_id is null then
        o_code := case when i_item.lease_text is null then 'not_leased' else 'lease_expired' end;
        return;
    end if;
    if io_c.lease_active and io_c.lease_expires_at <= i_now then
        io_c := (regina._lease_expire(io_c, i_q, i_now)).c;
    end if;
    if i_item.seq < io_c.next_seq or i_item.seq = any (io_c.marks)
       or i_item.seq = any (io_c.lease_marks) then
        -- Settled: a replay when the lease named is the active one (m in its range), the latest
        -- one (ended, whichever way), or the last one that ended fully settled.
        o_code := case
            when i_item.lease_text is null then 'already_settled'
            when i_item.lease_id = io_c.last_lease_id
                 or (i_item.lease_id = io_c.lease_id
                     and (not io_c.lease_active or i_item.seq <= io_c.lease_end_seq))
                then 'replay'
            else 'lease_expired' end;
    elsif not io_c.lease_active or i_item.seq > io_c.lease_end_seq
          or (i_item.lease_text is not null and io_c.lease_id is distinct from i_item.lease_id) then
        o_code := case when i_item.lease_text is null then 'not_leased' else 'lease_expired' end;
    end if;
end
$$;

-- Applies a checked cumulative `completed` ack of message i_item.seq (§3.3): every unsettled
-- message of the group's view up to it is settled (they all lie in the lease: the head is at or
-- past the lease's first message, and i_item.seq is inside it), the head moves over the settled
-- prefix, and the lease ends when its range is settled. Otherwise it ends without charging
-- anything (i_release), or stays active, parked: its expiry then charges no attempt.
create or replace function regina._stream_ack_completed(inout io_c regina.cursors,
                                                        i_item regina.ack_item,
                                                        i_release boolean, i_now timestamptz,
                                                        out o_count integer,
                                                        out o_released boolean)
language plpgsql as $$
declare
    v_prefix bigint[];
begin
    v_prefix := array(
        select m.seq from regina.messages m
        where m.partition_id = io_c.partition_id and m.seq >= io_c.next_seq
          and m.seq < i_item.seq
          and (m.for_group is null or m.for_group = io_c.consumer_group)
          and m.seq <> all (io_c.marks || io_c.lease_marks)
        order by m.seq);
    io_c.lease_marks := io_c.lease_marks || v_prefix;
    io_c := regina._ack_settle(io_c, i_item.seq, false, i_now);
    io_c.total_consumed := io_c.total_consumed + cardinality(v_prefix);
    o_count := cardinality(v_prefix) + 1;
    if io_c.lease_active and i_release then
        -- As an ack `retry` ends a lease: nothing charged, the rest deliverable at once.
        io_c.lease_active := false;
        io_c.lease_marks := '{}';
    end if;
    o_released := not io_c.lease_active;
    perform regina._cursor_save(io_c, i_now);
    if io_c.lease_active then
        update regina.cursors c set parked_lease_id = io_c.lease_id
        where c.partition_id = io_c.partition_id and c.consumer_group = io_c.consumer_group;
    end if;
end
$$;

-- The `ack_result` of a cycle's ack (§3.3), from a regina.ack result for the other statuses.
create or replace function regina._stream_ack_result(i_count integer, i_released boolean,
                                                    i_dlq boolean)
returns jsonb
language sql stable as $$
    select jsonb_build_object('success', true, 'count', i_count, 'lease_released', i_released,
                              'dlq', i_dlq)
$$;

-- Resolves a cycle's ack, locks its cursor and checks a `completed` ack's lease. Returns the
-- item, the locked cursor (as checked) and whether the cycle is a replay; refusals abort.
create or replace function regina._stream_ack_prepare(i_ack jsonb, i_now timestamptz,
                                                     out o_item regina.ack_item,
                                                     out o_c regina.cursors,
                                                     out o_replay boolean)
language plpgsql as $$
declare
    v_q regina.queues;
    v_code text;
    v_check record;
begin
    o_replay := false;
    select * into o_item from regina._ack_items(jsonb_build_array(i_ack));
    if o_item.seq is null then
        v_code := case when o_item.lease_text is not null and not exists (
                            select 1 from regina.cursors c
                            where c.lease_id = o_item.lease_id and c.lease_active
                              and c.lease_expires_at > i_now)
                       then 'lease_expired' else 'message_not_found' end;
    elsif o_item.group_mismatch then
        v_code := 'group_mismatch';
    else
        select * into v_q from regina.queues q where q.id = o_item.queue_id;
        select * into o_c from regina.cursors c
        where c.partition_id = o_item.partition_id and c.consumer_group = o_item.consumer_group
        for update;
        if o_item.status = 'completed' then
            select * into v_check from regina._stream_ack_check(o_c, o_item, v_q, i_now);
            o_c := v_check.io_c;
            v_code := v_check.o_code;
            o_replay := v_code = 'replay';
            v_code := nullif(v_code, 'replay');
        end if;
    end if;
    if v_code is not null then
        perform regina._stream_abort(v_code,
            regina._ack_result(o_item, v_code, false, false) ->> 'error');
    end if;
end
$$;

-- Commits one cycle (§3.3). i_req: {query_id, partition_id, state_ops (as _stream_state_apply),
-- push_items (regina.push elements), ack (an /ack item with partitionId and consumerGroup set, or
-- null), release_lease}; i_payloads: the pushed payloads. One row per pushed item (kind `push`,
-- its push entry), one for the ack (kind `ack`: ack_result, the waiters to wake and the metrics
-- columns of regina.ack), and a last one (kind `cycle`: queueName, state_ops_applied,
-- replayed). A refusal raises RGTXA (`_stream_abort`) with nothing applied.
create or replace function regina.stream_cycle(i_req jsonb, i_payloads json default null,
                                               i_now timestamptz default null)
returns table (idx integer, result jsonb, wake_queue text, wake_group text, queue_name text,
               acked text, dead_lettered integer, leases_expired integer, kind text)
-- Keyed lookups only: a plan made from statistics that call a table tiny must not scan it whole
-- once it has grown.
language plpgsql set enable_seqscan = off set jit = off as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_query_id uuid := (i_req ->> 'query_id')::uuid;
    v_partition uuid := (i_req ->> 'partition_id')::uuid;
    v_ops jsonb := coalesce(i_req -> 'state_ops', '[]');
    v_items jsonb := coalesce(i_req -> 'push_items', '[]');
    v_ack jsonb := nullif(i_req -> 'ack', 'null'::jsonb);
    v_source text;
    v_prep record;
    v_item regina.ack_item;
    v_c regina.cursors;
    v_pushed regina.push_item[];
    v_row record;
    v_done record;
begin
    -- Locks 1 and 2.
    perform pg_advisory_xact_lock_shared(regina._stream_query_key(v_query_id));
    if not exists (select 1 from regina.stream_queries q where q.query_id = v_query_id) then
        perform regina._stream_abort('query_not_found', 'Query not found');
    end if;
    insert into regina.stream_shards as h (query_id, partition_id, last_cycle_at, cycles)
    values (v_query_id, v_partition, v_now, 1)
    on conflict (query_id, partition_id)
    do update set last_cycle_at = excluded.last_cycle_at, cycles = h.cycles + 1;
    select q.name into v_source from regina.partitions p join regina.queues q on q.id = p.queue_id
    where p.uuid = v_partition;

    -- Lock 3: the acked cursor (and the lease check), then what the pushes write.
    if v_ack is not null then
        select * into v_prep from regina._stream_ack_prepare(v_ack, v_now);
        v_item := v_prep.o_item;
        v_c := v_prep.o_c;
        if v_prep.o_replay then
            return query select 0, jsonb_build_object('queueName', v_source,
                                    'state_ops_applied', 0, 'replayed', true),
                                null::text, null::text, null::text, null::text, 0, 0, 'cycle'::text;
            return;
        end if;
    end if;
    if jsonb_array_length(v_items) > 0 then
        select r.o_items into v_pushed from regina._push_resolve(v_items, null, true) r;
        perform regina._push_lock(array(select distinct x.partition_id from unnest(v_pushed) x));
    end if;

    perform regina._stream_state_apply(v_query_id, v_partition, v_ops, v_now);

    if jsonb_array_length(v_items) > 0 then
        for v_row in select * from regina.push(v_items, i_payloads, false, v_now) r order by r.idx
        loop
            if v_row.result ->> 'status' = 'failed' then
                perform regina._stream_abort(v_row.result ->> 'code', v_row.result ->> 'error',
                    jsonb_build_object('queueName', v_row.result -> 'queueName', 'index', v_row.idx));
            end if;
            return query select v_row.idx, v_row.result, null::text, null::text,
                                v_row.result ->> 'queueName', null::text, 0, 0, 'push'::text;
        end loop;
    end if;

    if v_ack is not null then
        if v_item.status = 'completed' then
            select * into v_done
            from regina._stream_ack_completed(v_c, v_item,
                                              coalesce((i_req ->> 'release_lease')::boolean, true),
                                              v_now);
            return query select 0, regina._stream_ack_result(v_done.o_count, v_done.o_released,
                                                             false),
                                case when v_done.o_released then v_item.queue_name end,
                                case when v_done.o_released then v_item.consumer_group end,
                                v_item.queue_name, 'completed'::text, 0, 0, 'ack'::text;
        else
            -- failed / retry / dlq: exactly one /ack item (its cursor is locked already).
            select * into v_row from regina.ack(jsonb_build_array(v_ack), v_now) a;
            if not (v_row.result ->> 'success')::boolean then
                perform regina._stream_abort(v_row.result ->> 'code', v_row.result ->> 'error');
            end if;
            return query select 0, regina._stream_ack_result(
                                       (v_item.status = 'dlq')::integer,
                                       (v_row.result ->> 'leaseReleased')::boolean,
                                       (v_row.result ->> 'dlq')::boolean),
                                v_row.wake_queue, v_row.wake_group, v_row.queue_name,
                                v_row.acked, v_row.dead_lettered, v_row.leases_expired, 'ack'::text;
        end if;
    end if;

    return query select 0, jsonb_build_object('queueName', v_source,
                                              'state_ops_applied', jsonb_array_length(v_ops),
                                              'replayed', false),
                        null::text, null::text, null::text, null::text, 0, 0, 'cycle'::text;
end
$$;

-- GET /api/v1/resources/streams (the dashboard's Streams page): `i_query = {limit, offset,
-- scopes?}`; the registered queries whose source queue the scopes allow, by name, each with its
-- shards, cycles, last cycle instant (from stream_shards: no cycle writes the query row) and the
-- size of its state (rows, and bytes of keys and values as stored). Rare: it counts the state
-- rows of the page's queries through the primary key.
create or replace function regina.stream_queries_list(i_query jsonb) returns json
language sql stable as $$
    with visible as (
        select q.* from regina.stream_queries q
        where regina._queue_in_scopes(q.source_queue, regina._query_scopes(i_query))),
    page as (
        select v.* from visible v order by v.name
        limit (i_query ->> 'limit')::integer offset (i_query ->> 'offset')::integer)
    select json_build_object(
        'queries', coalesce((
            select json_agg(json_build_object(
                       'queryId', p.query_id, 'name', p.name, 'sourceQueue', p.source_queue,
                       'sinkQueue', p.sink_queue, 'configHash', p.config_hash,
                       'createdAt', regina._ts(p.created_at), 'updatedAt', regina._ts(p.updated_at),
                       'shards', h.shards, 'cycles', h.cycles,
                       'lastCycleAt', regina._ts(h.last_cycle_at),
                       'stateRows', s.state_rows, 'stateBytes', s.state_bytes)
                   order by p.name)
            from page p
            cross join lateral (
                select count(*) as shards, coalesce(sum(x.cycles), 0) as cycles,
                       max(x.last_cycle_at) as last_cycle_at
                from regina.stream_shards x where x.query_id = p.query_id) h
            cross join lateral (
                select count(*) as state_rows,
                       coalesce(sum(octet_length(x.key) + pg_column_size(x.value)), 0) as state_bytes
                from regina.stream_state x where x.query_id = p.query_id) s), '[]'),
        'total', (select count(*) from visible),
        'limit', (i_query ->> 'limit')::integer,
        'offset', (i_query ->> 'offset')::integer)
$$;

-- Transactions (POST /api/v1/transaction): acks and pushes applied in operation order inside one
-- PostgreSQL transaction; all of them take effect or none does. Every operation runs through the
-- function /ack or /push uses (regina.ack, regina.push), so it follows exactly their rules; this
-- file adds only the lock order and the all-or-nothing outcome.
--
-- Every lock is taken before the first operation applies, in one global order, so concurrent
-- transactions cannot deadlock:
--   1. the cursors of the acked (partition, group) pairs, in (partition, group) order — the order
--      of /ack; they stay locked until commit, so the lease each ack checked is still the lease
--      when the transaction commits;
--   2. the capacity locks of capped queues pushed to (as regina.push takes them), then the queues
--      and partitions pushes create, in name order (regina.partitions_ensure);
--   3. the partitions pushes write, in id order (regina._push_lock).
-- Cursors come before partitions on purpose: a pop that creates a subscription waits for the
-- partitions table in share mode and may hold cursors (pops subscribe before they claim, but a
-- queue created while a call of several requests runs is met by a later one), so a transaction
-- holding that table in row-exclusive mode must never wait for a cursor. After step 3 nothing
-- waits: acks touch only cursors held here, and pushes never wait for the ready rows of other
-- consumers (20_push.sql).

-- The wire result of one ack operation, from a regina.ack result.
create or replace function regina._transaction_ack_result(i_ack jsonb) returns jsonb
language sql stable as $$
    select jsonb_build_object(
        'type', 'ack', 'success', i_ack -> 'success', 'transactionId', i_ack -> 'transactionId',
        'error', i_ack -> 'error', 'code', i_ack -> 'code', 'dlq', i_ack -> 'dlq',
        'leaseReleased', i_ack -> 'leaseReleased')
$$;

-- The wire result of one pushed item, from a regina.push result (`failed`: rejected, e.g. full).
create or replace function regina._transaction_push_result(i_push jsonb) returns jsonb
language sql stable as $$
    select jsonb_build_object(
        'type', 'push', 'success', i_push ->> 'status' <> 'failed', 'status', i_push -> 'status',
        'transactionId', i_push -> 'transaction_id', 'messageId', i_push -> 'message_id',
        'partitionId', i_push -> 'partition_id', 'queueName', i_push -> 'queueName')
        || case when i_push ->> 'status' = 'failed'
                then jsonb_build_object('error', i_push -> 'error', 'code', i_push -> 'code')
                else '{}' end
$$;

-- Ends the transaction with nothing applied: raises SQLSTATE RGTXA whose detail is
-- `{code, error, results}` (the outcomes computed so far, the failing one last).
create or replace function regina._transaction_abort(i_kind text, i_failed jsonb,
                                                     i_results jsonb[])
returns void
language plpgsql as $$
declare
    v_error text := i_kind || ' operation failed: ' || coalesce(i_failed ->> 'error', 'rejected');
begin
    raise exception using
        errcode = 'RGTXA',
        message = v_error,
        detail = jsonb_build_object('code', i_failed ->> 'code', 'error', v_error,
                                    'results', to_jsonb(i_results))::text;
end
$$;

-- The ack operations of a transaction (their `ack` objects, in order), each with its consumer
-- group resolved once, before any lock (§4.5): the group decides which cursor is locked.
create or replace function regina._transaction_acks(i_ops jsonb) returns jsonb
language plpgsql stable as $$
declare
    v_acks jsonb := (select coalesce(jsonb_agg(o.op -> 'ack' order by o.ord), '[]')
                     from jsonb_array_elements(i_ops) with ordinality o(op, ord)
                     where o.op ->> 'type' = 'ack');
begin
    -- Each resolved item finds its ack by position (`->` on a jsonb array is a direct lookup).
    return (select coalesce(jsonb_agg((v_acks -> a.idx)
                                      || jsonb_build_object('consumerGroup', a.consumer_group)
                                      order by a.idx), '[]')
            from regina._ack_items(v_acks) a);
end
$$;

-- Takes the locks of steps 1–3 (see the top of this file).
create or replace function regina._transaction_lock(i_acks jsonb, i_ops jsonb) returns void
language plpgsql as $$
declare
    v_items jsonb;
    v_pushed regina.push_item[];
begin
    -- One keyed lock per (partition, group), taken in the sorted order of the subquery.
    perform 1
    from (select distinct a.partition_id, a.consumer_group from regina._ack_items(i_acks) a
          where a.partition_id is not null
          order by a.partition_id, a.consumer_group) k
    cross join lateral (select 1 from regina.cursors c
                        where c.partition_id = k.partition_id
                          and c.consumer_group = k.consumer_group
                        for update) c;

    select coalesce(jsonb_agg(t.item order by o.ord, t.ord), '[]') into v_items
    from jsonb_array_elements(i_ops) with ordinality o(op, ord)
    cross join lateral jsonb_array_elements(o.op -> 'items') with ordinality t(item, ord)
    where o.op ->> 'type' = 'push';
    if jsonb_array_length(v_items) > 0 then
        -- Capacity locks of capped queues come before partition locks, as in regina.push.
        select r.o_items into v_pushed from regina._push_resolve(v_items, null, true) r;
        perform regina._push_lock(array(select distinct x.partition_id from unnest(v_pushed) x));
    end if;
end
$$;

-- One row per ack operation and pushed item: the wire result, the waiters to wake, and the
-- metrics columns of regina.ack (`queue_name` for pushed items too).
select regina._drop_outdated('regina.transaction(jsonb, json, timestamptz)', 'leases_expired');
create or replace function regina.transaction(i_ops jsonb, i_payloads json default null,
                                              i_now timestamptz default null)
returns table (idx integer, result jsonb, wake_queue text, wake_group text, queue_name text,
               acked text, dead_lettered integer, leases_expired integer)
-- Generic plans without sequential scans, as for regina.push.
language plpgsql set plan_cache_mode = force_generic_plan set enable_seqscan = off
    set jit = off as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_acks jsonb := regina._transaction_acks(i_ops);
    v_op jsonb;
    v_ord bigint;
    v_acked integer := 0;   -- ack operations applied so far
    v_payloads json;
    v_op_payloads json[] := '{}';  -- per operation: the payloads of its pushed items
    v_row record;
    v_results jsonb[] := '{}';
    v_wake_queues text[] := '{}';  -- per result: waiters to wake when an ack ended a lease
    v_wake_groups text[] := '{}';
    v_queues text[] := '{}';       -- per result: the metrics columns
    v_statuses text[] := '{}';
    v_dead integer[] := '{}';
    v_expired integer[] := '{}';
begin
    perform regina._transaction_lock(v_acks, i_ops);
    -- The payloads come as one array, the items of the push operations in order: each goes to its
    -- operation in one pass (an array filled element by element is read in constant time).
    if i_payloads is not null then
        for v_ord, v_payloads in
            select x.op_ord, json_agg(x.payload order by x.n)
            from rows from (json_array_elements(i_payloads),
                            unnest(array(select o.ord
                                         from jsonb_array_elements(i_ops) with ordinality o(op, ord)
                                         cross join lateral jsonb_array_elements(o.op -> 'items')
                                                            with ordinality t(item, ord)
                                         where o.op ->> 'type' = 'push'
                                         order by o.ord, t.ord)))
                 with ordinality x(payload, op_ord, n)
            group by x.op_ord
        loop
            v_op_payloads[v_ord] := v_payloads;
        end loop;
    end if;

    for v_op, v_ord in select t.e, t.o from jsonb_array_elements(i_ops) with ordinality t(e, o) loop
        if v_op ->> 'type' = 'ack' then
            select * into v_row from regina.ack(jsonb_build_array(v_acks -> v_acked), v_now);
            v_acked := v_acked + 1;
            v_results := v_results || regina._transaction_ack_result(v_row.result);
            v_wake_queues := v_wake_queues || v_row.wake_queue;
            v_wake_groups := v_wake_groups || v_row.wake_group;
            v_queues := v_queues || v_row.queue_name;
            v_statuses := v_statuses || v_row.acked;
            v_dead := v_dead || v_row.dead_lettered;
            v_expired := v_expired || v_row.leases_expired;
            if not (v_row.result ->> 'success')::boolean then
                perform regina._transaction_abort('ACK', v_row.result, v_results);
            end if;
            continue;
        end if;
        continue when jsonb_array_length(v_op -> 'items') = 0;
        for v_row in
            select * from regina.push(v_op -> 'items', v_op_payloads[v_ord], false, v_now) r
            order by r.idx
        loop
            v_results := v_results || regina._transaction_push_result(v_row.result);
            v_wake_queues := v_wake_queues || null::text;
            v_wake_groups := v_wake_groups || null::text;
            v_queues := v_queues || (v_row.result ->> 'queueName');
            v_statuses := v_statuses || null::text;
            v_dead := v_dead || 0;
            v_expired := v_expired || 0;
            if v_row.result ->> 'status' = 'failed' then
                perform regina._transaction_abort('PUSH', v_row.result, v_results);
            end if;
        end loop;
    end loop;

    return query
    select (r.o - 1)::integer, r.v, v_wake_queues[r.o], v_wake_groups[r.o], v_queues[r.o],
           v_statuses[r.o], v_dead[r.o], v_expired[r.o]
    from unnest(v_results) with ordinality r(v, o);
end
$$;

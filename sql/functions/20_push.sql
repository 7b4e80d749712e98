-- Push: store a batch of items (the items of every request the broker fused), one result row per
-- item. Queues and partitions are created on first use. Every partition written is locked in id
-- order before its offsets are assigned and held until commit, so offset order is commit order
-- and concurrent batches never deadlock. Deduplication runs after the lock, so it sees every
-- message committed to the partition before us.

-- Creates the queues and partitions named by the items (`[{queue, partition}, ...]`), if
-- missing, in name order. A push transaction holds the partitions it created until commit, so
-- two pushes creating partitions in different orders would deadlock; creating in one global
-- order (queues by name, then partitions by queue and name) cannot. A transaction waiting here
-- holds only rows it created earlier in that order, and the id-ordered row locks come after.
create or replace function regina.partitions_ensure(i_items jsonb) returns void
language plpgsql as $$
begin
    insert into regina.queues (name, namespace, task)
    select s.name, split_part(s.name, '.', 1), split_part(s.name, '.', 2)
    from (select distinct e ->> 'queue' as name from jsonb_array_elements(i_items) e) s
    where not exists (select 1 from regina.queues q where q.name = s.name)
    order by s.name
    on conflict (name) do nothing;

    insert into regina.partitions (queue_id, name)
    select q.id, s.partition_name
    from (select distinct e ->> 'queue' as queue_name, e ->> 'partition' as partition_name
          from jsonb_array_elements(i_items) e) s
    join regina.queues q on q.name = s.queue_name
    where not exists (select 1 from regina.partitions p
                      where p.queue_id = q.id and p.name = s.partition_name)
    order by s.queue_name, s.partition_name
    on conflict (queue_id, name) do nothing;
end
$$;

-- Resolves every item to its partition, creating what is missing (partitions_ensure) only when
-- some item names a queue or partition that does not exist yet. Payloads travel beside the items,
-- as elements of a `json` array: reading a field of a `json` value would de-escape every string
-- in it (and refuse U+0000), whereas array elements come out verbatim. Without i_payloads, each
-- item's own `payload` is used (convenient from SQL). With i_capacity, the capped queues are
-- locked (_capacity_lock) before anything is created: o_capped lists them.
create or replace function regina._push_resolve(i_items jsonb, i_payloads json, i_capacity boolean,
                                                out o_items regina.push_item[],
                                                out o_capped bigint[])
language plpgsql as $$
begin
    o_capped := '{}';
    for attempt in 1 .. 2 loop
        select array_agg(row(
                   (t.ord - 1)::integer, q.name, p.name, p.id, p.uuid,
                   t.e ->> 'transactionId', (t.e ->> 'messageId')::uuid,
                   nullif(t.e ->> 'traceId', ''), t.e ->> 'producerSub',
                   coalesce(pl.payload, (t.e -> 'payload')::json),
                   t.e ->> 'payloadKeyId', q.id, q.max_size, q.encryption_enabled
               )::regina.push_item order by t.ord)
        into o_items
        from jsonb_array_elements(i_items) with ordinality t(e, ord)
        left join json_array_elements(i_payloads) with ordinality pl(payload, ord) on pl.ord = t.ord
        left join regina.queues q on q.name = t.e ->> 'queue'
        left join regina.partitions p on p.queue_id = q.id and p.name = t.e ->> 'partition';
        -- Queues created below are new, hence uncapped: every capped queue is known here.
        if attempt = 1 and i_capacity then
            o_capped := regina._capacity_lock(o_items);
        end if;
        exit when attempt = 2 or not exists (select 1 from unnest(o_items) x where x.partition_id is null);
        perform regina.partitions_ensure(i_items);
    end loop;
    o_items := coalesce(o_items, '{}');
end
$$;

-- Locks the partitions a push writes, in id order, until commit; returns how many it locked (fewer
-- than asked when partition cleanup deleted one since it was resolved). Row-exclusive on the table
-- comes first: a subscription being created holds the table in share mode until it commits, so a
-- push that reads subscriptions after this either sees it or ran before it looked at the
-- partitions (see _subscription_start). `no key update`: creating a cursor (key share) need not
-- wait. Already held locks (a transaction that pushes twice) cost nothing.
create or replace function regina._push_lock(i_partition_ids bigint[]) returns integer
language plpgsql as $$
declare
    v_locked integer;
begin
    lock table regina.partitions in row exclusive mode;
    perform 1 from regina.partitions p
    where p.id = any (i_partition_ids)
    order by p.id
    for no key update;
    get diagnostics v_locked = row_count;
    return v_locked;
end
$$;

-- Stores the items. With i_ignore_capacity (failover replay: those items were acknowledged
-- already), maxSize is not enforced. An item refused (queue_full, or encryption_required for
-- plaintext to a queue that encrypts) gets a `failed` row and nothing is stored for it.
create or replace function regina.push(i_items jsonb, i_payloads json default null,
                                       i_notify boolean default false,
                                       i_now timestamptz default null,
                                       i_ignore_capacity boolean default false)
returns table (idx integer, result jsonb)
-- Generic plans: a custom plan per call costs more to make than the statements cost to run
-- (about 0.4 ms of planning for a one-message push); the plans are index lookups either way.
language plpgsql set plan_cache_mode = force_generic_plan as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_items regina.push_item[];
    v_capped bigint[];
    v_wanted integer;
    v_locked integer;
    v_refused_idx integer[] := '{}';
    v_refused_code text[] := '{}';
begin
    for attempt in 1 .. 3 loop
        select * into v_items, v_capped from regina._push_resolve(i_items, i_payloads, not i_ignore_capacity);
        v_wanted := (select count(distinct x.partition_id) from unnest(v_items) x);
        v_locked := regina._push_lock(array(select distinct x.partition_id from unnest(v_items) x));
        -- Partition cleanup deleted a partition after it was resolved: resolve (re-create) again.
        exit when v_locked = v_wanted;
        if attempt = 3 then
            raise exception 'partitions vanished while pushing' using errcode = '40001';
        end if;
    end loop;
    if exists (select 1 from unnest(v_items) x
               where x.queue_id = any (v_capped) or (x.encrypting and x.payload_key_id is null)) then
        select * into v_refused_idx, v_refused_code
        from regina._push_refusals(v_items, v_capped, v_now);
    end if;

    return query
    with items as (select * from unnest(v_items)),
    refused as (select * from unnest(v_refused_idx, v_refused_code) r(idx, code)),
    firsts as (   -- the first item of each key in the batch: later ones are its duplicates
        select distinct on (i.partition_id, i.transaction_id) i.idx, i.partition_id,
               i.transaction_id, i.message_id
        from items i order by i.partition_id, i.transaction_id, i.idx),
    stored as (   -- keys already stored by earlier commits
        select m.partition_id, m.transaction_id, m.id
        from regina.messages m
        join firsts f on m.partition_id = f.partition_id and m.transaction_id = f.transaction_id
        where m.for_group is null),
    fresh as (
        select i.*, row_number() over (partition by i.partition_id order by i.idx) as rn
        from items i join firsts f on f.idx = i.idx
        where not exists (select 1 from stored s where s.partition_id = i.partition_id
                                                   and s.transaction_id = i.transaction_id)
          and not exists (select 1 from refused r where r.idx = i.idx)),
    counts as (select f.partition_id, count(*) as n from fresh f group by f.partition_id),
    bumped as (
        update regina.partitions p
        set next_seq = p.next_seq + c.n,
            last_created_at = greatest(v_now, p.last_created_at),
            last_push_at = v_now
        from counts c where p.id = c.partition_id
        returning p.id, p.queue_id, p.next_seq - c.n as base, p.last_created_at as created_at),
    inserted as (
        insert into regina.messages (partition_id, seq, id, transaction_id, trace_id,
                                     producer_sub, created_at, payload, payload_key_id)
        select f.partition_id, b.base + f.rn - 1, f.message_id, f.transaction_id, f.trace_id,
               f.producer_sub, b.created_at, f.payload, f.payload_key_id
        from fresh f join bumped b on b.id = f.partition_id
        returning 1),
    readied as (  -- work for every group subscribed to the queue (the ready set, 0002_ready.sql)
        insert into regina.ready (partition_id, consumer_group, queue_id, eligible_at)
        select b.id, s.consumer_group, b.queue_id,
               v_now + q.delayed_processing_seconds * interval '1 second'
        from bumped b
        join regina.subscriptions s on s.queue_id = b.queue_id
        join regina.queues q on q.id = b.queue_id
        -- A row this snapshot sees stays (deleting it needs the partition lock held here), so
        -- only missing rows are inserted: the insert never waits for a consumer that is moving
        -- an existing row, and a push never waits for the holder of a cursor.
        where not exists (select 1 from regina.ready r
                          where r.partition_id = b.id and r.consumer_group = s.consumer_group)
        order by b.id, s.consumer_group
        on conflict do nothing
        returning 1)
    -- `inserted` and `readied` run to completion although nothing reads them (data-modifying
    -- CTEs always do).
    select i.idx,
           case when rf.code is not null then jsonb_build_object(
                    'transaction_id', i.transaction_id, 'status', 'failed',
                    'queueName', i.queue_name, 'code', rf.code,
                    'error', case rf.code
                                 when 'queue_full' then format('Queue is full (maxSize %s)', i.max_size)
                                 else 'Payload must be encrypted for this queue' end)
                when fr.idx is not null then jsonb_build_object(
                    'transaction_id', i.transaction_id, 'status', 'queued',
                    'message_id', i.message_id, 'partition_id', i.partition_uuid,
                    'trace_id', i.trace_id, 'queueName', i.queue_name)
                else jsonb_build_object(
                    'transaction_id', i.transaction_id, 'status', 'duplicate',
                    'message_id', coalesce(s.id, f.message_id), 'partition_id', i.partition_uuid,
                    'queueName', i.queue_name)
           end
    from items i
    join firsts f on f.partition_id = i.partition_id and f.transaction_id = i.transaction_id
    left join refused rf on rf.idx = i.idx
    left join fresh fr on fr.idx = i.idx
    left join stored s on s.partition_id = i.partition_id and s.transaction_id = i.transaction_id
    order by i.idx;

    if i_notify then
        perform pg_notify('regina_push', jsonb_build_object(
                    'queue', x.queue_name,
                    'partitions', jsonb_agg(distinct x.partition_name))::text)
        from unnest(v_items) x
        group by x.queue_name;
    end if;
end
$$;

-- Push: store a batch of items (the items of every request the broker fused), one result row per
-- item. Queues and partitions are created on first use. Every partition written is locked in id
-- order before its offsets are assigned and held until commit, so offset order is commit order
-- and concurrent batches never deadlock. Deduplication runs after the lock, so it sees every
-- message committed to the partition before us.

-- The stored message of a deduplication key (partition, transaction id): its id and offset, or
-- nulls. Always an entry of the key's unique index (`messages_dedup`), whatever the statistics say.
-- With those of a nearly empty table, the planner rates the partition's range of the primary key
-- as cheap as the key itself, and a plan that reads the partition whole through it lasts until
-- the next analyze: after a burst into one partition, every lookup would read the burst. So the
-- key is asked for as a range of one value in the index's order, with sorts off: an equality
-- would make that order implied, so the primary key (in offset order) would need no sort; as it
-- is, the unique index is the only plan that needs none. Equal under a deterministic collation
-- means both `>=` and `<=`.
create or replace function regina._stored_key(i_partition_id bigint, i_transaction_id text,
                                              out o_id uuid, out o_seq bigint)
language plpgsql stable set enable_sort = off set jit = off as $$
begin
    select m.id, m.seq into o_id, o_seq from regina.messages m
    where m.partition_id = i_partition_id
      and m.transaction_id >= i_transaction_id and m.transaction_id <= i_transaction_id
      and m.for_group is null
    order by m.transaction_id
    limit 1;
end
$$;

-- _stored_key of every item of a push, in item order: the stored message id of its key, or null.
create or replace function regina._stored_keys(i_items regina.push_item[]) returns uuid[]
language plpgsql stable set enable_sort = off set jit = off as $$
begin
    return array(select s.id
                 from unnest(i_items) with ordinality i
                 left join lateral (select m.id from regina.messages m
                                    where m.partition_id = i.partition_id
                                      and m.transaction_id >= i.transaction_id
                                      and m.transaction_id <= i.transaction_id
                                      and m.for_group is null
                                    order by m.transaction_id
                                    limit 1) s on true
                 order by i.ordinality);
end
$$;

-- Creates the queues and partitions named by the items (`[{queue, partition}, ...]`), if
-- missing, in name order. A push transaction holds the partitions it created until commit, so
-- two pushes creating partitions in different orders would deadlock; creating in one global
-- order (queues by name, then partitions by queue and name) cannot. A transaction waiting here
-- holds only rows it created earlier in that order, and the id-ordered row locks come after.
create or replace function regina.partitions_ensure(i_items jsonb) returns void
language plpgsql as $$
begin
    -- Each name is looked up by its whole key (a correlated probe with `limit`): as an anti join,
    -- a generic plan may probe the queue alone and compare names row by row.
    insert into regina.queues (name, namespace, task)
    select s.name, split_part(s.name, '.', 1), split_part(s.name, '.', 2)
    from (select distinct e.queue as name
          from jsonb_populate_recordset(null::regina.push_request, i_items) e) s
    where (select 1 from regina.queues q where q.name = s.name limit 1) is null
    order by s.name
    on conflict (name) do nothing;

    insert into regina.partitions (queue_id, name)
    select q.id, s.partition_name
    from (select distinct e.queue as queue_name, e.partition as partition_name
          from jsonb_populate_recordset(null::regina.push_request, i_items) e) s
    cross join lateral (select qq.id from regina.queues qq where qq.name = s.queue_name
                        limit 1) q
    where (select 1 from regina.partitions p
           where p.queue_id = q.id and p.name = s.partition_name limit 1) is null
    order by s.queue_name, s.partition_name
    on conflict (queue_id, name) do nothing;
end
$$;

-- The items of a push in item order, each with its queue and partition as they stand (nulls where
-- one does not exist yet). Payloads travel beside the items, as elements of a `json` array:
-- reading a field of a `json` value would de-escape every string in it (and refuse U+0000),
-- whereas array elements come out verbatim. Without i_payloads, each item's own `payload` is used
-- (convenient from SQL).
--
-- Linear in the items whatever the plan: items and payloads are read side by side in one scan
-- (`rows from`), and each item finds its queue and partition by a correlated index lookup, never
-- by a join of two item sets.
create or replace function regina._push_items(i_items jsonb, i_payloads json)
returns regina.push_item[]
language plpgsql as $$
begin
    return (
        select array_agg(row(
                   (t.ordinality - 1)::integer, q.name, p.name, p.id, p.uuid,
                   t."transactionId", t."messageId", nullif(t."traceId", ''), t."producerSub",
                   coalesce(t.value, t.payload), t."payloadKeyId", q.id, q.max_size,
                   q.encryption_enabled
               )::regina.push_item order by t.ordinality)
        -- The items read once into their declared shape (migrations/0014_request_types.sql),
        -- their payloads beside them (`value`).
        from rows from (jsonb_populate_recordset(null::regina.push_request, i_items),
                        json_array_elements(i_payloads)) with ordinality t
        -- `limit 1` (the keys are unique anyway) keeps the planner from turning these lookups into
        -- a join that scans the whole table.
        left join lateral (select qq.* from regina.queues qq where qq.name = t.queue
                           limit 1) q on true
        left join lateral (select pp.* from regina.partitions pp
                           where pp.queue_id = q.id and pp.name = t.partition
                           limit 1) p on true);
end
$$;

-- Resolves every item to its partition (_push_items), creating what is missing
-- (partitions_ensure) only when some item names a queue or partition that does not exist yet.
-- With i_capacity, the capped queues are locked (_capacity_lock) before anything is created:
-- o_capped lists them.
create or replace function regina._push_resolve(i_items jsonb, i_payloads json, i_capacity boolean,
                                                out o_items regina.push_item[],
                                                out o_capped bigint[])
language plpgsql as $$
begin
    o_capped := '{}';
    for attempt in 1 .. 2 loop
        o_items := regina._push_items(i_items, i_payloads);
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
--
-- One keyed lookup per id, in sorted order: a single scan with `id = any (ids)` would, after
-- every lock it had to wait for, re-check the row by re-running its array scan, which sorts the
-- whole array again (quadratic in the partitions of a push that meets contention).
create or replace function regina._push_lock(i_partition_ids bigint[]) returns integer
language plpgsql as $$
declare
    v_locked integer;
begin
    lock table regina.partitions in row exclusive mode;
    perform 1
    from (select distinct x.id from unnest(i_partition_ids) x(id) order by x.id) k
    cross join lateral (select 1 from regina.partitions p where p.id = k.id
                        for no key update) l;
    get diagnostics v_locked = row_count;
    return v_locked;
end
$$;

-- A push item's result as JSON text (regina.push_text): queued, or duplicate of a stored
-- message. `jsonb_build_object` and its output cost about 4 µs per item, this 1.5 µs.
create or replace function regina._push_queued_text(i_transaction_id text, i_message_id uuid,
                                                    i_partition_uuid uuid, i_trace_id text,
                                                    i_queue text)
returns text
language sql stable parallel safe as $$
    select '{"transaction_id":' || regina._json_text(i_transaction_id)
           || ',"status":"queued","message_id":' || regina._json_text(i_message_id::text)
           || ',"partition_id":' || regina._json_text(i_partition_uuid::text)
           || ',"trace_id":' || regina._json_text(i_trace_id)
           || ',"queueName":' || regina._json_text(i_queue) || '}'
$$;

create or replace function regina._push_duplicate_text(i_transaction_id text, i_message_id uuid,
                                                       i_partition_uuid uuid, i_queue text)
returns text
language sql stable parallel safe as $$
    select '{"transaction_id":' || regina._json_text(i_transaction_id)
           || ',"status":"duplicate","message_id":' || regina._json_text(i_message_id::text)
           || ',"partition_id":' || regina._json_text(i_partition_uuid::text)
           || ',"queueName":' || regina._json_text(i_queue) || '}'
$$;

-- One item to a partition that exists, of a queue without maxSize whose encryption it satisfies:
-- the commonest call (a single message, nothing else fused with it), stored by a few keyed
-- statements instead of the batch statement below, with the same locks in the same order and the
-- same result. Null when the item needs more (a queue or partition to create, a capacity or
-- encryption check, a partition deleted meanwhile): regina.push then takes the batch path.
-- (Its result was jsonb.)
select regina._drop_outdated('regina._push_one(jsonb, json, boolean, timestamptz)', 'zone text');
create or replace function regina._push_one(i_items jsonb, i_payloads json, i_notify boolean,
                                            i_now timestamptz)
returns text
language plpgsql as $$
declare
    v_e regina.push_request := jsonb_populate_record(null::regina.push_request, i_items -> 0);
    v_queue_id bigint;
    v_delay integer;
    v_partition_id bigint;
    v_partition_uuid uuid;
    v_stored uuid;
    v_seq bigint;
    v_created timestamptz;
    v_inserted boolean;
begin
    select q.id, q.delayed_processing_seconds, p.id, p.uuid
    into v_queue_id, v_delay, v_partition_id, v_partition_uuid
    from regina.queues q
    join regina.partitions p on p.queue_id = q.id and p.name = v_e.partition
    where q.name = v_e.queue and q.max_size <= 0
      and (not q.encryption_enabled or v_e."payloadKeyId" is not null);
    if not found then
        return null;
    end if;
    -- The batch path's locks, in its order (_push_lock: the table, then the row), and the
    -- partition's next offset as the row lock holds it: no other push can take it meanwhile. A
    -- partition deleted meanwhile takes the batch path. The lookup above takes no lock: a push
    -- this path does not serve must not hold the table when the batch path waits for a capped
    -- queue's capacity lock (a subscription waiting for the table in share mode would hold up
    -- the capacity lock's holder behind it until the deadlock check reorders them).
    lock table regina.partitions in row exclusive mode;
    select p.next_seq, greatest(i_now, p.last_created_at) into v_seq, v_created
    from regina.partitions p where p.id = v_partition_id
    for no key update;
    if not found then
        return null;
    end if;
    -- Deduplication by the unique key itself (`on conflict`), not by a lookup first: the key is
    -- checked in the index whatever plan a lookup would get (a generic plan made from statistics
    -- of a nearly empty table reads the partition whole through the primary key instead). A
    -- duplicate stores nothing and takes no offset, so offsets stay without gaps.
    insert into regina.messages (partition_id, seq, id, transaction_id, trace_id, producer_sub,
                                 created_at, payload, payload_key_id)
    values (v_partition_id, v_seq, v_e."messageId", v_e."transactionId", nullif(v_e."traceId", ''),
            v_e."producerSub", v_created,
            -- (`->` would de-escape the payload, and refuse U+0000: the elements come verbatim.)
            coalesce((select e from json_array_elements(i_payloads) e limit 1), v_e.payload),
            v_e."payloadKeyId")
    on conflict (partition_id, transaction_id) where for_group is null do nothing
    returning true into v_inserted;
    if v_inserted is null then
        v_stored := (regina._stored_key(v_partition_id, v_e."transactionId")).o_id;
        return regina._push_duplicate_text(v_e."transactionId", v_stored, v_partition_uuid,
                                           v_e.queue);
    end if;
    update regina.partitions p
    set next_seq = v_seq + 1, last_created_at = v_created, last_push_at = i_now
    where p.id = v_partition_id;
    -- As regina.push's `readied`: only missing ready rows, never waiting for a consumer.
    insert into regina.ready (partition_id, consumer_group, queue_id, eligible_at)
    select v_partition_id, s.consumer_group, v_queue_id, i_now + v_delay * interval '1 second'
    from regina.subscriptions s
    where s.queue_id = v_queue_id
      and (select 1 from regina.ready r
           where r.partition_id = v_partition_id and r.consumer_group = s.consumer_group) is null
    order by s.consumer_group
    on conflict do nothing;
    if i_notify then
        perform pg_notify('regina_push', jsonb_build_object(
                    'queue', v_e.queue, 'partitions', jsonb_build_array(v_e.partition))::text);
    end if;
    return regina._push_queued_text(v_e."transactionId", v_e."messageId", v_partition_uuid,
                                    nullif(v_e."traceId", ''), v_e.queue);
end
$$;

-- One `regina_push` notification per queue of the items, naming the partitions written (for
-- callers in SQL that ask for it with i_notify; the broker announces after commit instead).
create or replace function regina._push_notify(i_items regina.push_item[]) returns void
language plpgsql as $$
begin
    perform pg_notify('regina_push', jsonb_build_object(
                'queue', x.queue_name,
                'partitions', jsonb_agg(distinct x.partition_name))::text)
    from unnest(i_items) x
    group by x.queue_name;
end
$$;

-- A few items (regina.push_text sends up to eight here), each to a partition that exists, of a
-- queue without maxSize whose encryption it satisfies: the calls of a broker that fused a few
-- single-message requests. Stored by a statement per item and a few per call, with the batch
-- path's locks in its order and its results, in item order; null, before any write, when an item
-- needs more (as _push_one). The batch statement's set-up (window functions over the items,
-- the stored keys read apart, six data-modifying parts) costs about 70–80 µs a call more than
-- this path from two items to eight; past sixteen the two cost alike (docs/benchmarks.md,
-- "Pushes of a few items").
--
-- Each item is inserted with `on conflict do nothing` on its key, as _push_one: a key stored
-- before, or by an earlier item of the same call, stores nothing and takes no offset, and its
-- result names the message stored under the key (for a key repeated in the call, the first
-- item's, as the batch path answers). Offsets come from the partition rows as their locks hold
-- them, one after the other in item order.
create or replace function regina._push_few(i_items jsonb, i_payloads json, i_notify boolean,
                                            i_now timestamptz)
returns text[]
language plpgsql as $$
declare
    v_items regina.push_item[];
    v_x regina.push_item;
    -- The call's partitions in id order, with what the lock read and what the call wrote.
    v_ids bigint[];
    v_queue_ids bigint[];
    v_seqs bigint[];         -- the next offset
    v_createds timestamptz[];
    v_fresh boolean[];       -- a message stored there
    v_at integer;
    v_inserted boolean;
    v_results text[];
begin
    v_items := regina._push_items(i_items, i_payloads);
    foreach v_x in array v_items loop
        if v_x.partition_id is null or v_x.max_size > 0
           or (v_x.encrypting and v_x.payload_key_id is null) then
            return null;
        end if;
    end loop;
    -- _push_lock's locks in its order (the table, then the rows by id), reading each row as its
    -- lock holds it.
    lock table regina.partitions in row exclusive mode;
    select array_agg(p.id), array_agg(p.queue_id), array_agg(p.next_seq),
           array_agg(greatest(i_now, p.last_created_at))
    into v_ids, v_queue_ids, v_seqs, v_createds
    from (select distinct x.partition_id as id from unnest(v_items) x order by 1) k
    cross join lateral (select pp.id, pp.queue_id, pp.next_seq, pp.last_created_at
                        from regina.partitions pp where pp.id = k.id
                        for no key update) p;
    -- Partition cleanup deleted one since the lookup: the batch path re-creates it.
    if cardinality(v_ids) < (select count(distinct x.partition_id) from unnest(v_items) x) then
        return null;
    end if;
    v_fresh := array_fill(false, array[cardinality(v_ids)]);
    v_results := array_fill(null::text, array[cardinality(v_items)]);
    foreach v_x in array v_items loop
        v_at := array_position(v_ids, v_x.partition_id);
        insert into regina.messages (partition_id, seq, id, transaction_id, trace_id, producer_sub,
                                     created_at, payload, payload_key_id)
        values (v_x.partition_id, v_seqs[v_at], v_x.message_id, v_x.transaction_id, v_x.trace_id,
                v_x.producer_sub, v_createds[v_at], v_x.payload, v_x.payload_key_id)
        on conflict (partition_id, transaction_id) where for_group is null do nothing
        returning true into v_inserted;
        if v_inserted then
            v_seqs[v_at] := v_seqs[v_at] + 1;
            v_fresh[v_at] := true;
            v_results[v_x.idx + 1] := regina._push_queued_text(
                v_x.transaction_id, v_x.message_id, v_x.partition_uuid, v_x.trace_id,
                v_x.queue_name);
        else
            v_results[v_x.idx + 1] := regina._push_duplicate_text(
                v_x.transaction_id, (regina._stored_key(v_x.partition_id, v_x.transaction_id)).o_id,
                v_x.partition_uuid, v_x.queue_name);
        end if;
    end loop;
    -- As the batch path's `bumped` and `readied`: only partitions that stored a message.
    update regina.partitions p
    set next_seq = b.seq, last_created_at = b.created, last_push_at = i_now
    from unnest(v_ids, v_seqs, v_createds, v_fresh) b(id, seq, created, fresh)
    where p.id = b.id and b.fresh;
    insert into regina.ready (partition_id, consumer_group, queue_id, eligible_at)
    select b.id, s.consumer_group, b.queue_id,
           i_now + (select q.delayed_processing_seconds from regina.queues q
                    where q.id = b.queue_id) * interval '1 second'
    from unnest(v_ids, v_queue_ids, v_fresh) b(id, queue_id, fresh)
    join lateral (select ss.consumer_group from regina.subscriptions ss
                  where ss.queue_id = b.queue_id offset 0) s on true
    where b.fresh
      and (select 1 from regina.ready r
           where r.partition_id = b.id and r.consumer_group = s.consumer_group) is null
    order by b.id, s.consumer_group
    on conflict do nothing;
    if i_notify then
        perform regina._push_notify(v_items);
    end if;
    return v_results;
end
$$;

-- The batch path of regina.push_text, for any items (its plan settings hold here too). The work
-- is linear in the items whatever the spread over partitions: the statement below reads the items
-- once, finds stored keys and partition offsets by correlated index lookups, numbers the new
-- messages of each partition with window functions, and never joins two item-sized sets (generic
-- plans estimate them at a few rows, so such a join would be a nested loop: quadratic).
create or replace function regina._push_batch(i_items jsonb, i_payloads json, i_notify boolean,
                                              i_now timestamptz, i_ignore_capacity boolean)
returns table (idx integer, result text)
language plpgsql as $$
declare
    v_items regina.push_item[];
    v_resolved record;
    v_capped bigint[];
    v_partitions bigint[];
    v_refusals smallint[];
    v_stored uuid[];
begin
    for attempt in 1 .. 3 loop
        -- (An assignment of the call, not `select … into`: evaluated without the executor.)
        v_resolved := regina._push_resolve(i_items, i_payloads, not i_ignore_capacity);
        v_items := v_resolved.o_items;
        v_capped := v_resolved.o_capped;
        v_partitions := array(select distinct x.partition_id from unnest(v_items) x);
        -- Partition cleanup deleted a partition after it was resolved: resolve (re-create) again.
        exit when regina._push_lock(v_partitions) = cardinality(v_partitions);
        if attempt = 3 then
            raise exception 'partitions vanished while pushing' using errcode = '40001';
        end if;
    end loop;
    -- Keys stored already, read after the lock: every message committed to the partitions
    -- before it is seen.
    v_stored := regina._stored_keys(v_items);
    if exists (select 1 from unnest(v_items) x
               where x.queue_id = any (v_capped) or (x.encrypting and x.payload_key_id is null)) then
        v_refusals := regina._push_refusals(v_items, v_capped, i_now, v_stored);
    end if;

    return query
    with keyed as (   -- each item with the first item of its key in the batch, and a stored key
        select i.*, v_stored[i.idx + 1] as stored_id,
               first_value(i.idx) over k as first_idx,
               first_value(i.message_id) over k as first_id
        from unnest(v_items) i
        window k as (partition by i.partition_id, i.transaction_id order by i.idx)),
    flagged as (      -- fresh: stored now (not a duplicate, not refused)
        select x.*, coalesce(v_refusals[x.first_idx + 1], 0) as refusal,
               x.idx = x.first_idx and x.stored_id is null
                   and coalesce(v_refusals[x.first_idx + 1], 0) = 0 as fresh
        from keyed x),
    numbered as (     -- rn: position among the partition's fresh items, in item order
        select f.*, count(*) filter (where f.fresh)
                        over (partition by f.partition_id order by f.idx) as rn
        from flagged f),
    bumped as (
        update regina.partitions p
        set next_seq = p.next_seq + c.n,
            last_created_at = greatest(i_now, p.last_created_at),
            last_push_at = i_now
        from (select n.partition_id, count(*) as n from numbered n where n.fresh
              group by n.partition_id) c
        where p.id = c.partition_id
        returning p.id, p.queue_id),
    inserted as (     -- offsets from the partition row as this statement's snapshot holds it
        insert into regina.messages (partition_id, seq, id, transaction_id, trace_id,
                                     producer_sub, created_at, payload, payload_key_id)
        select n.partition_id, b.next_seq + n.rn - 1, n.message_id, n.transaction_id, n.trace_id,
               n.producer_sub, b.created_at, n.payload, n.payload_key_id
        from numbered n
        cross join lateral (select p.next_seq, greatest(i_now, p.last_created_at) as created_at
                            from regina.partitions p where p.id = n.partition_id limit 1) b
        where n.fresh
        returning 1),
    readied as (  -- work for every group subscribed to the queue (the ready set, 0002_ready.sql)
        insert into regina.ready (partition_id, consumer_group, queue_id, eligible_at)
        select b.id, s.consumer_group, b.queue_id,
               i_now + (select q.delayed_processing_seconds from regina.queues q
                        where q.id = b.queue_id) * interval '1 second'
        from bumped b
        join lateral (select ss.consumer_group from regina.subscriptions ss
                      where ss.queue_id = b.queue_id offset 0) s on true
        -- A row this snapshot sees stays (deleting it needs the partition lock held here), so
        -- only missing rows are inserted: the insert never waits for a consumer that is moving
        -- an existing row, and a push never waits for the holder of a cursor. (A correlated
        -- probe, not `not exists`, which the planner may turn into a scan of the whole set.)
        where (select 1 from regina.ready r
               where r.partition_id = b.id and r.consumer_group = s.consumer_group) is null
        order by b.id, s.consumer_group
        on conflict do nothing
        returning 1)
    -- `inserted` and `readied` run to completion although nothing reads them (data-modifying
    -- CTEs always do).
    select n.idx,
           case when n.refusal <> 0 then jsonb_build_object(
                    'transaction_id', n.transaction_id, 'status', 'failed',
                    'queueName', n.queue_name,
                    'code', case n.refusal when 1 then 'queue_full' else 'encryption_required' end,
                    'error', case n.refusal
                                 when 1 then format('Queue is full (maxSize %s)', n.max_size)
                                 else 'Payload must be encrypted for this queue' end)::text
                when n.fresh then regina._push_queued_text(
                    n.transaction_id, n.message_id, n.partition_uuid, n.trace_id, n.queue_name)
                else regina._push_duplicate_text(
                    n.transaction_id, coalesce(n.stored_id, n.first_id), n.partition_uuid,
                    n.queue_name)
           end
    from numbered n
    order by n.idx;

    if i_notify then
        perform regina._push_notify(v_items);
    end if;
end
$$;

-- Stores the items. With i_ignore_capacity (failover replay: those items were acknowledged
-- already), maxSize is not enforced. An item refused (queue_full, or encryption_required for
-- plaintext to a queue that encrypts) gets a `failed` row and nothing is stored for it. Results
-- are JSON text, written as text (regina._push_queued_text): what the broker calls and sends on
-- (regina.push is the same call with results as jsonb). One item takes _push_one, two to eight
-- _push_few, and the batch path whatever they decline or more.
create or replace function regina.push_text(i_items jsonb, i_payloads json default null,
                                            i_notify boolean default false,
                                            i_now timestamptz default null,
                                            i_ignore_capacity boolean default false)
returns table (idx integer, result text)
-- Generic plans: a custom plan per call costs more to make than the statements cost to run
-- (about 0.4 ms of planning for a one-message push). Every statement here is keyed lookups, and
-- a generic plan lives as long as the session: one made while a table was small (a new
-- database) must not scan that table once it has grown, hence no sequential scans at all.
-- A function that turns a plan method off also turns JIT off: where the method is unavoidable
-- (a one-row table, a sort) the plan's cost counts it at 10^10, far over `jit_above_cost`, and
-- PostgreSQL would compile the statement at every call, 20-200 ms of CPU each time.
language plpgsql set plan_cache_mode = force_generic_plan set enable_seqscan = off
    set jit = off as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_n integer := jsonb_array_length(i_items);
    v_few text[];
begin
    if v_n = 1 then
        result := regina._push_one(i_items, i_payloads, i_notify, v_now);
        if result is not null then
            idx := 0;
            return next;
            return;
        end if;
    elsif v_n between 2 and 8 then
        v_few := regina._push_few(i_items, i_payloads, i_notify, v_now);
        if v_few is not null then
            return query select (k.ord - 1)::integer, k.r
                         from unnest(v_few) with ordinality k(r, ord);
            return;
        end if;
    end if;
    return query select b.idx, b.result
                 from regina._push_batch(i_items, i_payloads, i_notify, v_now, i_ignore_capacity) b;
end
$$;

-- regina.push_text with each result as `jsonb` (parsed, so checked): for callers in SQL (the
-- transactions, the streams' cycles, the failover replay, the tests). The broker calls
-- regina.push_text and reads the results as they are written.
create or replace function regina.push(i_items jsonb, i_payloads json default null,
                                       i_notify boolean default false,
                                       i_now timestamptz default null,
                                       i_ignore_capacity boolean default false)
returns table (idx integer, result jsonb)
language sql as $$
    select p.idx, p.result::jsonb
    from regina.push_text(i_items, i_payloads, i_notify, i_now, i_ignore_capacity) p
$$;

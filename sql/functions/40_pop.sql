-- Pop: claim eligible partitions for a consumer group and read from each head, as one atomic step
-- per partition. The cursor row of (partition, group) is the lock: claims take it with
-- `skip locked`, so pops never wait for each other and groups never block each other.

-- The subscription start of a group on a queue, fixed by its first pop there (queue mode: all
-- messages). A new subscription adds the ready rows of the partitions that already hold messages
-- for it. It first takes the partitions table in share mode, which waits for pushes in flight
-- (they did not see the subscription, so they add no rows for it) and holds new ones back until
-- commit (they will see it). Before subscribing it holds the queue row (`for key share`, as the
-- subscription's foreign key would): a queue deleted meanwhile answers `infinity`, nothing to
-- start from, and the caller passes the queue by.
select regina._drop_outdated('regina._subscription_start(bigint, text, jsonb, timestamptz)',
                             'pop_request');
create or replace function regina._subscription_start(i_queue_id bigint, i_group text,
                                                      i_req regina.pop_request,
                                                      i_now timestamptz)
returns timestamptz
language plpgsql as $$
declare
    v_from text := nullif(i_req."subscriptionFrom", '');
    v_mode text;
    v_start timestamptz;
begin
    select s.start_at into v_start from regina.subscriptions s
    where s.queue_id = i_queue_id and s.consumer_group = i_group;
    if found then
        return v_start;
    end if;
    v_mode := case when i_group = '__QUEUE_MODE__' then 'all'
                   when v_from is not null and v_from <> 'now' then 'timestamp'
                   when v_from = 'now' or i_req."subscriptionMode" in ('new', 'new-only') then 'new'
                   else 'all' end;
    v_start := case v_mode when 'timestamp' then v_from::timestamptz when 'new' then i_now end;
    perform 1 from regina.queues q where q.id = i_queue_id for key share;
    if not found then
        return 'infinity';
    end if;
    insert into regina.subscriptions (queue_id, consumer_group, mode, start_at)
    values (i_queue_id, i_group, v_mode, v_start)
    on conflict (queue_id, consumer_group) do nothing;
    if found then
        lock table regina.partitions in share mode;
        insert into regina.ready (partition_id, consumer_group, queue_id, eligible_at)
        select p.id, i_group, p.queue_id, least(p.last_created_at, i_now)
        from regina.partitions p
        where p.queue_id = i_queue_id and p.next_seq > 0
          and (v_start is null or p.last_created_at >= v_start)
        on conflict do nothing;
    end if;
    return (select s.start_at from regina.subscriptions s
            where s.queue_id = i_queue_id and s.consumer_group = i_group);
end
$$;

-- The rows a pop call may wait for that another call may hold, taken in key order before
-- anything is claimed: the rotation counters of its namespace and task requests (locked as
-- _pop_queue_order will update them), then the subscriptions of its first contacts: with each
-- named queue (by the first request that names it, as in arrival order), and with each queue a
-- namespace or task request covers (that its scopes allow). Two calls that carry the same new
-- groups, or the same selectors, in opposite orders then take those rows in the same order; taken
-- in request order, each could hold one while it waits for the other's (a deadlock).
-- A namespace or task request subscribes every queue it covers first (here in a call of several,
-- in _pop_one when alone), not as it walks them: a new subscription takes the partitions table in
-- share mode, and a walk that had drained a partition of an earlier queue (whose row it then
-- holds in share mode) would wait there for a push in flight that waits for that row (another
-- deadlock). Subscribed before the walk, the group starts where it would have, as the walk reads
-- the same instant (i_now): a namespace pop is a pop on every queue it covers (docs/http-api.md
-- §4.10).
-- i_selectors: whether some request has no queue name (a namespace or task).
select regina._drop_outdated('regina._pop_lock_order(regina.pop_request[], timestamptz)',
                             'i_selectors');
create or replace function regina._pop_lock_order(i_reqs regina.pop_request[], i_now timestamptz,
                                                  i_selectors boolean)
returns void
language plpgsql as $$
declare
    v_new record;
begin
    if i_selectors then
        insert into regina.pop_rotation as t (selector, consumer_group, counter)
        select distinct coalesce(r.namespace, '') || '/' || coalesce(r.task, ''),
                        coalesce(nullif(r."consumerGroup", ''), '__QUEUE_MODE__'), 0
        from unnest(i_reqs) r
        where r.queue is null
        order by 1, 2
        on conflict (selector, consumer_group) do update set counter = t.counter;
    end if;
    for v_new in
        select k.id, k.grp, i_reqs[k.i] as req
        from (select distinct on (c.id, c.grp) c.id, c.grp, c.i
              from (select q.id, coalesce(nullif(i_reqs[k.i]."consumerGroup", ''),
                                          '__QUEUE_MODE__') as grp, k.i
                    from generate_subscripts(i_reqs, 1) k(i)
                    join regina.queues q on q.name = i_reqs[k.i].queue
                    union all
                    select q.id, coalesce(nullif(i_reqs[k.i]."consumerGroup", ''),
                                          '__QUEUE_MODE__'), k.i
                    from generate_subscripts(i_reqs, 1) k(i)
                    join regina.queues q
                      on (nullif(i_reqs[k.i].namespace, '') is null
                          or q.namespace = i_reqs[k.i].namespace)
                     and (nullif(i_reqs[k.i].task, '') is null or q.task = i_reqs[k.i].task)
                    where i_selectors and i_reqs[k.i].queue is null
                      and (i_reqs[k.i].scopes is null
                           or regina._queue_in_scopes(q.name, i_reqs[k.i].scopes))) c
              order by c.id, c.grp, c.i) k
        where not exists (select 1 from regina.subscriptions s
                          where s.queue_id = k.id and s.consumer_group = k.grp)
        order by k.id, k.grp
    loop
        perform regina._subscription_start(v_new.id, v_new.grp, v_new.req, i_now);
    end loop;
end
$$;

-- Reads up to i_budget deliverable messages from the head of a locked cursor, as wire objects:
-- the group's messages in offset order, up to the first one not yet visible (delayedProcessing).
-- Requeued deliveries are always visible, but stay behind an invisible message pushed before
-- them. An encrypted payload comes as stored, with the member `payloadKeyId` beside it: the
-- broker decrypts it and removes that member (ADR 0006). PL/pgSQL so that the query's plan is
-- kept (see _head_seq).
--
-- o_first_ages_ms: createdAt → now of the messages delivered to the group for the first time,
-- for the end-to-end latency metric. A delivery is taken as the first when it lies beyond the
-- range of the group's previous lease on the partition (redeliveries after a failure, expiry or
-- `retry` restart at the head, inside that range) and is not a requeued copy. The one miss: a
-- redelivery with a smaller batch than the lease before, followed by a larger one, counts the
-- rest of the earlier range again.
-- A delivered message as the pop's answer shows it (http-api.md §3.4), written as JSON text. The
-- answer of a pop is text from its messages to its end (regina.pop_text): `json_build_object`
-- looks up the type of each of its 24 arguments again for every message, about 5.5 µs a message
-- against 2.8 µs written this way, and a `json` value made from text is parsed again to be
-- checked. Every text field goes through to_json's escapes; the payload is stored JSON, written
-- as stored. i_key_id: the payload's key when it is sealed (`payloadKeyId`, which the broker
-- opens), else null. One `concat` rather than a chain of `||`: the text is the same (no argument
-- is ever null but the key's, which `concat` leaves out), and a statement that inlines this sets
-- its expression up at every execution, where one call of many arguments is less to set up than
-- 28 calls of two (a claim set's read, messages or none: about 4 µs less).
create or replace function regina._message_text(i_id uuid, i_transaction_id text,
                                                i_trace_id text, i_payload json,
                                                i_producer_sub text, i_created_at timestamptz,
                                                i_partition_uuid uuid, i_partition text,
                                                i_queue text, i_lease text, i_group text,
                                                i_retry_count integer, i_key_id text)
returns text
language sql stable parallel safe as $$
    select concat('{"id":"', i_id, '","transactionId":', regina._json_text(i_transaction_id),
                  ',"traceId":', regina._json_text(i_trace_id),
                  ',"data":', coalesce(i_payload::text, 'null'),
                  ',"producerSub":', regina._json_text(i_producer_sub),
                  ',"createdAt":"', regina._ts_us(i_created_at),
                  '","partitionId":"', i_partition_uuid,
                  '","partition":', regina._json_text(i_partition),
                  ',"queue":', regina._json_text(i_queue),
                  ',"leaseId":', regina._json_text(i_lease),
                  ',"consumerGroup":', regina._json_text(i_group),
                  ',"retryCount":', coalesce(i_retry_count, 0),
                  case when i_key_id is not null
                       then ',"payloadKeyId":' || regina._json_text(i_key_id) end,
                  '}')
$$;

select regina._drop_outdated('regina._pop_read(regina.cursors, regina.queues, regina.partitions, '
                             'integer, text, timestamptz)', 'o_first_ages_ms');
select regina._drop_outdated('regina._pop_read(regina.cursors, regina.queues, regina.partitions, '
                             'integer, text, timestamptz)', 'o_messages text[]');
create or replace function regina._pop_read(i_c regina.cursors, i_q regina.queues,
                                            i_p regina.partitions, i_budget integer,
                                            i_lease text, i_now timestamptz,
                                            out o_messages text[], out o_last bigint,
                                            out o_first_ages_ms double precision[])
language plpgsql stable as $$
begin
    select array_agg(regina._message_text(
                         m.id, m.transaction_id, m.trace_id, m.payload, m.producer_sub,
                         m.created_at, i_p.uuid, i_p.name, i_q.name, i_lease,
                         i_c.consumer_group, case when m.rn = 1 then i_c.head_attempts else 0 end,
                         m.payload_key_id)
                     order by m.seq),
           max(m.seq),
           array_agg(greatest(date_part('epoch', i_now - m.created_at) * 1000, 0))
               filter (where m.for_group is null and m.seq > coalesce(i_c.lease_end_seq, -1))
    into o_messages, o_last, o_first_ages_ms
    from (select x.*, row_number() over (order by x.seq) as rn,
                 bool_and(x.for_group is not null
                          or x.created_at <= i_now - i_q.delayed_processing_seconds * interval '1 second')
                     over (order by x.seq) as visible
          from (select * from regina.messages mm
                where mm.partition_id = i_c.partition_id and mm.seq >= i_c.next_seq
                  and mm.seq <> all (i_c.marks)
                  and (mm.for_group is null or mm.for_group = i_c.consumer_group)
                order by mm.seq
                limit i_budget) x) m
    where m.visible;
end
$$;

-- Claims one partition for a group and reads from its head. Delivered messages, or the reason
-- nothing was delivered and when this partition may become eligible. Every exit leaves the ready
-- row of (partition, group) in line with the cursor. Also reports, for the broker's metrics, the
-- ages of first deliveries (see _pop_read), messages settled by their ttl, and whether an expired
-- lease was accounted here and dead-lettered its head.
select regina._drop_outdated('regina._pop_claim(regina.queues, regina.partitions, text, integer, '
                             'boolean, uuid, timestamptz, timestamptz)', 'o_first_ages_ms');
select regina._drop_outdated('regina._pop_claim(regina.queues, regina.partitions, text, integer, '
                             'boolean, uuid, timestamptz, timestamptz)', 'o_messages text[]');
create or replace function regina._pop_claim(i_q regina.queues, i_p regina.partitions,
                                             i_group text, i_budget integer, i_auto boolean,
                                             i_lease uuid, i_start_at timestamptz,
                                             i_now timestamptz,
                                             out o_messages text[], out o_reason text,
                                             out o_wake timestamptz,
                                             out o_first_ages_ms double precision[],
                                             out o_expired bigint, out o_lease_expired boolean,
                                             out o_dead_lettered boolean)
language plpgsql as $$
declare
    v_c regina.cursors := regina._cursor_lock(i_q.id, i_p.id, i_group, i_start_at);
    v_before regina.cursors;
    v_read record;
begin
    o_expired := 0;
    o_lease_expired := false;
    o_dead_lettered := false;
    if v_c.partition_id is null then
        o_reason := 'lease_held';
        return;
    end if;
    if v_c.lease_active and v_c.lease_expires_at <= i_now then
        v_before := v_c;
        v_c := (regina._lease_expire(v_c, i_q, i_now)).c;
        perform regina._cursor_save(v_c, i_now);
        o_lease_expired := true;
        o_dead_lettered := v_c.next_seq > v_before.next_seq;  -- only a dead letter moves it
    end if;
    if v_c.lease_active then
        perform regina._ready_sync(v_c, i_now);
        o_reason := 'lease_held';
        o_wake := v_c.lease_expires_at;
        return;
    elsif v_c.retry_after > i_now then
        perform regina._ready_sync(v_c, i_now);
        o_reason := 'empty';
        o_wake := v_c.retry_after;
        return;
    elsif i_q.window_buffer_seconds > 0
          and i_p.last_push_at > i_now - i_q.window_buffer_seconds * interval '1 second' then
        o_wake := i_p.last_push_at + i_q.window_buffer_seconds * interval '1 second';
        perform regina._ready_sync(v_c, i_now, o_wake);
        o_reason := 'window_buffer';
        return;
    end if;
    if i_q.ttl_seconds > 0 then
        v_before := v_c;
        v_c := regina._expire_head(v_c, i_q, i_now);
        o_expired := regina._expired_count(v_before, v_c);
    end if;

    -- (Assignments of calls, here and below, not `select … into`: PL/pgSQL evaluates them
    -- without setting up the executor.)
    v_read := regina._pop_read(v_c, i_q, i_p, i_budget, coalesce(i_lease::text, ''), i_now);
    if v_read.o_messages is null then
        select m.created_at + i_q.delayed_processing_seconds * interval '1 second' into o_wake
        from regina.messages m
        where m.partition_id = v_c.partition_id and m.seq >= v_c.next_seq and m.seq <> all (v_c.marks)
          and (m.for_group is null or m.for_group = i_group)
        order by m.seq limit 1;
        if o_wake is null and v_c.next_seq < i_p.next_seq then
            -- Offsets below i_p.next_seq were committed when it was read, and none is left:
            -- retention removed them. The head moves to the partition's end.
            v_c.next_seq := i_p.next_seq;
            v_c.marks := '{}';
            v_c.head_attempts := 0;
            v_c.head_error := null;
        end if;
        perform regina._cursor_save(v_c, i_now, o_wake);
        o_reason := 'empty';
        return;
    end if;

    v_c.last_claim_at := i_now;
    if i_auto then
        v_c.next_seq := regina._advance(v_c.partition_id, v_read.o_last + 1, v_c.marks, i_group);
        v_c.marks := regina._marks_from(v_c.marks, v_c.next_seq);
        v_c.head_attempts := 0;
        v_c.head_error := null;
        v_c.total_consumed := v_c.total_consumed + cardinality(v_read.o_messages);
        v_c.batches_consumed := v_c.batches_consumed + 1;
        v_c.last_consumed_at := i_now;
    else
        v_c.lease_id := i_lease;
        v_c.lease_active := true;
        v_c.lease_expires_at := i_now + i_q.lease_time * interval '1 second';
        v_c.lease_end_seq := v_read.o_last;
        v_c.lease_marks := '{}';
    end if;
    perform regina._cursor_save(v_c, i_now);
    o_messages := v_read.o_messages;
    o_first_ages_ms := v_read.o_first_ages_ms;
end
$$;

-- Queues a namespace/task pop considers: highest priority first; among equal priorities the
-- starting queue rotates from one pop to the next (per selector and group).
create or replace function regina._pop_queue_order(i_namespace text, i_task text, i_group text)
returns bigint[]
language plpgsql as $$
declare
    v_turn bigint;
begin
    insert into regina.pop_rotation (selector, consumer_group, counter)
    values (coalesce(i_namespace, '') || '/' || coalesce(i_task, ''), i_group, 1)
    on conflict (selector, consumer_group)
        do update set counter = regina.pop_rotation.counter + 1
    returning counter into v_turn;
    return (select coalesce(array_agg(s.id order by s.priority desc,
                                      ((s.rank - v_turn) % s.tier + s.tier) % s.tier), '{}')
            from (select q.id, q.priority,
                         row_number() over (partition by q.priority order by q.name) as rank,
                         count(*) over (partition by q.priority) as tier
                  from regina.queues q
                  where (i_namespace is null or q.namespace = i_namespace)
                    and (i_task is null or q.task = i_task)) s);
end
$$;

-- Saves the cursors of a claim set's partitions i_partition_ids of group i_group in one keyed
-- update: with i_leases null, autoAck claims of i_counts messages that moved each head to
-- i_ends without marks ahead; otherwise leases i_leases (one per partition) ending at offsets
-- i_ends, expiring at i_expires. One statement for the whole set instead of one per partition
-- (each statement's set-up costs more than its run), for claim sets over eight cursors or more
-- (_pop_claim_set's `v_together`): below that, the call and its settings cost more than the
-- statements they save. Keyed lookups only (the settings): a plan made while the cursors were few
-- would otherwise read them all at every call once they are many. Returns how many it saved (an
-- assignment of the call is evaluated without setting up the executor, `perform` is not).
-- Locks: the cursors, which the caller holds already. Writes: cursors. Edge: claims of many
-- partitions at once.
create or replace function regina._cursors_claimed(i_group text, i_partition_ids bigint[],
                                                   i_ends bigint[], i_counts integer[],
                                                   i_leases uuid[], i_expires timestamptz,
                                                   i_now timestamptz)
returns integer
language plpgsql set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off
    set jit = off as $$
declare
    v_saved integer;
begin
    -- Each cursor is found by its key in a subquery of its own (a keyed lookup whatever the
    -- statistics say), and updated through the row's address: a join of the claims with the
    -- cursors on their key was planned, while the table was nearly empty, as a scan of the
    -- group's cursors for every claim.
    if i_leases is null then
        update regina.cursors c
        set next_seq = u.head, marks = '{}', head_attempts = 0, head_error = null,
            total_consumed = c.total_consumed + u.n, batches_consumed = c.batches_consumed + 1,
            last_consumed_at = i_now, last_claim_at = i_now
        from (select k.head, k.n,
                     (select cc.ctid from regina.cursors cc
                      where cc.partition_id = k.partition_id and cc.consumer_group = i_group)
                         as tid
              from unnest(i_partition_ids, i_ends, i_counts) k(partition_id, head, n)) u
        where c.ctid = u.tid;
    else
        update regina.cursors c
        set lease_id = u.lease_id, lease_active = true, lease_expires_at = i_expires,
            lease_end_seq = u.last, lease_marks = '{}', last_claim_at = i_now
        from (select k.last, k.lease_id,
                     (select cc.ctid from regina.cursors cc
                      where cc.partition_id = k.partition_id and cc.consumer_group = i_group)
                         as tid
              from unnest(i_partition_ids, i_ends, i_leases) k(partition_id, last, lease_id)) u
        where c.ctid = u.tid;
    end if;
    get diagnostics v_saved = row_count;
    return v_saved;
end
$$;

-- Claims in one pass the partitions of locked cursors that need nothing but a read (the queue has
-- no delay, window or ttl; the cursor no lease and no pending retry), i_cursors in claim order.
-- Reads up to i_budget messages in all, each partition from its head in offset order, so every
-- partition yields a prefix of its deliverable messages, and saves the cursors that delivered:
-- leased to i_lease, or settled at once (autoAck), with their ready rows. Each statement reads an
-- index range per cursor and writes a row per cursor, however many partitions are claimed.
--
-- With i_leases (one per cursor), each cursor is a slot of its own, as for a run of requests of
-- one partition each (_pop_run): it reads up to i_budget messages of its own, and its partition
-- is leased to its own element of i_leases (null: autoAck).
--
-- o_claimed: the partitions that delivered, in claim order; o_claimed_at: their places in
-- i_cursors; o_counts: how many messages each delivered; o_names, o_uuids: their names and
-- uuids (read with the messages, for the answers). o_empty: the cursors that did not and
-- whose head is not known to be at the partition's end (the per-partition claim knows what to do
-- with them), or that the budget left unread; o_empty_at: their places. o_left: how many of the
-- ready rows it wrote are claimable now (the others were deleted, or wait for the lease's end).
select regina._drop_outdated('regina._pop_claim_set(regina.queues, regina.cursors[], integer, '
                             'boolean, uuid, timestamptz)', 'o_left');
select regina._drop_outdated('regina._pop_claim_set(regina.queues, regina.cursors[], integer, '
                             'boolean, uuid, timestamptz)', 'i_leases');
select regina._drop_outdated('regina._pop_claim_set(regina.queues, regina.cursors[], integer, '
                             'boolean, uuid, timestamptz, uuid[])', 'o_names');
select regina._drop_outdated('regina._pop_claim_set(regina.queues, regina.cursors[], integer, '
                             'boolean, uuid, timestamptz, uuid[])', 'o_messages text[]');
create or replace function regina._pop_claim_set(i_q regina.queues, i_cursors regina.cursors[],
                                                 i_budget integer, i_auto boolean, i_lease uuid,
                                                 i_now timestamptz, i_leases uuid[],
                                                 out o_messages text[], out o_claimed bigint[],
                                                 out o_claimed_at integer[],
                                                 out o_counts integer[],
                                                 out o_names text[], out o_uuids uuid[],
                                                 out o_empty bigint[], out o_empty_at integer[],
                                                 out o_first_ages_ms double precision[],
                                                 out o_left integer)
language plpgsql as $$
declare
    v_group text := i_cursors[1].consumer_group;
    v_expires timestamptz := i_now + i_q.lease_time * interval '1 second';
    -- The most messages the read brings: the budget, or the budget of every slot.
    v_total integer := case when i_leases is null then i_budget
                            else i_budget * cardinality(i_cursors) end;
    v_partitions bigint[];
    v_seqs bigint[];
    v_names text[];
    v_uuids uuid[];
    v_partition_id bigint;
    v_last bigint;
    v_count integer;
    v_marks bigint[];
    v_head bigint;
    v_i integer;
    v_k integer := 1;
    v_c regina.cursors;
    v_ended bigint[];
    v_settled bigint[];
    v_drained bigint[];
    -- From this many cursors on, the claims' cursors are saved together after the walk, in one
    -- statement (regina._cursors_claimed; autoAck claims without marks ahead), else one by one
    -- during it: below, the call costs more than the statements it saves.
    v_together boolean := cardinality(i_cursors) >= 8;
    -- The claims saved together: partitions, last offsets (autoAck: new heads), counts, leases.
    v_saved_ids bigint[];
    v_saved_ends bigint[];
    v_saved_counts integer[];
    v_saved_leases uuid[];
    v_saved integer;
    -- Fewer messages than v_total: every cursor was read, and each claimed partition to its end
    -- (as this read saw it) unless it gave its own limit (i_budget), so a head without marks
    -- moves just past the last message read. With v_total reached, so was every partition but
    -- the last one read: each partition's read stops at its limit on its own, so only the last
    -- can have been cut short.
    v_whole boolean;
begin
    -- The outer `limit` stops the nested loop once the budget is taken: later cursors are not read.
    -- The rows come in claim order, each cursor's messages by offset: the nested loop walks the
    -- cursors in array order and reads each partition's messages by its primary key, and no
    -- plan can do otherwise (a lateral subquery with a `limit` is the inner side of a nested
    -- loop). The aggregates keep that order; an `order by` in each would sort the same rows six
    -- times over, and set up a sort for each at every call.
    select coalesce(array_agg(x.message), '{}'), coalesce(array_agg(x.partition_id), '{}'),
           coalesce(array_agg(x.seq), '{}'),
           array_agg(x.first_age_ms) filter (where x.first_age_ms is not null),
           array_agg(x.name), array_agg(x.uuid)
    into o_messages, v_partitions, v_seqs, o_first_ages_ms, v_names, v_uuids
    from (select c.ordinality as ord, c.partition_id, m.seq, p.name, p.uuid,
                 case when m.for_group is null and m.seq > coalesce(c.lease_end_seq, -1)
                      then greatest(date_part('epoch', i_now - m.created_at) * 1000, 0)
                 end as first_age_ms,
                 regina._message_text(
                     m.id, m.transaction_id, m.trace_id, m.payload, m.producer_sub, m.created_at,
                     p.uuid, p.name, i_q.name,
                     coalesce(coalesce(i_leases[c.ordinality], i_lease)::text, ''),
                     c.consumer_group, case when m.rn = 1 then c.head_attempts else 0 end,
                     m.payload_key_id) as message
          from unnest(i_cursors) with ordinality c
          cross join lateral (select pp.uuid, pp.name from regina.partitions pp
                              where pp.id = c.partition_id limit 1) p
          cross join lateral (select h.*, row_number() over (order by h.seq) as rn
                              from (select mm.* from regina.messages mm
                                    where mm.partition_id = c.partition_id
                                      and mm.seq >= c.next_seq and mm.seq <> all (c.marks)
                                      and (mm.for_group is null or mm.for_group = c.consumer_group)
                                    order by mm.seq
                                    limit i_budget) h) m
          limit v_total) x;

    -- The messages come grouped by cursor, in claim order: one walk finds each claimed partition
    -- with its count and last offset, and saves its cursor by a keyed update (a join of the
    -- cursors with the claims would leave the join order to estimates that a plan made while the
    -- table was small gets wrong), or, over eight cursors or more, notes where it goes for one
    -- statement after the walk (regina._cursors_claimed).
    o_claimed := '{}';
    o_claimed_at := '{}';
    o_counts := '{}';
    o_names := '{}';
    o_uuids := '{}';
    v_whole := cardinality(v_partitions) < v_total;
    v_i := 1;
    while v_i <= cardinality(v_partitions) loop
        v_partition_id := v_partitions[v_i];
        o_names := o_names || v_names[v_i];
        o_uuids := o_uuids || v_uuids[v_i];
        v_count := 0;
        while v_i <= cardinality(v_partitions) and v_partitions[v_i] = v_partition_id loop
            v_last := v_seqs[v_i];
            v_count := v_count + 1;
            v_i := v_i + 1;
        end loop;
        -- The claimed partitions are a subsequence of the (locked, hence current) cursors.
        while i_cursors[v_k].partition_id <> v_partition_id loop
            v_k := v_k + 1;
        end loop;
        o_claimed := o_claimed || v_partition_id;
        o_claimed_at := o_claimed_at || v_k;
        o_counts := o_counts || v_count;
        if not i_auto and v_together then
            v_saved_ids := v_saved_ids || v_partition_id;
            v_saved_ends := v_saved_ends || v_last;
            v_saved_leases := v_saved_leases || coalesce(i_leases[v_k], i_lease);
            continue;
        elsif not i_auto then
            update regina.cursors c
            set lease_id = coalesce(i_leases[v_k], i_lease), lease_active = true,
                lease_expires_at = v_expires, lease_end_seq = v_last, lease_marks = '{}',
                last_claim_at = i_now
            where c.partition_id = v_partition_id and c.consumer_group = v_group;
            continue;
        end if;
        v_marks := i_cursors[v_k].marks;
        -- (v_i is past this partition's messages: another partition follows when it is in range.)
        if v_count < i_budget and (v_whole or v_i <= cardinality(v_partitions))
           and cardinality(v_marks) = 0 then
            v_head := v_last + 1;
        else
            v_head := regina._advance(v_partition_id, v_last + 1, v_marks, v_group);
            v_marks := regina._marks_from(v_marks, v_head);
        end if;
        if v_together and cardinality(v_marks) = 0 then
            v_saved_ids := v_saved_ids || v_partition_id;
            v_saved_ends := v_saved_ends || v_head;
            v_saved_counts := v_saved_counts || v_count;
            continue;
        end if;
        update regina.cursors c
        set next_seq = v_head, marks = v_marks, head_attempts = 0,
            head_error = null, total_consumed = c.total_consumed + v_count,
            batches_consumed = c.batches_consumed + 1, last_consumed_at = i_now,
            last_claim_at = i_now
        where c.partition_id = v_partition_id and c.consumer_group = v_group;
    end loop;
    if cardinality(v_saved_ids) > 0 then
        v_saved := regina._cursors_claimed(v_group, v_saved_ids, v_saved_ends, v_saved_counts,
                                           case when not i_auto then v_saved_leases end,
                                           v_expires, i_now);
    end if;
    -- The claimed partitions are a subsequence of the cursors: the rest did not deliver.
    o_empty := '{}';
    o_empty_at := '{}';
    v_i := 1;
    v_k := 0;
    foreach v_c in array i_cursors loop
        v_k := v_k + 1;
        if v_i <= cardinality(o_claimed) and o_claimed[v_i] = v_c.partition_id then
            v_i := v_i + 1;
        else
            o_empty := o_empty || v_c.partition_id;
            o_empty_at := o_empty_at || v_k;
        end if;
    end loop;
    -- Every cursor was read (the budget was not reached), and those that found nothing and
    -- whose head is at the partition's end as a read now sees it have nothing to claim: their
    -- cursors stay as they are, and their ready rows go below with the claimed ones. (What the
    -- per-partition claim did for them: a second read, and a save that changed nothing.) The
    -- others (a push committed since the read, a head behind messages that retention removed or
    -- that belong to other groups) are left to the per-partition claim.
    v_ended := '{}';
    if v_whole and cardinality(o_empty) > 0 then
        v_ended := array(select c.partition_id from unnest(i_cursors) c
                         where c.partition_id = any (o_empty)
                           and (select p.next_seq from regina.partitions p
                                where p.id = c.partition_id) <= c.next_seq);
        if cardinality(v_ended) > 0 then
            o_empty_at := array(select e.at from unnest(o_empty, o_empty_at) e(id, at)
                                where e.id <> all (v_ended) order by e.at);
            o_empty := array(select i_cursors[e.at].partition_id from unnest(o_empty_at) e(at)
                             order by e.at);
        end if;
    end if;
    if not i_auto and cardinality(o_claimed) > 0 then
        update regina.ready r set eligible_at = v_expires
        where r.partition_id = any (o_claimed) and r.consumer_group = v_group;
    end if;
    v_settled := case when i_auto then o_claimed || v_ended else v_ended end;
    o_left := 0;
    if cardinality(v_settled) = 0 then
        return;
    end if;
    -- The ready rows as _ready_sync leaves them: claimable now (at the back of the line), or
    -- deleted when the head reached the partition's end, under the partition's share lock. Keyed
    -- lookups only: a join of cursors and partitions is left to estimates, and a plan made while
    -- the tables were small reads every partition.
    -- Three plain statements rather than one with data-modifying CTEs: each is set up for
    -- every call, and the last two are needed only when some partitions are drained and some
    -- are not (a single-message consumer's claims drain theirs).
    v_drained := array(
        select p.id from unnest(v_settled) k(id)
        cross join lateral (select pp.id from regina.partitions pp
                            where pp.id = k.id
                              and pp.next_seq <= (select c.next_seq from regina.cursors c
                                                  where c.partition_id = k.id
                                                    and c.consumer_group = v_group)
                            for share skip locked) p);
    if cardinality(v_drained) > 0 then
        delete from regina.ready r
        where r.partition_id = any (v_drained) and r.consumer_group = v_group;
    end if;
    if cardinality(v_drained) < cardinality(v_settled) then
        update regina.ready r set eligible_at = i_now
        where r.partition_id = any (v_settled) and r.consumer_group = v_group
          and r.partition_id <> all (v_drained);
        get diagnostics o_left = row_count;
    end if;
end
$$;

-- The ready set is read in claim order only: an index scan of `ready_claim_order` that stops at
-- the rows it needs. Its front holds the index entries of rows that claims deleted or moved lately;
-- a scan in order passes them once and marks them dead for the next scans, as soon as no
-- transaction can see their rows any more. A plan that reads the range by bitmap and sorts it
-- reads every entry of the range, dead ones included, at every call, and never marks any: with
-- tens of thousands of them between two vacuums, each call costs milliseconds. The planner
-- prefers it whenever the statistics say the group has about one row (a table analyzed while
-- the consumers were caught up), and a generic plan lasts until the next analyze: hence these
-- two reads in functions of their own, planned without bitmap scans and without sorts.

-- The group's ready rows of a queue claimable at i_now, after (i_after_at, i_after_id) in claim
-- order, without the partitions of i_busy: the first i_limit, their partitions and times.
create or replace function regina._ready_candidates(i_queue_id bigint, i_group text,
                                                    i_now timestamptz, i_after_at timestamptz,
                                                    i_after_id bigint, i_busy bigint[],
                                                    i_limit integer,
                                                    out o_partition_ids bigint[],
                                                    out o_eligible_ats timestamptz[])
language plpgsql set enable_bitmapscan = off set enable_sort = off set jit = off as $$
begin
    -- (The aggregates keep the order of the subquery's index scan, without a sort each.)
    select coalesce(array_agg(r.partition_id), '{}'), coalesce(array_agg(r.eligible_at), '{}')
    into o_partition_ids, o_eligible_ats
    from (select rr.partition_id, rr.eligible_at from regina.ready rr
          where rr.queue_id = i_queue_id and rr.consumer_group = i_group
            and rr.eligible_at <= i_now
            and (rr.eligible_at, rr.partition_id) > (i_after_at, i_after_id)
            and rr.partition_id <> all (i_busy)
          order by rr.eligible_at, rr.partition_id
          limit i_limit) r;
end
$$;

-- The time of the group's earliest ready row of a queue after i_after (`-infinity`: any, as no
-- ready row is ever due that early); null when it has none.
create or replace function regina._ready_next(i_queue_id bigint, i_group text,
                                              i_after timestamptz)
returns timestamptz
language plpgsql set enable_bitmapscan = off set enable_sort = off set jit = off as $$
begin
    return (select r.eligible_at from regina.ready r
            where r.queue_id = i_queue_id and r.consumer_group = i_group
              and r.eligible_at > i_after
            order by r.eligible_at
            limit 1);
end
$$;

-- The instant a pop request over a queue tells as quiet (§4.9; o_quiet of _pop_one), from what
-- its claim (_pop_claim_many) learned: null when work is known to be due now (i_due: no lookup,
-- which would start at the index entries that claims deleted or moved lately), else the time of
-- the group's earliest ready row there, 'infinity' when it has none. With i_settled (every row
-- claimable now was claimed, and none is any more) only the rows after i_now are read, which
-- skips those index entries; otherwise the earliest row may be due already (then the request is
-- not quiet). A scalar: a call of it is a plain expression for the caller.
drop function if exists regina._pop_quiet(bigint, text, timestamptz, boolean, boolean);
create or replace function regina._pop_quiet_at(i_queue_id bigint, i_group text,
                                                i_now timestamptz, i_due boolean,
                                                i_settled boolean)
returns timestamptz
language plpgsql as $$
begin
    if i_due then
        return null;
    end if;
    return coalesce(regina._ready_next(i_queue_id, i_group,
                                       case when i_settled then i_now else '-infinity' end),
                    'infinity');
end
$$;

-- Claims up to i_slots partitions of a queue for a group, i_budget messages in all, from its ready
-- rows that are claimable now, longest waiting first (starvation-free: a claimed partition that
-- still has work goes to the back). Candidates come in rounds of the slots still free, their
-- missing cursors are created together, and the cursors locked without waiting (`skip locked`:
-- another consumer of the group holds that partition). Cursors that need only a read are claimed
-- together (_pop_claim_set); the others (an expired lease to account, a delay, window or ttl)
-- one by one (_pop_claim). The cost is an index range of the ready rows plus a few rows per
-- candidate: partitions without work for the group cost nothing. Each round reads one row more
-- than it takes: a round that finds none past its candidates is the last (the next would find
-- none), and a request that runs out of slots or budget with one there knows more is due.
--
-- o_settled: every ready row of the group claimable now that this call's reads showed was
-- claimed here, and none of them is claimable now any more (each was deleted, or waits for its
-- lease to end). Only then is the group's earliest ready row, as far as this call knows, one
-- after i_now (see o_quiet of _pop_one). o_due: a ready row of the group is known to be
-- claimable now: a claim here left one due (its partition has more), a candidate was busy
-- (another consumer holds it, and its row was due when read), or the request ran out of slots or
-- budget with a due row read past its last round's candidates.
--
-- i_busy: partitions that earlier requests of the same call found busy for the group (another
-- transaction held their cursors): they are passed over without trying their cursors again, and
-- count as due. o_busy: i_busy and the partitions found busy here.
--
-- i_after_at, i_after_id: where in claim order an earlier request of the same call for this
-- queue and group stopped, having handled every ready row before it (claimed, found busy, or
-- found with nothing to deliver); null to start at the front. Those rows' index entries are
-- deleted or moved by this very transaction, so no scan could skip them before it commits: a
-- request that starts at the front walks them all. A ready row committed before that point since
-- the earlier request read is left to the next call, so a request that starts there never
-- reports o_settled. o_after_at, o_after_id: where this request stopped in the same sense (the
-- start when it handled no round whole).
-- i_leases, for a run of requests of one partition each (_pop_run): one slot per element, each
-- claiming one partition with up to i_budget messages of its own under its own lease (null:
-- autoAck), i_lease unused. The slots are handed out in order, each round's cursors taking the
-- free ones in claim order. o_slots: the slot of each claimed partition (null without
-- i_leases). o_counts, always: how many messages each claimed partition delivered.
select regina._drop_outdated('regina._pop_claim_many(regina.queues, text, integer, integer, '
                             'boolean, uuid, timestamptz, timestamptz)', 'i_busy');
select regina._drop_outdated('regina._pop_claim_many(regina.queues, text, integer, integer, '
                             'boolean, uuid, timestamptz, timestamptz, bigint[])', 'i_after_at');
select regina._drop_outdated('regina._pop_claim_many(regina.queues, text, integer, integer, '
                             'boolean, uuid, timestamptz, timestamptz, bigint[], timestamptz, '
                             'bigint)', 'i_leases');
select regina._drop_outdated('regina._pop_claim_many(regina.queues, text, integer, integer, '
                             'boolean, uuid, timestamptz, timestamptz, bigint[], timestamptz, '
                             'bigint, uuid[])', 'o_names');
select regina._drop_outdated('regina._pop_claim_many(regina.queues, text, integer, integer, '
                             'boolean, uuid, timestamptz, timestamptz, bigint[], timestamptz, '
                             'bigint, uuid[])', 'o_messages text[]');
create or replace function regina._pop_claim_many(i_q regina.queues, i_group text,
                                                  i_budget integer, i_slots integer,
                                                  i_auto boolean, i_lease uuid,
                                                  i_start_at timestamptz, i_now timestamptz,
                                                  i_busy bigint[], i_after_at timestamptz,
                                                  i_after_id bigint, i_leases uuid[],
                                                  out o_messages text[], out o_claimed bigint[],
                                                  out o_slots integer[], out o_counts integer[],
                                                  out o_names text[], out o_uuids uuid[],
                                                  out o_event json, out o_wake timestamptz,
                                                  out o_settled boolean, out o_due boolean,
                                                  out o_busy bigint[], out o_after_at timestamptz,
                                                  out o_after_id bigint)
language plpgsql as $$
declare
    v_plain boolean := i_q.window_buffer_seconds = 0 and i_q.ttl_seconds = 0
                       and i_q.delayed_processing_seconds = 0;
    v_after_at timestamptz := coalesce(i_after_at, '-infinity');
    v_after_id bigint := coalesce(i_after_id, 0);
    v_cut boolean;
    v_candidates bigint[];
    v_missing bigint[];
    v_eligible_ats timestamptz[];
    v_cursors regina.cursors[];
    v_plain_cursors regina.cursors[];
    v_c regina.cursors;
    v_rest bigint[];
    v_set record;
    v_one record;
    v_ready record;   -- a read of the ready rows (_ready_candidates)
    v_partition_id bigint;
    v_p regina.partitions;
    v_first_ages double precision[] := '{}';
    v_expired bigint := 0;
    v_leases_expired integer := 0;
    v_dead_lettered integer := 0;
    v_limit integer;
    v_more boolean := false;
    v_all_gone boolean := i_after_at is null;
    -- One slot per element of i_leases, each with a budget of its own (see above).
    v_per_slot boolean := i_leases is not null;
    v_free integer[];
    v_taken boolean[];
    v_plain_slots integer[];
    v_plain_leases uuid[];
    v_rest_slots integer[];
    v_j integer;
    v_slot integer;
begin
    o_messages := '{}';
    o_claimed := '{}';
    o_counts := '{}';
    o_names := '{}';
    o_uuids := '{}';
    if v_per_slot then
        o_slots := '{}';
        v_free := array(select generate_series(1, cardinality(i_leases)));
        i_slots := cardinality(i_leases);
    end if;
    o_settled := false;
    o_busy := i_busy;
    o_after_at := i_after_at;
    o_after_id := i_after_id;
    o_due := cardinality(i_busy) > 0;
    while i_budget > 0 and cardinality(o_claimed) < i_slots loop
        v_limit := case when v_per_slot then i_slots - cardinality(o_claimed)
                        else least(i_slots - cardinality(o_claimed), i_budget) end;
        -- One row more than the round takes: when it is there, more is due than this request
        -- claims, which the quiet answer needs to know (see o_due) and could otherwise learn
        -- only by a read from the front of the line, past the index entries of every row that
        -- claims deleted or moved lately.
        v_ready := regina._ready_candidates(i_q.id, i_group, i_now, v_after_at, v_after_id,
                                           i_busy, v_limit + 1);
        v_candidates := v_ready.o_partition_ids;
        v_eligible_ats := v_ready.o_eligible_ats;
        v_more := cardinality(v_candidates) > v_limit;
        if v_more then
            v_candidates := v_candidates[1:v_limit];
            v_eligible_ats := v_eligible_ats[1:v_limit];
        end if;
        if cardinality(v_candidates) = 0 then
            o_settled := v_all_gone;
            exit;
        end if;
        v_after_at := v_eligible_ats[cardinality(v_eligible_ats)];
        v_after_id := v_candidates[cardinality(v_candidates)];
        v_cursors := regina._cursors_lock(v_candidates, i_group);
        -- Some are busy (another consumer of the group holds them) or have no cursor yet. Only
        -- when one has none: create the missing ones and lock again (a cursor locked by this
        -- transaction comes back too). Busy ones alone cost a probe each, not a second lock of
        -- every candidate.
        if cardinality(v_cursors) < cardinality(v_candidates) then
            v_missing := array(
                select k.id from unnest(v_candidates) k(id)
                where k.id <> all (array(select c.partition_id from unnest(v_cursors) c))
                  and (select 1 from regina.cursors c
                       where c.partition_id = k.id and c.consumer_group = i_group) is null);
            if cardinality(v_missing) > 0 then
                perform regina._cursors_create(i_q.id, i_group, v_missing, i_start_at);
                v_cursors := regina._cursors_lock(v_candidates, i_group);
            end if;
            -- Still fewer: the others are busy.
            if cardinality(v_cursors) < cardinality(v_candidates) then
                o_due := true;
                o_busy := o_busy || array(
                    select k.id from unnest(v_candidates) k(id)
                    where k.id <> all (array(select c.partition_id from unnest(v_cursors) c)));
            end if;
            v_all_gone := v_all_gone and not o_due;
        end if;

        -- The locked cursors take the free slots in claim order (one per slot: there are no
        -- more cursors than free slots).
        v_rest := '{}';
        v_rest_slots := '{}';
        v_plain_cursors := '{}';
        v_plain_slots := '{}';
        v_plain_leases := case when v_per_slot then '{}'::uuid[] end;
        v_j := 0;
        foreach v_c in array v_cursors loop
            v_j := v_j + 1;
            v_slot := v_free[v_j];
            if v_plain and not v_c.lease_active and not coalesce(v_c.retry_after > i_now, false) then
                v_plain_cursors := v_plain_cursors || v_c;
                if v_per_slot then
                    v_plain_slots := v_plain_slots || v_slot;
                    v_plain_leases := v_plain_leases || i_leases[v_slot];
                end if;
            else
                v_rest := v_rest || v_c.partition_id;
                v_rest_slots := v_rest_slots || v_slot;
            end if;
        end loop;
        if cardinality(v_plain_cursors) > 0 then
            -- (An assignment without a query: PL/pgSQL evaluates it without the executor.)
            v_set := regina._pop_claim_set(i_q, v_plain_cursors, i_budget, i_auto, i_lease, i_now,
                                           v_plain_leases);
            o_messages := o_messages || v_set.o_messages;
            o_claimed := o_claimed || v_set.o_claimed;
            o_counts := o_counts || v_set.o_counts;
            o_names := o_names || v_set.o_names;
            o_uuids := o_uuids || v_set.o_uuids;
            if v_per_slot then
                o_slots := o_slots || array(select v_plain_slots[k.at]
                                            from unnest(v_set.o_claimed_at) with ordinality k(at, ord)
                                            order by k.ord);
                v_rest_slots := v_rest_slots || array(
                    select v_plain_slots[k.at]
                    from unnest(v_set.o_empty_at) with ordinality k(at, ord) order by k.ord);
            else
                i_budget := i_budget - cardinality(v_set.o_messages);
            end if;
            v_first_ages := v_first_ages || v_set.o_first_ages_ms;
            v_rest := v_rest || v_set.o_empty;
            o_due := o_due or v_set.o_left > 0;
            v_all_gone := v_all_gone and v_set.o_left = 0;
        end if;
        v_all_gone := v_all_gone and cardinality(v_rest) = 0;

        v_cut := false;
        v_j := 0;
        foreach v_partition_id in array v_rest loop
            v_j := v_j + 1;
            if i_budget <= 0 or cardinality(o_claimed) >= i_slots then
                v_cut := true;   -- this one and the rest of the round stay as they were
                exit;
            end if;
            select * into v_p from regina.partitions p where p.id = v_partition_id;
            continue when not found;
            v_slot := v_rest_slots[v_j];
            v_one := regina._pop_claim(i_q, v_p, i_group, i_budget, i_auto,
                                       case when v_per_slot then i_leases[v_slot] else i_lease end,
                                       i_start_at, i_now);
            v_expired := v_expired + v_one.o_expired;
            v_leases_expired := v_leases_expired + v_one.o_lease_expired::integer;
            v_dead_lettered := v_dead_lettered + v_one.o_dead_lettered::integer;
            if v_one.o_messages is not null then
                o_messages := o_messages || v_one.o_messages;
                o_claimed := o_claimed || v_partition_id;
                o_counts := o_counts || cardinality(v_one.o_messages);
                o_names := o_names || v_p.name;
                o_uuids := o_uuids || v_p.uuid;
                if v_per_slot then
                    o_slots := o_slots || v_slot;
                else
                    i_budget := i_budget - cardinality(v_one.o_messages);
                end if;
                v_first_ages := v_first_ages || v_one.o_first_ages_ms;
            else
                o_wake := least(o_wake, v_one.o_wake);
            end if;
        end loop;
        if v_per_slot then
            -- The slots this round claimed are taken; the others stay free, in order.
            v_taken := array_fill(false, array[i_slots]);
            foreach v_slot in array o_slots loop
                v_taken[v_slot] := true;
            end loop;
            v_free := array(select f.slot from unnest(v_free) with ordinality f(slot, ord)
                            where not v_taken[f.slot] order by f.ord);
        end if;
        if not v_cut then
            o_after_at := v_after_at;
            o_after_id := v_after_id;
        end if;
        -- No row past the round's candidates: the round read every row due, and is the last.
        if not v_more then
            o_settled := v_all_gone;
            exit;
        end if;
    end loop;
    -- The slots or the budget ran out with a due row left past the last round's candidates.
    o_due := o_due or v_more;
    if cardinality(o_messages) > 0 or v_expired > 0 or v_leases_expired > 0 then
        o_event := json_build_object(
            'queue', i_q.name, 'delivered', cardinality(o_messages),
            'firstAgesMs', case when cardinality(v_first_ages) > 0 then v_first_ages end,
            'expired', v_expired, 'leasesExpired', v_leases_expired,
            'deadLettered', v_dead_lettered);
    end if;
end
$$;

-- One pop request: claims up to `partitions` partitions, `batch` messages in all. o_events: per
-- claim that delivered or settled something, what the broker's metrics count
-- (`[{queue, delivered, firstAgesMs, expired, leasesExpired, deadLettered}]`), or null.
--
-- o_quiet, for a pop of one named queue over its partitions that asks for it (`quiet`: the
-- broker's long-polls; the others skip the lookup): after this call nothing is eligible
-- for the group there (no ready row is due) until that instant, or `infinity` (until a push, a
-- lease end or a seek); null when something may be eligible now. Read after the call's own
-- claims (the rows due now as its last round of candidates read them, when that round claimed
-- and settled all it found), so a change it does not show is one that committed after the call
-- began: a push, an ack or a seek, each of which the broker hears of. The broker lets long-polls
-- of the group park without asking again until then (http-api.md §4.9).
--
-- i_busy, o_busy: the partitions of the request's group that earlier requests of the call found
-- busy, before and after this one (see _pop_claim_many). i_after_at, i_after_id, o_after_at,
-- o_after_id: where in claim order the earlier requests of the call stopped, before and after
-- this one, for a request that names one queue (see _pop_claim_many); null otherwise.
select regina._drop_outdated('regina._pop_one(jsonb, timestamptz)', 'pop_request');
select regina._drop_outdated('regina._pop_one(regina.pop_request, timestamptz)', 'i_busy');
select regina._drop_outdated('regina._pop_one(regina.pop_request, timestamptz, bigint[])',
                             'i_after_at');
select regina._drop_outdated('regina._pop_one(regina.pop_request, timestamptz, bigint[], '
                             'timestamptz, bigint)', 'o_result text');
-- The answer of a pop that delivered (http-api.md §3.4) as JSON text, around its messages (see
-- regina._message_text).
create or replace function regina._pop_answer(i_queue text, i_partition text,
                                              i_partition_uuid uuid, i_lease text, i_group text,
                                              i_claimed integer, i_messages text[])
returns text
language sql stable parallel safe as $$
    select concat('{"success":true,"queue":', regina._json_text(i_queue),
                  ',"partition":', regina._json_text(i_partition),
                  ',"partitionId":', regina._json_text(i_partition_uuid::text),
                  ',"leaseId":', regina._json_text(i_lease),
                  ',"consumerGroup":', regina._json_text(i_group),
                  ',"partitionsClaimed":', coalesce(i_claimed, 0),
                  ',"messages":[', array_to_string(i_messages, ','), ']}')
$$;

create or replace function regina._pop_one(i_req regina.pop_request, i_now timestamptz,
                                           i_busy bigint[], i_after_at timestamptz,
                                           i_after_id bigint,
                                           out o_result text, out o_events json,
                                           out o_quiet text, out o_busy bigint[],
                                           out o_after_at timestamptz, out o_after_id bigint)
language plpgsql as $$
declare
    v_group text := coalesce(nullif(i_req."consumerGroup", ''), '__QUEUE_MODE__');
    v_auto boolean := coalesce(i_req."autoAck", false);
    v_lease uuid := case when v_auto then null else i_req."leaseId" end;
    v_budget integer := coalesce(i_req.batch, 1);
    v_slots integer := coalesce(i_req.partitions, 1);
    v_single text := nullif(i_req.partition, '');
    v_queues bigint[];
    v_queue_id bigint;
    v_q regina.queues;
    v_p regina.partitions;
    v_start timestamptz;
    v_res record;
    v_many record;
    v_messages text[] := '{}';
    v_events json[] := '{}';
    v_first regina.partitions;
    v_first_queue text;
    v_claimed integer := 0;
    v_reason text := 'empty';
    v_wake timestamptz;
    v_gone integer := 0;
    v_next timestamptz;
begin
    o_busy := i_busy;
    if i_req.queue is not null then
        -- One named queue: its row is read here once (the loop below reads it by id otherwise).
        select * into v_q from regina.queues q where q.name = i_req.queue;
        v_queues := case when found then array[v_q.id] else '{}' end;
    else
        v_queues := regina._pop_queue_order(nullif(i_req.namespace, ''),
                                            nullif(i_req.task, ''), v_group);
        -- A token with queue scopes pops only from the queues they allow (http-api.md §1.6).
        if i_req.scopes is not null then
            v_queues := array(
                select t.id from unnest(v_queues) with ordinality t(id, ord)
                join regina.queues q on q.id = t.id
                where regina._queue_in_scopes(q.name, i_req.scopes)
                order by t.ord);
        end if;
        -- Every queue it covers is subscribed before anything is claimed, in id order (as
        -- _pop_lock_order does for a call of several): a subscription waits for the pushes in
        -- flight, which may wait for a partition a walk has drained.
        for v_queue_id in
            select t.id from unnest(v_queues) t(id)
            where not exists (select 1 from regina.subscriptions s
                              where s.queue_id = t.id and s.consumer_group = v_group)
            order by t.id
        loop
            perform regina._subscription_start(v_queue_id, v_group, i_req, i_now);
        end loop;
    end if;
    if cardinality(v_queues) = 0 then
        o_result := json_build_object('empty', 'queue_not_found', 'wakeAt', null)::text;
        o_quiet := case when i_req.queue is not null and i_req.quiet then 'infinity' end;
        return;
    end if;

    <<queues>>
    foreach v_queue_id in array v_queues loop
        -- A queue deleted since v_queues was read is passed by, as if it had not been found.
        if i_req.queue is null then
            select * into v_q from regina.queues q where q.id = v_queue_id;
        end if;
        if v_q.id = v_queue_id then
            v_start := regina._subscription_start(v_q.id, v_group, i_req, i_now);
        end if;
        if v_q.id is distinct from v_queue_id or v_start = 'infinity' then
            v_gone := v_gone + 1;
            continue queues;
        end if;
        if v_single is null then
            -- Positions in claim order are per queue: only a request naming one carries one.
            v_many := regina._pop_claim_many(v_q, v_group, v_budget, v_slots - v_claimed, v_auto,
                                             v_lease, v_start, i_now, o_busy,
                                             case when i_req.queue is not null then i_after_at end,
                                             case when i_req.queue is not null then i_after_id end,
                                             null);
            o_busy := v_many.o_busy;
            if i_req.queue is not null then
                o_after_at := v_many.o_after_at;
                o_after_id := v_many.o_after_id;
            end if;
            if v_many.o_event is not null then
                v_events := v_events || v_many.o_event;
            end if;
            v_wake := least(v_wake, v_many.o_wake);
            if cardinality(v_many.o_claimed) > 0 then
                if v_claimed = 0 then
                    v_first.name := v_many.o_names[1];
                    v_first.uuid := v_many.o_uuids[1];
                    v_first_queue := v_q.name;
                end if;
                v_messages := v_messages || v_many.o_messages;
                v_budget := v_budget - cardinality(v_many.o_messages);
                v_claimed := v_claimed + cardinality(v_many.o_claimed);
                exit queues when v_budget <= 0 or v_claimed >= v_slots;
            end if;
            continue queues;
        end if;
        select * into v_p from regina.partitions p where p.queue_id = v_q.id and p.name = v_single;
        if not found then
            o_result := json_build_object('empty', 'partition_not_found', 'wakeAt', null)::text;
            return;
        end if;
        v_res := regina._pop_claim(v_q, v_p, v_group, v_budget, v_auto, v_lease, v_start, i_now);
        if v_res.o_messages is not null or v_res.o_expired > 0 or v_res.o_lease_expired then
            v_events := v_events || json_build_object(
                'queue', v_q.name, 'delivered', coalesce(cardinality(v_res.o_messages), 0),
                'firstAgesMs', v_res.o_first_ages_ms, 'expired', v_res.o_expired,
                'leasesExpired', v_res.o_lease_expired::integer,
                'deadLettered', v_res.o_dead_lettered::integer);
        end if;
        if v_res.o_messages is not null then
            v_messages := v_res.o_messages;
            v_claimed := 1;
            v_first := v_p;
            v_first_queue := v_q.name;
        else
            v_reason := v_res.o_reason;
            v_wake := v_res.o_wake;
        end if;
    end loop;

    if cardinality(v_events) > 0 then
        o_events := array_to_json(v_events);
    end if;
    if i_req.queue is not null and v_single is null and i_req.quiet then
        if v_gone > 0 then
            o_quiet := 'infinity';
        else
            v_next := regina._pop_quiet_at(v_q.id, v_group, i_now, v_many.o_due,
                                           v_many.o_settled);
            o_quiet := case when v_next = 'infinity' then 'infinity'
                            when v_next > i_now then regina._ts_us(v_next) end;
            v_next := nullif(v_next, 'infinity');
        end if;
    end if;
    if v_claimed = 0 then
        if v_gone = cardinality(v_queues) then
            o_result := json_build_object('empty', 'queue_not_found', 'wakeAt', null)::text;
            return;
        end if;
        -- A quiet answer read the group's earliest ready row already: nothing was due, so it
        -- is the earliest future one (or there is none).
        if o_quiet is not null then
            v_wake := least(v_wake, v_next);
        elsif v_single is null then
            -- Each queue's earliest in claim order (one `= any` range would be read whole).
            v_wake := least(v_wake, (select min(regina._ready_next(k.id, v_group, i_now))
                                     from unnest(v_queues) k(id)));
        end if;
        o_result := json_build_object('empty', v_reason,
                                      'wakeAt', regina._ts_us(case when v_wake > i_now then v_wake end))::text;
        return;
    end if;
    o_result := regina._pop_answer(v_first_queue, v_first.name, v_first.uuid,
                                   coalesce(v_lease::text, ''), v_group, v_claimed, v_messages);
end
$$;

-- Whether pop requests a and b can be served as one run (_pop_run): both name the same queue and
-- not a partition, ask for one partition, and agree on everything else the claim depends on
-- (group, batch, autoAck, subscription, scopes, quiet); with leases, each brings its own.
create or replace function regina._pop_alike(a regina.pop_request, b regina.pop_request)
returns boolean
language sql immutable as $$
    select a.queue is not null and b.queue = a.queue
       and nullif(a.partition, '') is null and nullif(b.partition, '') is null
       and coalesce(a.partitions, 1) = 1 and coalesce(b.partitions, 1) = 1
       and coalesce(a.batch, 1) >= 1 and coalesce(b.batch, 1) = coalesce(a.batch, 1)
       and coalesce(nullif(b."consumerGroup", ''), '__QUEUE_MODE__')
           = coalesce(nullif(a."consumerGroup", ''), '__QUEUE_MODE__')
       and coalesce(b."autoAck", false) = coalesce(a."autoAck", false)
       and (coalesce(a."autoAck", false) or (a."leaseId" is not null and b."leaseId" is not null))
       and b."subscriptionMode" is not distinct from a."subscriptionMode"
       and b."subscriptionFrom" is not distinct from a."subscriptionFrom"
       and b.scopes is not distinct from a.scopes
       and coalesce(b.quiet, false) = coalesce(a.quiet, false)
$$;

-- A run of consecutive pop requests alike (_pop_alike), served as one claim: the requests are
-- its slots, in order, each given at most one partition with up to `batch` messages under its
-- own lease, as the same requests one after the other would be (longest waiting partitions
-- first) -- but with one read of the ready rows, one lock of the cursors and one read of the
-- messages for the lot, not one per request. o_results: one per request (_pop_one's o_result).
-- o_events: the run's, for the metrics (given with its first request). o_quiet: the group's on
-- the queue after the run's claims, for every request of the run. i_busy, i_after_at,
-- i_after_id and the matching outputs: as for _pop_one.
select regina._drop_outdated('regina._pop_run(regina.pop_request[], timestamptz, bigint[], '
                             'timestamptz, bigint)', 'o_results text[]');
create or replace function regina._pop_run(i_reqs regina.pop_request[], i_now timestamptz,
                                           i_busy bigint[], i_after_at timestamptz,
                                           i_after_id bigint,
                                           out o_results text[], out o_events json,
                                           out o_quiet text, out o_busy bigint[],
                                           out o_after_at timestamptz, out o_after_id bigint)
language plpgsql as $$
declare
    v_req regina.pop_request := i_reqs[1];
    v_group text := coalesce(nullif(v_req."consumerGroup", ''), '__QUEUE_MODE__');
    v_auto boolean := coalesce(v_req."autoAck", false);
    -- The slots' leases (all null with autoAck).
    v_leases uuid[] := array(select case when not v_auto then r."leaseId" end
                             from unnest(i_reqs) with ordinality r
                             order by r.ordinality);
    v_q regina.queues;
    v_start timestamptz;
    v_many record;
    v_next timestamptz;
    v_wake timestamptz;
    v_from integer := 1;
    v_i integer;
    v_slot integer;
begin
    o_busy := i_busy;
    o_after_at := i_after_at;
    o_after_id := i_after_id;
    select * into v_q from regina.queues q where q.name = v_req.queue;
    if v_q.id is not null then
        v_start := regina._subscription_start(v_q.id, v_group, v_req, i_now);
    end if;
    if v_q.id is null or v_start = 'infinity' then
        o_results := array_fill(json_build_object('empty', 'queue_not_found', 'wakeAt', null)::text,
                                array[cardinality(i_reqs)]);
        o_quiet := case when v_req.quiet then 'infinity' end;
        return;
    end if;
    v_many := regina._pop_claim_many(v_q, v_group, coalesce(v_req.batch, 1), cardinality(i_reqs),
                                     v_auto, null, v_start, i_now, i_busy, i_after_at, i_after_id,
                                     v_leases);
    o_busy := v_many.o_busy;
    o_after_at := v_many.o_after_at;
    o_after_id := v_many.o_after_id;
    if v_many.o_event is not null then
        o_events := json_build_array(v_many.o_event);
    end if;
    -- Once for the run.
    if v_req.quiet then
        v_next := regina._pop_quiet_at(v_q.id, v_group, i_now, v_many.o_due, v_many.o_settled);
        o_quiet := case when v_next = 'infinity' then 'infinity'
                        when v_next > i_now then regina._ts_us(v_next) end;
        v_next := nullif(v_next, 'infinity');
    end if;
    -- The requests given no partition: as _pop_one answers a request that claimed nothing.
    if cardinality(v_many.o_claimed) < cardinality(i_reqs) then
        v_wake := v_many.o_wake;
        if o_quiet is not null then
            v_wake := least(v_wake, v_next);
        else
            v_wake := least(v_wake, regina._ready_next(v_q.id, v_group, i_now));
        end if;
    end if;
    o_results := array_fill(json_build_object(
                     'empty', 'empty',
                     'wakeAt', regina._ts_us(case when v_wake > i_now then v_wake end))::text,
                 array[cardinality(i_reqs)]);
    if cardinality(v_many.o_claimed) = 0 then
        return;
    end if;
    -- The messages come grouped by claimed partition, in claim order.
    for v_i in 1 .. cardinality(v_many.o_claimed) loop
        v_slot := v_many.o_slots[v_i];
        o_results[v_slot] := regina._pop_answer(
            v_q.name, v_many.o_names[v_i], v_many.o_uuids[v_i],
            coalesce(v_leases[v_slot]::text, ''), v_group, 1,
            v_many.o_messages[v_from : v_from + v_many.o_counts[v_i] - 1]);
        v_from := v_from + v_many.o_counts[v_i];
    end loop;
end
$$;

-- A pop call of one request, or of one run of alike requests (_pop_alike), in the plain case,
-- with as few statements as it takes: the requests name one queue but no partition and ask for
-- one partition each; the queue has no delay, window or ttl and the group is subscribed to it;
-- and each of the first claimable partitions (one per request, in claim order) has a cursor
-- nobody holds, without a lease, a pending retry or settled marks ahead, and messages for the
-- group. Or, the other plain case, no claimable partition at all. Requests that are not one or
-- one run (some not alike the first) are declined too. It answers what the general
-- path answers for that call (_pop_one for one request, _pop_run for a run, through
-- _pop_claim_many and _pop_claim_set), with the same writes: o_results one per request,
-- o_events (the call's, given with its first request), o_quiet (the group's on the queue, for
-- every request). In five statements of its own for one autoAck request (four with a lease) and
-- a read of the earliest ready row for a quiet answer, with two more for each further request of
-- a run (one with leases), against about ten in nine functions there, each set up at every
-- execution (docs/benchmarks.md). Null o_results: not the
-- plain case, and nothing written (the caller takes the general path, which finds the cursors
-- this call locked as its own). Its reads of the ready rows go in claim order without bitmaps or
-- sorts, as regina._ready_candidates and regina._ready_next do (see there).
drop function if exists regina._pop_lone(regina.pop_request, timestamptz);
create or replace function regina._pop_lone(i_reqs regina.pop_request[], i_now timestamptz,
                                            out o_results text[], out o_events json,
                                            out o_quiet text)
language plpgsql set enable_bitmapscan = off set enable_sort = off set jit = off as $$
declare
    v_req regina.pop_request := i_reqs[1];
    v_slots integer := cardinality(i_reqs);
    v_group text := coalesce(nullif(v_req."consumerGroup", ''), '__QUEUE_MODE__');
    v_auto boolean := coalesce(v_req."autoAck", false);
    v_budget integer := coalesce(v_req.batch, 1);
    -- The requests' leases, in order (none with autoAck).
    v_leases uuid[] := '{}';
    v_delivered integer := 0;
    v_q record;
    v_ids bigint[];
    v_read record;
    v_partition_id bigint;
    v_claimed integer := 0;
    v_i integer;
    v_head bigint;
    v_expires timestamptz;
    v_moved integer;
    v_left integer := 0;
    v_next timestamptz;
    v_empty text;
begin
    if v_req.queue is null or nullif(v_req.partition, '') is not null
       or coalesce(v_req.partitions, 1) <> 1 or v_budget < 1 then
        return;
    end if;
    -- A run: every request alike the first.
    for v_i in 2 .. v_slots loop
        if not regina._pop_alike(v_req, i_reqs[v_i]) then
            return;
        end if;
    end loop;
    -- (Assignments in a loop rather than a query: PL/pgSQL evaluates them without the executor.)
    if not v_auto then
        for v_i in 1 .. v_slots loop
            v_leases[v_i] := i_reqs[v_i]."leaseId";
        end loop;
    end if;
    select q.id, q.name, q.lease_time,
           q.window_buffer_seconds = 0 and q.ttl_seconds = 0
               and q.delayed_processing_seconds = 0 as plain,
           (select true from regina.subscriptions s
            where s.queue_id = q.id and s.consumer_group = v_group) as subscribed
    into v_q
    from regina.queues q where q.name = v_req.queue;
    if not found or not v_q.plain or v_q.subscribed is null then
        return;
    end if;
    -- The first claimable ready rows, one per request and one more: that one means more is due
    -- than these requests claim (o_due of _pop_claim_many).
    v_ids := array(select r.partition_id from regina.ready r
                   where r.queue_id = v_q.id and r.consumer_group = v_group
                     and r.eligible_at <= i_now
                   order by r.eligible_at, r.partition_id
                   limit v_slots + 1);
    if cardinality(v_ids) > 0 then
        -- The candidates' cursors, locked without waiting, each with its partition and up to the
        -- budget of its head's messages for the group, in offset order, written as the answer's
        -- text under the lease of the request it goes to (the candidates take the requests in
        -- claim order). The rows come in claim order, each cursor's messages by offset: the
        -- nested loop walks the candidates in array order and reads each partition by the
        -- primary key, and the aggregates keep that order (as in _pop_claim_set). Every lateral
        -- subquery keeps its `limit`, its lock or its aggregate: one that the planner could pull
        -- up into a plain join would leave the join order, and so the claim order, to it.
        select array_agg(k.partition_id) as ids, array_agg(m.answer) as answers,
               array_agg(m.n) as counts, array_agg(m.last) as lasts,
               string_agg(m.ages, ',') as ages,
               bool_and(not c.lease_active and not coalesce(c.retry_after > i_now, false)
                        and cardinality(c.marks) = 0 and m.last is not null) as plain
        into v_read
        from unnest(v_ids[1:v_slots]) with ordinality k(partition_id, ord)
        cross join lateral (select cc.next_seq, cc.marks, cc.head_attempts, cc.lease_end_seq,
                                   cc.lease_active, cc.retry_after
                            from regina.cursors cc
                            where cc.partition_id = k.partition_id
                              and cc.consumer_group = v_group
                            for update skip locked) c
        cross join lateral (select pp.name, pp.uuid from regina.partitions pp
                            where pp.id = k.partition_id limit 1) p
        cross join lateral (
            select regina._pop_answer(
                       v_q.name, p.name, p.uuid, coalesce(v_leases[k.ord]::text, ''), v_group, 1,
                       array[string_agg(regina._message_text(
                                 h.id, h.transaction_id, h.trace_id, h.payload, h.producer_sub,
                                 h.created_at, p.uuid, p.name, v_q.name,
                                 coalesce(v_leases[k.ord]::text, ''), v_group,
                                 case when h.rn = 1 then c.head_attempts else 0 end,
                                 h.payload_key_id), ',')]) as answer,
                   max(h.seq) as last, count(*)::integer as n,
                   string_agg(greatest(date_part('epoch', i_now - h.created_at) * 1000, 0)::text,
                              ',')
                       filter (where h.for_group is null
                                     and h.seq > coalesce(c.lease_end_seq, -1)) as ages
            from (select mm.*, row_number() over (order by mm.seq) as rn
                  from (select x.* from regina.messages x
                        where x.partition_id = k.partition_id
                          and x.seq >= c.next_seq and x.seq <> all (c.marks)
                          and (x.for_group is null or x.for_group = v_group)
                        order by x.seq
                        limit v_budget) mm) h) m;
        -- A candidate without a cursor (busy, or none yet), or whose cursor needs more than a
        -- read, or with nothing to deliver (its head at the partition's end, or behind what
        -- retention removed): the general path.
        if cardinality(v_read.ids) is distinct from least(v_slots, cardinality(v_ids))
           or not v_read.plain then
            return;
        end if;
        v_claimed := cardinality(v_read.ids);
        v_expires := i_now + v_q.lease_time * interval '1 second';
        for v_i in 1 .. v_claimed loop
            v_partition_id := v_read.ids[v_i];
            v_delivered := v_delivered + v_read.counts[v_i];
            if v_auto then
                -- Fewer than the budget: the read went to the partition's end. Else the head
                -- moves past what follows for other groups only (_advance).
                v_head := case when v_read.counts[v_i] < v_budget then v_read.lasts[v_i] + 1
                               else regina._advance(v_partition_id, v_read.lasts[v_i] + 1,
                                                    '{}', v_group) end;
                update regina.cursors c
                set next_seq = v_head, marks = '{}', head_attempts = 0, head_error = null,
                    total_consumed = c.total_consumed + v_read.counts[v_i],
                    batches_consumed = c.batches_consumed + 1, last_consumed_at = i_now,
                    last_claim_at = i_now
                where c.partition_id = v_partition_id and c.consumer_group = v_group;
                -- The ready row as _ready_sync leaves it: deleted when the head reached the
                -- partition's end, under the partition's share lock (a push holding it has more
                -- for the group), else claimable now at the back of the line.
                with drained as (select pp.id from regina.partitions pp
                                 where pp.id = v_partition_id and pp.next_seq <= v_head
                                 for share skip locked),
                     gone as (delete from regina.ready r using drained d
                              where r.partition_id = d.id and r.consumer_group = v_group)
                update regina.ready r set eligible_at = i_now
                where r.partition_id = v_partition_id and r.consumer_group = v_group
                  and not exists (select 1 from drained);
                get diagnostics v_moved = row_count;
                v_left := v_left + v_moved;
            else
                with leased as (update regina.cursors c
                                set lease_id = v_leases[v_i], lease_active = true,
                                    lease_expires_at = v_expires,
                                    lease_end_seq = v_read.lasts[v_i], lease_marks = '{}',
                                    last_claim_at = i_now
                                where c.partition_id = v_partition_id
                                  and c.consumer_group = v_group)
                update regina.ready r set eligible_at = v_expires
                where r.partition_id = v_partition_id and r.consumer_group = v_group;
            end if;
        end loop;
        o_events := array_to_json(array[json_build_object(
                        'queue', v_q.name,
                        'delivered', v_delivered,
                        'firstAgesMs', ('[' || v_read.ages || ']')::json,
                        'expired', 0, 'leasesExpired', 0, 'deadLettered', 0)]);
    end if;
    -- Quiet only when no row is due: none past the candidates, and none of the claimed ones due
    -- again. A request given no partition wakes at the earliest ready row after i_now (every
    -- row due now was claimed, and moved to i_now or after).
    if v_req.quiet and cardinality(v_ids) <= v_slots and v_left = 0 then
        v_next := regina._ready_next(v_q.id, v_group, i_now);
        o_quiet := coalesce(regina._ts_us(v_next), 'infinity');
    elsif cardinality(v_ids) < v_slots then
        v_next := regina._ready_next(v_q.id, v_group, i_now);
    end if;
    if v_claimed = v_slots then
        o_results := v_read.answers;
        return;
    end if;
    v_empty := json_build_object('empty', 'empty', 'wakeAt', regina._ts_us(v_next))::text;
    o_results := array_fill(v_empty, array[v_slots]);
    for v_i in 1 .. v_claimed loop
        o_results[v_i] := v_read.answers[v_i];
    end loop;
end
$$;

-- Pop requests of one fused batch, served in arrival order in one transaction: one row per
-- request, its result (§3.4 body or `{empty, wakeAt}`) as JSON text, its events and its quiet
-- (see _pop_one). What the broker calls: it reads the result as text and sends it on, so nothing
-- here parses it (regina.pop gives the same rows with the result as `json`).
create or replace function regina.pop_text(i_reqs jsonb, i_now timestamptz default null)
returns table (idx integer, result text, events json, quiet text)
-- Generic plans without sequential scans, as for regina.push.
language plpgsql set plan_cache_mode = force_generic_plan set enable_seqscan = off
    set jit = off as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    -- The requests, read once into their declared shape (migrations/0014_request_types.sql).
    v_reqs regina.pop_request[] := array(select r from jsonb_populate_recordset(
                                             null::regina.pop_request, i_reqs) r);
    v_req regina.pop_request;
    v_claims_only boolean := true;
    -- Whether the requests name more than one (queue or selector, group).
    v_groups boolean := false;
    v_selectors boolean := false;
    v_lone record;
    v_one record;
    -- Partitions that requests of this call found busy, for consecutive requests of the same
    -- queues (name or selector) and group (v_busy_key): the requests after them pass those by
    -- instead of trying their cursors again (another call holds them, most likely until after
    -- this one ends).
    v_busy_key text[];
    v_busy bigint[] := '{}';
    -- And where in claim order they stopped, every ready row before it handled (a request
    -- naming one queue; see _pop_claim_many): the next one starts there.
    v_after_at timestamptz;
    v_after_id bigint;
    -- A run of requests alike (v_reqs[v_i:v_j]) and its answer.
    v_i integer := 1;
    v_j integer;
    v_run record;
begin
    -- A claim that is lost in a database crash is a lease that ended early: its messages are
    -- delivered again, which at-least-once allows. So a call that only claims does not wait for
    -- its commit to reach the disk. autoAck settles messages for good (at-most-once): it waits,
    -- unless the caller turned `synchronous_commit` off for its transaction (the broker does
    -- with AUTO_ACK_COMMIT_ASYNC: an autoAck delivery lost in a database crash is delivered
    -- again).
    foreach v_req in array v_reqs loop
        v_claims_only := v_claims_only and not coalesce(v_req."autoAck", false);
        v_selectors := v_selectors or v_req.queue is null;
        v_groups := v_groups or v_req.queue is distinct from v_reqs[1].queue
                    or v_req.namespace is distinct from v_reqs[1].namespace
                    or v_req.task is distinct from v_reqs[1].task
                    or v_req."consumerGroup" is distinct from v_reqs[1]."consumerGroup";
    end loop;
    -- A call of one queue or selector and group has no order to keep (a lone namespace or task
    -- request subscribes the queues it covers itself, before it claims anything: _pop_one).
    if v_groups then
        perform regina._pop_lock_order(v_reqs, v_now, v_selectors);
    end if;
    if v_claims_only then
        perform set_config('synchronous_commit', 'off', true);
    end if;
    -- A call of one request, or of one run of alike requests, in the plain case: answered in a
    -- few statements (_pop_lone).
    v_lone := regina._pop_lone(v_reqs, v_now);
    if v_lone.o_results is not null then
        for k in 1 .. cardinality(v_reqs) loop
            idx := k - 1;
            result := v_lone.o_results[k];
            events := case when k = 1 then v_lone.o_events end;
            quiet := v_lone.o_quiet;
            return next;
        end loop;
        return;
    end if;
    while v_i <= cardinality(v_reqs) loop
        v_req := v_reqs[v_i];
        if v_busy_key is distinct from array[v_req.queue, v_req.namespace, v_req.task,
                                             v_req."consumerGroup"] then
            v_busy_key := array[v_req.queue, v_req.namespace, v_req.task, v_req."consumerGroup"];
            v_busy := '{}';
            v_after_at := null;
            v_after_id := null;
        end if;
        v_j := v_i;
        while v_j < cardinality(v_reqs) and regina._pop_alike(v_req, v_reqs[v_j + 1]) loop
            v_j := v_j + 1;
        end loop;
        if v_j > v_i then
            -- Requests alike (the same queue, group and shape, one partition each): one claim.
            v_run := regina._pop_run(v_reqs[v_i:v_j], v_now, v_busy, v_after_at, v_after_id);
            v_busy := v_run.o_busy;
            v_after_at := v_run.o_after_at;
            v_after_id := v_run.o_after_id;
            for k in v_i .. v_j loop
                idx := k - 1;
                result := v_run.o_results[k - v_i + 1];
                events := case when k = v_i then v_run.o_events end;
                quiet := v_run.o_quiet;
                return next;
            end loop;
        else
            -- An assignment, not `select … into`: PL/pgSQL evaluates it without the executor.
            v_one := regina._pop_one(v_req, v_now, v_busy, v_after_at, v_after_id);
            v_busy := v_one.o_busy;
            v_after_at := v_one.o_after_at;
            v_after_id := v_one.o_after_id;
            idx := v_i - 1;
            result := v_one.o_result;
            events := v_one.o_events;
            quiet := v_one.o_quiet;
            return next;
        end if;
        v_i := v_j + 1;
    end loop;
end
$$;

-- regina.pop_text with each result as `json` (parsed, so checked): for callers in SQL.
select regina._drop_outdated('regina.pop(jsonb, timestamptz)', 'quiet');
create or replace function regina.pop(i_reqs jsonb, i_now timestamptz default null)
returns table (idx integer, result json, events json, quiet text)
language sql as $$
    select p.idx, p.result::json, p.events, p.quiet from regina.pop_text(i_reqs, i_now) p
$$;

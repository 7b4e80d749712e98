-- Seek (POST /api/v1/consumer-groups/:group/queues/:queue[/partitions/:partition]/seek): moves a
-- group's cursors to the end of each partition, or to the first message created after an
-- instant, on every partition of the queue (creating cursors where the group had none) or on one.
-- A seek ends the group's active leases there and clears failed attempts and retry delays; a
-- seek back makes settled messages unsettled again, so it must put ready rows back (the ready
-- set, migrations/0002_ready.sql): pops only look there.
--
-- Lock order as in 71_consumer_group_changes.sql: cursors in (partition, group) order, then the
-- partitions table (only when the seek subscribes the group).

-- Moves one locked cursor to offset i_to: a seek forward keeps the settled marks beyond it, a
-- seek back forgets every mark (everything from i_to on is delivered again). The lease ends; its
-- completions, failed attempts and retry delay are forgotten.
create or replace function regina._seek_cursor(i_c regina.cursors, i_to bigint)
returns regina.cursors
language plpgsql immutable as $$
declare
    v_c regina.cursors := i_c;
begin
    v_c.marks := case when i_to >= i_c.next_seq then regina._marks_from(i_c.marks, i_to)
                      else '{}' end;
    v_c.next_seq := i_to;
    v_c.lease_marks := '{}';
    v_c.lease_active := false;
    v_c.head_attempts := 0;
    v_c.head_error := null;
    v_c.retry_after := null;
    return v_c;
end
$$;

-- i_req: `{queue, partition (text|null: every partition), consumerGroup, toEnd (boolean),
-- timestamp (ISO text|null)}`. Returns `{missing: "queue"|"partition"}`, or
-- `{partitionsUpdated, targetTimestamp, cursorMovedTo}`: `cursorMovedTo` is the last message the
-- group now counts as passed on the (last) partition sought, `{messageId, transactionId,
-- createdAt}` or null. The queue row is held (`for key share`) throughout, so a deletion of the
-- queue waits for the seek instead of leaving it cursors of partitions that are gone.
create or replace function regina.consumer_group_seek(i_req jsonb, i_now timestamptz default null)
returns jsonb
-- Keyed lookups only: a plan made from statistics that call a table tiny must not scan it whole
-- once it has grown.
language plpgsql set enable_seqscan = off set jit = off as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_group text := i_req ->> 'consumerGroup';
    v_single text := i_req ->> 'partition';
    -- Exclusive (createdAt > timestamp): one microsecond later, inclusively.
    v_after timestamptz :=
        case when not coalesce((i_req ->> 'toEnd')::boolean, false)
             then (i_req ->> 'timestamp')::timestamptz + interval '1 microsecond' end;
    v_q regina.queues;
    v_p regina.partitions;
    v_c regina.cursors;
    v_ids bigint[];
    v_to bigint;
begin
    select * into v_q from regina.queues q where q.name = i_req ->> 'queue' for key share;
    if not found then
        return jsonb_build_object('missing', 'queue');
    end if;
    v_ids := array(select p.id from regina.partitions p
                   where p.queue_id = v_q.id and (v_single is null or p.name = v_single)
                   order by p.id);
    if v_single is not null and cardinality(v_ids) = 0 then
        return jsonb_build_object('missing', 'partition');
    end if;

    -- Every cursor exists and is locked, in order, before anything moves.
    foreach v_to in array v_ids loop
        insert into regina.cursors (partition_id, consumer_group, queue_id, next_seq)
        values (v_to, v_group, v_q.id, 0)
        on conflict do nothing;
        perform 1 from regina.cursors c
        where c.partition_id = v_to and c.consumer_group = v_group
        for update;
    end loop;
    -- A group the queue did not know yet is subscribed from the beginning: its cursors fix
    -- where it stands on today's partitions, and later partitions hold only later messages.
    perform regina._subscription_start(
            v_q.id, v_group,
            jsonb_populate_record(null::regina.pop_request, '{"subscriptionMode": "all"}'), v_now);

    for v_p in select * from regina.partitions p where p.id = any (v_ids) order by p.id loop
        select * into v_c from regina.cursors c
        where c.partition_id = v_p.id and c.consumer_group = v_group;
        -- Offsets below next_seq are committed: a push in flight lands after the seek. A
        -- timestamp in the future finds no message after it, hence the end too.
        v_to := case when v_after is null
                     then (select p.next_seq from regina.partitions p where p.id = v_p.id)
                     else regina._start_seq(v_p.id, v_after) end;
        v_c := regina._seek_cursor(v_c, v_to);
        if v_to < v_p.next_seq then
            insert into regina.ready (partition_id, consumer_group, queue_id, eligible_at)
            select v_p.id, v_group, v_q.id, v_now
            where not exists (select 1 from regina.ready r
                              where r.partition_id = v_p.id and r.consumer_group = v_group)
            on conflict do nothing;
        end if;
        perform regina._cursor_save(v_c, v_now);
    end loop;

    return jsonb_build_object(
        'partitionsUpdated', cardinality(v_ids),
        'targetTimestamp', regina._ts(v_after - interval '1 microsecond'),
        'cursorMovedTo', (
            select jsonb_build_object('messageId', m.id, 'transactionId', m.transaction_id,
                                      'createdAt', regina._ts_us(m.created_at))
            from regina.messages m
            where m.partition_id = v_p.id and m.seq < v_c.next_seq
            order by m.seq desc
            limit 1));
end
$$;

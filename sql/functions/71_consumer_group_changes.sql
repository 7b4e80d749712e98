-- Consumer groups, changes (DELETE /api/v1/consumer-groups/…, POST …/subscription): they delete
-- cursors or move where a group starts, so each keeps the ready set true
-- (migrations/0002_ready.sql): every partition holding a message the group has not settled keeps
-- a ready row.
--
-- Lock order, shared with seeks (72_seek.sql) and transactions (60_transaction.sql): cursors in
-- (partition, group) order first, then the partitions table. A transaction holding the table in
-- row-exclusive mode never waits for a cursor, so taking the table after cursors cannot deadlock.

-- Adds the ready rows of the partitions of i_queue_ids where i_group has no cursor and that hold
-- messages from its subscription start on (the rule of _subscription_start), claimable now. Rows
-- that exist stay; pushes in flight add their own (the subscription exists), so no table lock.
create or replace function regina._group_ready_from_start(i_queue_ids bigint[], i_group text,
                                                          i_now timestamptz)
returns void
language plpgsql as $$
begin
    insert into regina.ready (partition_id, consumer_group, queue_id, eligible_at)
    select p.id, i_group, p.queue_id, least(p.last_created_at, i_now)
    from regina.partitions p
    join regina.subscriptions s on s.queue_id = p.queue_id and s.consumer_group = i_group
    where p.queue_id = any (i_queue_ids) and p.next_seq > 0
      and (s.start_at is null or p.last_created_at >= s.start_at)
      and not exists (select 1 from regina.cursors c
                      where c.partition_id = p.id and c.consumer_group = i_group)
      and not exists (select 1 from regina.ready r
                      where r.partition_id = p.id and r.consumer_group = i_group)
    order by p.id
    on conflict do nothing;
end
$$;

-- Deletes a group's cursors (ending its leases) on one queue (i_queue) or on every queue, and
-- with i_delete_metadata its subscriptions and ready rows; dead letters stay. Without, the group
-- starts afresh from its kept subscription start: its ready rows are re-derived from it.
-- Returns `{deletedPartitions, metadataDeleted, queues}`: `queues` lists the queues whose waiters
-- of the group should retry.
create or replace function regina.consumer_group_delete(i_group text, i_queue text,
                                                        i_delete_metadata boolean,
                                                        i_now timestamptz default null)
returns jsonb
language plpgsql as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_queue_ids bigint[];
    v_deleted bigint;
begin
    v_queue_ids := array(
        select q.id from regina.queues q
        where (i_queue is null or q.name = i_queue)
          and (exists (select 1 from regina.subscriptions s
                       where s.queue_id = q.id and s.consumer_group = i_group)
               or exists (select 1 from regina.cursors c
                          where c.queue_id = q.id and c.consumer_group = i_group)));
    perform 1 from regina.cursors c
    where c.queue_id = any (v_queue_ids) and c.consumer_group = i_group
    order by c.partition_id, c.consumer_group
    for update;
    delete from regina.cursors c
    where c.queue_id = any (v_queue_ids) and c.consumer_group = i_group;
    get diagnostics v_deleted = row_count;

    if i_delete_metadata then
        -- Share mode waits for pushes in flight, which read the subscription and would add
        -- ready rows for the group after the delete below.
        lock table regina.partitions in share mode;
        delete from regina.subscriptions s
        where s.queue_id = any (v_queue_ids) and s.consumer_group = i_group;
        delete from regina.ready r
        where r.queue_id = any (v_queue_ids) and r.consumer_group = i_group;
    else
        -- Leases and retry delays ended with the cursors.
        update regina.ready r set eligible_at = v_now
        where r.queue_id = any (v_queue_ids) and r.consumer_group = i_group
          and r.eligible_at > v_now;
        perform regina._group_ready_from_start(v_queue_ids, i_group, v_now);
    end if;
    return jsonb_build_object(
        'deletedPartitions', v_deleted,
        'metadataDeleted', i_delete_metadata,
        'queues', (select coalesce(jsonb_agg(q.name order by q.name), '[]')
                   from regina.queues q where q.id = any (v_queue_ids)));
end
$$;

-- Sets where a named group starts (a timestamp) on every queue where it has a subscription;
-- partitions it already has a cursor on keep their position. Queue mode ignores subscription
-- settings (http-api.md §4.1) and is left alone. Returns `{newTimestamp, rowsUpdated, queues}`:
-- `queues` lists the queues whose waiters of the group should retry (an earlier start may give
-- them work).
create or replace function regina.consumer_group_subscription(i_group text, i_start_at timestamptz,
                                                              i_now timestamptz default null)
returns jsonb
language plpgsql as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_queue_ids bigint[];
begin
    with changed as (
        update regina.subscriptions s set mode = 'timestamp', start_at = i_start_at
        where s.consumer_group = i_group and i_group <> '__QUEUE_MODE__'
        returning s.queue_id)
    select array_agg(c.queue_id order by c.queue_id) into v_queue_ids from changed c;
    v_queue_ids := coalesce(v_queue_ids, '{}');
    perform regina._group_ready_from_start(v_queue_ids, i_group, v_now);
    return jsonb_build_object(
        'newTimestamp', regina._ts(i_start_at),
        'rowsUpdated', cardinality(v_queue_ids),
        'queues', (select coalesce(jsonb_agg(q.name order by q.name), '[]')
                   from regina.queues q where q.id = any (v_queue_ids)));
end
$$;

-- Queue delete and clear (http-api.md §3.8). Both lock the queue row, then its partitions in id
-- order (as pushes do: pushes in flight finish first, later ones wait), then its cursors in
-- (partition, group) order (as acks do), so they cannot deadlock with either.

-- DELETE /api/v1/resources/queues/:queue: the queue with its partitions, messages, trace events,
-- cursors (so active leases end), subscriptions, ready rows and dead letters. Idempotent:
-- `existed` says whether there was anything to delete. A push that was waiting for one of the
-- partitions finds it gone and creates the queue anew (regina.push).
create or replace function regina.queue_delete(i_queue text) returns json
-- Keyed lookups only: a plan made from statistics that call a table tiny must not scan it whole
-- once it has grown.
language plpgsql set enable_seqscan = off set jit = off as $$
declare
    v_q regina.queues;
begin
    select * into v_q from regina.queues q where q.name = i_queue for update;
    if not found then
        return json_build_object('deleted', true, 'queue', i_queue, 'existed', false);
    end if;
    perform 1 from regina.partitions p where p.queue_id = v_q.id order by p.id for update;
    perform 1 from regina.cursors c where c.queue_id = v_q.id
    order by c.partition_id, c.consumer_group for update;
    -- Along the primary key, partition by partition: a join let the planner read every message.
    delete from regina.messages m
    where m.partition_id = any (array(select p.id from regina.partitions p where p.queue_id = v_q.id));
    perform regina._traces_forget(p.id) from regina.partitions p where p.queue_id = v_q.id;
    delete from regina.dead_letters d where d.queue_id = v_q.id;
    delete from regina.ready r where r.queue_id = v_q.id;
    delete from regina.cursors c where c.queue_id = v_q.id;
    delete from regina.queues q where q.id = v_q.id;   -- partitions and subscriptions cascade
    perform regina._trace_names_settle();
    return json_build_object('deleted', true, 'queue', v_q.name, 'existed', true);
end
$$;

-- Empties a queue, or one partition of it (i_partition; Queen's admin clients clear a partition
-- this way), and keeps it: deletes its messages, dead letters and traces, moves every group's
-- cursor to the end of each partition (lag 0) and ends active leases; configuration,
-- partitions, groups and subscriptions stay. No row for an unknown queue; `partition_missing`
-- for an unknown partition (nothing cleared). wake_groups: the groups whose leases ended.
select regina._drop_outdated('regina.queue_clear(text)', 'i_partition');
create or replace function regina.queue_clear(i_queue text, i_partition text default null)
returns table (result json, wake_groups text[], partition_missing boolean)
-- Keyed lookups only: a plan made from statistics that call a table tiny must not scan it whole
-- once it has grown.
language plpgsql set enable_seqscan = off set jit = off as $$
declare
    v_q regina.queues;
    v_partition_ids bigint[];
    v_messages bigint;
    v_dead bigint;
begin
    -- `no key update`: pushes creating a partition of this queue go on (their messages come
    -- after the clear); a concurrent delete or clear of the queue waits.
    select * into v_q from regina.queues q where q.name = i_queue for no key update;
    if not found then
        return;
    end if;
    v_partition_ids := array(select p.id from regina.partitions p
                             where p.queue_id = v_q.id
                               and (i_partition is null or p.name = i_partition)
                             order by p.id);
    partition_missing := i_partition is not null and cardinality(v_partition_ids) = 0;
    if partition_missing then
        return next;
        return;
    end if;
    perform 1 from regina.partitions p where p.id = any (v_partition_ids) order by p.id for update;
    perform 1 from regina.cursors c where c.partition_id = any (v_partition_ids)
    order by c.partition_id, c.consumer_group for update;
    wake_groups := array(select distinct c.consumer_group from regina.cursors c
                         where c.partition_id = any (v_partition_ids) and c.lease_active
                         order by 1);
    -- Along the primary key, partition by partition: a join let the planner read every message.
    delete from regina.messages m where m.partition_id = any (v_partition_ids);
    get diagnostics v_messages = row_count;
    perform regina._traces_forget(x.id) from unnest(v_partition_ids) x(id);
    delete from regina.dead_letters d
    where d.queue_id = v_q.id and d.partition_id = any (v_partition_ids);
    get diagnostics v_dead = row_count;
    update regina.cursors c
    set next_seq = p.next_seq, marks = '{}', lease_marks = '{}', head_attempts = 0,
        head_error = null, retry_after = null, lease_active = false
    from regina.partitions p
    where c.partition_id = any (v_partition_ids) and p.id = c.partition_id;
    -- Every group's head is at its partition's end and no message is left, under the partitions'
    -- row locks: the ready rows may go (migrations/0002_ready.sql).
    delete from regina.ready r where r.partition_id = any (v_partition_ids);
    perform regina._trace_names_settle();
    result := (jsonb_build_object('success', true, 'cleared', true, 'queue', v_q.name)
               || case when i_partition is null then '{}'::jsonb
                       else jsonb_build_object('partition', i_partition) end
               || jsonb_build_object('deletedMessages', v_messages, 'deletedDlq', v_dead))::json;
    return next;
end
$$;

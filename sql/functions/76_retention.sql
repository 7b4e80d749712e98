-- Retention and eviction (spec §4.13): the leader deletes old messages in bounded batches, one
-- short transaction per call. Created-at never decreases along a partition's offsets, so "older
-- than T" is a prefix of each partition, found by binary search (_start_seq).
--
-- While it deletes from a partition, a call holds the partition row `for update` (pushes to it
-- wait; creating a cursor there takes a key-share lock and waits too) and every cursor of the
-- partition (claims and acks of it wait), so the lease ranges it spares are exact. It never waits
-- for either: a partition or cursor locked by someone else is skipped ("busy") and taken by a
-- later call. Deleted messages leave gaps that heads move over; dead letters keep their copies;
-- trace events go with their messages, and the names summary is settled once, at the end.

-- The offsets [o_lo, o_hi) of a partition that job i_job may delete now, read under the locks of
-- _partition_trim. `retention`: older than retentionSeconds, or older than
-- completedRetentionSeconds and settled by every known group (none, with no known group).
-- `eviction`: older than maxWaitTimeSeconds and not settled by some known group (every message,
-- with no known group); settled messages are left to retention. Offsets from o_completed_lo on
-- are deleted for completedRetentionSeconds only (the metrics tell the two apart).
select regina._drop_outdated('regina._trim_range(regina.queues, text, bigint, text[], timestamptz)',
                             'o_completed_lo');
create or replace function regina._trim_range(i_q regina.queues, i_job text,
                                              i_partition_id bigint, i_groups text[],
                                              i_now timestamptz,
                                              out o_lo bigint, out o_hi bigint,
                                              out o_completed_lo bigint)
language plpgsql as $$
declare
    v_floor bigint := case when cardinality(i_groups) > 0
                           then regina._partition_floor(i_partition_id, i_q.id, i_groups) end;
begin
    o_lo := 0;
    o_hi := 0;
    if i_job = 'eviction' then
        o_lo := coalesce(v_floor, 0);
        o_hi := regina._start_seq(i_partition_id,
                                  i_now - i_q.max_wait_time_seconds * interval '1 second');
        o_completed_lo := o_hi;
        return;
    end if;
    if i_q.retention_seconds > 0 then
        o_hi := regina._start_seq(i_partition_id,
                                  i_now - i_q.retention_seconds * interval '1 second');
    end if;
    o_completed_lo := o_hi;
    if i_q.completed_retention_seconds > 0 and v_floor is not null then
        o_hi := greatest(o_hi, least(v_floor, regina._start_seq(i_partition_id,
                    i_now - i_q.completed_retention_seconds * interval '1 second')));
    end if;
end
$$;

-- Moves the heads of a partition's idle cursors over messages just deleted (a head that was
-- deleted lands on the next existing unsettled message, or the partition's end), and brings the
-- ready set in line: a group whose head reached the end loses its row, and with no message left,
-- so does every group without a cursor there. The caller holds the partition row and its cursors,
-- so every offset below next_seq is committed and nobody else moves these heads.
create or replace function regina._partition_heads_fix(i_p regina.partitions, i_now timestamptz)
returns void
language plpgsql as $$
declare
    v_c regina.cursors;
    v_head bigint;
begin
    for v_c in select * from regina.cursors c
               where c.partition_id = i_p.id and not c.lease_active
    loop
        v_head := coalesce(regina._head_seq(i_p.id, v_c.next_seq, v_c.marks, v_c.consumer_group),
                           i_p.next_seq);
        continue when v_head = v_c.next_seq;
        v_c.next_seq := v_head;
        v_c.marks := regina._marks_from(v_c.marks, v_head);
        v_c.lease_marks := '{}';
        v_c.head_attempts := 0;      -- their message is gone: the next head starts afresh
        v_c.head_error := null;
        v_c.retry_after := null;
        perform regina._cursor_save(v_c, i_now);
    end loop;
    if not exists (select 1 from regina.messages m where m.partition_id = i_p.id) then
        delete from regina.ready r
        where r.partition_id = i_p.id
          and not exists (select 1 from regina.cursors c
                          where c.partition_id = i_p.id and c.consumer_group = r.consumer_group);
    end if;
end
$$;

-- Deletes up to i_limit messages of one partition that job i_job may delete, sparing every
-- active lease's delivered range. o_removed is null when the partition or one of its cursors is
-- locked by someone else (busy); otherwise the number of messages deleted, o_completed of them
-- for completedRetentionSeconds.
select regina._drop_outdated('regina._partition_trim(regina.queues, text, bigint, text[], bigint, '
                             'timestamptz)', 'o_completed');
create or replace function regina._partition_trim(i_q regina.queues, i_job text,
                                                  i_partition_id bigint, i_groups text[],
                                                  i_limit bigint, i_now timestamptz,
                                                  out o_removed bigint, out o_completed bigint)
language plpgsql as $$
declare
    v_p regina.partitions;
    v_cursors integer;
    v_locked integer;
    v_range record;
    v_traced boolean;
    v_gone text[];
begin
    select * into v_p from regina.partitions p where p.id = i_partition_id
    for update skip locked;
    if not found then
        return;
    end if;
    select count(*) into v_cursors from regina.cursors c where c.partition_id = i_partition_id;
    perform 1 from regina.cursors c where c.partition_id = i_partition_id for update skip locked;
    get diagnostics v_locked = row_count;
    if v_locked < v_cursors then
        return;
    end if;
    select * into v_range from regina._trim_range(i_q, i_job, i_partition_id, i_groups, i_now);
    -- Trace events go with their messages (regina._traces_forget), which needs the keys of the
    -- deleted rows; collecting them costs, so only where the partition has events.
    v_traced := regina._partition_traced(i_partition_id);
    with doomed as (
        select m.seq from regina.messages m
        where m.partition_id = i_partition_id and m.seq >= v_range.o_lo and m.seq < v_range.o_hi
          and not exists (select 1 from regina.cursors c
                          where c.partition_id = i_partition_id and c.lease_active
                            and m.seq between c.next_seq and c.lease_end_seq)
        order by m.seq
        limit i_limit),
    gone as (
        delete from regina.messages m using doomed d
        where m.partition_id = i_partition_id and m.seq = d.seq
        returning m.seq, m.transaction_id, m.for_group)
    select count(*), count(*) filter (where g.seq >= v_range.o_completed_lo),
           array_agg(g.transaction_id) filter (
               where v_traced and (g.for_group is null
                                   or not exists (select 1 from regina.messages o
                                                  where o.partition_id = i_partition_id
                                                    and o.transaction_id = g.transaction_id
                                                    and o.for_group is null)))
    into o_removed, o_completed, v_gone
    from gone g;
    if o_removed > 0 then
        if v_traced then
            perform regina._traces_forget(i_partition_id, v_gone);
        end if;
        perform regina._partition_heads_fix(v_p, i_now);
    end if;
end
$$;

-- One queue's share of a call: the partitions whose oldest message is older than the job's
-- shortest age, in id order, until i_limit messages are deleted.
select regina._drop_outdated('regina._queue_trim(regina.queues, text, bigint, timestamptz)',
                             'o_completed');
create or replace function regina._queue_trim(i_q regina.queues, i_job text, i_limit bigint,
                                              i_now timestamptz,
                                              out o_removed bigint, out o_busy integer,
                                              out o_completed bigint)
language plpgsql as $$
declare
    v_groups text[] := regina._queue_groups(i_q.id);
    v_age bigint := case when i_job = 'eviction' then i_q.max_wait_time_seconds
                         else least(nullif(i_q.retention_seconds, 0),
                                    nullif(i_q.completed_retention_seconds, 0)) end;
    v_partition_id bigint;
    v_deleted record;
begin
    o_removed := 0;
    o_busy := 0;
    o_completed := 0;
    for v_partition_id in
        select p.id from regina.partitions p
        cross join lateral (select m.created_at from regina.messages m
                            where m.partition_id = p.id order by m.seq limit 1) oldest
        where p.queue_id = i_q.id and oldest.created_at < i_now - v_age * interval '1 second'
        order by p.id
    loop
        exit when o_removed >= i_limit;
        select * into v_deleted
        from regina._partition_trim(i_q, i_job, v_partition_id, v_groups, i_limit - o_removed,
                                    i_now);
        o_busy := o_busy + case when v_deleted.o_removed is null then 1 else 0 end;
        o_removed := o_removed + coalesce(v_deleted.o_removed, 0);
        o_completed := o_completed + coalesce(v_deleted.o_completed, 0);
    end loop;
end
$$;

-- One batch of job i_job (`retention` or `eviction`) over every queue it applies to, at most
-- i_limit messages: one row per queue where it deleted messages or met busy partitions, with
-- how many of them went for completedRetentionSeconds. The leader calls it again while a call
-- deletes i_limit messages.
select regina._drop_outdated('regina._trim_run(text, integer, timestamptz)', 'completed');
create or replace function regina._trim_run(i_job text, i_limit integer, i_now timestamptz)
returns table (queue_name text, removed bigint, busy integer, completed bigint)
language plpgsql as $$
declare
    v_q regina.queues;
    v_left bigint := i_limit;
    v_trim record;
begin
    for v_q in select * from regina.queues q
               where case when i_job = 'eviction' then q.max_wait_time_seconds > 0
                          else q.retention_enabled
                               and (q.retention_seconds > 0 or q.completed_retention_seconds > 0) end
               order by q.id
    loop
        exit when v_left <= 0;
        select * into v_trim from regina._queue_trim(v_q, i_job, v_left, i_now);
        v_left := v_left - v_trim.o_removed;
        continue when v_trim.o_removed = 0 and v_trim.o_busy = 0;
        queue_name := v_q.name;
        removed := v_trim.o_removed;
        busy := v_trim.o_busy;
        completed := v_trim.o_completed;
        return next;
    end loop;
    perform regina._trace_names_settle();
end
$$;

-- Retention: retentionSeconds and completedRetentionSeconds, for queues with retentionEnabled.
select regina._drop_outdated('regina.retention_run(integer, timestamptz)', 'completed');
create or replace function regina.retention_run(i_limit integer default 1000,
                                                i_now timestamptz default null)
returns table (queue_name text, removed bigint, busy integer, completed bigint)
language sql as $$
    select * from regina._trim_run('retention', i_limit, coalesce(i_now, clock_timestamp()))
$$;

-- Eviction: maxWaitTimeSeconds (`completed` is always 0).
select regina._drop_outdated('regina.eviction_run(integer, timestamptz)', 'completed');
create or replace function regina.eviction_run(i_limit integer default 1000,
                                               i_now timestamptz default null)
returns table (queue_name text, removed bigint, busy integer, completed bigint)
language sql as $$
    select * from regina._trim_run('eviction', i_limit, coalesce(i_now, clock_timestamp()))
$$;

-- Retention and eviction (http-api.md §4.13): the leader deletes old messages in bounded batches,
-- one short transaction per call. Created-at never decreases along a partition's offsets, so "older
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
-- The doomed messages are read in offset order and the read stops at i_limit: no sequential or
-- bitmap scans and no sorts, so a plan made from statistics that call the partition tiny cannot
-- read it whole and sort it.
language plpgsql set enable_seqscan = off set enable_bitmapscan = off set enable_sort = off
    set jit = off as $$
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
    -- The doomed rows are deleted by their row ids: a join of them with the partition's messages
    -- is planned, from statistics that call the partition tiny, as a read of its whole range.
    with doomed as (
        select m.ctid from regina.messages m
        where m.partition_id = i_partition_id and m.seq >= v_range.o_lo and m.seq < v_range.o_hi
          and not exists (select 1 from regina.cursors c
                          where c.partition_id = i_partition_id and c.lease_active
                            and m.seq between c.next_seq and c.lease_end_seq)
        order by m.seq
        limit i_limit),
    gone as (
        delete from regina.messages m
        where m.ctid = any (array(select d.ctid from doomed d))
        returning m.seq, m.transaction_id, m.for_group)
    select count(*), count(*) filter (where g.seq >= v_range.o_completed_lo),
           array_agg(g.transaction_id) filter (
               where v_traced and (g.for_group is null
                                   or (regina._stored_key(i_partition_id,
                                                          g.transaction_id)).o_id is null))
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

-- One queue's share of a call: its partitions in name order after i_after, at most i_scan of
-- them, trimming those whose oldest message is older than the job's shortest age, until i_limit
-- messages are deleted. o_after: where the next call resumes (a partition that reached the limit
-- is examined again); o_done: no partition is left after it. Each partition costs a probe of its
-- oldest message, so the call is bounded by i_scan whatever the queue holds.
select regina._drop_outdated('regina._queue_trim(regina.queues, text, bigint, timestamptz)',
                             'o_done');
create or replace function regina._queue_trim(i_q regina.queues, i_job text, i_after text,
                                              i_scan integer, i_limit bigint, i_now timestamptz,
                                              out o_removed bigint, out o_busy integer,
                                              out o_completed bigint, out o_examined integer,
                                              out o_after text, out o_done boolean)
language plpgsql as $$
declare
    v_groups text[] := regina._queue_groups(i_q.id);
    v_age bigint := case when i_job = 'eviction' then i_q.max_wait_time_seconds
                         else least(nullif(i_q.retention_seconds, 0),
                                    nullif(i_q.completed_retention_seconds, 0)) end;
    v_partition_id bigint;
    v_name text;
    v_deleted record;
    v_busy bigint[] := '{}';
begin
    o_removed := 0;
    o_busy := 0;
    o_completed := 0;
    o_examined := 0;
    o_after := i_after;
    o_done := true;
    for v_partition_id, v_name in
        select p.id, p.name from regina.partitions p
        where p.queue_id = i_q.id and (i_after is null or p.name > i_after)
        order by p.name
        limit i_scan
    loop
        o_examined := o_examined + 1;
        if (select m.created_at from regina.messages m
            where m.partition_id = v_partition_id order by m.seq limit 1)
           < i_now - v_age * interval '1 second' then
            select * into v_deleted
            from regina._partition_trim(i_q, i_job, v_partition_id, v_groups,
                                        i_limit - o_removed, i_now);
            if v_deleted.o_removed is null then
                v_busy := v_busy || v_partition_id;
            end if;
            o_removed := o_removed + coalesce(v_deleted.o_removed, 0);
            o_completed := o_completed + coalesce(v_deleted.o_completed, 0);
            if o_removed >= i_limit then
                o_done := false;
                o_busy := cardinality(v_busy);
                return;
            end if;
        end if;
        o_after := v_name;
    end loop;
    o_done := o_examined < i_scan;
    -- A push holds its partitions for a moment only: those busy then get one more try now, the
    -- rest wait for the next pass.
    foreach v_partition_id in array v_busy loop
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

-- One call of job i_job (`retention` or `eviction`): at most i_limit messages deleted and
-- 10 x i_limit partitions examined, from where the previous call stopped (regina.job_positions),
-- queue after queue in id order. One row per queue where it deleted messages or met busy
-- partitions, with how many of them went for completedRetentionSeconds; `more` is true until a call
-- reaches the end of the last queue (a pass), and a row with no queue carries it when no queue row
-- does. The leader calls it again while `more` or while a call deletes i_limit messages.
select regina._drop_outdated('regina._trim_run(text, integer, timestamptz)', 'more');
create or replace function regina._trim_run(i_job text, i_limit integer, i_now timestamptz)
returns table (queue_name text, removed bigint, busy integer, completed bigint, more boolean)
-- Keyed lookups and index ranges only (the functions it calls too): a plan made from statistics
-- that call a table tiny must not scan it whole once it has grown.
language plpgsql set enable_seqscan = off set jit = off as $$
declare
    v_position regina.job_positions;
    v_q regina.queues;
    v_left bigint := i_limit;
    -- Examining a partition is one index probe, a small fraction of deleting a message.
    v_scan integer := i_limit * 10;
    v_trim record;
    v_more boolean := true;
    v_names text[] := '{}';     -- the rows, returned once `more` is known
    v_removed bigint[] := '{}';
    v_busy integer[] := '{}';
    v_completed bigint[] := '{}';
begin
    insert into regina.job_positions (job) values (i_job) on conflict do nothing;
    select * into v_position from regina.job_positions p where p.job = i_job for update;
    loop
        if v_left <= 0 or v_scan <= 0 then
            exit;
        end if;
        select * into v_q from regina.queues q
        where q.id >= coalesce(v_position.queue_id, 0)
          and case when i_job = 'eviction' then q.max_wait_time_seconds > 0
                   else q.retention_enabled
                        and (q.retention_seconds > 0 or q.completed_retention_seconds > 0) end
        order by q.id
        limit 1;
        if not found then   -- past the last queue: the pass is complete
            v_position.queue_id := null;
            v_position.after_name := null;
            v_more := false;
            exit;
        end if;
        if v_q.id is distinct from v_position.queue_id then
            v_position.queue_id := v_q.id;
            v_position.after_name := null;
        end if;
        select * into v_trim
        from regina._queue_trim(v_q, i_job, v_position.after_name, v_scan, v_left, i_now);
        v_left := v_left - v_trim.o_removed;
        v_scan := v_scan - v_trim.o_examined;
        if v_trim.o_done then
            v_position.queue_id := v_q.id + 1;
            v_position.after_name := null;
        else
            v_position.after_name := v_trim.o_after;
        end if;
        continue when v_trim.o_removed = 0 and v_trim.o_busy = 0;
        v_names := v_names || v_q.name;
        v_removed := v_removed || v_trim.o_removed;
        v_busy := v_busy || v_trim.o_busy;
        v_completed := v_completed || v_trim.o_completed;
    end loop;
    update regina.job_positions p
    set queue_id = v_position.queue_id, after_name = v_position.after_name
    where p.job = i_job;
    perform regina._trace_names_settle();
    if v_more and cardinality(v_names) = 0 then
        return query select null::text, 0::bigint, 0, 0::bigint, true;
    end if;
    return query select x.name, x.removed, x.busy, x.completed, v_more
                 from unnest(v_names, v_removed, v_busy, v_completed)
                      x(name, removed, busy, completed);
end
$$;

-- Retention: retentionSeconds and completedRetentionSeconds, for queues with retentionEnabled.
select regina._drop_outdated('regina.retention_run(integer, timestamptz)', 'more');
create or replace function regina.retention_run(i_limit integer default 1000,
                                                i_now timestamptz default null)
returns table (queue_name text, removed bigint, busy integer, completed bigint, more boolean)
language sql as $$
    select * from regina._trim_run('retention', i_limit, coalesce(i_now, clock_timestamp()))
$$;

-- Eviction: maxWaitTimeSeconds (`completed` is always 0).
select regina._drop_outdated('regina.eviction_run(integer, timestamptz)', 'more');
create or replace function regina.eviction_run(i_limit integer default 1000,
                                               i_now timestamptz default null)
returns table (queue_name text, removed bigint, busy integer, completed bigint, more boolean)
language sql as $$
    select * from regina._trim_run('eviction', i_limit, coalesce(i_now, clock_timestamp()))
$$;

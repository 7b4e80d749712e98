-- The stats refresh (http-api.md §4.15, ADR 0012): keeps the tables of migrations/0009_stats.sql in
-- line with the base tables. A pass is `stats_refresh_begin` (its window of partitions, and the
-- partitions that may have changed in ways a comparison of the window cannot see),
-- `stats_refresh_batch` until it returns less than its limit and not less than 0 (find the
-- window's changed partitions as it goes and recount them with the others, a bounded number of
-- partitions and of their rows per transaction), then
-- `stats_refresh_end` (queue and group sums, the lag history, the pass's bookkeeping). Each call
-- is a short transaction of its own; the caller holds the stats lock for the pass, so passes
-- never overlap. Nothing here locks a row that pushes, pops or acks use, and none of them writes
-- these tables.
--
-- A partition may have changed since the previous pass when:
-- - its `next_seq` differs from the one it was counted at (a push, a requeue, a replay);
-- - one of its ready rows was moved after that pass began: every change of a cursor through
--   regina._cursor_save moves the ready row to the change's instant or later (a lease's expiry,
--   a retry instant), or deletes it;
-- - it had ready rows when counted and has none now;
-- - the set of known groups of its queue, or a subscription start, changed;
-- - messages, dead letters or cursors of it were deleted (statement triggers below record those
--   partitions in `stats_dirty` as they go).

-- Records the partitions of deleted rows for the next pass (statement trigger; `gone` is the
-- transition table of the deleted rows, which all have a `partition_id`).
create or replace function regina._stats_mark_deleted() returns trigger
language plpgsql as $$
begin
    insert into regina.stats_dirty (partition_id)
    select distinct g.partition_id from gone g
    on conflict do nothing;
    return null;
end
$$;

-- Deleted messages: their partitions are recorded for the next pass (as above), and each deleted
-- offset above the lowest one its partition still stores becomes a hole; the holes below that
-- offset go (migrations/0018_partition_holes.sql). One probe of the primary key per partition and
-- statement (the lowest stored offset of a partition whose messages this transaction just
-- deleted lies past their index entries, so a probe per deleted row would pass all of them each
-- time), and the deleted rows matched to their partitions by a hash join: nothing here grows
-- faster than the deleted rows, nor holds them all at once. A concurrent delete in the same
-- partition may see a lower offset than the one that stays: it then keeps holes below it, which
-- the counts pass over.
create or replace function regina._stats_mark_messages_deleted() returns trigger
language plpgsql set enable_nestloop = off set enable_mergejoin = off set jit = off as $$
declare
    v_ids bigint[];
    v_lows bigint[];
begin
    select array_agg(d.partition_id),
           array_agg((select min(m.seq) from regina.messages m
                      where m.partition_id = d.partition_id))
    into v_ids, v_lows
    from (select distinct g.partition_id from gone g) d;
    insert into regina.stats_dirty (partition_id)
    select k.id from unnest(v_ids) k(id)
    on conflict do nothing;
    delete from regina.partition_holes h
    where h.ctid = any (array(
        select x.ctid
        from unnest(v_ids, v_lows) l(id, low)
        cross join lateral (select hh.ctid from regina.partition_holes hh
                            where hh.partition_id = l.id
                              and (l.low is null or hh.seq < l.low)) x));
    insert into regina.partition_holes (partition_id, seq)
    select g.partition_id, g.seq
    from gone g
    join unnest(v_ids, v_lows) l(id, low) on l.id = g.partition_id
    where g.seq > l.low
    on conflict do nothing;
    return null;
end
$$;

create or replace trigger messages_stats_dirty
    after delete on regina.messages referencing old table as gone
    for each statement execute function regina._stats_mark_messages_deleted();

-- Dead letters: the tallies of their partitions (migrations/0019_dead_letter_tallies.sql), one
-- row per partition and statement, +k for inserted entries (an upsert that replaces an entry
-- inserts none) and -k for deleted ones (statement trigger; `changed` is the transition table of
-- the inserted or the deleted rows). Deleted ones also mark their partitions, as above.
create or replace function regina._dead_letters_tally() returns trigger
language plpgsql as $$
begin
    insert into regina.dead_letter_tallies (partition_id, n)
    select c.partition_id, case when tg_op = 'INSERT' then count(*) else -count(*) end
    from changed c group by c.partition_id;
    return null;
end
$$;

create or replace trigger dead_letters_tally_inserted
    after insert on regina.dead_letters referencing new table as changed
    for each statement execute function regina._dead_letters_tally();
create or replace trigger dead_letters_tally_deleted
    after delete on regina.dead_letters referencing old table as changed
    for each statement execute function regina._dead_letters_tally();
create or replace trigger dead_letters_stats_dirty
    after delete on regina.dead_letters referencing old table as gone
    for each statement execute function regina._stats_mark_deleted();
-- The first version of the tallies had a trigger and functions of other names.
drop trigger if exists dead_letters_tally on regina.dead_letters;
drop function if exists regina._dead_letters_tally_inserted();
drop function if exists regina._stats_mark_dead_letters_deleted();
create or replace trigger cursors_stats_dirty
    after delete on regina.cursors referencing old table as gone
    for each statement execute function regina._stats_mark_deleted();

-- Records deleted partitions (their stats rows go in the next batch), and drops their holes and
-- dead-letter tallies.
create or replace function regina._stats_mark_partitions_deleted() returns trigger
language plpgsql as $$
declare
    v_ids bigint[] := array(select g.id from gone g);
begin
    insert into regina.stats_dirty (partition_id)
    select k.id from unnest(v_ids) k(id)
    on conflict do nothing;
    delete from regina.partition_holes h where h.partition_id = any (v_ids);
    delete from regina.dead_letter_tallies t where t.partition_id = any (v_ids);
    return null;
end
$$;

create or replace trigger partitions_stats_dirty
    after delete on regina.partitions referencing old table as gone
    for each statement execute function regina._stats_mark_partitions_deleted();

-- What the counts of a queue's partitions depend on besides the partitions themselves: its known
-- groups (subscriptions and cursor holders) with their subscription starts, in a stable order:
-- `<start epoch>@<group>` (the start has no `@`; a group name may).
create or replace function regina._stats_groups(i_queue_id bigint) returns text[]
language sql stable as $$
    select coalesce(array_agg(coalesce(extract(epoch from s.start_at)::text, '') || '@' || g.name
                              order by g.name), '{}')
    from unnest(regina._queue_groups(i_queue_id)) g(name)
    left join regina.subscriptions s on s.queue_id = i_queue_id and s.consumer_group = g.name
$$;

-- How many stored messages a batch counts a partition as (the row bound of stats_refresh_batch):
-- its last count (i_total, made at offset i_counted_seq; null when never counted) plus the offsets
-- pushed since (up to i_next_seq).
create or replace function regina._stats_size(i_total bigint, i_counted_seq bigint,
                                              i_next_seq bigint)
returns bigint
language sql immutable as $$
    select coalesce(i_total, 0) + greatest(i_next_seq - coalesce(i_counted_seq, 0), 0)
$$;

-- The first i_limit partitions with ids in (i_after, i_last], in id order, that may have changed
-- since they were counted (or were never counted), each with its size as a batch bounds it (its
-- last count plus the offsets pushed since): a new `next_seq`, or a ready row when counted and
-- none now. The two tables' primary keys are read side by side from i_after (a merge) until
-- i_limit are found, and the ready set is probed only for partitions counted with work. A probe
-- of the counts per partition cost three times as much at 100 000 partitions (186 against 70 ms
-- for a window on an idle database).
drop function if exists regina._stats_offsets_moved(bigint, bigint);
create or replace function regina._stats_walk(i_after bigint, i_last bigint, i_limit integer)
returns table (partition_id bigint, size bigint)
language sql stable
set enable_seqscan = off set enable_bitmapscan = off set enable_nestloop = off
set enable_hashjoin = off set enable_sort = off set jit = off as $$
    select p.id, regina._stats_size(s.total, s.next_seq, p.next_seq)
    from regina.partitions p
    left join regina.partition_stats s
           on s.partition_id = p.id and s.partition_id > i_after and s.partition_id <= i_last
    where p.id > i_after and p.id <= i_last
      and (s.partition_id is null or s.next_seq <> p.next_seq
           or (s.has_work
               and (select true from regina.ready r where r.partition_id = p.id limit 1) is null))
    order by p.id
    limit i_limit
$$;

-- Starts a pass: sets its window of partitions, marks in `stats_dirty` the partitions to recount
-- that the window's comparison cannot see, drops the stats of queues that no longer exist, and
-- returns how many partitions it marked. Partitions are compared with their counts in windows of
-- at most i_scan, by id, each pass resuming after the previous window: the batches compare the
-- window's partitions as they go (_stats_walk, from `stats_state.walk_after_id` up to
-- `walk_last_id`), so no statement reads more than i_scan partitions, the ready rows moved since
-- the last pass and the partitions of queues whose groups changed, and a pass at any size ends
-- and the next catches up. With more partitions than i_scan, a push to a partition outside the
-- window shows at a later pass (moves of ready rows, deletions and group changes show at the next
-- one). (Listing the window's moved partitions here, for the batches to take back, cost about
-- 7 µs per partition in the listing's inserts alone: 0.6 s at the start of a pass over 75 000.)
select regina._drop_outdated('regina.stats_refresh_begin(timestamptz)', 'i_scan');
create or replace function regina.stats_refresh_begin(i_now timestamptz default null,
                                                      i_scan integer default 100000)
returns bigint
-- Keyed lookups and index ranges only: a scan of a whole table would undo the window.
language plpgsql set enable_seqscan = off set jit = off as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_since timestamptz;
    v_after bigint;
    v_last bigint;
    v_window integer;
    v_regrouped bigint[];
    v_marked bigint;
begin
    -- A pass that ended before its batches had compared its whole window (the leader stepped
    -- down, the pass reached its most batches) left the rest of it: this window starts there.
    select coalesce(s.since, '-infinity'),
           case when s.walk_after_id < s.walk_last_id then s.walk_after_id else s.scan_after_id end
    into v_since, v_after
    from regina.stats_state s for update;
    select max(w.id), count(*) into v_last, v_window
    from (select p.id from regina.partitions p where p.id > v_after order by p.id
          limit i_scan) w;
    -- Writes this pass does not see belong to transactions running now. Each started no earlier
    -- than the oldest of them, and stamps its ready rows with a later instant, so the next pass
    -- looks at ready rows moved after that start. Only sessions of clients write them (not
    -- autovacuum, whose long runs would hold `since` back for nothing).
    update regina.stats_state s
    set pending_since = least(v_now, (select min(a.xact_start) from pg_stat_activity a
                                      where a.datid = (select d.oid from pg_database d
                                                       where d.datname = current_database())
                                        and a.backend_type = 'client backend'
                                        and a.pid <> pg_backend_pid())),
        pass_started_at = clock_timestamp(),
        scan_after_id = case when v_window < i_scan then 0 else v_last end,
        walk_after_id = v_after, walk_last_id = coalesce(v_last, v_after);

    insert into regina.queue_stats (queue_id, groups)
    select q.id, regina._stats_groups(q.id) from regina.queues q
    on conflict (queue_id) do update set groups = excluded.groups
        where queue_stats.groups is distinct from excluded.groups;
    -- The upsert's row count is not the list; compare again to know which queues changed.
    v_regrouped := array(select s.queue_id from regina.queue_stats s
                         where s.refreshed_at is null
                            or s.groups_counted is distinct from s.groups);
    delete from regina.queue_stats s
    where not exists (select 1 from regina.queues q where q.id = s.queue_id);

    insert into regina.stats_dirty (partition_id)
    select p.id from unnest(v_regrouped) g(queue_id)
    join regina.partitions p on p.queue_id = g.queue_id
    union   -- ready rows live only for subscribed groups: one index range per subscription
    select r.partition_id from regina.subscriptions sub
    cross join lateral (select rr.partition_id from regina.ready rr
                        where rr.queue_id = sub.queue_id
                          and rr.consumer_group = sub.consumer_group
                          and rr.eligible_at > v_since) r
    on conflict do nothing;
    get diagnostics v_marked = row_count;
    return v_marked;
end
$$;

drop function if exists regina._queue_stats_add(bigint[], integer);

-- Recounts up to i_limit partitions waiting (the counts of http-api.md §4.16 and the lag of each
-- group with work there); returns how many were taken. A partition waits when it is in
-- `stats_dirty` or when it lies in the rest of the pass's window and _stats_walk finds it
-- changed. `next_seq` and `has_work` are read in the same statement as the counts, so a push or a
-- move after it shows as a change.
--
-- i_rows (null: no bound): about how many stored messages the partitions of the batch may hold.
-- A recount once read every row of its partition; it now counts from offsets and holes
-- (_partition_counts), a few index probes whatever the partition stores, and the bound only
-- spreads deep partitions over more transactions. Partitions are taken in id order while the
-- messages of those before stay under i_rows (always at least one), each sized as its last count
-- plus the offsets pushed since.
-- A batch cut there, with partitions left waiting, returns minus how many it took: the pass goes
-- on although it took fewer than i_limit.
select regina._drop_outdated('regina.stats_refresh_batch(integer, timestamptz)', 'i_rows');
create or replace function regina.stats_refresh_batch(i_limit integer,
                                                      i_now timestamptz default null,
                                                      i_rows bigint default null)
returns integer
-- Every count is an index range of one partition: a plan made while the tables were small must
-- not scan them once per partition.
language plpgsql set enable_seqscan = off set jit = off as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_after bigint;
    v_last bigint;
    v_walked bigint[];
    v_walked_sizes bigint[];
    v_walk_to bigint;
    v_ids bigint[];
    v_waiting integer;
begin
    -- The next changed partitions of the window, and where the comparison got to: its last if
    -- it found i_limit (more may follow), else the window's end.
    select s.walk_after_id, s.walk_last_id into v_after, v_last from regina.stats_state s;
    select coalesce(array_agg(w.partition_id order by w.partition_id), '{}'),
           coalesce(array_agg(w.size order by w.partition_id), '{}')
    into v_walked, v_walked_sizes
    from regina._stats_walk(v_after, v_last, i_limit) w;
    v_walk_to := case when cardinality(v_walked) < i_limit then v_last
                      else v_walked[cardinality(v_walked)] end;
    -- With the waiting ones of `stats_dirty` (locked; rows left out stay waiting), each with its
    -- size, the first i_limit in id order under the bound.
    select coalesce(array_agg(w.partition_id order by w.partition_id)
                        filter (where w.n <= i_limit
                                  and (i_rows is null or w.before < greatest(i_rows, 1))), '{}'),
           count(*)
    into v_ids, v_waiting
    from (select x.partition_id,
                 row_number() over (order by x.partition_id) as n,
                 coalesce(sum(x.size) over (order by x.partition_id
                                            rows between unbounded preceding and 1 preceding),
                          0) as before
          from (select k.partition_id, max(k.size) as size
                from (select y.partition_id,
                             -- A correlated lookup, not a join: a join with the partitions may
                             -- be planned as a merge over their whole primary key.
                             (select regina._stats_size(s.total, s.next_seq, p.next_seq)
                              from regina.partitions p
                              left join regina.partition_stats s on s.partition_id = p.id
                              where p.id = y.partition_id) as size
                      from (select z.partition_id from regina.stats_dirty z
                            order by z.partition_id limit i_limit
                            for update skip locked) y
                      union all
                      select u.id, u.size from unnest(v_walked, v_walked_sizes) u(id, size)) k
                group by k.partition_id) x) w;
    -- The comparison goes on after the last partition it found that this batch takes (those
    -- found after it are found again).
    update regina.stats_state s
    set walk_after_id = case
            when cardinality(v_walked) = 0
                 or v_walked[cardinality(v_walked)] <= v_ids[cardinality(v_ids)] then v_walk_to
            else coalesce((select max(u.id) from unnest(v_walked) u(id)
                           where u.id <= v_ids[cardinality(v_ids)]), v_after) end;
    if cardinality(v_ids) = 0 then
        return 0;
    end if;
    delete from regina.stats_dirty d where d.partition_id = any (v_ids);
    -- The dead-letter tallies of these partitions folded into one row each (rows a transaction
    -- still running adds stay apart until a later recount).
    with folded as (delete from regina.dead_letter_tallies t where t.partition_id = any (v_ids)
                    returning t.partition_id, t.n)
    insert into regina.dead_letter_tallies (partition_id, n)
    select f.partition_id, sum(f.n) from folded f group by f.partition_id having sum(f.n) <> 0;
    -- One statement recounts the partitions, drops the counts of those that no longer exist,
    -- and moves their queues' sums by the difference (the old counts are this statement's
    -- snapshot of them), so a change shows in the queue's totals once its partition is
    -- recounted, not only when the pass ends; the end of the pass sums them again from scratch.
    -- `next_seq` and `has_work` are read with the counts.
    with old as (
        select s.ctid as row_at, s.partition_id, s.queue_id, s.total, s.pending, s.processing,
               s.completed, s.failed, s.dead_letter
        from regina.partition_stats s where s.partition_id = any (v_ids)),
    counted as (
        select c.partition_id, c.queue_id, c.next_seq,
               -- One probe per partition (an `exists` may be planned as a read of every ready
               -- row, hashed).
               (select true from regina.ready r where r.partition_id = c.partition_id limit 1)
                   is not null as has_work,
               c.total, c.pending, c.processing, c.completed, c.failed, c.dead_letter
        from regina._partition_counts(v_ids, v_now) c),
    -- Rows counted before are deleted or rewritten where this statement read them (only passes
    -- write them, and a pass's caller holds the stats lock): an upsert would look each up again
    -- and lock it first, a WAL record more per partition.
    gone as (
        delete from regina.partition_stats s
        where s.ctid = any (array(
            select o.row_at from old o
            where not exists (select 1 from counted k where k.partition_id = o.partition_id)))),
    rewritten as (
        update regina.partition_stats s
        set queue_id = k.queue_id, next_seq = k.next_seq, has_work = k.has_work, total = k.total,
            pending = k.pending, processing = k.processing, completed = k.completed,
            failed = k.failed, dead_letter = k.dead_letter, counted_at = v_now
        from old o join counted k on k.partition_id = o.partition_id
        where s.ctid = o.row_at),
    added as (
        insert into regina.partition_stats (partition_id, queue_id, next_seq, has_work, total,
                                            pending, processing, completed, failed, dead_letter,
                                            counted_at)
        select k.partition_id, k.queue_id, k.next_seq, k.has_work, k.total, k.pending,
               k.processing, k.completed, k.failed, k.dead_letter, v_now
        from counted k
        where not exists (select 1 from old o where o.partition_id = k.partition_id))
    update regina.queue_stats q
    set total = q.total + d.total, pending = q.pending + d.pending,
        processing = q.processing + d.processing, completed = q.completed + d.completed,
        failed = q.failed + d.failed, dead_letter = q.dead_letter + d.dead_letter
    from (select x.queue_id, sum(x.total) as total, sum(x.pending) as pending,
                 sum(x.processing) as processing, sum(x.completed) as completed,
                 sum(x.failed) as failed, sum(x.dead_letter) as dead_letter
          from (select k.queue_id, k.total, k.pending, k.processing, k.completed, k.failed,
                       k.dead_letter
                from counted k
                union all
                select o.queue_id, -o.total, -o.pending, -o.processing, -o.completed, -o.failed,
                       -o.dead_letter
                from old o) x
          group by x.queue_id) d
    where q.queue_id = d.queue_id;
    delete from regina.partition_lag l where l.partition_id = any (v_ids);

    insert into regina.partition_lag (partition_id, consumer_group, queue_id, offset_lag, head_at)
    select r.partition_id, r.consumer_group, r.queue_id, l.o_offset_lag, l.o_head_at
    from regina.ready r
    join regina.partitions p on p.id = r.partition_id
    left join regina.cursors c
           on c.partition_id = r.partition_id and c.consumer_group = r.consumer_group
    left join regina.subscriptions s
           on s.queue_id = r.queue_id and s.consumer_group = r.consumer_group
    cross join lateral regina._group_lag(p, c, s.start_at) l
    where r.partition_id = any (v_ids) and l.o_offset_lag > 0;
    return case when cardinality(v_ids) < least(v_waiting, i_limit) then -cardinality(v_ids)
                else cardinality(v_ids) end;
end
$$;

-- The distribution of lag over the (partition, group) pairs with unsettled messages of the queues
-- i_queue_ids (null: every queue), as the overview shows it: heads as instants (epoch seconds),
-- so that ages follow the clock between passes, and messages not settled.
create or replace function regina._lag_summary(i_queue_ids bigint[]) returns jsonb
language sql stable as $$
    select jsonb_build_object(
        'headAvg', avg(extract(epoch from l.head_at)),
        'headMedian', percentile_cont(0.5) within group (order by extract(epoch from l.head_at)),
        'headMin', min(extract(epoch from l.head_at)),
        'headMax', max(extract(epoch from l.head_at)),
        'offsetAvg', avg(l.offset_lag),
        'offsetMedian', percentile_cont(0.5) within group (order by l.offset_lag),
        'offsetMin', min(l.offset_lag), 'offsetMax', max(l.offset_lag))
    from regina.partition_lag l
    where i_queue_ids is null or l.queue_id = any (i_queue_ids)
$$;

-- Ends a pass: sums the queues and their groups' lag, samples the minute's queue lag and depth,
-- brings the hourly sums of the metrics history up to date, and records the pass (statsAge counts
-- from now on). i_recounted: partitions the pass recounted.
create or replace function regina.stats_refresh_end(i_recounted bigint,
                                                    i_now timestamptz default null)
returns void
language plpgsql as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_rollup_from timestamptz;
    v_rollup_to timestamptz;
begin
    update regina.queue_stats qs
    set total = x.total, pending = x.pending,
        processing = x.processing, completed = x.completed, failed = x.failed,
        dead_letter = x.dead_letter, groups_counted = qs.groups, refreshed_at = v_now
    from (select q.id, coalesce(sum(s.total), 0) as total,
                 coalesce(sum(s.pending), 0) as pending,
                 coalesce(sum(s.processing), 0) as processing,
                 coalesce(sum(s.completed), 0) as completed, coalesce(sum(s.failed), 0) as failed,
                 coalesce(sum(s.dead_letter), 0) as dead_letter
          from regina.queues q
          left join regina.partition_stats s on s.queue_id = q.id
          group by q.id) x
    where qs.queue_id = x.id;

    delete from regina.group_stats;
    insert into regina.group_stats (queue_id, consumer_group, partitions_with_lag, offset_lag,
                                    oldest_head_at, refreshed_at)
    select qs.queue_id, g.name, coalesce(l.partitions, 0), coalesce(l.offset_lag, 0),
           l.oldest_head_at, v_now
    from regina.queue_stats qs
    cross join lateral (select substr(e, strpos(e, '@') + 1) as name from unnest(qs.groups) e) g
    left join (select x.queue_id, x.consumer_group, count(*) as partitions,
                      sum(x.offset_lag) as offset_lag, min(x.head_at) as oldest_head_at
               from regina.partition_lag x group by x.queue_id, x.consumer_group) l
           on l.queue_id = qs.queue_id and l.consumer_group = g.name;

    insert into regina.queue_lag_history as h (bucket, queue_name, depth, lag_ms_sum, lag_samples,
                                               lag_ms_max)
    select date_trunc('minute', v_now), q.name, qs.total - qs.completed,
           coalesce(l.avg_ms, 0), 1, coalesce(l.max_ms, 0)
    from regina.queue_stats qs
    join regina.queues q on q.id = qs.queue_id
    left join (select x.queue_id,
                      avg(greatest(0, extract(epoch from v_now - x.head_at) * 1000)) as avg_ms,
                      max(greatest(0, extract(epoch from v_now - x.head_at) * 1000)) as max_ms
               from regina.partition_lag x group by x.queue_id) l on l.queue_id = qs.queue_id
    on conflict (bucket, queue_name) do update
        set depth = excluded.depth, lag_ms_sum = h.lag_ms_sum + excluded.lag_ms_sum,
            lag_samples = h.lag_samples + 1,
            lag_ms_max = greatest(h.lag_ms_max, excluded.lag_ms_max);

    -- The overview's lag distribution, once per pass rather than per request (a sort of every
    -- pair with lag); only batches change the lag rows.
    if i_recounted > 0 or (select s.lag_summary is null from regina.stats_state s) then
        update regina.stats_state s set lag_summary = regina._lag_summary(null);
    end if;

    -- The hourly sums: the hours since the oldest that may be incomplete (a day at most per
    -- pass, so a long gap is caught up in steps), the current one included.
    select coalesce(s.rollup_from, least(
               (select min(m.bucket) from regina.queue_metrics m),
               (select min(w.bucket) from regina.worker_metrics w),
               (select min(h.bucket) from regina.queue_lag_history h)), v_now)
    into v_rollup_from from regina.stats_state s;
    v_rollup_from := date_bin('1 hour', v_rollup_from, 'epoch');
    v_rollup_to := least(v_rollup_from + interval '1 day', date_bin('1 hour', v_now, 'epoch'))
                   + interval '1 hour';
    perform regina.metrics_rollup(v_rollup_from, v_rollup_to);

    update regina.stats_state s
    set since = s.pending_since, refreshed_at = v_now, recounted = i_recounted,
        duration_ms = (extract(epoch from clock_timestamp() - s.pass_started_at) * 1000)::bigint,
        -- Minutes of the last hour may still be written after it ended.
        rollup_from = least(v_rollup_to, date_bin('1 hour', v_now, 'epoch')) - interval '1 hour';
end
$$;

-- Seconds since the last complete pass; null before the first.
create or replace function regina._stats_age(i_now timestamptz) returns bigint
language sql stable as $$
    select regina._seconds_since(s.refreshed_at, i_now)
    from regina.stats_state s where s.refreshed_at is not null
$$;

-- Partition cleanup (http-api.md §4.13): a partition without messages, without an active lease and
-- without a push for PARTITION_CLEANUP_DAYS is deleted with its cursors and ready rows; a later
-- push re-creates it and cursors start again by subscription. A partition that still has dead
-- letters is kept: their listing names it.

-- Examines up to 10 x i_limit partitions (a probe each) in id order from where the previous call
-- stopped (regina.job_positions), and deletes those that qualify; one row per queue that lost some,
-- and
-- `more` until a call reaches the last partition (a pass). A partition or cursor locked by
-- someone else is left for a later pass. Each candidate is checked again once locked: a push that
-- committed before the lock was taken is seen then, and none can come after it. At most i_limit
-- partitions are deleted; the window read is bounded however many partitions exist.
select regina._drop_outdated('regina.partition_cleanup(integer, integer, timestamptz)', 'more');
create or replace function regina.partition_cleanup(i_days integer, i_limit integer default 1000,
                                                    i_now timestamptz default null)
returns table (queue_name text, removed bigint, more boolean)
language plpgsql as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_after bigint;
    v_last bigint;
    v_examined integer;
    v_more boolean;
    v_p regina.partitions;
    v_cursors integer;
    v_locked integer;
    v_queue_ids bigint[] := '{}';   -- one element per partition deleted
begin
    if i_days <= 0 then
        return;
    end if;
    insert into regina.job_positions (job) values ('partition_cleanup') on conflict do nothing;
    select coalesce(p.after_id, 0) into v_after from regina.job_positions p
    where p.job = 'partition_cleanup' for update;
    select max(w.id), count(*) into v_last, v_examined
    from (select p.id from regina.partitions p where p.id > v_after order by p.id
          limit i_limit * 10) w;
    v_more := v_examined = i_limit * 10;
    -- Like a push, before any row lock: a subscription being created (share mode) then waits for
    -- this call instead of both waiting on each other through a push.
    lock table regina.partitions in row exclusive mode;
    for v_p in select * from regina.partitions p
               where p.id > v_after and p.id <= coalesce(v_last, v_after)
                 and coalesce(p.last_push_at, p.created_at) < v_now - i_days * interval '1 day'
                 and (select 1 from regina.messages m where m.partition_id = p.id limit 1) is null
               order by p.id
               for update skip locked
    loop
        continue when exists (select 1 from regina.messages m where m.partition_id = v_p.id)
                   or exists (select 1 from regina.dead_letters d where d.partition_id = v_p.id)
                   or exists (select 1 from regina.cursors c
                              where c.partition_id = v_p.id and c.lease_active
                                and c.lease_expires_at > v_now);
        select count(*) into v_cursors from regina.cursors c where c.partition_id = v_p.id;
        perform 1 from regina.cursors c where c.partition_id = v_p.id for update skip locked;
        get diagnostics v_locked = row_count;
        continue when v_locked < v_cursors;
        delete from regina.ready r where r.partition_id = v_p.id;
        delete from regina.partitions p where p.id = v_p.id;   -- cursors go with it (foreign key)
        v_queue_ids := v_queue_ids || v_p.queue_id;
        if cardinality(v_queue_ids) >= i_limit then   -- the rest of the window in the next call
            v_last := v_p.id;
            v_more := true;
            exit;
        end if;
    end loop;
    update regina.job_positions p set after_id = case when v_more then v_last end
    where p.job = 'partition_cleanup';
    if v_more and cardinality(v_queue_ids) = 0 then
        return query select null::text, 0::bigint, true;
    end if;
    return query
    select q.name, count(*), v_more from unnest(v_queue_ids) x(queue_id)
    join regina.queues q on q.id = x.queue_id
    group by q.name;
end
$$;

-- Partition cleanup (spec §4.13): a partition without messages, without an active lease and
-- without a push for PARTITION_CLEANUP_DAYS is deleted with its cursors and ready rows; a later
-- push re-creates it and cursors start again by subscription. A partition that still has dead
-- letters is kept: their listing names it.

-- Deletes up to i_limit such partitions; one row per queue that lost some. A partition or cursor
-- locked by someone else is left for a later call. Each candidate is checked again once locked:
-- a push that committed before the lock was taken is seen then, and none can come after it.
create or replace function regina.partition_cleanup(i_days integer, i_limit integer default 1000,
                                                    i_now timestamptz default null)
returns table (queue_name text, removed bigint)
language plpgsql as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_p regina.partitions;
    v_cursors integer;
    v_locked integer;
    v_queue_ids bigint[] := '{}';   -- one element per partition deleted
begin
    if i_days <= 0 then
        return;
    end if;
    -- Like a push, before any row lock: a subscription being created (share mode) then waits for
    -- this call instead of both waiting on each other through a push.
    lock table regina.partitions in row exclusive mode;
    for v_p in select * from regina.partitions p
               where coalesce(p.last_push_at, p.created_at) < v_now - i_days * interval '1 day'
                 and not exists (select 1 from regina.messages m where m.partition_id = p.id)
               order by p.id
               limit i_limit
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
    end loop;
    return query
    select q.name, count(*) from unnest(v_queue_ids) x(queue_id)
    join regina.queues q on q.id = x.queue_id
    group by q.name;
end
$$;

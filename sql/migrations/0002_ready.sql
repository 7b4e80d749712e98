-- The ready set: one row per (partition, consumer group) that has work for the group, with the
-- instant it may next be claimed. Pops find candidates here, in `eligible_at` order, instead of
-- joining every partition of the queue with its cursor: the cost of finding work no longer
-- grows with the number of partitions that have none (http-api.md §4.3).
--
-- Invariant: for every subscription (queue, group) and every partition of that queue holding an
-- unsettled message for the group, a row exists. Pushes insert rows for the subscribed groups
-- of the partitions they write (under the partition lock); a new subscription inserts rows for
-- the partitions that already hold messages; a row is deleted only by whoever holds the
-- partition row `for share` and sees the group's head at the partition's end. Rows are hints
-- about *when*: every claim re-checks the cursor under its lock.

create table regina.ready (
    partition_id   bigint not null,
    consumer_group text not null,
    queue_id       bigint not null,
    eligible_at    timestamptz not null,  -- not claimable before (lease expiry, retry delay, …)
    primary key (partition_id, consumer_group)
) with (fillfactor = 70,
        autovacuum_vacuum_scale_factor = 0.02,
        autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_cost_delay = 0);

create index ready_claim_order on regina.ready (queue_id, consumer_group, eligible_at, partition_id);

-- Existing queue-mode consumers become subscriptions like named groups (start: all messages).
insert into regina.subscriptions (queue_id, consumer_group, mode, start_at)
select distinct c.queue_id, c.consumer_group, 'all', null::timestamptz
from regina.cursors c
where c.consumer_group = '__QUEUE_MODE__'
on conflict do nothing;

-- Work that exists already: partitions ahead of the group's cursor (or without one yet).
insert into regina.ready (partition_id, consumer_group, queue_id, eligible_at)
select p.id, s.consumer_group, p.queue_id,
       case when c.lease_active then c.lease_expires_at
            else greatest(coalesce(c.retry_after, p.created_at), p.created_at) end
from regina.subscriptions s
join regina.partitions p on p.queue_id = s.queue_id
left join regina.cursors c on c.partition_id = p.id and c.consumer_group = s.consumer_group
where c.lease_active or p.next_seq > coalesce(c.next_seq, 0)
on conflict do nothing;

-- Cursor saves now keep the ready set in line and take the clock (functions/00_util.sql).
drop function if exists regina._cursor_save(regina.cursors);

-- The offsets of deleted messages above the lowest offset their partition still stores: its holes.
-- Offsets are given in order without gaps and never again, so a partition stores `next_seq` minus
-- its lowest stored offset minus its holes above that offset, and the stats refresh counts its
-- messages with a few index probes instead of reading them all (a statement as long as the
-- partition's backlog, for a deep one). The delete trigger of regina.messages keeps the table
-- (functions/91_stats_refresh.sql): a deleted offset above the lowest one still stored is a hole,
-- and holes below that offset mean nothing any more and go at a later delete of the partition.
create table if not exists regina.partition_holes (
    partition_id bigint not null,
    seq          bigint not null,
    primary key (partition_id, seq)
);

-- The holes of what is stored now: gaps between consecutive offsets, and the offsets deleted from
-- the top (between the highest one stored and next_seq). Deletes wait for this transaction, which
-- also installs the trigger that records later ones with the functions (db/migrate.rs).
lock table regina.messages in share row exclusive mode;
insert into regina.partition_holes (partition_id, seq)
select g.partition_id, s.seq
from (select m.partition_id, m.seq,
             lag(m.seq) over (partition by m.partition_id order by m.seq) as prev
      from regina.messages m) g
cross join lateral generate_series(g.prev + 1, g.seq - 1) s(seq)
where g.seq > g.prev + 1
union all
select p.id, s.seq
from regina.partitions p
cross join lateral (select max(m.seq) as top from regina.messages m where m.partition_id = p.id) t
cross join lateral generate_series(t.top + 1, p.next_seq - 1) s(seq)
where t.top is not null
on conflict do nothing;

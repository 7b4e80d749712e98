-- The stats refresh compares the partitions with their counts a window at a time
-- (functions/90_stats_refresh.sql): a pass reads at most a bounded number of partitions and the
-- next one resumes after them, so the pass's statements stay short however many partitions
-- exist. Deleted partitions are recorded by a trigger instead of being looked for.
alter table regina.stats_state add column scan_after_id bigint not null default 0;

delete from regina.partition_stats s
where not exists (select 1 from regina.partitions p where p.id = s.partition_id);
delete from regina.partition_lag l
where not exists (select 1 from regina.partitions p where p.id = l.partition_id);

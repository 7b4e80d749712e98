-- How many dead letters each partition holds, as rows whose sum is that number: the stats
-- refresh counted them one by one (an index scan as long as the partition's dead-letter queue,
-- at every pass while the partition changes, and dead letters are never deleted but by hand).
-- Statement triggers of regina.dead_letters (functions/91_stats_refresh.sql) append one row per
-- partition and statement, +k for inserted entries and -k for deleted ones, so writers never
-- wait for each other on a shared counter; the stats refresh folds a partition's rows into one
-- when it recounts it, so their number follows the statements since the partition's last count.
create table if not exists regina.dead_letter_tallies (
    partition_id bigint not null,
    n            bigint not null
);
create index if not exists dead_letter_tallies_partition
    on regina.dead_letter_tallies (partition_id);

-- The tallies of what is stored now. The triggers that keep them are installed with the functions
-- in this same transaction (db/migrate.rs), and writers of dead letters wait for it here.
lock table regina.dead_letters in share row exclusive mode;
delete from regina.dead_letter_tallies;
insert into regina.dead_letter_tallies (partition_id, n)
select d.partition_id, count(*) from regina.dead_letters d group by d.partition_id;

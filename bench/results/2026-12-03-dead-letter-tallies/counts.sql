-- The counts of the partitions of setup.sql, by the counting of the build before
-- (_partition_counts_old) and after (_partition_counts), each three times, alternating.
select p.id as pid from regina.partitions p join regina.queues q on q.id = p.queue_id
where q.name = 'deepq' \gset
\timing on
select c.dead_letter from regina._partition_counts_old(array[:pid]::bigint[], now()) c;
select c.dead_letter from regina._partition_counts(array[:pid]::bigint[], now()) c;
select c.dead_letter from regina._partition_counts_old(array[:pid]::bigint[], now()) c;
select c.dead_letter from regina._partition_counts(array[:pid]::bigint[], now()) c;
select c.dead_letter from regina._partition_counts_old(array[:pid]::bigint[], now()) c;
select c.dead_letter from regina._partition_counts(array[:pid]::bigint[], now()) c;
select sum(c.dead_letter) from regina._partition_counts_old(array(select p.id from regina.partitions p
    join regina.queues q on q.id = p.queue_id where q.name = 'tiny'), now()) c;
select sum(c.dead_letter) from regina._partition_counts(array(select p.id from regina.partitions p
    join regina.queues q on q.id = p.queue_id where q.name = 'tiny'), now()) c;
select sum(c.dead_letter) from regina._partition_counts_old(array(select p.id from regina.partitions p
    join regina.queues q on q.id = p.queue_id where q.name = 'tiny'), now()) c;
select sum(c.dead_letter) from regina._partition_counts(array(select p.id from regina.partitions p
    join regina.queues q on q.id = p.queue_id where q.name = 'tiny'), now()) c;
select sum(c.dead_letter) from regina._partition_counts_old(array(select p.id from regina.partitions p
    join regina.queues q on q.id = p.queue_id where q.name = 'tiny'), now()) c;
select sum(c.dead_letter) from regina._partition_counts(array(select p.id from regina.partitions p
    join regina.queues q on q.id = p.queue_id where q.name = 'tiny'), now()) c;
